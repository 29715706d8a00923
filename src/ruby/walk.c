/* walk.c: reading every Ruby thread's control frames, consistently and without stopping it (frames.c names them). */
#include "walk.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/err.h"
#include "../proc/task.h"
#include "../proc/unwind.h"
#include "frames.h"
#include "iseq.h"
#include "object.h"

#define RETRIES 2

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

static uint64_t word(const unsigned char *p, int64_t off)
{
	uint64_t v;
	memcpy(&v, p + off, 8);
	return v;
}

/*
 * Per-thread memory of the previous sample: where the frames and the value
 * stack were. A steady-state sample reads a thread's rb_thread_t, its ec,
 * its frames and the top of its value stack in one readv, bracketed by two
 * reads of ec->cfp, so the frames are one near-instant picture of the stack.
 */
#define CACHE_SLOTS 256
#define SLACK_FRAMES 16          /* frames read beyond the last sample's innermost */
#define VS_SLACK 1024            /* value-stack bytes read beyond the last sample's top */
#define VS_MAX (64u << 10)       /* value-stack bytes read speculatively; deeper eps are read after */
#define HEAP_ENVS 4
#define AGAIN_FRAMES (2 * SLACK_FRAMES + 4) /* frames from the planned region's start read a second time */
#define VS_HEAD 2048             /* value-stack bytes below the planned top read with the innermost frames */
#define QUIET_FRAMES 512         /* deepest stack a slot remembers for quiet_read */

struct walk_slot {
	uint64_t th, ec;
	uint64_t stack, end; /* the ec's VM stack: value stack grows up from stack, frames down from end */
	struct ruby_call top; /* the call it was in at the last sample (top.cfp: its innermost frame) */
	uint64_t vs_top;     /* highest sp at the last sample */
	uint64_t name_val;   /* the Thread#name string last seen, and its strtab id */
	uint32_t name;
	/* env words of frames whose env escaped to the heap (a thread's block, TOPLEVEL_BINDING's env):
	   they sit at the outer end of the stack and stay put, so they are read once */
	struct heap_env {
		uint64_t ep, iseq, w[EP_WORDS];
	} heap[HEAP_ENVS];
	unsigned heap_next;
	/* The last clean read: its control frames as read and the frames named from them, for a thread whose
	   stack stays put (quiet_read); quiet when the two last reads found the same frames. */
	unsigned char *last_cfps;
	struct ruby_frame *last_frames;
	int last_n, last_named, quiet;
	int last_cap; /* frames last_cfps and last_frames have room for */
	/* --native, on its CPU without the GVL: the native frames of its last kernel sample, and of which call */
	struct native_frame *nat;
	int nat_n;
	struct ruby_call nat_call;
	uint64_t batch_gen; /* read the quiet way in batch number batch_gen, as its part batch_i */
	int batch_i;
	/* its tid where it is not in rb_thread_t (3.3+: in its native thread; 2.7: in glibc's pthread), kept
	   while that pointer stays, read again every TID_REREAD samples */
	uint64_t tid_key;
	int32_t tid;
	unsigned tid_uses;
};

/* The parts of a quiet read of one thread (quiet_plan). */
struct quiet_parts {
	uint64_t e[3], me;
	unsigned char *cfps; /* where its control frames are read to */
};

struct walk_cache {
	struct walk_slot slot[CACHE_SLOTS];
	uint64_t first_th; /* the thread heading the list at the last sample */
	uint64_t order[WALK_MAX_THREADS]; /* the threads in list order at the last sample that went through it */
	int norder;
	uint64_t batch_gen; /* batches of quiet reads taken (read_quiet_batch) */
	unsigned char *bth, *bcfps; /* a batch's rb_thread_t copies and control frames */
	size_t bcfps_cap;
	struct quiet_parts *bq;
	struct mem_iov *biov;
	unsigned char *buf; /* frames, then value stack */
	size_t cap;
	uint64_t (*eps)[EP_WORDS];
	struct mem_iov *iov;
	size_t n_cap;       /* entries in eps and iov */
	struct unwinder *unwind; /* WALK_NATIVE: opened on first use */
	int unwind_err;          /* why it could not be opened (then not tried again) */
	struct native_frame native[NATIVE_MAX];
};

static void slot_forget(struct walk_slot *w)
{
	free(w->last_cfps);
	free(w->last_frames);
	free(w->nat);
	w->last_cfps = NULL;
	w->last_frames = NULL;
	w->nat = NULL;
	w->nat_n = 0;
	w->last_n = w->last_named = w->quiet = w->last_cap = 0;
}

