/* walk.c: every Ruby thread of the process, read in list order without stopping it (its parts: slots, vm, quiet, stack, native). */
#include "walk.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/err.h"
#include "../proc/task.h"
#include "frames.h"
#include "label.h"
#include "native.h"
#include "object.h"
#include "quiet.h"
#include "slots.h"
#include "stack.h"
#include "vm.h"

const char *ruby_thread_state_name(int state)
{
	switch (state) {
	case THREAD_RUNNING: return "running";
	case THREAD_GVL_WAIT: return "waiting for GVL";
	case THREAD_BLOCKED: return "blocked";
	case THREAD_SLEEPING: return "sleeping";
	case THREAD_KILLED: return "killed";
	}
	return "unknown";
}

/* With WALK_LOCALS, k frames put over the first n of ts (a GC or native frames): their places move down too. */
static void at_shift(struct ruby_sample *s, unsigned flags, const struct ruby_thread_sample *ts, int n, int k)
{
	if (!(flags & WALK_LOCALS) || k <= 0)
		return;
	struct ruby_frame_at *at = s->at + (ts->frames - s->frames);
	memmove(at + k, at, (size_t)n * sizeof(*at));
	memset(at, 0, (size_t)k * sizeof(*at));
}

/* Has --label one read at each tick whatever the frames (an instance variable, a fiber-local)? */
static int labels_at_tick(const struct ruby_target *t)
{
	for (int k = 0; k < t->nuser_labels && k < USER_LABELS_MAX; k++)
		if (t->user_labels[k].kind != USER_LABEL_LOCAL)
			return 1;
	return 0;
}

/* Name, tid and state of a thread read into th; counts it in s unless killed or torn. */
static void finish_thread(struct ruby_target *t, struct ruby_sample *s, struct walk_slot *w, const unsigned char *th,
			  uint64_t owner, unsigned flags, int err, const struct thread_read *r)
{
	const struct ruby_layout *L = t->L;
	struct ruby_thread_sample *ts = &s->threads[s->nthreads];
	memset(ts, 0, sizeof(*ts));
	ts->th = w->th;
	ts->main = w->th == t->main_thread;
	ts->state = vm_thread_state(t, th, w->th, owner);
	if (ts->state == THREAD_KILLED)
		return;
	if (err == ERR_TORN) {
		s->torn++;
		return;
	}
	/*
	 * The main thread is the process's first thread, whose tid is the pid:
	 * in a forked child (a Puma worker) Ruby's own copy of it still holds the
	 * parent's, and seen from outside a pid namespace it holds the inner one.
	 */
	ts->tid = vm_thread_host_tid(t, w, th, r->unchanged);
	ts->shared = L->th_dedicated_byte >= 0 && !ts->main &&
		     !((th[L->th_dedicated_byte] >> L->th_dedicated_shift) & ((1u << L->th_dedicated_bits) - 1));
	ts->kstate = (flags & WALK_KSTATE) && ts->tid && !t->core ? task_state(t->pid, ts->tid) : ts->shared && !ts->tid ? '-' : '?';
	/* (a shared thread's native thread runs others too: its clock is not the thread's) */
	ts->has_cpu = (flags & WALK_CPU) && ts->tid && !ts->shared && !t->core && !task_cpu_ns(t->pid, ts->tid, &ts->cpu_ns);
	ts->syscall = WALK_SYSCALL_UNKNOWN;
	unsigned long long sp, pc;
	/* (an open unwinder reads it anyway, below) */
	int unwinds = (flags & WALK_NATIVE) && t->walk->unwind;
	if ((flags & WALK_SYSCALL) && !unwinds && ts->state == THREAD_BLOCKED && ts->tid && !t->core &&
	    task_syscall(t->pid, ts->tid, &ts->syscall, &sp, &pc))
		ts->syscall = WALK_SYSCALL_UNKNOWN;
	uint64_t name = walk_word(th, L->th_name);
	if (name != w->name_val) {
		char nbuf[256];
		w->name_val = name;
		w->name = 0;
		if (ruby_is_heap(t, name) && !ruby_read_string(t, name, nbuf, sizeof(nbuf)))
			w->name = ruby_intern(t, nbuf);
	}
	ts->name = w->name;
	s->retried += (uint32_t)r->retried;
	s->salvaged += (uint32_t)r->salvaged;
	s->unchanged += (uint32_t)r->unchanged;
	ts->salvaged = r->salvaged;
	ts->unchanged = r->unchanged;
	ts->frames = s->frames + s->nframes_total;
	ts->nframes = r->nframes;
	ts->unreadable = r->unreadable;
	ts->unstarted = r->unstarted;
	ts->label = 0;
	if (flags & WALK_LABELS) {
		/* A quiet read's frames are its last full read's, and the words its labels were read from are
		   as they were: so is the request, and --label's locals. Instance variables and fiber-locals are
		   read at the tick. */
		struct label_words seen = { 0 };
		struct label_ctx cx = { .gc = t->walk->gc_count, .gc_known = t->walk->gc_known, .vs = r->vs,
					.vs_lo = r->vs_lo, .vs_hi = r->vs_hi, .by = 1, .stack_lo = w->stack, .stack_hi = w->end,
					.words = r->unchanged ? &w->lwords : NULL, .seen = r->unchanged ? NULL : &seen };
		ts->label = w->label = r->unchanged ? w->label : ruby_request_label(t, ts->frames, r->at, ts->nframes, &cx);
		if (t->nuser_labels && (!r->unchanged || labels_at_tick(t)))
			w->nulabels = ruby_user_labels(t, w->th, ts->frames, r->at, ts->nframes, &cx, w->ulabels);
		if (!r->unchanged)
			w->lwords = seen;
		if (t->nuser_labels) {
			ts->nulabels = w->nulabels;
			memcpy(ts->ulabels, w->ulabels, sizeof(ts->ulabels));
		}
	}
	if (s->gc && ts->state == THREAD_RUNNING && s->nframes_total + (uint32_t)r->nframes < WALK_MAX_TOTAL) {
		/* The thread collecting is the one holding the GVL: the GC over the frame that allocated. */
		memmove(ts->frames + 1, ts->frames, (size_t)r->nframes * sizeof(*ts->frames));
		ts->frames[0] = vm_gc_frame(t, s->gc);
		ts->nframes++;
		at_shift(s, flags, ts, r->nframes, 1);
	}
	if ((flags & WALK_NATIVE) && ts->tid > 0 && !t->core) {
		int before = ts->nframes;
		native_add(t, s, ts, w);
		at_shift(s, flags, ts, before, ts->nframes - before);
	}
	s->nframes_total += (uint32_t)ts->nframes;
	s->nthreads++;
}

