/* alloc.c: `rbscope record --mode alloc`: allocations sampled at random by count, each with its stack, class and size, written to a shared ring. */
#include "agent.h"
#include "ring.h"
#include "proto.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <ruby/debug.h>
#include <ruby/st.h>

/*
 * The hook on allocation (RUBY_INTERNAL_EVENT_NEWOBJ) only counts down to
 * the next sample; the gaps are drawn from a geometric law of their mean,
 * so that every allocation it sees has the same chance to be sampled and no
 * loop can fall in step with the sampler. Its cost is being there: while
 * it is installed Ruby takes its slow path for every allocation. So by
 * default it is installed only in windows (window.c), WINDOW_NS long, open
 * 1/WINDOW_DEN of the time at random, and samples WINDOW_DEN times as often
 * inside them: one allocation in `interval` still, on average, each
 * allocation as likely as any other to be sampled. With windows=0 (or an
 * interval too small to divide) it stays installed throughout. A sample takes
 * the frames (rb_profile_frames: no allocation, as the hook must not
 * allocate), the object and its class, and asks for a postponed job, which
 * Ruby runs soon after, outside the allocation: it measures the object
 * (filled by then), names new frames and classes, and writes the records.
 * Until then the GC sees the pending objects, classes and frames through
 * the holder below (marked: alive and not moved).
 */
#define ALLOC_MAX_FRAMES 256
/*
 * Samples waiting for the job: as many as a long C call that never lets the
 * job run (JSON.parse of a big document) makes. One begun inside a window is
 * sampled at the window's rate (one in interval/WINDOW_DEN) to its end: 262144 holds a
 * call of 4M allocations at the default (12 MB at most, while it lasts); past
 * that they are counted lost. Their frames go to one pool, a sample whose
 * stack is the one before's sharing its frames.
 */
#define ALLOC_PENDING_MAX 262144
#define WINDOW_NS 2000000ull
#define WINDOW_DEN 64
/*
 * After a window ends the hook stays until the job removes it at the next
 * interrupt check. The allocations before then count only when the first
 * came within WINDOW_TAIL_NS of the end: the program was allocating as the
 * window ended (a long C call begun inside it counts whole, as it would if
 * it had begun just before). A first one later than that comes after a
 * quiet spell the window ended in: nothing counts until the next window.
 */
#define WINDOW_TAIL_NS 1000000ull
#define ALLOC_POOL_MAX (1u << 20)

/* Defined in every libruby since 2.x (ObjectSpace.memsize_of's own), declared only in Ruby's internal headers. */
size_t rb_obj_memsize_of(VALUE obj);

struct pending {
	VALUE obj, klass; /* klass: Qfalse when the type says it is no class (an imemo's word is data) */
	int type;
	uint32_t tid;
	uint64_t ts;
	uint32_t off;     /* its frames: pool_frames[off .. off + nframes), and their lines */
	int nframes, truncated;
};

/*
 * `heap live`: sampled objects followed until they are freed (the FREEOBJ
 * event): an open-addressing table of their addresses (never marked: it must
 * not keep them) and sample numbers. A freed slot leaves the table before
 * another object can take the address.
 */
#define LIVE_MAX (1u << 22)
struct livetab {
	VALUE *keys; /* 0 empty, 1 a removed entry */
	uint64_t *ids;
	uint32_t cap, n, used; /* used: entries and removed ones */
};

