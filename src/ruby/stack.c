/* stack.c: one thread's stack read as of one instant: planned from the last sample, judged, its frames named. */
#include "stack.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/err.h"
#include "../proc/pause.h"
#include "frames.h"
#include "quiet.h"
#include "vm.h"

#define RETRIES 2

/* The regions to read for slot w: frames [*flo, *fhi) and value stack [*vlo, *vhi). */
static void plan(const struct walk_slot *w, uint64_t csz, uint64_t *flo, uint64_t *fhi, uint64_t *vlo, uint64_t *vhi)
{
	uint64_t cfp = w->top.cfp >= w->stack && w->top.cfp < w->end ? w->top.cfp : w->end - csz;
	uint64_t lo = cfp - w->stack > SLACK_FRAMES * csz ? cfp - SLACK_FRAMES * csz : w->stack;
	uint64_t n = (w->end - lo) / csz, max = WALK_MAX_FRAMES + 2 * SLACK_FRAMES;
	lo = w->end - n * csz; /* on a frame boundary, counted from the end */
	*flo = lo;
	*fhi = n > max ? lo + max * csz : w->end;
	uint64_t top = w->vs_top > w->stack ? w->vs_top + VS_SLACK : w->stack + VS_SLACK;
	if (top > lo)
		top = lo;
	*vhi = top & ~7ULL;
	*vlo = *vhi - w->stack > VS_MAX ? *vhi - VS_MAX : w->stack;
}

/*
 * Learn (or re-learn) the ec's stack bounds and innermost frame: one small
 * read. 0; 1 when the ec has no VM stack yet but is its thread's (a thread
 * created and not yet run: it gets one when it first holds the GVL; an ec
 * freed and zeroed under the read has no thread either: torn); or an error.
 */
static int learn_ec(struct ruby_target *t, struct walk_slot *w, uint64_t ec)
{
	const struct ruby_layout *L = t->L;
	uint64_t e[8];
	int owner = L->ec_thread_ptr > 0 && L->ec_thread_ptr % 8 == 0 && L->ec_thread_ptr < (int)sizeof(e);
	int err = mem_read(&t->mem, ec, e, owner ? (size_t)L->ec_thread_ptr + 8 : 3 * 8);
	if (err)
		return err;
	uint64_t stack = e[L->ec_vm_stack / 8], size = e[L->ec_vm_stack_size / 8];
	w->ec = ec;
	w->stack = w->end = 0;
	if (!stack && !size && owner && e[L->ec_thread_ptr / 8] == w->th)
		return 1;
	if (!stack || !size || size > (64u << 20) || stack + size * 8 < stack)
		return ERR_TORN; /* a fiber being set up or torn down */
	w->stack = stack;
	w->end = stack + size * 8;
	w->top.cfp = e[L->ec_cfp / 8];
	w->vs_top = 0;
	w->last_n = w->quiet = 0;
	return 0;
}

/*
 * Each frame's env words: from the value stack already read, from the slot's
 * heap envs (keyed by ep and iseq), or in one more readv.
 */