/*
 * Read the thread at thaddr of a list whose GVL owner is owner, into s (th:
 * room for its rb_thread_t; batched: the sample's batch of quiet reads was
 * taken), and set *next to its link in the list. 0, ERR_TORN (the sample is
 * refused), or another negative code.
 */
static int walk_listed(struct ruby_target *t, struct ruby_sample *s, struct walk_cache *c, uint64_t thaddr,
		       uint64_t owner, unsigned flags, int batched, unsigned char *th, uint64_t *next)
{
	struct walk_slot *w = walk_slot_of(c, thaddr, t->samples);
	int have_th = 0, room = (int)(WALK_MAX_TOTAL - s->nframes_total), err;
	struct thread_read r = { .out = s->frames + s->nframes_total, .room = room - 1,
				 .at = (flags & WALK_LOCALS) ? s->at + s->nframes_total : (flags & WALK_LABELS) ? c->at : NULL,
				 .no_quiet = !!(flags & WALK_LOCALS) };
	unsigned char *tp = th;
	int in_batch = batched && w->batch_gen == c->batch_gen;
	if (in_batch) { /* its rb_thread_t and quiet parts came in the batch */
		tp = c->bth + (size_t)w->batch_i * t->th_read_len;
		have_th = 1;
	}
	if (room < 2) { /* the sample is full: list the thread without frames */
		err = have_th ? 0 : mem_read(&t->mem, thaddr, tp, t->th_read_len);
		have_th = !err;
	} else if (in_batch && w->last_named <= r.room && quiet_judge(t, w, tp, &c->bq[w->batch_i], &r)) {
		err = 0;
	} else {
		if (in_batch)
			w->quiet = 0; /* tried: read in full */
		err = stack_read_thread(t, c, w, tp, &have_th, &r);
	}
	if (err == -EFAULT)
		err = ERR_TORN;
	if (err && err != ERR_TORN)
		return err;
	if (!have_th)
		return ERR_TORN;
	/* The list is a ring: a thread linked to nothing was freed (and scrubbed) after the link to it
	   was read. It is no thread, and the rest of the list is out of reach: the sample is refused. */
	if (!(*next = walk_word(tp, t->L->th_lt_node)))
		return ERR_TORN;
	finish_thread(t, s, w, tp, owner, flags, err, &r);
	return 0;
}