void ruby_walk_free(struct ruby_target *t)
{
	if (!t->walk)
		return;
	for (int i = 0; i < CACHE_SLOTS; i++)
		slot_forget(&t->walk->slot[i]);
	free(t->walk->buf);
	free(t->walk->bth);
	free(t->walk->bcfps);
	free(t->walk->bq);
	free(t->walk->biov);
	free(t->walk->eps);
	free(t->walk->iov);
	if (t->walk->unwind)
		unwind_close(t->walk->unwind);
	free(t->walk->unwind);
	free(t->walk);
	t->walk = NULL;
}

static struct walk_slot *slot_of(struct walk_cache *c, uint64_t th)
{
	struct walk_slot *w = &c->slot[(th * 0x9e3779b97f4a7c15ULL) >> 56 & (CACHE_SLOTS - 1)];
	if (w->th != th) {
		slot_forget(w);
		*w = (struct walk_slot){ .th = th };
	}
	return w;
}

static int grow(struct walk_cache *c, size_t bytes, size_t n)
{
	if (bytes > c->cap) {
		unsigned char *b = realloc(c->buf, bytes);
		if (!b)
			return -ENOMEM;
		c->buf = b;
		c->cap = bytes;
	}
	if (n > c->n_cap) {
		void *e = realloc(c->eps, n * sizeof(*c->eps)), *v;
		if (!e)
			return -ENOMEM;
		c->eps = e;
		if (!(v = realloc(c->iov, n * sizeof(*c->iov))))
			return -ENOMEM;
		c->iov = v;
		c->n_cap = n;
	}
	return 0;
}

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
 * A thread's state from its status and unblocking function: Ruby marks a
 * thread stopped for a blocking region (I/O, a C call without the GVL) as for
 * a timed sleep, and sets an unblocking function only while it really waits;
 * a thread out of either, not yet holding the GVL again, still shows stopped
 * with none. So: the GVL's owner runs; a thread stopped for good (join, a
 * lock, a queue) sleeps; one with an unblocking function is blocked (a timed
 * sleep too: its frames say it waits); any other waits for the GVL. A C
 * extension that lets go of the GVL with no unblocking function reads as
 * waiting for the GVL.
 */
static int thread_state(struct ruby_target *t, const unsigned char *th, uint64_t thaddr, uint64_t gvl_owner)
{
	const struct ruby_layout *L = t->L;
	unsigned status = (th[L->th_status_byte] >> L->th_status_shift) & ((1u << L->th_status_bits) - 1);
	if (status == (unsigned)L->thread_killed)
		return THREAD_KILLED;
	if (gvl_owner == thaddr)
		return THREAD_RUNNING;
	int ubf = word(th, L->th_unblock_func) != 0;
	if (status == (unsigned)L->thread_stopped_forever && ubf)
		return THREAD_SLEEPING;
	return ubf ? THREAD_BLOCKED : THREAD_GVL_WAIT;
}

#define TID_REREAD 256

static int32_t thread_tid(struct ruby_target *t, struct walk_slot *w, const unsigned char *th)
{
	const struct ruby_layout *L = t->L;
	uint32_t tid = 0;
	uint64_t p = 0, off = 0;
	if (L->th_tid >= 0) {
		memcpy(&tid, th + L->th_tid, 4);
		return (int32_t)tid;
	}
	if (L->th_nt >= 0)
		p = word(th, L->th_nt), off = (uint64_t)L->nt_tid;
	else if (L->th_thread_id >= 0) /* glibc: pthread_t is the struct pthread address */
		p = word(th, L->th_thread_id), off = TASK_GLIBC_PTHREAD_TID_OFFSET;
	if (!p)
		return 0;
	if (p == w->tid_key && w->tid > 0 && ++w->tid_uses < TID_REREAD)
		return w->tid;
	if (mem_read_u32(&t->mem, p + off, &tid))
		tid = 0;
	w->tid_key = p;
	w->tid = (int32_t)tid;
	w->tid_uses = 0;
	return (int32_t)tid;
}

/*
 * A tid as we see it: Ruby keeps the one its own pid namespace gives (a
 * container seen from the host). 0 when the thread is not (or no longer)
 * among the process's: a tid of another namespace would name another thread.
 */