static int gather_eps(struct ruby_target *t, struct walk_cache *c, struct walk_slot *w, const unsigned char *cfps,
		      int n, const unsigned char *vs, uint64_t vlo, uint64_t vhi, uint64_t top, int *moved)
{
	const struct ruby_layout *L = t->L;
	size_t csz = (size_t)L->cfp_size;
	int niov = 0, late = 0;
	uint64_t cfp_late = 0;
	*moved = 0;
	for (int i = 0; i < n; i++) {
		uint64_t ep = walk_word(cfps + (size_t)i * csz, L->cfp_ep), iseq = walk_word(cfps + (size_t)i * csz, L->cfp_iseq);
		memset(c->eps[i], 0, sizeof(c->eps[i]));
		if (ep <= 16 || (ep & 7))
			continue;
		if (ep - 16 >= vlo && ep + 8 <= vhi) {
			memcpy(c->eps[i], vs + (ep - 16 - vlo), sizeof(c->eps[i]));
			continue;
		}
		int hit = 0;
		for (int j = 0; j < HEAP_ENVS && !hit; j++)
			if (w->heap[j].ep == ep && w->heap[j].iseq == iseq)
				memcpy(c->eps[i], w->heap[j].w, sizeof(c->eps[i])), hit = 1;
		if (!hit) {
			c->iov[niov++] = (struct mem_iov){ ep - 16, c->eps[i], sizeof(c->eps[i]) };
			late |= ep >= w->stack && ep < w->end;
		}
	}
	if (!niov)
		return 0;
	/* Env words on the VM stack read now, after the frames: valid if the stack did not move meanwhile. */
	if (late)
		c->iov[niov++] = (struct mem_iov){ w->ec + (uint64_t)L->ec_cfp, &cfp_late, 8 };
	int err = t->mem.readv(&t->mem, c->iov, niov);
	if (!err && late && cfp_late != top)
		*moved = 1;
	if (err == -EFAULT) {
		/* Some ep was garbage (a frame rewritten under the read): keep what reads, zero the rest. */
		*moved = 1;
		for (int i = 0; i < niov - late; i++)
			if ((err = mem_read(&t->mem, c->iov[i].addr, c->iov[i].buf, c->iov[i].len)) == ERR_GONE)
				return err;
			else if (err)
				memset(c->iov[i].buf, 0, c->iov[i].len);
		return 0; /* nothing learnt for the heap cache from a read this suspect */
	}
	if (err)
		return err;
	/* Remember heap envs (outside this ec's VM stack) for the next samples. */
	for (int i = 0; i < n; i++) {
		uint64_t ep = walk_word(cfps + (size_t)i * csz, L->cfp_ep);
		if (ep <= 16 || (ep & 7) || (ep >= w->stack && ep < w->end) || (ep - 16 >= vlo && ep + 8 <= vhi))
			continue;
		struct heap_env *h = &w->heap[w->heap_next++ % HEAP_ENVS];
		h->ep = ep;
		h->iseq = walk_word(cfps + (size_t)i * csz, L->cfp_iseq);
		memcpy(h->w, c->eps[i], sizeof(h->w));
	}
	return 0;
}


/* One steady-state read of a thread's stack: where each part went, and the words read around them. */
struct stack_read {
	uint64_t flo, fhi, vlo, vhi; /* control frames [flo, fhi) and value stack [vlo, vhi), as planned */
	uint64_t again;              /* bytes of frames from flo read a second time, after the rest */
	uint64_t e[3];               /* the ec's first words (vm_stack, its size, cfp) */
	uint64_t ec_pre;             /* th->ec, read just before them */
	uint64_t cfpm, cfp2;         /* ec->cfp after the innermost frames, and at the very end */
};

/*
 * Plan the read of w's stack around where it was at the previous sample, into
 * iov[niov...]; returns the new niov, or an error. Order matters: th->ec and
 * the ec (with ec->cfp), then at once the innermost frames and the top of the
 * value stack (their env words: a C frame's method entry), so a frame that
 * returns meanwhile is read before the next call at its depth writes over it;
 * ec->cfp; the rest; the innermost frames again (a return and a call at the
 * same depth between two reads of ec->cfp would otherwise pair one method's
 * frame with another's env); ec->cfp a last time.
 */
static int plan_stack_read(struct ruby_target *t, struct walk_cache *c, struct walk_slot *w, struct stack_read *sr,
			   struct mem_iov *iov, int niov)
{
	const struct ruby_layout *L = t->L;
	uint64_t csz = (uint64_t)L->cfp_size;
	plan(w, csz, &sr->flo, &sr->fhi, &sr->vlo, &sr->vhi);
	uint64_t flo = sr->flo, fhi = sr->fhi, vlo = sr->vlo, vhi = sr->vhi;
	sr->again = fhi - flo < AGAIN_FRAMES * csz ? fhi - flo : AGAIN_FRAMES * csz;
	int err = walk_grow(c, (size_t)(fhi - flo + vhi - vlo + sr->again), 0);
	if (err)
		return err;
	uint64_t fhead = sr->again, vhead = vhi - vlo < VS_HEAD ? vhi - vlo : VS_HEAD;
	unsigned char *vbuf = c->buf + (fhi - flo);
	iov[niov++] = (struct mem_iov){ w->th + (uint64_t)L->th_ec, &sr->ec_pre, 8 };
	iov[niov++] = (struct mem_iov){ w->ec, sr->e, sizeof(sr->e) };
	iov[niov++] = (struct mem_iov){ flo, c->buf, (size_t)fhead };
	if (vhead)
		iov[niov++] = (struct mem_iov){ vhi - vhead, vbuf + (vhi - vlo - vhead), (size_t)vhead };
	iov[niov++] = (struct mem_iov){ w->ec + (uint64_t)L->ec_cfp, &sr->cfpm, 8 };
	if (fhi - flo > fhead)
		iov[niov++] = (struct mem_iov){ flo + fhead, c->buf + fhead, (size_t)(fhi - flo - fhead) };
	if (vhi - vlo > vhead)
		iov[niov++] = (struct mem_iov){ vlo, vbuf, (size_t)(vhi - vlo - vhead) };
	iov[niov++] = (struct mem_iov){ flo, vbuf + (vhi - vlo), (size_t)sr->again };
	iov[niov++] = (struct mem_iov){ w->ec + (uint64_t)L->ec_cfp, &sr->cfp2, 8 };
	return niov;
}

