/* quiet.c: a thread whose stack stayed put, read the quiet way: its ec, control frames and innermost method entry. */
#include "quiet.h"

#include <stdlib.h>
#include <string.h>

#include "vm.h"

/*
 * A thread whose stack stayed put over the last two samples (most threads of
 * a server, parked in a queue, a select or a sleep) is read the quiet way:
 * its rb_thread_t (unless known), its ec, its control frames and the
 * innermost frame's method entry, a few small parts instead of the whole
 * value stack. If ec->cfp is where it was and every frame reads as it did,
 * to the byte, the thread was in the very calls it was in (each frame's
 * iseq, pc, self and ep; the innermost's method entry for a C method) when
 * ec->cfp was read, and the frames named last time are this sample's. (A
 * thread that went deeper meanwhile wrote below those frames: the sample
 * is the stack as of that read, as a full read's is.)
 */
/* May w be read the quiet way, into room frames? Returns the bytes of its control frames, or 0. */
static size_t quiet_bytes(const struct ruby_target *t, const struct walk_slot *w, int room)
{
	uint64_t csz = (uint64_t)t->L->cfp_size;
	if (!w->quiet || !w->ec || !w->stack || w->top.cfp < w->stack || w->top.cfp >= w->end || !w->top.ep ||
	    (w->end - w->top.cfp) / csz != (uint64_t)w->last_n || w->last_named > room || w->lwords.n > LABEL_WORDS)
		return 0;
	return (size_t)w->last_n * csz;
}

/* The parts of a quiet read of w (q->cfps set, room for its quiet_bytes), into iov; returns how many. */
static int quiet_plan(const struct ruby_target *t, const struct walk_slot *w, struct quiet_parts *q,
		      struct mem_iov *iov)
{
	const struct ruby_layout *L = t->L;
	size_t bytes = (size_t)w->last_n * (size_t)L->cfp_size;
	q->me = 0;
	iov[0] = (struct mem_iov){ w->ec, q->e, sizeof(q->e) };
	iov[1] = (struct mem_iov){ w->top.cfp, q->cfps, bytes };
	iov[2] = (struct mem_iov){ w->top.ep + (uint64_t)(L->env_index_me_cref * 8), &q->me, 8 };
	for (int i = 0; i < w->lwords.n; i++)
		iov[3 + i] = (struct mem_iov){ w->lwords.w[i].at, &q->lw[i], 8 };
	return 3 + w->lwords.n;
}

/* Judge a quiet read (th, q) of w: 1 and r's frames set when nothing moved, 0 to read the stack in full. */
int quiet_judge(const struct ruby_target *t, struct walk_slot *w, const unsigned char *th,
		       const struct quiet_parts *q, struct thread_read *r)
{
	const struct ruby_layout *L = t->L;
	unsigned status = vm_thread_status(L, th);
	w->quiet = walk_word(th, L->th_ec) == w->ec && status != (unsigned)L->thread_killed && q->e[L->ec_cfp / 8] == w->top.cfp &&
		   q->e[L->ec_vm_stack / 8] == w->stack &&
		   w->stack + q->e[L->ec_vm_stack_size / 8] * 8 == w->end && q->me == w->top.me &&
		   !memcmp(q->cfps, w->last_cfps, (size_t)w->last_n * (size_t)L->cfp_size);
	for (int i = 0; i < w->lwords.n && w->quiet; i++)
		w->quiet = q->lw[i] == w->lwords.w[i].v; /* (the same frames of another call, else) */
	if (w->quiet && r->at && !w->last_at)
		w->quiet = 0;
	if (!w->quiet)
		return 0;
	memcpy(r->out, w->last_frames, (size_t)w->last_named * sizeof(*r->out));
	if (r->at)
		memcpy(r->at, w->last_at, (size_t)w->last_named * sizeof(*r->at));
	r->nframes = w->last_named;
	r->unchanged = 1;
	return 1;
}