struct allocs {
	volatile int live; /* cleared in a fork's child */
	int follow;        /* heap live: follow sampled objects until freed */
	struct livetab lt;
	VALUE free_tp;
	uint64_t seq, untracked, frees_lost;
	uint64_t compact0, compactions; /* GC.stat(:compact_count) at the start; runs since */
	int compact_known;               /* this Ruby's GC.stat has that key (probed once, at the start) */
	int in_job;        /* the job's own allocations are not sampled */
	struct ring_hdr *ring;
	struct ring_prod prod;
	size_t map_size;
	uint64_t interval, countdown, rng;
	uint32_t den;       /* 1: the hook in throughout; else windows open 1/den of the time */
	double in_interval; /* the mean gap between samples while the hook is in: interval / den */
	int closing, tail;  /* windows: the end seen and the job asked for; allocations until it runs count */
	uint64_t windows;   /* windows the hook was put in for */
	uint64_t hook_ns;   /* ns the hook was in before its last install */
	uint64_t hook_since; /* when it was installed; 0 while it is out */
	uint64_t seen, sampled, lost;
	VALUE tp;
	st_table *ids; /* frame or class VALUE (a type: its number * 2 + 1) -> id */
	uint32_t next_id;
	VALUE keep; /* everything with an id, alive (and so never another object at its address) while it is used */
	struct pending *pending;
	uint32_t npending, pending_cap;
	VALUE *pool_frames;
	int *pool_lines;
	uint32_t pool_len, pool_cap;
	VALUE frames[ALLOC_MAX_FRAMES]; /* the hook's reading, before it joins the pool */
	int lines[ALLOC_MAX_FRAMES];
};

static struct allocs *cur; /* one allocation recording per process */
static VALUE holder;       /* marks cur's VALUEs */
static ID id_total_allocated, id_compact_count;
#ifdef HAVE_RB_POSTPONED_JOB_PREREGISTER
static rb_postponed_job_handle_t job_handle;
#endif
static __thread uint32_t my_tid __attribute__((tls_model("initial-exec")));

static void holder_mark(void *p)
{
	(void)p;
	struct allocs *a = cur;
	if (!a)
		return;
	rb_gc_mark(a->keep);
	rb_gc_mark(a->tp);
	rb_gc_mark(a->free_tp);
	for (uint32_t i = 0; i < a->npending; i++) {
		struct pending *q = &a->pending[i];
		rb_gc_mark(q->obj);
		if (q->klass)
			rb_gc_mark(q->klass);
	}
	for (uint32_t i = 0; i < a->pool_len; i++)
		rb_gc_mark(a->pool_frames[i]);
}

static const rb_data_type_t holder_type = {
	.wrap_struct_name = "rbscope/allocs",
	.function = { .dmark = holder_mark },
	.flags = RUBY_TYPED_FREE_IMMEDIATELY,
};

/* Allocations until the next sample: geometric with mean in_interval (1 samples every allocation). */
static uint64_t next_gap(struct allocs *a)
{
	if (a->in_interval <= 1)
		return 1;
	double g = ceil(log(agent_unit(&a->rng)) / log1p(-1.0 / a->in_interval));
	return g < 1 ? 1 : g > 1e18 ? (uint64_t)1e18 : (uint64_t)g;
}

/* Types whose class word is a class (of the others, an imemo's holds data). */
static int has_class(int type)
{
	switch (type) {
	case T_OBJECT: case T_CLASS: case T_MODULE: case T_FLOAT: case T_STRING: case T_REGEXP: case T_ARRAY:
	case T_HASH: case T_STRUCT: case T_BIGNUM: case T_FILE: case T_DATA: case T_MATCH: case T_COMPLEX:
	case T_RATIONAL: case T_SYMBOL:
		return 1;
	default:
		return 0;
	}
}

static void job(void *data);

static void schedule_job(void)
{
#ifdef HAVE_RB_POSTPONED_JOB_PREREGISTER
	rb_postponed_job_trigger(job_handle);
#else
	rb_postponed_job_register_one(0, job, NULL);
#endif
}

/* Room for one more pending sample: 0, or -1 when there is none (at the cap, or no memory). */
static int pend_room(struct allocs *a)
{
	if (a->npending < a->pending_cap)
		return 0;
	uint32_t cap = a->pending_cap ? a->pending_cap * 2 : 64;
	if (cap > ALLOC_PENDING_MAX)
		return -1;
	struct pending *v = realloc(a->pending, cap * sizeof(*v)); /* (libc's: the hook may not make Ruby objects) */
	if (!v)
		return -1;
	a->pending = v;
	a->pending_cap = cap;
	return 0;
}