/* What a stack read gave: the frames to name, and whether the read holds them as of one instant. */
struct stack_view {
	uint64_t top, end; /* the innermost frame, and the stack's end */
	int n, skip;       /* frames to name from top, and outer frames left out */
	int covered;       /* the read holds all n frames */
	int torn;          /* the stack moved under the read: salvaged, each frame validated as it is named */
	int rewritten;     /* a frame live at the end was another method's when first read: read again */
};

enum { VIEW_OK = 0, VIEW_AGAIN = 1, VIEW_RELEARN = 2 };

/*
 * Judge a finished stack read (sr) of w: VIEW_OK with *v, VIEW_RELEARN when
 * the stack itself moved (a new ec or a grown stack), VIEW_AGAIN when neither
 * read of ec->cfp made sense.
 */
static int judge_stack_read(const struct ruby_target *t, struct walk_cache *c, struct walk_slot *w,
			    const struct stack_read *sr, int room, struct stack_view *v)
{
	const struct ruby_layout *L = t->L;
	uint64_t csz = (uint64_t)L->cfp_size;
	uint64_t stack = sr->e[L->ec_vm_stack / 8], end = stack + sr->e[L->ec_vm_stack_size / 8] * 8;
	uint64_t cfp1 = sr->e[L->ec_cfp / 8], cfp2 = sr->cfp2, flo = sr->flo;
	if (stack != w->stack || end != w->end)
		return VIEW_RELEARN;
	int ok1 = cfp1 >= stack && cfp1 < end && (end - cfp1) % csz == 0;
	int ok2 = cfp2 >= stack && cfp2 < end && (end - cfp2) % csz == 0;
	if (!ok1 && !ok2)
		return VIEW_AGAIN;
	memset(v, 0, sizeof(*v));
	v->end = end;
	v->top = ok1 ? cfp1 : cfp2;
	v->n = (int)((end - v->top) / csz);
	if (v->n > WALK_MAX_FRAMES) {
		v->skip = v->n - WALK_MAX_FRAMES;
		v->n = WALK_MAX_FRAMES;
	}
	if (v->n > room - 1) {
		v->skip += v->n - (room - 1);
		v->n = room - 1;
	}
	v->covered = v->top >= flo && v->top + (uint64_t)v->n * csz <= sr->fhi;
	/*
	 * The stack as of the first read of ec->cfp. The innermost frames and
	 * their env words were read right after it, then ec->cfp once more:
	 * the same, and those frames are the stack at that instant (a return
	 * and a call at the same depth in between would make it a later one,
	 * as good). The outer frames, read later, are as they were unless the
	 * thread returned past the innermost ones: the last read of ec->cfp
	 * tells. Otherwise salvaged: kept, each frame validated as it is named.
	 */
	v->torn = sr->cfpm != cfp1 || !ok1 || !ok2 || cfp2 >= flo + sr->again;
	uint64_t top = v->top;
	const unsigned char *first = c->buf + (top - flo), *second = c->buf + (sr->fhi - flo) + (sr->vhi - sr->vlo) + (top - flo);
	if (!v->torn && v->covered) {
		/* and the innermost frames, read twice, did not change under the read */
		for (uint64_t i = 0; i < 4 && i < (uint64_t)v->n && top - flo + (i + 1) * csz <= sr->again && cfp2 <= top; i++)
			v->torn = v->torn || walk_word(first + i * csz, L->cfp_iseq) != walk_word(second + i * csz, L->cfp_iseq) ||
				  walk_word(first + i * csz, L->cfp_ep) != walk_word(second + i * csz, L->cfp_ep) ||
				  walk_word(first + i * csz, L->cfp_self) != walk_word(second + i * csz, L->cfp_self);
	}
	/*
	 * Torn or not: the outermost frame read twice, still live at the end,
	 * that the two reads give different methods was returned past and
	 * called again by another method between them, and the outer frames were
	 * read in between: they may be of that other call path, under inner
	 * frames of the first (called back the same, at the same places, they
	 * validate): a stack that never was. Read again. (A call of the same
	 * method again, another self or env, is the same path; a change further
	 * in, with this frame as it was, stayed within the frames read first.)
	 */
	uint64_t last = flo + sr->again - csz;
	if (v->covered && last >= top && last >= cfp2 && last + csz < end)
		v->rewritten = walk_word(first + (last - top), L->cfp_iseq) != walk_word(second + (last - top), L->cfp_iseq);
	w->top.cfp = ok2 ? cfp2 : cfp1;
	return VIEW_OK;
}