static int32_t host_tid(struct ruby_target *t, int32_t tid)
{
	if (!t->other_pidns || tid <= 0)
		return tid;
	uint64_t *hit = map_get(&t->ns_tids, (uint64_t)tid);
	if (!hit) {
		task_ns_tids(t->pid, &t->ns_tids); /* a thread started since: look again */
		if (!(hit = map_get(&t->ns_tids, (uint64_t)tid)))
			map_put(&t->ns_tids, (uint64_t)tid, 0); /* not there: not looked for again at every sample */
	}
	return hit ? (int32_t)*hit : 0;
}

/* The 4 bytes of rb_objspace's flags that hold the GC's mode and whether it is collecting now. */
static int64_t gc_word(const struct ruby_layout *L)
{
	return (L->gc_during_byte < L->gc_mode_byte ? L->gc_during_byte : L->gc_mode_byte) & ~3LL;
}

/* Where that word is in the target, or 0 where the layout does not say whether and how the GC runs. */
static uint64_t gc_word_addr(const struct ruby_target *t)
{
	const struct ruby_layout *L = t->L;
	return t->objspace && L->gc_during_byte >= 0 && L->gc_mode_byte >= 0 ? t->objspace + (uint64_t)gc_word(L) : 0;
}

static int gc_bit(const struct ruby_layout *L, uint32_t w, int64_t byte, int64_t shift, int64_t bits)
{
	return (int)((w >> ((byte - gc_word(L)) * 8 + shift)) & ((1u << bits) - 1));
}

/* What the GC is doing: nothing, or collecting (during_gc), in which phase. */
static int gc_phase(const struct ruby_layout *L, uint32_t w)
{
	if (L->gc_during_byte < 0 || L->gc_during_byte - gc_word(L) > 3 || L->gc_mode_byte - gc_word(L) > 3 ||
	    !gc_bit(L, w, L->gc_during_byte, L->gc_during_shift, 1))
		return GC_NONE;
	if (L->gc_compacting_byte >= 0 && L->gc_compacting_byte - gc_word(L) <= 3 &&
	    gc_bit(L, w, L->gc_compacting_byte, L->gc_compacting_shift, 1))
		return GC_COMPACTING;
	int mode = gc_bit(L, w, L->gc_mode_byte, L->gc_mode_shift, L->gc_mode_bits);
	return mode == L->gc_mode_marking ? GC_MARKING : mode == L->gc_mode_sweeping ? GC_SWEEPING
		: mode == L->gc_mode_compacting ? GC_COMPACTING : GC_RUNNING;
}

/* The main thread and ractor live as long as the VM: read them once. */
static int read_main(struct ruby_target *t)
{
	const struct ruby_layout *L = t->L;
	if (t->main_thread)
		return 0;
	int err = mem_read_u64(&t->mem, t->vm + (uint64_t)L->vm_main_thread, &t->main_thread);
	if (!err && L->vm_main_ractor >= 0)
		err = mem_read_u64(&t->mem, t->vm + (uint64_t)L->vm_main_ractor, &t->main_ractor);
	t->objspace = 0;
	if (!err && L->vm_objspace >= 0 &&
	    ((L->gc_during_byte >= 0 && L->gc_mode_byte >= 0) || L->gc_count >= 0 || L->gc_pool_eden_slots >= 0) &&
	    mem_read_u64(&t->mem, t->vm + (uint64_t)L->vm_objspace, &t->objspace))
		t->objspace = 0; /* no GC frames, the rest as ever */
	if (err)
		t->main_thread = 0;
	return err;
}

/* GC.count, major collections and the time the VM measured: 0, or a negative code. */
static int gc_counters(struct ruby_target *t, struct ruby_gc_counts *out)
{
	const struct ruby_layout *L = t->L;
	uint64_t mark = 0, sweep = 0, total = 0;
	struct mem_iov iov[4] = { { t->objspace + (uint64_t)L->gc_count, &out->count, 8 } };
	int n = 1, err;
	if (L->gc_major_count >= 0)
		iov[n++] = (struct mem_iov){ t->objspace + (uint64_t)L->gc_major_count, &out->major, 8 };
	if (L->gc_time_ns >= 0) {
		iov[n++] = (struct mem_iov){ t->objspace + (uint64_t)L->gc_time_ns, &total, 8 };
	} else if (L->gc_mark_ns >= 0 && L->gc_sweep_ns >= 0) {
		iov[n++] = (struct mem_iov){ t->objspace + (uint64_t)L->gc_mark_ns, &mark, 8 };
		iov[n++] = (struct mem_iov){ t->objspace + (uint64_t)L->gc_sweep_ns, &sweep, 8 };
	}
	if ((err = t->mem.readv(&t->mem, iov, n)))
		return err;
	out->have_count = 1;
	out->have_time = L->gc_time_ns >= 0 || (L->gc_mark_ns >= 0 && L->gc_sweep_ns >= 0);
	out->time_ns = total + mark + sweep;
	return 0;
}