/*
 * A quiet read of w on its own, with r's extras. Returns 1 when its frames
 * are as they were (r->nframes set), 0 to read the stack in full;
 * *extra_done when r's extras were read.
 */
int quiet_read(struct ruby_target *t, struct walk_cache *c, struct walk_slot *w, unsigned char *th,
		      int *have_th, struct thread_read *r, int *extra_done)
{
	size_t bytes = quiet_bytes(t, w, r->room);
	if (!bytes || walk_grow(c, bytes, 0))
		return 0;
	struct quiet_parts q = { .cfps = c->buf };
	struct mem_iov iov[WALK_EXTRAS + 4 + LABEL_WORDS]; /* the extras, th, the quiet parts (quiet_plan) */
	int niov = 0;
	for (int i = 0; i < r->nextra; i++)
		iov[niov++] = r->extra[i];
	if (!*have_th)
		iov[niov++] = (struct mem_iov){ w->th, th, t->th_read_len };
	niov += quiet_plan(t, w, &q, iov + niov);
	w->quiet = 0; /* until it proves quiet again */
	if (t->mem.readv(&t->mem, iov, niov))
		return 0;
	*have_th = 1;
	*extra_done = 1;
	return quiet_judge(t, w, th, &q, r);
}

#define BATCH_MAX 64 /* threads read the quiet way in one readv: their rb_thread_t and parts each */

/*
 * One readv for the thread list, the GC's state (extra) and every thread of
 * the last sample that may be read the quiet way, when at least two may:
 * their rb_thread_t and quiet parts, so a process whose threads are parked
 * costs one system call a tick, not one a thread. Returns 1 when read (each
 * such thread's slot names its part of batch c->batch_gen), 0 to read the
 * threads one by one.
 */
int quiet_read_batch(struct ruby_target *t, struct walk_cache *c, const struct mem_iov *extra, int nextra)
{
	size_t need = 0;
	int quiet = 0;
	if (c->norder < 2 || c->norder > BATCH_MAX)
		return 0;
	for (int i = 0; i < c->norder; i++) {
		size_t b = quiet_bytes(t, walk_slot_of(c, c->order[i], t->samples), WALK_MAX_FRAMES);
		need += b;
		quiet += b > 0;
	}
	if (quiet < 2)
		return 0;
	if (!c->bth && (!(c->bth = malloc(BATCH_MAX * t->th_read_len)) || !(c->bq = malloc(BATCH_MAX * sizeof(*c->bq))) ||
			!(c->biov = malloc((WALK_EXTRAS + (4 + LABEL_WORDS) * BATCH_MAX) * sizeof(*c->biov))))) {
		free(c->bth), free(c->bq), free(c->biov);
		c->bth = NULL, c->bq = NULL, c->biov = NULL;
		return 0;
	}
	if (need > c->bcfps_cap) {
		unsigned char *b = realloc(c->bcfps, need);
		if (!b)
			return 0;
		c->bcfps = b;
		c->bcfps_cap = need;
	}
	int n = 0;
	size_t off = 0;
	for (int i = 0; i < nextra; i++)
		c->biov[n++] = extra[i];
	c->batch_gen++;
	for (int i = 0; i < c->norder; i++) {
		struct walk_slot *w = walk_slot_of(c, c->order[i], t->samples);
		size_t b = quiet_bytes(t, w, WALK_MAX_FRAMES);
		if (!b)
			continue;
		c->biov[n++] = (struct mem_iov){ w->th, c->bth + (size_t)i * t->th_read_len, t->th_read_len };
		c->bq[i].cfps = c->bcfps + off;
		off += b;
		n += quiet_plan(t, w, &c->bq[i], c->biov + n);
		w->batch_gen = c->batch_gen;
		w->batch_i = i;
	}
	if (t->mem.readv(&t->mem, c->biov, n)) {
		c->batch_gen++; /* none of it holds */
		return 0;
	}
	return 1;
}