/*
 * Keep the frames of a clean read of n frames (cfps) for quiet_read, and
 * whether they are the same as the last clean read's: a thread whose stack
 * stayed put between two samples is read the quiet way from then on.
 */
static void remember_clean(struct walk_slot *w, const struct ruby_layout *L, const unsigned char *cfps, int n,
			   int clean, const struct thread_read *r)
{
	size_t bytes = (size_t)n * (size_t)L->cfp_size;
	if (!clean || n > QUIET_FRAMES || r->nframes <= 0) {
		w->last_n = w->quiet = 0;
		return;
	}
	int need = n > r->nframes ? n : r->nframes;
	if (need > w->last_cap || (r->at && !w->last_at)) {
		int cap = need < 32 ? 32 : need; /* room to grow a little without another realloc */
		if (cap < w->last_cap)
			cap = w->last_cap;
		unsigned char *c = realloc(w->last_cfps, (size_t)cap * (size_t)L->cfp_size);
		if (c)
			w->last_cfps = c;
		struct ruby_frame *f = c ? realloc(w->last_frames, (size_t)cap * sizeof(*f)) : NULL;
		if (f)
			w->last_frames = f;
		struct ruby_frame_at *a = f && r->at ? realloc(w->last_at, (size_t)cap * sizeof(*a)) : NULL;
		if (a)
			w->last_at = a;
		if (!c || !f || (r->at && !a)) {
			walk_slot_forget(w);
			return;
		}
		w->last_cap = cap;
	}
	w->quiet = w->last_n == n && w->last_named == r->nframes && !memcmp(w->last_cfps, cfps, bytes) &&
		   !memcmp(w->last_frames, r->out, (size_t)r->nframes * sizeof(*r->out));
	memcpy(w->last_cfps, cfps, bytes);
	memcpy(w->last_frames, r->out, (size_t)r->nframes * sizeof(*r->out));
	if (r->at && w->last_at)
		memcpy(w->last_at, r->at, (size_t)r->nframes * sizeof(*r->at));
	w->last_n = n;
	w->last_named = r->nframes;
}

/*
 * A thread that went deeper since the last sample than the read planned for
 * has frames whose envs, locals and operands lie above the value stack read
 * (sr->vhi): that part, up to the innermost such env, is read now, after the
 * rest, into the buffer after it (where the frames read a second time were:
 * judged already), so a frame's words (its env, a label's local or Rack env)
 * come with the frame and not from a read later still, when it may have
 * returned. *vhi gets the new end; *grew is 1 when ec->cfp moved meanwhile
 * (the frames are then checked one by one, as for a torn read).
 */
static int value_stack_grown(struct ruby_target *t, struct walk_cache *c, struct walk_slot *w,
			     const struct stack_read *sr, const struct stack_view *v, int n, uint64_t *vhi, int *grew)
{
	const struct ruby_layout *L = t->L;
	size_t csz = (size_t)L->cfp_size;
	const unsigned char *cfps = c->buf + (v->top - sr->flo);
	uint64_t want = 0, cfp_late = 0;
	for (int i = 0; i < n; i++) {
		uint64_t ep = walk_word(cfps + (size_t)i * csz, L->cfp_ep);
		if (!(ep & 7) && ep >= sr->vhi && ep >= w->stack && ep + 8 <= w->end && ep + 8 > want)
			want = ep + 8;
	}
	if (!want || want - sr->vhi > VS_MAX || want > v->top)
		return 0; /* (none, or too far: their env words alone, by gather_eps) */
	size_t at = (size_t)(sr->fhi - sr->flo + sr->vhi - sr->vlo);
	int err = walk_grow(c, at + (size_t)(want - sr->vhi), 0);
	if (err)
		return err;
	struct mem_iov iov[2] = { { sr->vhi, c->buf + at, (size_t)(want - sr->vhi) },
				  { w->ec + (uint64_t)L->ec_cfp, &cfp_late, 8 } };
	if (t->mem.readv(&t->mem, iov, 2))
		return 0; /* (gather_eps reads their env words, or says why not) */
	*vhi = want;
	*grew = cfp_late != v->top;
	return 0;
}