#define GC_POOLS_MAX 16

/*
 * The heap's slots as GC.stat counts them: live = allocated - freed - waiting
 * for finalizers, free = all slots (eden and tomb pages) - live - waiting.
 * Each count is the objspace's own (2.7, 3.1) or the sum over its size
 * pools (3.3+). Read while the process runs, so counts read a moment apart
 * can disagree: such a read is tried again, then given up (ERR_TORN).
 */
static int gc_heap_slots(struct ruby_target *t, struct ruby_gc_counts *out)
{
	const struct ruby_layout *L = t->L;
	int64_t base = L->gc_pools >= 0 ? L->gc_pools : 0, n = L->gc_pool_count >= 0 ? L->gc_pool_count : 1;
	int64_t stride = L->gc_pool_size >= 0 ? L->gc_pool_size : 0;
	if (L->gc_pool_eden_slots < 0 || (L->gc_allocated < 0 && L->gc_pool_allocated < 0) ||
	    (L->gc_freed < 0 && L->gc_pool_freed < 0) || (L->gc_final < 0 && L->gc_pool_final < 0) || n < 1 ||
	    n > GC_POOLS_MAX || (n > 1 && stride <= 0))
		return ERR_UNSUPPORTED;
	/* Per pool: eden slots, tomb slots, allocated, freed, waiting; then the objspace's allocated, freed, waiting. */
	const int64_t per[5] = { L->gc_pool_eden_slots, L->gc_pool_tomb_slots, L->gc_pool_allocated, L->gc_pool_freed,
				 L->gc_pool_final };
	const int64_t whole[3] = { L->gc_allocated, L->gc_freed, L->gc_final };
	uint64_t v[GC_POOLS_MAX * 5 + 3];
	struct mem_iov iov[GC_POOLS_MAX * 5 + 3];
	int k = 0;
	for (int64_t i = 0; i < n; i++)
		for (int j = 0; j < 5; j++)
			if (per[j] >= 0)
				iov[k++] = (struct mem_iov){ t->objspace + (uint64_t)(base + i * stride + per[j]), &v[i * 5 + j], 8 };
	for (int j = 0; j < 3; j++)
		if (whole[j] >= 0)
			iov[k++] = (struct mem_iov){ t->objspace + (uint64_t)whole[j], &v[n * 5 + j], 8 };
	for (int attempt = 0; attempt < 3; attempt++) {
		memset(v, 0, sizeof(v));
		int err = t->mem.readv(&t->mem, iov, k);
		if (err)
			return err;
		uint64_t slots = 0, alloc = v[n * 5], freed = v[n * 5 + 1], final = v[n * 5 + 2];
		for (int64_t i = 0; i < n; i++) {
			slots += v[i * 5] + v[i * 5 + 1];
			alloc += v[i * 5 + 2];
			freed += v[i * 5 + 3];
			final += v[i * 5 + 4];
		}
		if (alloc < freed || alloc - freed < final || slots < alloc - freed + final)
			continue; /* counts from different moments */
		out->live_slots = alloc - freed - final;
		out->free_slots = slots - out->live_slots - final;
		out->have_slots = 1;
		return 0;
	}
	return ERR_TORN;
}

int ruby_gc_counts(struct ruby_target *t, struct ruby_gc_counts *out)
{
	const struct ruby_layout *L = t->L;
	memset(out, 0, sizeof(*out));
	int err = read_main(t);
	if (err)
		return err;
	if (!t->objspace || (L->gc_count < 0 && L->gc_pool_eden_slots < 0))
		return ERR_UNSUPPORTED;
	if (L->gc_count >= 0 && (err = gc_counters(t, out)))
		return err;
	err = gc_heap_slots(t, out);
	return out->have_count ? 0 : err; /* the counts stand without the slots */
}

/* Where the thread list head and the GVL owner are: in the VM (2.7) or the main ractor (3.x). */
struct list_area {
	uint64_t base;
	int64_t hoff, ooff, lo, hi;
};