/* Room for n more frames in the pool: 0 or -1. */
static int pool_room(struct allocs *a, uint32_t n)
{
	if (a->pool_len + n <= a->pool_cap)
		return 0;
	uint32_t cap = a->pool_cap ? a->pool_cap : 4096;
	while (cap < a->pool_len + n)
		cap *= 2;
	if (cap > ALLOC_POOL_MAX)
		return -1;
	int *l = realloc(a->pool_lines, cap * sizeof(*l));
	if (l)
		a->pool_lines = l;
	VALUE *f = l ? realloc(a->pool_frames, cap * sizeof(*f)) : NULL;
	if (!f)
		return -1;
	a->pool_frames = f;
	a->pool_cap = cap;
	return 0;
}

static void newobj_hook(VALUE tpval, void *data)
{
	struct allocs *a = data;
	if (a->den > 1 && !__atomic_load_n(&window_want, __ATOMIC_ACQUIRE)) {
		if (!a->closing) {
			a->closing = 1;
			a->tail = agent_now_ns() - __atomic_load_n(&window_closed_ns, __ATOMIC_RELAXED) < WINDOW_TAIL_NS;
			window_schedule(); /* (this thread holds the GVL) */
		}
		if (!a->tail)
			return;
	}
	a->seen++;
	if (--a->countdown)
		return;
	a->countdown = next_gap(a);
	if (!a->live || a->in_job)
		return;
	a->sampled++;
	VALUE obj = rb_tracearg_object(rb_tracearg_from_tracepoint(tpval));
	if (SPECIAL_CONST_P(obj) || pend_room(a)) {
		a->lost++;
		return;
	}
	int n = rb_profile_frames(0, ALLOC_MAX_FRAMES, a->frames, a->lines);
	if (n < 0)
		n = 0;
	struct pending *q = &a->pending[a->npending];
	const struct pending *last = a->npending ? q - 1 : NULL;
	if (last && last->nframes == n && !memcmp(a->pool_frames + last->off, a->frames, (size_t)n * sizeof(VALUE)) &&
	    !memcmp(a->pool_lines + last->off, a->lines, (size_t)n * sizeof(int))) {
		q->off = last->off; /* the same stack: a loop, or a C call making many */
	} else if (pool_room(a, (uint32_t)n)) {
		a->lost++;
		return;
	} else {
		q->off = a->pool_len;
		memcpy(a->pool_lines + a->pool_len, a->lines, (size_t)n * sizeof(int));
		memcpy(a->pool_frames + a->pool_len, a->frames, (size_t)n * sizeof(VALUE));
		a->pool_len += (uint32_t)n; /* (after the frames: holder_mark reads them) */
	}
	q->nframes = n;
	q->truncated = n == ALLOC_MAX_FRAMES;
	q->obj = obj;
	q->type = RB_BUILTIN_TYPE(obj);
	q->klass = has_class(q->type) ? RBASIC_CLASS(obj) : 0;
	if (!my_tid)
		my_tid = (uint32_t)syscall(SYS_gettid);
	q->tid = my_tid;
	q->ts = agent_now_ns();
	a->npending++; /* (after the fields: holder_mark reads them) */
	schedule_job();
}

static const char *type_name(int type)
{
	switch (type) {
	case T_OBJECT: return "T_OBJECT";
	case T_CLASS: return "T_CLASS";
	case T_MODULE: return "T_MODULE";
	case T_FLOAT: return "T_FLOAT";
	case T_STRING: return "T_STRING";
	case T_REGEXP: return "T_REGEXP";
	case T_ARRAY: return "T_ARRAY";
	case T_HASH: return "T_HASH";
	case T_STRUCT: return "T_STRUCT";
	case T_BIGNUM: return "T_BIGNUM";
	case T_FILE: return "T_FILE";
	case T_DATA: return "T_DATA";
	case T_MATCH: return "T_MATCH";
	case T_COMPLEX: return "T_COMPLEX";
	case T_RATIONAL: return "T_RATIONAL";
	case T_SYMBOL: return "T_SYMBOL";
	case T_IMEMO: return "T_IMEMO";
	case T_NODE: return "T_NODE";
	case T_ICLASS: return "T_ICLASS";
	default: return "T_NONE";
	}
}