/*
 * Where the words of the value stack read (up to vhi) stop being the named
 * frames' own, for a label (a local, a Rack env): a thread that returned past
 * its innermost frames by the end of the read (cfp2 outside top) may have
 * called again at their depth in between (Busy.run(n).to_s: Integer#to_s's
 * env where n was), its frames and env words read first and intact, its
 * locals then written over. Only the words below the env of the innermost
 * frame still live at the end are kept (none when that env is not on the
 * stack read).
 */
static uint64_t label_words_end(const struct ruby_target *t, const struct walk_cache *c, const struct stack_read *sr,
				const struct stack_view *v, uint64_t vhi)
{
	uint64_t csz = (uint64_t)t->L->cfp_size;
	if (sr->cfp2 <= v->top)
		return vhi;
	if (sr->cfp2 < sr->flo || sr->cfp2 + csz > sr->fhi)
		return sr->vlo;
	uint64_t ep = walk_word(c->buf + (sr->cfp2 - sr->flo), t->L->cfp_ep);
	return ep >= sr->vlo && ep + 8 <= vhi ? ep + 8 : sr->vlo;
}

/*
 * --blocking: where a thread stopped in JIT code ran it for its innermost
 * frame (at cfp, its control frame cf read): its ip when the JIT's register
 * for the frame it runs (r13) held cf's address; else 0. *asked: whether its
 * registers were read for it (the frame ran JIT code, whose pc it does not
 * save: its bytes stay put as it runs on, so the next read is a full one,
 * with the registers then, never a quiet one keeping this line).
 */
static uint64_t stopped_jit_ip(struct ruby_target *t, struct walk_slot *w, const unsigned char *th,
			       const unsigned char *cf, uint64_t cfp, int *asked)
{
	const struct ruby_layout *L = t->L;
	uint64_t regs[17];
	*asked = t->stopped && L->cfp_jit_return >= 0 && L->body_yjit_blocks >= 0 && walk_word(cf, L->cfp_jit_return);
	if (!*asked)
		return 0;
	int32_t tid = vm_thread_host_tid(t, w, th, 0);
	return tid > 0 && !pause_thread_regs(tid, regs) && regs[13] == cfp ? regs[16] : 0;
}

/* Name the frames of a read that covered them (v), and remember where the value stack's top was. */
static int name_stack(struct ruby_target *t, struct walk_cache *c, struct walk_slot *w, const unsigned char *th,
		      const struct stack_read *sr, const struct stack_view *v, struct thread_read *r)
{
	const struct ruby_layout *L = t->L;
	size_t csz = (size_t)L->cfp_size;
	int n = v->n, err;
	if (n <= 0)
		return 0;
	if ((err = walk_grow(c, 0, (size_t)n)))
		return err;
	const unsigned char *cfps = c->buf + (v->top - sr->flo);
	int moved = 0, grew = 0;
	uint64_t vhi = sr->vhi;
	if ((err = value_stack_grown(t, c, w, sr, v, n, &vhi, &grew)))
		return err;
	cfps = c->buf + (v->top - sr->flo); /* (c->buf may have moved) */
	if ((err = gather_eps(t, c, w, cfps, n, c->buf + (sr->fhi - sr->flo), sr->vlo, vhi, v->top, &moved)))
		return err == -EFAULT ? ERR_TORN : err;
	moved |= grew;
	uint64_t sp_max = 0;
	for (int i = 0; i < n; i++) {
		uint64_t sp = walk_word(cfps + (size_t)i * csz, L->cfp_sp);
		if (sp > sp_max && sp < v->end)
			sp_max = sp;
	}
	w->vs_top = sp_max;
	w->top.self = walk_word(cfps, L->cfp_self);
	w->top.ep = walk_word(cfps, L->cfp_ep);
	w->top.me = c->eps[0][0];
	int dropped = 0;
	r->vs = c->buf + (sr->fhi - sr->flo);
	r->vs_lo = sr->vlo;
	r->vs_hi = label_words_end(t, c, sr, v, grew ? sr->vhi : vhi);
	int regs_asked;
	unsigned status = vm_thread_status(L, th);
	const struct ruby_jit_at jit = { stopped_jit_ip(t, w, th, cfps, v->top, &regs_asked),
					 status == (unsigned)L->thread_stopped || status == (unsigned)L->thread_stopped_forever };
	r->nframes = ruby_name_frames(t, cfps, c->eps, n, v->skip, !(v->torn || moved), &jit, r->out, r->at, &dropped);
	r->salvaged = dropped > 0 || v->rewritten; /* kept without the frames that did not read as frames, or mixed */
	remember_clean(w, L, cfps, n, !v->torn && !moved && !dropped && !v->skip && !regs_asked, r);
	/* A live frame always has an ep: all zeros is memory the source does not have (gdb writes zeros
	   for pages it failed to read, e.g. next to glibc 2.41's madvise guard pages). */
	r->unreadable = !r->nframes;
	for (int i = 0; i < n && r->unreadable; i++)
		r->unreadable = !walk_word(cfps + (size_t)i * csz, L->cfp_ep) && !walk_word(cfps + (size_t)i * csz, L->cfp_pc);
	return 0;
}

