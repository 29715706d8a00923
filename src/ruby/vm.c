/* vm.c: the VM's own words: main thread and ractor, thread list and GVL owner, thread states and tids, the GC. */
#include "vm.h"

#include <errno.h>
#include <string.h>

#include "../lib/err.h"
#include "../proc/task.h"
#include "frames.h"

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
unsigned vm_thread_status(const struct ruby_layout *L, const unsigned char *th)
{
	return (th[L->th_status_byte] >> L->th_status_shift) & ((1u << L->th_status_bits) - 1);
}

int vm_thread_state(struct ruby_target *t, const unsigned char *th, uint64_t thaddr, uint64_t gvl_owner)
{
	const struct ruby_layout *L = t->L;
	unsigned status = vm_thread_status(L, th);
	if (status == (unsigned)L->thread_killed)
		return THREAD_KILLED;
	if (gvl_owner == thaddr)
		return THREAD_RUNNING;
	int ubf = walk_word(th, L->th_unblock_func) != 0;
	if (status == (unsigned)L->thread_stopped_forever && ubf)
		return THREAD_SLEEPING;
	return ubf ? THREAD_BLOCKED : THREAD_GVL_WAIT;
}

#define TID_REREAD 256

/*
 * Where a thread's tid is when rb_thread_t does not hold it: the word of
 * rb_thread_t that points to the struct that does (*th_off: 3.3+ its native
 * thread; 2.7 glibc's pthread, whose address pthread_t is), and the tid's
 * offset there (*off). 0 if the layout knows neither.
 */
static int tid_path(const struct ruby_layout *L, int64_t *th_off, uint64_t *off)
{
	if (L->th_nt >= 0)
		*th_off = L->th_nt, *off = (uint64_t)L->nt_tid;
	else if (L->th_thread_id >= 0)
		*th_off = L->th_thread_id, *off = TASK_GLIBC_PTHREAD_TID_OFFSET;
	else
		return 0;
	return 1;
}

int32_t vm_thread_tid(struct ruby_target *t, struct walk_slot *w, const unsigned char *th, int quiet)
{
	const struct ruby_layout *L = t->L;
	uint32_t tid = 0;
	uint64_t p = 0, off = 0;
	int64_t th_off;
	if (L->th_tid >= 0) {
		memcpy(&tid, th + L->th_tid, 4);
		return (int32_t)tid;
	}
	if (tid_path(L, &th_off, &off))
		p = walk_word(th, th_off);
	if (!p)
		return 0;
	if (quiet && p == w->tid_key && w->tid > 0 && ++w->tid_uses < TID_REREAD)
		return w->tid;
	if (mem_read_u32(&t->mem, p + off, &tid))
		tid = 0;
	w->tid_key = p;
	w->tid = (int32_t)tid;
	w->tid_uses = 0;
	return (int32_t)tid;
}

int32_t vm_thread_tid_at(struct ruby_target *t, uint64_t th)
{
	const struct ruby_layout *L = t->L;
	uint32_t tid = 0;
	uint64_t p = 0, off = 0;
	int64_t th_off;
	if (!th)
		return 0;
	if (th == t->main_thread && t->pid > 0)
		return t->pid; /* (as finish_thread: Ruby's own copy may be another process's, or namespace's) */
	if (L->th_tid >= 0)
		p = th, off = (uint64_t)L->th_tid;
	else if (tid_path(L, &th_off, &off) && mem_read_u64(&t->mem, th + (uint64_t)th_off, &p))
		p = 0;
	if (!p || mem_read_u32(&t->mem, p + off, &tid))
		return 0;
	return vm_host_tid(t, (int32_t)tid);
}

/*
 * A tid as we see it: Ruby keeps the one its own pid namespace gives (a
 * container seen from the host). 0 when the thread is not (or no longer)
 * among the process's: a tid of another namespace would name another thread.
 */
int32_t vm_thread_host_tid(struct ruby_target *t, struct walk_slot *w, const unsigned char *th, int quiet)
{
	return w->th == t->main_thread && t->pid > 0 ? t->pid : vm_host_tid(t, vm_thread_tid(t, w, th, quiet));
}

int32_t vm_host_tid(struct ruby_target *t, int32_t tid)
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
uint64_t vm_gc_word_addr(const struct ruby_target *t)
{
	const struct ruby_layout *L = t->L;
	return t->objspace && L->gc_during_byte >= 0 && L->gc_mode_byte >= 0 ? t->objspace + (uint64_t)gc_word(L) : 0;
}

static int gc_bit(const struct ruby_layout *L, uint32_t w, int64_t byte, int64_t shift, int64_t bits)
{
	return (int)((w >> ((byte - gc_word(L)) * 8 + shift)) & ((1u << bits) - 1));
}

/* What the GC is doing: nothing, or collecting (during_gc), in which phase. */
int vm_gc_phase(const struct ruby_layout *L, uint32_t w)
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
int vm_read_main(struct ruby_target *t)
{
	const struct ruby_layout *L = t->L;
	if (t->main_thread)
		return 0;
	int err = mem_read_u64(&t->mem, t->vm + (uint64_t)L->vm_main_thread, &t->main_thread);
	if (!err && L->vm_main_ractor >= 0)
		err = mem_read_u64(&t->mem, t->vm + (uint64_t)L->vm_main_ractor, &t->main_ractor);
	t->objspace = 0;
	if (!err && L->vm_objspace >= 0 &&
	    ((L->gc_during_byte >= 0 && L->gc_mode_byte >= 0) || L->gc_count >= 0 || L->gc_pool_eden_slots >= 0 ||
	     L->gc_pages_sorted >= 0) &&
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
	int err = vm_read_main(t);
	if (err)
		return err;
	if (!t->objspace || (L->gc_count < 0 && L->gc_pool_eden_slots < 0))
		return ERR_UNSUPPORTED;
	if (L->gc_count >= 0 && (err = gc_counters(t, out)))
		return err;
	err = gc_heap_slots(t, out);
	return out->have_count ? 0 : err; /* the counts stand without the slots */
}


int vm_list_area(struct ruby_target *t, struct list_area *a)
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

void vm_list_parse(const struct list_area *a, const unsigned char *buf, uint64_t *head, uint64_t *first,
		       uint64_t *owner)
{
	*head = a->base + (uint64_t)a->hoff;
	*first = walk_word(buf, a->hoff - a->lo); /* list_head { n { next, prev } } */
	*owner = walk_word(buf, a->ooff - a->lo);
}

/* The GC's frame for phase (not GC_NONE). */
struct ruby_frame vm_gc_frame(struct ruby_target *t, int phase)
{
	static const char *const names[] = { "", "(garbage collection)", "(garbage collection: marking)",
					     "(garbage collection: sweeping)", "(garbage collection: compacting)" };
	return (struct ruby_frame){ ruby_intern(t, names[phase]), 0, 0, FRAME_GC };
}

int ruby_capture_addrs(struct ruby_target *t, uint64_t *owner, uint64_t *gc)
{
	struct list_area a;
	int err = vm_read_main(t);
	err = err ?: vm_list_area(t, &a);
	if (err)
		return err == -EFAULT ? ERR_TORN : err;
	*owner = a.base + (uint64_t)a.ooff;
	*gc = vm_gc_word_addr(t);
	return 0;
}

int ruby_gc_frame(struct ruby_target *t, uint32_t gcw, struct ruby_frame *f)
{
	int phase = vm_gc_phase(t->L, gcw);
	if (phase == GC_NONE)
		return 0;
	*f = vm_gc_frame(t, phase);
	return 1;
}