#define WALK_MAX_RACTORS 64
#define RACTOR_NAMES (sizeof(((struct walk_cache *)0)->ractor_names) / sizeof(((struct walk_cache *)0)->ractor_names[0]))

/* The strtab id of a Ractor's name (its String VALUE, or nil: 0), read once while the cache keeps it. */
static uint32_t ractor_name(struct ruby_target *t, struct walk_cache *c, uint64_t name)
{
	char nbuf[128];
	if (!ruby_is_heap(t, name))
		return 0;
	for (size_t i = 0; i < RACTOR_NAMES; i++)
		if (c->ractor_names[i].val == name)
			return c->ractor_names[i].id;
	uint32_t id = ruby_read_string(t, name, nbuf, sizeof(nbuf)) ? 0 : ruby_intern(t, nbuf);
	c->ractor_names[c->ractor_names_next++ % RACTOR_NAMES] = (struct ractor_name_seen){ name, id };
	return id;
}

/*
 * The threads of every Ractor but the main one (3.0+: each with a GVL of its
 * own), after the main Ractor's: read one by one (none of the batched reads
 * of the main list), each labelled with its Ractor. ERR_TORN when the list of
 * Ractors or one's threads changed under the read.
 */
static int walk_other_ractors(struct ruby_target *t, struct ruby_sample *s, struct walk_cache *c, unsigned flags)
{
	const struct ruby_layout *L = t->L;
	uint64_t rhead = t->vm + (uint64_t)L->vm_ractor_set, rnode;
	unsigned char th[1024];
	if (mem_read_u64(&t->mem, rhead, &rnode))
		return ERR_TORN;
	for (int guard = 0; rnode && rnode != rhead; guard++) {
		if (guard == WALK_MAX_RACTORS)
			return ERR_TORN; /* no end in sight: not a list any more */
		uint64_t r = rnode - (uint64_t)L->ractor_vmlr_node, next = 0, node = 0, owner = 0, name = 0;
		uint32_t id = 0;
		struct mem_iov iov[5] = { { rnode, &next, 8 }, { r + (uint64_t)L->ractor_threads_set, &node, 8 },
					  { r + (uint64_t)L->ractor_gvl_owner, &owner, 8 }, { r + (uint64_t)L->ractor_id, &id, 4 },
					  { r + (uint64_t)L->ractor_name, &name, 8 } };
		if (t->mem.readv(&t->mem, iov, 5))
			return ERR_TORN;
		if (r == t->main_ractor) {
			rnode = next;
			continue;
		}
		uint32_t rname = ractor_name(t, c, name);
		uint64_t head = r + (uint64_t)L->ractor_threads_set;
		for (int n = 0; node && node != head && s->nthreads < WALK_MAX_THREADS; n++) {
			if (n == WALK_MAX_THREADS)
				return ERR_TORN;
			int before = s->nthreads, err = walk_listed(t, s, c, node - (uint64_t)L->th_lt_node, owner, flags, 0, th, &node);
			if (err)
				return err;
			if (s->nthreads > before) {
				s->threads[before].ractor = id;
				s->threads[before].ractor_name = rname;
			}
		}
		rnode = next;
	}
	return 0;
}