/*
 * Read and name the frames of the thread whose rb_thread_t is at w->th, as
 * r asks. th holds its first t->th_read_len bytes: read here if *have_th is
 * 0, and in the same readv as the frames when the slot already knows the ec.
 */
int stack_read_thread(struct ruby_target *t, struct walk_cache *c, struct walk_slot *w, unsigned char *th,
		       int *have_th, struct thread_read *r)
{
	const struct ruby_layout *L = t->L;
	int err;
	r->nframes = r->retried = r->salvaged = r->unreadable = r->unchanged = r->unstarted = 0;
	r->vs = NULL;
	int extra_done = 0;
	if (!r->no_quiet && quiet_read(t, c, w, th, have_th, r, &extra_done))
		return 0;
	for (int attempt = 0; attempt <= RETRIES + 1; attempt++) {
		struct stack_read sr = { 0 };
		int niov = 0, with_stack = w->ec && w->stack;
		/* at most: the extras, th, the context, ec, the 2 heads, ec->cfp, the 2 rests, the innermost again, ec->cfp */
		struct mem_iov iov[WALK_EXTRAS + 10];
		for (int i = 0; !attempt && !extra_done && i < r->nextra; i++)
			iov[niov++] = r->extra[i];
		if (!*have_th)
			iov[niov++] = (struct mem_iov){ w->th, th, t->th_read_len };
		if (with_stack && (niov = plan_stack_read(t, c, w, &sr, iov, niov)) < 0)
			return niov;
		err = niov ? t->mem.readv(&t->mem, iov, niov) : 0;
		if (err == -EFAULT && with_stack) {
			w->stack = 0; /* the stack was freed or moved (or th itself): read them apart */
			continue;
		}
		if (err)
			return err == -EFAULT ? ERR_TORN : err;
		*have_th = 1;
		uint64_t ec = walk_word(th, L->th_ec);
		unsigned status = vm_thread_status(L, th);
		if (!ec || status == (unsigned)L->thread_killed)
			return 0;
		if (with_stack && sr.ec_pre != ec && sr.ec_pre) {
			/* Another fiber runs: the frames read are a suspended one's. Read the running one's instead,
			   from the start (never stitched from both). */
			ec = sr.ec_pre;
			r->retried++;
		}
		if (!with_stack || ec != w->ec) {
			if ((err = learn_ec(t, w, ec)) == 1) {
				r->unstarted = 1; /* no frames: none to read */
				return 0;
			}
			if (err)
				return err == -EFAULT || err == ERR_TORN ? ERR_TORN : err;
			continue;
		}
		struct stack_view v;
		int how = judge_stack_read(t, c, w, &sr, r->room, &v);
		if (how == VIEW_RELEARN) {
			w->stack = 0;
			continue;
		}
		if (how == VIEW_AGAIN) {
			if (attempt > RETRIES)
				return ERR_TORN;
			continue;
		}
		/* A read that missed the frames is repeated, planned again around where the stack is now. */
		if (!v.covered) {
			r->retried += attempt < RETRIES;
			continue;
		}
		/*
		 * So is one that left frames out: the thread returned past them under
		 * the read and their envs were written over (the frames read there
		 * are calls that had ended). Kept, it would be a stack with holes, a
		 * call path that never was; read again, it is the stack a few
		 * microseconds later. The cost: reads taken again land in long calls
		 * a little more often than in short ones (bench/run rubocop measures
		 * it against --blocking). The last try is kept with its holes.
		 */
		err = name_stack(t, c, w, th, &sr, &v, r);
		if (err || !r->salvaged || attempt >= RETRIES)
			return err;
		r->retried++;
	}
	return ERR_TORN;
}