/* The id of key (a frame or class VALUE, or a type's odd number), 0 if it has none yet. */
static uint32_t id_of(struct allocs *a, st_data_t key)
{
	st_data_t v;
	return st_lookup(a->ids, key, &v) ? (uint32_t)v : 0;
}

static int send_name(struct allocs *a, uint32_t id, const char *s, size_t n)
{
	struct ring_name *r = ring_reserve(&a->prod, (uint32_t)(sizeof(*r) + n), RING_NAME);
	if (!r)
		return -1;
	r->id = id;
	r->len = (uint32_t)n;
	memcpy(r + 1, s, n);
	ring_commit(&a->prod, r);
	return 0;
}

static VALUE str_or_empty(VALUE s)
{
	return RB_TYPE_P(s, T_STRING) ? s : rb_str_new(NULL, 0);
}

/* A frame's id, named in the ring the first time; 0 if the ring had no room. */
static uint32_t frame_id(struct allocs *a, VALUE f)
{
	uint32_t id = id_of(a, (st_data_t)f);
	if (id)
		return id;
	VALUE path = rb_profile_frame_path(f);
	VALUE name = str_or_empty(rb_profile_frame_full_label(f));
	int cfunc = NIL_P(path);
	path = str_or_empty(path);
	size_t nl = (size_t)RSTRING_LEN(name), pl = (size_t)RSTRING_LEN(path);
	struct ring_frame *r = ring_reserve(&a->prod, (uint32_t)(sizeof(*r) + nl + pl), RING_FRAME);
	if (!r)
		return 0;
	id = a->next_id++;
	r->id = id;
	r->kind = cfunc ? RING_FRAME_CFUNC : RING_FRAME_RUBY;
	r->name_len = (uint32_t)nl;
	r->path_len = (uint32_t)pl;
	memcpy(r + 1, RSTRING_PTR(name), nl);
	memcpy((char *)(r + 1) + nl, RSTRING_PTR(path), pl);
	ring_commit(&a->prod, r);
	st_insert(a->ids, (st_data_t)f, id);
	rb_ary_push(a->keep, f);
	return id;
}

/* The id of the class of a pending object, or of its type when it has none to show. */
static uint32_t class_id(struct allocs *a, const struct pending *q)
{
	VALUE real = q->klass ? rb_class_real(q->klass) : 0;
	st_data_t key = real ? (st_data_t)real : (st_data_t)q->type * 2 + 1;
	uint32_t id = id_of(a, key);
	if (id)
		return id;
	VALUE name;
	if (real)
		name = str_or_empty(rb_class_name(real));
	else if (q->type == T_IMEMO)
		name = rb_str_new_cstr("(imemo)");
	else
		name = rb_sprintf("(hidden %s)", type_name(q->type));
	id = a->next_id;
	if (send_name(a, id, RSTRING_PTR(name), (size_t)RSTRING_LEN(name)))
		return 0;
	a->next_id++;
	st_insert(a->ids, key, id);
	if (real)
		rb_ary_push(a->keep, real);
	return id;
}

static uint32_t live_slot(VALUE v, uint32_t cap)
{
	return (uint32_t)(((uint64_t)v >> 3) * 0x9E3779B97F4A7C15ULL >> 32) & (cap - 1);
}