int ruby_sample_take(struct ruby_target *t, struct ruby_sample *s, unsigned flags)
{
	const struct ruby_layout *L = t->L;
	uint64_t head = 0, node = 0, owner = 0;
	s->nthreads = 0;
	s->nframes_total = 0;
	s->torn = s->retried = s->salvaged = s->unchanged = 0;
	s->gc = GC_NONE;
	s->native_moved = s->native_sampled = 0;
	if ((flags & WALK_LOCALS) && !s->at)
		return -EINVAL;
	if (!t->walk && (ruby_target_add_cache(t, ruby_walk_free) || !(t->walk = calloc(1, sizeof(*t->walk)))))
		return -ENOMEM;
	struct walk_cache *c = t->walk;
	t->samples++;
	if ((flags & WALK_LABELS) && !c->at && !(c->at = malloc((WALK_MAX_FRAMES + 2) * sizeof(*c->at))))
		return -ENOMEM;
	struct list_area a;
	unsigned char th[1024], lbuf[512];
	int err = vm_read_main(t);
	err = err ?: vm_list_area(t, &a);
	if (err)
		return err == -EFAULT ? ERR_TORN : err;
	if (t->th_read_len > sizeof(th))
		return ERR_UNSUPPORTED;
	/*
	 * Steady state: the thread list is read in the same readv as the thread
	 * that headed it last time, so one thread costs one system call. If
	 * another thread heads it now, that read is thrown away.
	 */
	int first_done = 0, nextra = 1, nord = 0;
	uint32_t gcw = 0, ractors = 0;
	uint64_t gcc = 0;
	struct mem_iov extra[WALK_EXTRAS] = { { a.base + (uint64_t)a.lo, lbuf, (size_t)(a.hi - a.lo) } };
	uint64_t gca = vm_gc_word_addr(t);
	if (gca)
		extra[nextra++] = (struct mem_iov){ gca, &gcw, sizeof(gcw) };
	/* (the GC's count: a Rack env's label is known unchanged while it is, label.c; a method entry's name too,
	   frames.c) */
	c->gc_known = t->objspace && L->gc_count >= 0;
	if (c->gc_known)
		extra[nextra++] = (struct mem_iov){ t->objspace + (uint64_t)L->gc_count, &gcc, sizeof(gcc) };
	if (L->vm_ractor_cnt >= 0) /* (how many Ractors: the others' threads are read after the main one's) */
		extra[nextra++] = (struct mem_iov){ t->vm + (uint64_t)L->vm_ractor_cnt, &ractors, sizeof(ractors) };
	memset(lbuf, 0, sizeof(lbuf));
	int batched = !t->core && !(flags & WALK_LOCALS) && quiet_read_batch(t, c, extra, nextra);
	c->norder = 0; /* until this sample has been through the whole list */
	if (batched) {
		vm_list_parse(&a, lbuf, &head, &node, &owner);
		s->gc = vm_gc_phase(L, gcw);
		c->gc_count = gcc;
		c->first_th = node && node != head ? node - (uint64_t)L->th_lt_node : 0;
		first_done = 1; /* (nothing read apart) */
	} else if (c->first_th) {
		struct walk_slot *w = walk_slot_of(c, c->first_th, t->samples);
		struct thread_read r = { .out = s->frames, .room = (int)WALK_MAX_TOTAL - 1, .extra = extra, .nextra = nextra,
					 .at = (flags & WALK_LOCALS) ? s->at : (flags & WALK_LABELS) ? c->at : NULL,
					 .no_quiet = !!(flags & WALK_LOCALS) };
		int have_th = 0;
		memset(lbuf, 0, sizeof(lbuf));
		err = stack_read_thread(t, c, w, th, &have_th, &r);
		if (err == -EFAULT)
			err = ERR_TORN;
		if (err && err != ERR_TORN)
			return err;
		vm_list_parse(&a, lbuf, &head, &node, &owner);
		s->gc = vm_gc_phase(L, gcw);
		c->gc_count = gcc;
		if (have_th && node == c->first_th + (uint64_t)L->th_lt_node) {
			if (!(node = walk_word(th, L->th_lt_node)))
				return ERR_TORN; /* see below */
			finish_thread(t, s, w, th, owner, flags, err, &r);
			c->order[nord++] = c->first_th;
			first_done = 1;
		}
	}
	if (!first_done) {
		if ((err = t->mem.readv(&t->mem, extra, nextra)))
			return err == -EFAULT ? ERR_TORN : err;
		vm_list_parse(&a, lbuf, &head, &node, &owner);
		s->gc = vm_gc_phase(L, gcw);
		c->gc_count = gcc;
		c->first_th = node && node != head ? node - (uint64_t)L->th_lt_node : 0;
	}
	if (c->gc_known && c->gc_count > t->gc_count_seen)
		t->gc_count_seen = c->gc_count;
	for (int guard = nord; node && node != head && guard < WALK_MAX_THREADS; guard++) {
		uint64_t thaddr = node - (uint64_t)L->th_lt_node;
		if ((err = walk_listed(t, s, c, thaddr, owner, flags, batched, th, &node)))
			return err;
		c->order[nord++] = thaddr;
	}
	if (!node || node == head)
		c->norder = nord;
	if (ractors > 1 && L->ractor_vmlr_node >= 0)
		return walk_other_ractors(t, s, c, flags);
	return 0;
}