static int list_area(struct ruby_target *t, struct list_area *a)
{
	const struct ruby_layout *L = t->L;
	int ractor = L->vm_main_ractor >= 0;
	a->base = ractor ? t->main_ractor : t->vm;
	a->hoff = ractor ? L->ractor_threads_set : L->vm_living_threads;
	a->ooff = ractor ? L->ractor_gvl_owner : L->vm_gvl_owner;
	a->lo = a->hoff < a->ooff ? a->hoff : a->ooff;
	a->hi = (a->hoff > a->ooff ? a->hoff : a->ooff) + 8;
	return a->hi - a->lo > 512 || !a->base ? ERR_UNSUPPORTED : 0;
}

static void list_parse(const struct list_area *a, const unsigned char *buf, uint64_t *head, uint64_t *first,
		       uint64_t *owner)
{
	*head = a->base + (uint64_t)a->hoff;
	*first = word(buf, a->hoff - a->lo); /* list_head { n { next, prev } } */
	*owner = word(buf, a->ooff - a->lo);
}

/* Learn (or re-learn) the ec's stack bounds and innermost frame: one small read. */
static int learn_ec(struct ruby_target *t, struct walk_slot *w, uint64_t ec)
{
	const struct ruby_layout *L = t->L;
	uint64_t e[3];
	int err = mem_read(&t->mem, ec, e, sizeof(e));
	if (err)
		return err;
	uint64_t stack = e[L->ec_vm_stack / 8], size = e[L->ec_vm_stack_size / 8];
	w->ec = ec;
	w->stack = w->end = 0;
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
		uint64_t ep = word(cfps + (size_t)i * csz, L->cfp_ep), iseq = word(cfps + (size_t)i * csz, L->cfp_iseq);
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
		uint64_t ep = word(cfps + (size_t)i * csz, L->cfp_ep);
		if (ep <= 16 || (ep & 7) || (ep >= w->stack && ep < w->end) || (ep - 16 >= vlo && ep + 8 <= vhi))
			continue;
		struct heap_env *h = &w->heap[w->heap_next++ % HEAP_ENVS];
		h->ep = ep;
		h->iseq = word(cfps + (size_t)i * csz, L->cfp_iseq);
		memcpy(h->w, c->eps[i], sizeof(h->w));
	}
	return 0;
}

/* What read_thread is asked for, and what it found. */
struct thread_read {
	struct ruby_frame *out;       /* where the named frames go */
	int room;                     /* and how many fit */
	const struct mem_iov *extra;  /* read in the same call as the first try (the thread list, the GC's state) */
	int nextra;
	int nframes;
	int retried, salvaged, unchanged;
	int unreadable; /* every control frame read as zeros */
};

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
	int err = grow(c, (size_t)(fhi - flo + vhi - vlo + sr->again), 0);
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
	if (!v->torn && v->covered) {
		/* and the innermost frames, read twice, did not change under the read */
		uint64_t top = v->top;
		const unsigned char *first = c->buf + (top - flo), *second = c->buf + (sr->fhi - flo) + (sr->vhi - sr->vlo) + (top - flo);
		for (uint64_t i = 0; i < 4 && i < (uint64_t)v->n && top - flo + (i + 1) * csz <= sr->again && cfp2 <= top; i++)
			v->torn = v->torn || word(first + i * csz, L->cfp_iseq) != word(second + i * csz, L->cfp_iseq) ||
				  word(first + i * csz, L->cfp_ep) != word(second + i * csz, L->cfp_ep) ||
				  word(first + i * csz, L->cfp_self) != word(second + i * csz, L->cfp_self);
	}
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
	if (need > w->last_cap) {
		int cap = need < 32 ? 32 : need; /* room to grow a little without another realloc */
		unsigned char *c = realloc(w->last_cfps, (size_t)cap * (size_t)L->cfp_size);
		if (c)
			w->last_cfps = c;
		struct ruby_frame *f = c ? realloc(w->last_frames, (size_t)cap * sizeof(*f)) : NULL;
		if (f)
			w->last_frames = f;
		if (!c || !f) {
			slot_forget(w);
			return;
		}
		w->last_cap = cap;
	}
	w->quiet = w->last_n == n && w->last_named == r->nframes && !memcmp(w->last_cfps, cfps, bytes) &&
		   !memcmp(w->last_frames, r->out, (size_t)r->nframes * sizeof(*r->out));
	memcpy(w->last_cfps, cfps, bytes);
	memcpy(w->last_frames, r->out, (size_t)r->nframes * sizeof(*r->out));
	w->last_n = n;
	w->last_named = r->nframes;
}