/* Follow obj as sample id; 0, or -1 when the table is full (the object is then not followed). */
static int live_put(struct livetab *t, VALUE obj, uint64_t id)
{
	if ((t->used + 1) * 4 > t->cap * 3) { /* grow (or clean out removed entries) at 3/4 */
		uint32_t cap = t->n * 2 + 2 > t->cap / 2 ? t->cap * 2 : t->cap;
		if (cap < 1024)
			cap = 1024;
		if (t->n >= LIVE_MAX)
			return -1;
		VALUE *keys = calloc(cap, sizeof(*keys));
		uint64_t *ids = malloc(cap * sizeof(*ids));
		if (!keys || !ids) {
			free(keys);
			free(ids);
			return -1;
		}
		for (uint32_t i = 0; i < t->cap; i++) {
			if (t->keys[i] <= 1)
				continue;
			uint32_t j = live_slot(t->keys[i], cap);
			while (keys[j])
				j = (j + 1) & (cap - 1);
			keys[j] = t->keys[i];
			ids[j] = t->ids[i];
		}
		free(t->keys);
		free(t->ids);
		t->keys = keys;
		t->ids = ids;
		t->cap = cap;
		t->used = t->n;
	}
	uint32_t j = live_slot(obj, t->cap);
	while (t->keys[j] > 1 && t->keys[j] != obj)
		j = (j + 1) & (t->cap - 1);
	if (t->keys[j] != obj) {
		t->used += !t->keys[j];
		t->n++;
	}
	t->keys[j] = obj;
	t->ids[j] = id;
	return 0;
}

/* If obj is followed: forget it, its sample's number in *id, 1. */
static int live_take(struct livetab *t, VALUE obj, uint64_t *id)
{
	if (!t->n)
		return 0;
	for (uint32_t j = live_slot(obj, t->cap);; j = (j + 1) & (t->cap - 1)) {
		if (!t->keys[j])
			return 0;
		if (t->keys[j] == obj) {
			*id = t->ids[j];
			t->keys[j] = 1;
			t->n--;
			return 1;
		}
	}
}

/* A followed object was freed (in the GC's sweep: nothing here may allocate or call Ruby). */
static void freeobj_hook(VALUE tpval, void *data)
{
	struct allocs *a = data;
	uint64_t id;
	if (!a->lt.n || !live_take(&a->lt, rb_tracearg_object(rb_tracearg_from_tracepoint(tpval)), &id) || !a->live)
		return;
	struct ring_free *r = ring_reserve(&a->prod, sizeof(*r), RING_FREE);
	if (!r) {
		a->frees_lost++;
		return;
	}
	r->id = id;
	ring_commit(&a->prod, r);
}

static void send_sample(struct allocs *a, const struct pending *q)
{
	uint32_t klass = class_id(a, q);
	struct ring_alloc_frame fr[ALLOC_MAX_FRAMES];
	int ok = klass != 0;
	for (int i = 0; ok && i < q->nframes; i++) {
		fr[i].id = frame_id(a, a->pool_frames[q->off + i]);
		fr[i].line = a->pool_lines[q->off + i];
		ok = fr[i].id != 0;
	}
	size_t fbytes = (size_t)q->nframes * sizeof(fr[0]);
	struct ring_alloc *r = ok ? ring_reserve(&a->prod, (uint32_t)(sizeof(*r) + fbytes), RING_ALLOC) : NULL;
	if (!r) {
		a->lost++;
		return;
	}
	r->tid = q->tid;
	r->klass = klass;
	r->ts = q->ts;
	r->bytes = rb_obj_memsize_of(q->obj);
	r->nframes = (uint32_t)q->nframes;
	r->truncated = (uint32_t)q->truncated;
	r->id = ++a->seq;
	memcpy(r + 1, fr, fbytes);
	if (a->follow && live_put(&a->lt, q->obj, r->id))
		a->untracked++;
	ring_commit(&a->prod, r);
}

static VALUE compact_count_body(VALUE unused)
{
	(void)unused;
	return SIZET2NUM(rb_gc_stat(ID2SYM(id_compact_count)));
}

/* GC.stat(:compact_count) in *n: 1, or 0 where this Ruby has no such key (GC.stat raises then). */
static int compact_count(uint64_t *n)
{
	int state = 0;
	VALUE v = rb_protect(compact_count_body, Qnil, &state);
	if (state) {
		rb_set_errinfo(Qnil);
		return 0;
	}
	*n = NUM2ULL(v);
	return 1;
}

static uint64_t vm_total(void)
{
	return (uint64_t)rb_gc_stat(ID2SYM(id_total_allocated));
}

