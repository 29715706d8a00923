/* native.c: the native functions a thread's innermost C method called, over its Ruby frames. */
#include "native.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../proc/task.h"

/*
 * How many of n native frames (innermost first) run above the thread's Ruby
 * frames: the functions the innermost C method called, in its extension and
 * the libraries under it (libz, libxml2, libc), until the VM's own call
 * machinery: a run of NATIVE_VM_RUN frames in libruby. A shorter run between
 * two frames of other files (rb_nogvl, rb_protect, rb_ensure) is the C
 * method's own doing and is kept.
 */
#define NATIVE_VM_RUN 3
static int native_above(const struct native_frame *f, int n)
{
	int k = 0;
	while (k < n) {
		if (!f[k].in_libruby) {
			k++;
			continue;
		}
		int run = 0;
		while (k + run < n && f[k + run].in_libruby)
			run++;
		if (run >= NATIVE_VM_RUN || k + run == n || k == 0)
			break;
		k += run;
	}
	return k;
}

struct native_check {
	struct ruby_target *t;
	const struct walk_slot *w;
	int moved;
};

/*
 * Is the thread still in the call the sample read (unwind_thread asks while
 * the thread cannot move)? Its innermost frame must be the sample's (ec->cfp),
 * with its self and method entry: a C method that returned and another one
 * called at its depth would otherwise get the other's native frames. A call
 * of the same method again meanwhile passes, rightly: same frames.
 */
static int same_call(void *arg)
{
	struct native_check *chk = arg;
	const struct ruby_layout *L = chk->t->L;
	const struct walk_slot *w = chk->w;
	unsigned char cf[256];
	struct ruby_call now = { 0 };
	int same = L->cfp_size > 0 && L->cfp_size <= (int64_t)sizeof(cf) && w->top.ep;
	if (same) {
		/* One read: where those words are if it is the same call. */
		const struct mem_iov iov[3] = { { w->ec + (uint64_t)L->ec_cfp, &now.cfp, 8 },
						{ w->top.cfp, cf, (size_t)L->cfp_size },
						{ w->top.ep + (uint64_t)(L->env_index_me_cref * 8), &now.me, 8 } };
		same = !chk->t->mem.readv(&chk->t->mem, iov, 3);
	}
	if (same) {
		now.self = walk_word(cf, L->cfp_self);
		now.ep = walk_word(cf, L->cfp_ep);
		same = ruby_call_same(&now, &w->top);
	}
	chk->moved += !same;
	return same;
}

/* The target's unwinder, opened on first use; NULL when it cannot be (then not tried again). */
static struct unwinder *unwinder(struct ruby_target *t)
{
	struct walk_cache *c = t->walk;
	if (!c->unwind && !c->unwind_err) {
		c->unwind = calloc(1, sizeof(*c->unwind));
		c->unwind_err = !c->unwind ? -ENOMEM : unwind_open(c->unwind, t->pid, &t->mem, t->lib_path, &t->strs);
		if (!c->unwind_err)
			c->unwind->stop_in_libruby = NATIVE_VM_RUN; /* native_above() stops there too */
		if (c->unwind_err && c->unwind) {
			unwind_close(c->unwind);
			free(c->unwind);
			c->unwind = NULL;
		}
	}
	return c->unwind;
}

/* The first k of the native frames in c->native over ts's frames, if room allows (room: frames ts may have). */
static void put_native(struct walk_cache *c, struct ruby_thread_sample *ts, int k, uint32_t room)
{
	if (!k || (uint32_t)ts->nframes + (uint32_t)k > room)
		return;
	memmove(ts->frames + k, ts->frames, (size_t)ts->nframes * sizeof(*ts->frames));
	for (int i = 0; i < k; i++)
		ts->frames[i] = (struct ruby_frame){ c->native[i].name, c->native[i].module, 0, FRAME_NATIVE };
	ts->nframes += k;
}

/* Put the thread's own native frames over its Ruby frames (WALK_NATIVE). */
void native_add(struct ruby_target *t, struct ruby_sample *s, struct ruby_thread_sample *ts,
		       struct walk_slot *w)
{
	struct walk_cache *c = t->walk;
	/* A capture that has the kernel copy each sampled thread's registers and stack: the thread holding
	   the GVL has its native frames from there (capture.c), and one on its CPU without it from its latest
	   sample (below): no stop. */
	const struct ruby_native_source *src = t->native_source;
	int sampled = src && src->covers(src->ctx, ts->th);
	if (sampled && ts->state == THREAD_RUNNING)
		return;
	if (!unwinder(t))
		return;
	struct native_check chk = { t, w, 0 };
	uint64_t left = c->unwind->left;
	/* (a thread not followed yet, new since the last sample, is not stopped either: it is at the next) */
	int nr, n = unwind_thread(c->unwind, ts->tid, !src, c->native, NATIVE_MAX, &nr, same_call, &chk);
	if (sampled && nr == TASK_ON_CPU) {
		/* Without the GVL its Ruby frames stand still: the kernel's latest sample of it is of the call
		   read now if the program saw it in that call then. With no sample since the last tick (its clock
		   counts its CPU time), the one before stands while the call is the same. */
		uint64_t regs[17];
		const unsigned char *stack;
		size_t len;
		int got = src->sample_of(src->ctx, ts->th, &w->top, regs, &stack, &len);
		n = 0;
		if (got > 0)
			n = unwind_sampled(c->unwind, ts->tid, regs, stack, len, c->native, NATIVE_MAX);
		if (got > 0 && n > 0 && (w->nat || (w->nat = malloc(NATIVE_MAX * sizeof(*w->nat))))) {
			memcpy(w->nat, c->native, (size_t)n * sizeof(*w->nat));
			w->nat_n = n;
			w->nat_call = w->top;
		} else if (got < 0) {
			w->nat_n = 0;
		} else if (!got && w->nat_n && ruby_call_same(&w->nat_call, &w->top)) {
			memcpy(c->native, w->nat, (size_t)w->nat_n * sizeof(*w->nat));
			n = w->nat_n;
		}
		s->native_sampled += n > 0;
		chk.moved += n <= 0;
	}
	if (ts->state == THREAD_BLOCKED && ts->syscall == WALK_SYSCALL_UNKNOWN && nr != TASK_SYSCALL_UNREAD)
		ts->syscall = nr; /* read anyway: the state frame can name it */
	s->native_stops = c->unwind->stops;
	s->native_stop_ns = c->unwind->stop_ns;
	s->native_moved += (uint64_t)chk.moved + (c->unwind->left - left);
	put_native(c, ts, n > 0 ? native_above(c->native, n) : 0, WALK_MAX_TOTAL - s->nframes_total);
}

int ruby_native_sampled(struct ruby_target *t, struct ruby_thread_sample *ts, int room, const uint64_t *regs,
			const void *stack, size_t len)
{
	struct walk_cache *c = t->walk;
	if (!c || !unwinder(t))
		return 0;
	int n = unwind_sampled(c->unwind, ts->tid, regs, stack, len, c->native, NATIVE_MAX);
	int k = n > 0 ? native_above(c->native, n) : 0;
	put_native(c, ts, k, room > 0 ? (uint32_t)room : 0);
	return n > 0;
}