/* Name the frames of a read that covered them (v), and remember where the value stack's top was. */
static int name_stack(struct ruby_target *t, struct walk_cache *c, struct walk_slot *w, const struct stack_read *sr,
		      const struct stack_view *v, struct thread_read *r)
{
	const struct ruby_layout *L = t->L;
	size_t csz = (size_t)L->cfp_size;
	int n = v->n, err;
	if (n <= 0)
		return 0;
	if ((err = grow(c, 0, (size_t)n)))
		return err;
	const unsigned char *cfps = c->buf + (v->top - sr->flo);
	int moved = 0;
	if ((err = gather_eps(t, c, w, cfps, n, c->buf + (sr->fhi - sr->flo), sr->vlo, sr->vhi, v->top, &moved)))
		return err == -EFAULT ? ERR_TORN : err;
	uint64_t sp_max = 0;
	for (int i = 0; i < n; i++) {
		uint64_t sp = word(cfps + (size_t)i * csz, L->cfp_sp);
		if (sp > sp_max && sp < v->end)
			sp_max = sp;
	}
	w->vs_top = sp_max;
	w->top.self = word(cfps, L->cfp_self);
	w->top.ep = word(cfps, L->cfp_ep);
	w->top.me = c->eps[0][0];
	int dropped = 0;
	r->nframes = ruby_name_frames(t, cfps, c->eps, n, v->skip, !(v->torn || moved), r->out, &dropped);
	r->salvaged = dropped > 0; /* kept without the frames that did not read as frames */
	remember_clean(w, L, cfps, n, !v->torn && !moved && !dropped && !v->skip, r);
	/* A live frame always has an ep: all zeros is memory the source does not have (gdb writes zeros
	   for pages it failed to read, e.g. next to glibc 2.41's madvise guard pages). */
	r->unreadable = !r->nframes;
	for (int i = 0; i < n && r->unreadable; i++)
		r->unreadable = !word(cfps + (size_t)i * csz, L->cfp_ep) && !word(cfps + (size_t)i * csz, L->cfp_pc);
	return 0;
}

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
	    (w->end - w->top.cfp) / csz != (uint64_t)w->last_n || w->last_named > room)
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
	return 3;
}

/* Judge a quiet read (th, q) of w: 1 and r's frames set when nothing moved, 0 to read the stack in full. */
static int quiet_judge(const struct ruby_target *t, struct walk_slot *w, const unsigned char *th,
		       const struct quiet_parts *q, struct thread_read *r)
{
	const struct ruby_layout *L = t->L;
	unsigned status = (th[L->th_status_byte] >> L->th_status_shift) & ((1u << L->th_status_bits) - 1);
	w->quiet = word(th, L->th_ec) == w->ec && status != (unsigned)L->thread_killed && q->e[L->ec_cfp / 8] == w->top.cfp &&
		   q->e[L->ec_vm_stack / 8] == w->stack &&
		   w->stack + q->e[L->ec_vm_stack_size / 8] * 8 == w->end && q->me == w->top.me &&
		   !memcmp(q->cfps, w->last_cfps, (size_t)w->last_n * (size_t)L->cfp_size);
	if (!w->quiet)
		return 0;
	memcpy(r->out, w->last_frames, (size_t)w->last_named * sizeof(*r->out));
	r->nframes = w->last_named;
	r->unchanged = 1;
	return 1;
}

/*
 * A quiet read of w on its own, with r's extras. Returns 1 when its frames
 * are as they were (r->nframes set), 0 to read the stack in full;
 * *extra_done when r's extras were read.
 */