static void send_counts(struct allocs *a, int end)
{
	struct ring_allocs *r = ring_reserve(&a->prod, sizeof(*r), RING_ALLOCS);
	if (!r)
		return;
	r->r.flags = (uint16_t)end;
	r->vm_total = vm_total();
	r->seen = a->seen;
	r->sampled = a->sampled;
	r->lost = a->lost;
	r->interval = a->interval;
	r->den = a->den;
	r->windows = a->windows;
	r->hook_ns = a->hook_ns + (a->hook_since ? agent_now_ns() - a->hook_since : 0);
	r->ts = agent_now_ns();
	r->live = a->lt.n;
	r->untracked = a->untracked;
	r->frees_lost = a->frees_lost;
	r->compactions = a->compactions;
	ring_commit(&a->prod, r);
}

static VALUE send_pending(VALUE arg)
{
	struct allocs *a = (struct allocs *)arg;
	/* In order; all stay marked until the last is sent (a GC the naming starts keeps them all). */
	for (uint32_t i = 0; i < a->npending; i++)
		if (a->live)
			send_sample(a, &a->pending[i]);
	a->npending = 0;
	a->pool_len = 0;
	return Qnil;
}

static void job(void *data)
{
	(void)data;
	struct allocs *a = cur;
	if (!a || a->in_job)
		return;
	a->in_job = 1;
	if (a->follow && a->live && a->compact_known) {
		/* An object GC.compact moves leaves its address behind without a free: say so (heap live warns). */
		uint64_t n = (uint64_t)rb_gc_stat(ID2SYM(id_compact_count)) - a->compact0;
		if (n != a->compactions) {
			a->compactions = n;
			send_counts(a, 0);
		}
	}
	int state = 0;
	rb_protect(send_pending, (VALUE)a, &state);
	if (state) { /* (nothing here raises: but should naming ever, the program never sees it) */
		rb_set_errinfo(Qnil);
		a->lost += (uint64_t)a->npending;
		a->npending = 0;
		a->pool_len = 0;
	}
	a->in_job = 0;
}

/* Install the allocation hook (counted as a window) and note when. */
static void hook_in(struct allocs *a)
{
	rb_tracepoint_enable(a->tp);
	a->windows++;
	a->hook_since = agent_now_ns();
}

/* Remove it, if in, adding its time in. */
static void hook_out(struct allocs *a)
{
	if (!a->hook_since)
		return;
	rb_tracepoint_disable(a->tp);
	a->hook_ns += agent_now_ns() - a->hook_since;
	a->hook_since = 0;
}

/* Windows: install or remove the hook as the timer wants it now (a postponed job: the GVL held, no hook running). */
static void window_job(void *data)
{
	(void)data;
	struct allocs *a = cur;
	if (!a || a->den < 2)
		return;
	if (a->live && __atomic_load_n(&window_want, __ATOMIC_ACQUIRE)) {
		a->closing = 0;
		if (!a->hook_since)
			hook_in(a);
	} else if (a->hook_since) {
		hook_out(a);
		a->closing = 0;
		if (a->live)
			send_counts(a, 0);
	}
	window_applied(a->hook_since != 0);
}

struct allocs *allocs_start(const char *settings, int *ring_fd, VALUE *err)
{
	if (cur) {
		*err = rb_str_new_cstr("allocations of this process are being recorded already (one recording at a time)");
		return NULL;
	}
	unsigned long long interval = 0, buffer = 4u << 20;
	const char *s = strstr(settings, "interval=");
	if (s)
		interval = agent_decimal(s + 9, NULL);
	if ((s = strstr(settings, "buffer=")))
		buffer = agent_decimal(s + 7, NULL);
	int follow = strstr(settings, "live=1") != NULL;
	int windows = strstr(settings, "windows=0") == NULL;
	if (!interval || interval > (1ULL << 40) || buffer < 65536 || buffer > (1ULL << 30) || (buffer & (buffer - 1))) {
		*err = rb_sprintf("bad allocation settings '%s'", settings);
		return NULL;
	}
	struct allocs *a = calloc(1, sizeof(*a));
	if (!a) {
		*err = rb_str_new_cstr("out of memory");
		return NULL;
	}
	a->ring = agent_ring_create("rbscope-allocs", buffer, ring_fd, &a->map_size);
	if (!a->ring) {
		*err = rb_sprintf("cannot make the allocation ring: %s", strerror(errno));
		free(a);
		return NULL;
	}
	ring_prod_init(&a->prod, a->ring);
	a->interval = interval;
	a->den = windows && interval >= 2 * WINDOW_DEN ? WINDOW_DEN : 1;
	a->in_interval = (double)interval / a->den;
	a->rng = agent_now_ns() ^ (uint64_t)getpid() << 32 ^ (uint64_t)(uintptr_t)a;
	if (!a->rng)
		a->rng = 1;
	a->countdown = next_gap(a);
	a->ids = st_init_numtable();
	a->next_id = 1;
	a->keep = a->tp = a->free_tp = Qnil;
	a->follow = follow;
	cur = a; /* first: holder_mark keeps what is made from here on */
	a->keep = rb_ary_new();
	a->tp = rb_tracepoint_new(0, RUBY_INTERNAL_EVENT_NEWOBJ, newobj_hook, a);
	if (follow)
		a->free_tp = rb_tracepoint_new(0, RUBY_INTERNAL_EVENT_FREEOBJ, freeobj_hook, a);
	a->live = 1;
	a->compact_known = compact_count(&a->compact0);
	send_counts(a, 0);
	if (follow)
		rb_tracepoint_enable(a->free_tp);
	if (a->den > 1) {
#ifndef HAVE_RB_POSTPONED_JOB_PREREGISTER
		rb_postponed_job_register_one(0, job, NULL); /* (window.c says why: they run soon and do nothing) */
		rb_postponed_job_register_one(0, window_job, NULL);
#endif
		int e = window_start(WINDOW_NS, a->den, agent_random(&a->rng));
		if (e) {
			*err = rb_sprintf("cannot start the allocation windows' timer: %s", strerror(e));
			allocs_stop(a);
			return NULL;
		}
		*err = rb_sprintf("sampling one allocation in %llu on average: one in %.6g inside windows of %g ms, "
				  "open 1/%u of the time at random%s", interval, a->in_interval,
				  (double)WINDOW_NS / 1e6, a->den, follow ? "; each followed until it is freed" : "");
	} else {
		hook_in(a);
		*err = rb_sprintf("sampling one allocation in %llu on average, the hook in throughout%s", interval,
				  follow ? "; each followed until it is freed" : "");
	}
	return a;
}

void allocs_stop(struct allocs *a)
{
	window_stop();
	hook_out(a);
	if (a->follow)
		rb_tracepoint_disable(a->free_tp);
	if (a->live) { /* (not in a fork's child: the ring is its parent's) */
		job(NULL); /* the samples still waiting */
		send_counts(a, 1);
	}
	a->live = 0;
	a->npending = 0;
	a->pool_len = 0;
	cur = NULL;
	st_free_table(a->ids);
	munmap(a->ring, a->map_size);
	free(a->lt.keys);
	free(a->lt.ids);
	free(a->pending);
	free(a->pool_frames);
	free(a->pool_lines);
	free(a);
}

void allocs_forked(void)
{
	/* In the child right after fork: only flags; the hook stays silent until the session is dropped. */
	if (cur)
		cur->live = 0;
	window_forked();
}

/* At exit, before Ruby frees its VM: the timer must not ask it for a job then. */
static void allocs_at_exit(VALUE unused)
{
	(void)unused;
	window_stop();
}

void allocs_init(void)
{
	id_total_allocated = rb_intern("total_allocated_objects");
	id_compact_count = rb_intern("compact_count");
	holder = TypedData_Wrap_Struct(0, &holder_type, &cur); /* (not NULL: the GC marks no data object without data) */
	rb_gc_register_mark_object(holder);
#ifdef HAVE_RB_POSTPONED_JOB_PREREGISTER
	job_handle = rb_postponed_job_preregister(0, job, NULL);
#endif
	window_init(window_job);
	rb_set_end_proc(allocs_at_exit, Qnil);
}