static int quiet_read(struct ruby_target *t, struct walk_cache *c, struct walk_slot *w, unsigned char *th,
		      int *have_th, struct thread_read *r, int *extra_done)
{
	size_t bytes = quiet_bytes(t, w, r->room);
	if (!bytes || grow(c, bytes, 0))
		return 0;
	struct quiet_parts q = { .cfps = c->buf };
	struct mem_iov iov[8];
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

#define BATCH_MAX 64 /* threads read the quiet way in one readv: their rb_thread_t and 3 parts each */

/*
 * One readv for the thread list, the GC's state (extra) and every thread of
 * the last sample that may be read the quiet way, when at least two may:
 * their rb_thread_t and quiet parts, so a process whose threads are parked
 * costs one system call a tick, not one a thread. Returns 1 when read (each
 * such thread's slot names its part of batch c->batch_gen), 0 to read the
 * threads one by one.
 */
static int read_quiet_batch(struct ruby_target *t, struct walk_cache *c, const struct mem_iov *extra, int nextra)
{
	size_t need = 0;
	int quiet = 0;
	if (c->norder < 2 || c->norder > BATCH_MAX)
		return 0;
	for (int i = 0; i < c->norder; i++) {
		size_t b = quiet_bytes(t, slot_of(c, c->order[i]), WALK_MAX_FRAMES);
		need += b;
		quiet += b > 0;
	}
	if (quiet < 2)
		return 0;
	if (!c->bth && (!(c->bth = malloc(BATCH_MAX * t->th_read_len)) || !(c->bq = malloc(BATCH_MAX * sizeof(*c->bq))) ||
			!(c->biov = malloc((2 + 4 * BATCH_MAX) * sizeof(*c->biov))))) {
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
		struct walk_slot *w = slot_of(c, c->order[i]);
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

/*
 * Read and name the frames of the thread whose rb_thread_t is at w->th, as
 * r asks. th holds its first t->th_read_len bytes: read here if *have_th is
 * 0, and in the same readv as the frames when the slot already knows the ec.
 */
static int read_thread(struct ruby_target *t, struct walk_cache *c, struct walk_slot *w, unsigned char *th,
		       int *have_th, struct thread_read *r)
{
	const struct ruby_layout *L = t->L;
	int err;
	r->nframes = r->retried = r->salvaged = r->unreadable = r->unchanged = 0;
	int extra_done = 0;
	if (quiet_read(t, c, w, th, have_th, r, &extra_done))
		return 0;
	for (int attempt = 0; attempt <= RETRIES + 1; attempt++) {
		struct stack_read sr = { 0 };
		int niov = 0, with_stack = w->ec && w->stack;
		/* at most: 2 extras, th, the context, ec, the 2 heads, ec->cfp, the 2 rests, the innermost again, ec->cfp */
		struct mem_iov iov[12];
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
		uint64_t ec = word(th, L->th_ec);
		unsigned status = (th[L->th_status_byte] >> L->th_status_shift) & ((1u << L->th_status_bits) - 1);
		if (!ec || status == (unsigned)L->thread_killed)
			return 0;
		if (with_stack && sr.ec_pre != ec && sr.ec_pre) {
			/* Another fiber runs: the frames read are a suspended one's. Read the running one's instead,
			   from the start (never stitched from both). */
			ec = sr.ec_pre;
			r->retried++;
		}
		if (!with_stack || ec != w->ec) {
			if ((err = learn_ec(t, w, ec)))
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
		err = name_stack(t, c, w, &sr, &v, r);
		if (err || !r->salvaged || attempt >= RETRIES)
			return err;
		r->retried++;
	}
	return ERR_TORN;
}

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
		now.self = word(cf, L->cfp_self);
		now.ep = word(cf, L->cfp_ep);
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
static void add_native(struct ruby_target *t, struct ruby_sample *s, struct ruby_thread_sample *ts,
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

/* The GC's frame for phase (not GC_NONE). */
static struct ruby_frame gc_frame(struct ruby_target *t, int phase)
{
	static const char *const names[] = { "", "(garbage collection)", "(garbage collection: marking)",
					     "(garbage collection: sweeping)", "(garbage collection: compacting)" };
	return (struct ruby_frame){ ruby_intern(t, names[phase]), 0, 0, FRAME_GC };
}

int ruby_capture_addrs(struct ruby_target *t, uint64_t *owner, uint64_t *gc)
{
	struct list_area a;
	int err = read_main(t);
	err = err ?: list_area(t, &a);
	if (err)
		return err == -EFAULT ? ERR_TORN : err;
	*owner = a.base + (uint64_t)a.ooff;
	*gc = gc_word_addr(t);
	return 0;
}

int ruby_gc_frame(struct ruby_target *t, uint32_t gcw, struct ruby_frame *f)
{
	int phase = gc_phase(t->L, gcw);
	if (phase == GC_NONE)
		return 0;
	*f = gc_frame(t, phase);
	return 1;
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
	ts->state = thread_state(t, th, w->th, owner);
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
	ts->tid = ts->main && t->pid > 0 ? t->pid : host_tid(t, thread_tid(t, w, th));
	ts->kstate = (flags & WALK_KSTATE) && ts->tid && !t->core ? task_state(t->pid, ts->tid) : '?';
	ts->has_cpu = (flags & WALK_CPU) && ts->tid && !t->core && !task_cpu_ns(t->pid, ts->tid, &ts->cpu_ns);
	ts->syscall = WALK_SYSCALL_UNKNOWN;
	unsigned long long sp, pc;
	/* (an open unwinder reads it anyway, below) */
	int unwinds = (flags & WALK_NATIVE) && t->walk->unwind;
	if ((flags & WALK_SYSCALL) && !unwinds && ts->state == THREAD_BLOCKED && ts->tid && !t->core &&
	    task_syscall(t->pid, ts->tid, &ts->syscall, &sp, &pc))
		ts->syscall = WALK_SYSCALL_UNKNOWN;
	uint64_t name = word(th, L->th_name);
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
	if (s->gc && ts->state == THREAD_RUNNING && s->nframes_total + (uint32_t)r->nframes < WALK_MAX_TOTAL) {
		/* The thread collecting is the one holding the GVL: the GC over the frame that allocated. */
		memmove(ts->frames + 1, ts->frames, (size_t)r->nframes * sizeof(*ts->frames));
		ts->frames[0] = gc_frame(t, s->gc);
		ts->nframes++;
	}
	if ((flags & WALK_NATIVE) && ts->tid > 0 && !t->core)
		add_native(t, s, ts, w);
	s->nframes_total += (uint32_t)ts->nframes;
	s->nthreads++;
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
	if (!t->walk && (ruby_target_add_cache(t, ruby_walk_free) || !(t->walk = calloc(1, sizeof(*t->walk)))))
		return -ENOMEM;
	struct walk_cache *c = t->walk;
	struct list_area a;
	unsigned char th[1024], lbuf[512];
	int err = read_main(t);
	err = err ?: list_area(t, &a);
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
	uint32_t gcw = 0;
	struct mem_iov extra[2] = { { a.base + (uint64_t)a.lo, lbuf, (size_t)(a.hi - a.lo) } };
	uint64_t gca = gc_word_addr(t);
	if (gca)
		extra[nextra++] = (struct mem_iov){ gca, &gcw, sizeof(gcw) };
	memset(lbuf, 0, sizeof(lbuf));
	int batched = !t->core && read_quiet_batch(t, c, extra, nextra);
	c->norder = 0; /* until this sample has been through the whole list */
	if (batched) {
		list_parse(&a, lbuf, &head, &node, &owner);
		s->gc = gc_phase(L, gcw);
		c->first_th = node && node != head ? node - (uint64_t)L->th_lt_node : 0;
		first_done = 1; /* (nothing read apart) */
	} else if (c->first_th) {
		struct walk_slot *w = slot_of(c, c->first_th);
		struct thread_read r = { .out = s->frames, .room = (int)WALK_MAX_TOTAL - 1, .extra = extra, .nextra = nextra };
		int have_th = 0;
		memset(lbuf, 0, sizeof(lbuf));
		err = read_thread(t, c, w, th, &have_th, &r);
		if (err == -EFAULT)
			err = ERR_TORN;
		if (err && err != ERR_TORN)
			return err;
		list_parse(&a, lbuf, &head, &node, &owner);
		s->gc = gc_phase(L, gcw);
		if (have_th && node == c->first_th + (uint64_t)L->th_lt_node) {
			node = word(th, L->th_lt_node);
			finish_thread(t, s, w, th, owner, flags, err, &r);
			c->order[nord++] = c->first_th;
			first_done = 1;
		}
	}
	if (!first_done) {
		if ((err = t->mem.readv(&t->mem, extra, nextra)))
			return err == -EFAULT ? ERR_TORN : err;
		list_parse(&a, lbuf, &head, &node, &owner);
		s->gc = gc_phase(L, gcw);
		c->first_th = node && node != head ? node - (uint64_t)L->th_lt_node : 0;
	}
	for (int guard = nord; node && node != head && guard < WALK_MAX_THREADS; guard++) {
		uint64_t thaddr = node - (uint64_t)L->th_lt_node;
		struct walk_slot *w = slot_of(c, thaddr);
		int have_th = 0, room = (int)(WALK_MAX_TOTAL - s->nframes_total);
		struct thread_read r = { .out = s->frames + s->nframes_total, .room = room - 1 };
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
			err = read_thread(t, c, w, tp, &have_th, &r);
		}
		if (err == -EFAULT)
			err = ERR_TORN;
		if (err && err != ERR_TORN)
			return err;
		if (!have_th)
			return ERR_TORN;
		node = word(tp, L->th_lt_node); /* next */
		finish_thread(t, s, w, tp, owner, flags, err, &r);
		c->order[nord++] = thaddr;
	}
	if (!node || node == head)
		c->norder = nord;
	return 0;
}
