/* trace.c: the hooks of `rbscope trace`: targeted TracePoints for Ruby methods, a C-call filter for C methods, GC events, expression values, all written to a shared ring. */
#include "agent.h"
#include "ring.h"
#include "tsc.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <ruby/debug.h>

#define STK_MAX 1024
/* In a C method's number in the filter table: the method has expressions (the CLI's numbers stay below 2^24). */
#define ID_EXPR 0x80000000u
/* Bytes of expression values one call may write. */
#define EXPR_TEXT_MAX 4096

/* (class, method ID) -> our method number; open addressing, power-of-two size. */
struct mtab {
	VALUE *klass;
	VALUE *mid;
	uint32_t *id;
	uint32_t cap, n;
};

struct tracer {
	int slot;
	uint32_t gen;
	volatile int live; /* cleared in a fork's child: its hooks must not write to the parent's ring */
	struct ring_hdr *ring;
	struct ring_prod prod;
	size_t map_size;
	/* settings */
	int firehose, slow_cpu, gc, emit_calls;
	uint64_t slow_ns;
	/* methods */
	struct mtab cfilter; /* C methods traced by name; under --firehose also the Ruby methods with expressions */
	struct mtab names;   /* firehose: every method seen, and its number */
	/* fast_hook's last cfilter hit: Ruby's raw defined class (maybe an iclass), method ID, our number */
	VALUE hit_klass, hit_mid;
	uint32_t hit_id;
	uint32_t next_id;
	VALUE keep;          /* a Ruby array: the classes we hold numbers for, and tps; marked while tracing */
	VALUE labels;        /* method number -> its label (a String), for --slow's callers; in keep */
	VALUE tps;           /* the TracePoints to disable at the end */
	VALUE exprs;         /* method number -> its Rbscope::Agent::Exprs (lib/rbscope/exprs.rb), or nil */
	uint32_t cexprs;     /* how many C methods have expressions */
	uint32_t rexprs;     /* --firehose: how many Ruby methods have expressions (their TracePoint writes their events) */
	/* GC */
	uint64_t gc_start, gc_mark, gc_enter, gc_pause, gc_major0;
	uint32_t gc_steps;
	int gc_phase; /* 0 idle, 1 marking, 2 sweeping, 3 swept */
};

static struct tracer *tracers[AGENT_MAX_TRACERS];
struct tsc_clock tsc_clock;
/*
 * For the C-call hook, which sees every C call of the process: the live tracers packed together, and
 * one bit per C method name any of them filters on, so that most calls are turned away after one load.
 * Rebuilt when a tracer starts or stops. A firehose tracer wants every call: no pre-filter then.
 */
static struct tracer *live_tracers[AGENT_MAX_TRACERS];
static int nlive, nfirehose;
static struct tracer *fast_tracer; /* the one live tracer, when fast_hook can serve it; else NULL */
static uint64_t cmid_bits[64];
static uint32_t tracer_gen;
static rb_event_flag_t c_events, r_events; /* what the global hooks are installed for */
static VALUE keep_all;                     /* Ruby array of every live tracer's keep */
static ID id_major_gc_count, id_ruby_values, id_c_values;
/* Set while this thread evaluates expressions: a traced call made by them is not traced. */
static __thread int in_exprs __attribute__((tls_model("initial-exec")));

/* Per thread: its kernel tid and one stack of traced calls per tracer slot. */
struct frame {
	uint32_t id;
	uint32_t pad;
	uint64_t t0, cpu0;
};
struct stk {
	uint32_t gen, depth;
	struct frame f[STK_MAX];
};
struct tstate {
	uint32_t tid;
	struct stk *st[AGENT_MAX_TRACERS];
};
static __thread struct tstate *tls __attribute__((tls_model("initial-exec")));
static pthread_key_t tls_key;

static void tstate_free(void *p)
{
	struct tstate *ts = p;
	for (int i = 0; i < AGENT_MAX_TRACERS; i++)
		free(ts->st[i]);
	free(ts);
}

static struct stk *stack_of(struct tracer *t, uint32_t *tid)
{
	struct tstate *ts = tls;
	if (!ts) {
		ts = calloc(1, sizeof(*ts));
		if (!ts)
			return NULL;
		ts->tid = (uint32_t)syscall(SYS_gettid);
		tls = ts;
		pthread_setspecific(tls_key, ts);
	}
	*tid = ts->tid;
	struct stk *s = ts->st[t->slot];
	if (!s) {
		s = malloc(sizeof(*s));
		if (!s)
			return NULL;
		s->gen = t->gen - 1;
		ts->st[t->slot] = s;
	}
	if (s->gen != t->gen) {
		s->gen = t->gen;
		s->depth = 0;
	}
	return s;
}

/* stack_of for fast_hook, out of its way (and no local of its own whose address is taken). */
static __attribute__((noinline)) struct stk *stack_first(struct tracer *t)
{
	uint32_t tid;
	return stack_of(t, &tid);
}

static inline uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* --- method tables --- */

static inline uint32_t mtab_hash(VALUE k, VALUE m)
{
	uint64_t h = ((uint64_t)k >> 3) * 0x9E3779B97F4A7C15ull ^ (uint64_t)m * 0xC2B2AE3D27D4EB4Full;
	return (uint32_t)(h >> 32);
}

static inline int64_t mtab_get(const struct mtab *t, VALUE k, VALUE m)
{
	if (!t->n)
		return -1;
	for (uint32_t i = mtab_hash(k, m) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
		if (!t->klass[i])
			return -1;
		if (t->klass[i] == k && t->mid[i] == m)
			return t->id[i];
	}
}

static int mtab_put(struct mtab *t, VALUE k, VALUE m, uint32_t id)
{
	if ((t->n + 1) * 2 > t->cap) {
		struct mtab g = { .cap = t->cap ? t->cap * 2 : 64 };
		g.klass = calloc(g.cap, sizeof(VALUE));
		g.mid = calloc(g.cap, sizeof(VALUE));
		g.id = calloc(g.cap, sizeof(uint32_t));
		if (!g.klass || !g.mid || !g.id) {
			free(g.klass), free(g.mid), free(g.id);
			return -1;
		}
		for (uint32_t i = 0; i < t->cap; i++)
			if (t->klass[i])
				mtab_put(&g, t->klass[i], t->mid[i], t->id[i]);
		free(t->klass), free(t->mid), free(t->id);
		*t = g;
	}
	uint32_t i = mtab_hash(k, m) & (t->cap - 1);
	while (t->klass[i] && !(t->klass[i] == k && t->mid[i] == m))
		i = (i + 1) & (t->cap - 1);
	if (!t->klass[i])
		t->n++;
	t->klass[i] = k, t->mid[i] = m, t->id[i] = id;
	return 0;
}

static void mtab_free(struct mtab *t)
{
	free(t->klass), free(t->mid), free(t->id);
	memset(t, 0, sizeof(*t));
}

/* --- writing events --- */

static void emit_name(struct tracer *t, uint32_t id, const char *s, size_t n)
{
	if (n > 4096)
		n = 4096;
	struct ring_name *r = ring_reserve(&t->prod, (uint32_t)(sizeof(*r) + n), RING_NAME);
	if (!r)
		return;
	r->id = id;
	r->len = (uint32_t)n;
	memcpy(r + 1, s, n);
	ring_commit(&t->prod, r);
}

static void emit_text(struct tracer *t, uint16_t kind, uint32_t tid, const char *s, size_t n)
{
	if (n > 65536)
		n = 65536;
	struct ring_text *r = ring_reserve(&t->prod, (uint32_t)(sizeof(*r) + n), RING_TEXT);
	if (!r)
		return;
	r->r.flags = kind;
	r->tid = tid;
	r->len = (uint32_t)n;
	memcpy(r + 1, s, n);
	ring_commit(&t->prod, r);
}

/* A CALL or RETURN record, with n bytes of expression values after it (n may be 0). */
static inline void emit_call(struct tracer *t, uint16_t type, uint32_t id, uint32_t tid, uint64_t ts, uint64_t dur,
			     uint64_t cpu, uint32_t depth, const char *text, uint32_t n)
{
	struct ring_call *c = ring_reserve(&t->prod, (uint32_t)sizeof(*c) + n, type);
	if (!c)
		return;
	c->id = id, c->tid = tid, c->ts = ts, c->dur = dur, c->cpu = cpu, c->depth = depth, c->text = n;
	if (n)
		memcpy(c + 1, text, n);
	ring_commit(&t->prod, c);
}

/* A RETURN with no CPU time nor text (the common one), in the short record. */
static inline void emit_ret(struct tracer *t, uint32_t id, uint32_t tid, uint64_t ts, uint64_t dur, uint16_t depth)
{
	struct ring_ret *c = ring_reserve(&t->prod, sizeof(*c), RING_RET);
	if (!c)
		return;
	c->r.flags = depth;
	c->id = id, c->tid = tid, c->ts = ts, c->dur = dur;
	ring_commit(&t->prod, c);
}

static VALUE callers_body(VALUE unused)
{
	(void)unused;
	return rb_funcall(rb_mKernel, rb_intern("caller_locations"), 2, INT2FIX(0), INT2FIX(40));
}

/* Two Strings with the same text? (Anything else, nil included, is not equal: rb_str_equal wants a String.) */
static int str_eq(VALUE a, VALUE b)
{
	return RB_TYPE_P(a, T_STRING) && RB_TYPE_P(b, T_STRING) && rb_str_equal(a, b) == Qtrue;
}

/* A String's tail equal to tail's whole text? */
static int ends_with(VALUE s, VALUE tail)
{
	if (!RB_TYPE_P(s, T_STRING) || !RB_TYPE_P(tail, T_STRING))
		return 0;
	long n = RSTRING_LEN(s), k = RSTRING_LEN(tail);
	return k <= n && !memcmp(RSTRING_PTR(s) + n - k, RSTRING_PTR(tail), (size_t)k);
}

/*
 * A slow call's callers, innermost first, as "label (path:line)" lines, with
 * labels as rbscope's profiles write them ("block (2 levels) in Shop#work"):
 * Ruby's backtrace (caller_locations) gives each frame's block prefix, path
 * and line (a C method's at its caller), and rb_profile_frames() the class
 * that qualifies the method (it reports a block as its method, and Ruby 3.1's
 * Location#label has no class). The traced method's own frame (id's label)
 * is left out.
 */
static void emit_callers(struct tracer *t, uint32_t tid, uint32_t id)
{
	enum { MAX = 40 };
	VALUE frames[MAX];
	int lines[MAX], state = 0;
	int nprof = rb_profile_frames(0, MAX, frames, lines);
	in_exprs = 1;
	VALUE locs = rb_protect(callers_body, Qnil, &state);
	in_exprs = 0;
	if (state || !RB_TYPE_P(locs, T_ARRAY)) {
		rb_set_errinfo(Qnil);
		return;
	}
	VALUE own = rb_ary_entry(t->labels, id), s = rb_str_buf_new(256);
	static ID id_label, id_base, id_path, id_lineno;
	if (!id_label) {
		id_label = rb_intern("label"), id_base = rb_intern("base_label");
		id_path = rb_intern("path"), id_lineno = rb_intern("lineno");
	}
	long n = RARRAY_LEN(locs);
	int skipping = 1, k = 0;
	for (long i = 0; i < n; i++) {
		VALUE loc = rb_ary_entry(locs, i);
		VALUE label = rb_funcall(loc, id_label, 0), base = rb_funcall(loc, id_base, 0);
		VALUE path = rb_funcall(loc, id_path, 0), line = rb_funcall(loc, id_lineno, 0);
		/* the profile's frame of the same method, a few frames on at most */
		for (int j = k; j < nprof && j < k + 4; j++) {
			VALUE pb = rb_profile_frame_base_label(frames[j]);
			if (NIL_P(pb)) /* a C method's frame (Ruby 3.1): its name */
				pb = rb_profile_frame_method_name(frames[j]);
			if (str_eq(pb, base)) {
				VALUE q = rb_profile_frame_qualified_method_name(frames[j]);
				/* Ruby 3.4's labels are qualified already ("block in Shop#work") */
				if (RB_TYPE_P(q, T_STRING) && !ends_with(label, q) && ends_with(label, base)) {
					long pre = RSTRING_LEN(label) - RSTRING_LEN(base);
					label = rb_sprintf("%.*s%" PRIsVALUE, (int)pre, RSTRING_PTR(label), q);
				}
				k = j + 1;
				break;
			}
		}
		if (skipping && i < 3 && str_eq(label, own)) {
			rb_str_resize(s, 0); /* the traced call itself, and whatever was above it */
			skipping = 0;
			continue;
		}
		rb_str_catf(s, "%" PRIsVALUE " (%" PRIsVALUE ":%" PRIsVALUE ")\n", NIL_P(label) ? rb_str_new_cstr("?") : label,
			    NIL_P(path) ? rb_str_new_cstr("?") : path, line);
	}
	emit_text(t, RING_TEXT_CALLERS, tid, RSTRING_PTR(s), (size_t)RSTRING_LEN(s));
	RB_GC_GUARD(s);
	RB_GC_GUARD(locs);
}

/* A call begins; its CALL record is written for --firehose, or when it carries expression values (text). */
static inline void on_call(struct tracer *t, uint32_t id, const char *text, uint32_t n, int with_text)
{
	uint32_t tid;
	struct stk *s = stack_of(t, &tid);
	if (!s)
		return;
	uint64_t now = tsc_now();
	if (s->depth < STK_MAX)
		s->f[s->depth] = (struct frame){ .id = id, .t0 = now, .cpu0 = t->slow_cpu ? clock_ns(CLOCK_THREAD_CPUTIME_ID) : 0 };
	if (t->emit_calls || with_text)
		emit_call(t, RING_CALL, id, tid, now, 0, 0, s->depth, text, n);
	s->depth++;
}

struct ret {
	uint32_t tid, depth;
	uint64_t now, dur, cpu;
};

/* A call ends: pop its frame; 1 and its times in *r when its RETURN is to be written (not too fast for --slow). */
static inline int pop_call(struct tracer *t, uint32_t id, struct ret *r)
{
	struct stk *s = stack_of(t, &r->tid);
	if (!s)
		return 0;
	/* Calls made before the trace began have no frame: find ours, or ignore the return. */
	uint32_t d = s->depth;
	while (d > 0 && (d > STK_MAX || s->f[d - 1].id != id))
		d--;
	if (!d)
		return 0;
	struct frame f = s->f[d - 1];
	s->depth = d - 1;
	r->depth = s->depth;
	r->now = tsc_now();
	r->cpu = t->slow_cpu ? clock_ns(CLOCK_THREAD_CPUTIME_ID) - f.cpu0 : 0;
	r->dur = r->now - f.t0;
	return !t->slow_ns || (t->slow_cpu ? r->cpu : r->dur) >= t->slow_ns;
}

static __attribute__((noinline)) void on_return(struct tracer *t, uint32_t id)
{
	struct ret r;
	if (!pop_call(t, id, &r))
		return;
	if (!t->slow_cpu && r.depth <= UINT16_MAX)
		emit_ret(t, id, r.tid, r.now, r.dur, (uint16_t)r.depth);
	else
		emit_call(t, RING_RETURN, id, r.tid, r.now, r.dur, r.cpu, r.depth, NULL, 0);
	if (t->slow_ns)
		emit_callers(t, r.tid, id);
}

/* A method's label, "Klass#name" or "Klass.name", from Ruby (lib/rbscope/agent.rb). */
static uint32_t name_of(struct tracer *t, VALUE klass, ID mid)
{
	int64_t id = mtab_get(&t->names, klass, mid);
	if (id >= 0)
		return (uint32_t)id;
	uint32_t nid = t->next_id++;
	if (mtab_put(&t->names, klass, mid, nid) < 0)
		return UINT32_MAX;
	VALUE args[2] = { klass, ID2SYM(mid) };
	int ok;
	VALUE label = agent_call(&ok, "label", 2, args);
	if (!ok || !RB_TYPE_P(label, T_STRING))
		label = rb_str_new_cstr("?");
	if (RTEST(klass) && !SPECIAL_CONST_P(klass))
		rb_ary_push(t->keep, klass); /* a class we hold a number for must not be freed and its address reused */
	emit_name(t, nid, RSTRING_PTR(label), (size_t)RSTRING_LEN(label));
	rb_ary_store(t->labels, nid, label);
	return nid;
}

/* --- expressions --- */

/* The tracer of slot as it was when gen was read, or NULL if it stopped since (its memory may be gone). */
static inline struct tracer *tracer_again(int slot, uint32_t gen)
{
	struct tracer *t = tracers[slot];
	return t && t->live && t->gen == gen ? t : NULL;
}

struct expr_args {
	VALUE ex, obj;
	ID how;
};

static VALUE expr_body(VALUE p)
{
	struct expr_args *a = (struct expr_args *)p;
	return rb_funcallv(a->ex, a->how, 1, &a->obj);
}

/*
 * The values of method id's expressions for this call, a String, or Qnil.
 * exprs.rb rescues what an expression raises; what still gets out (a bug of
 * ours) is dropped here, except a signal or a thread kill that arrived
 * meanwhile: that was meant for the app, and goes on into it.
 */
static VALUE eval_exprs(struct tracer *t, uint32_t id, ID how, VALUE obj)
{
	struct expr_args a = { rb_ary_entry(t->exprs, id), obj, how };
	int state = 0;
	in_exprs = 1;
	VALUE v = rb_protect(expr_body, (VALUE)&a, &state);
	in_exprs = 0;
	if (state) {
		VALUE err = rb_errinfo();
		if (!rb_obj_is_kind_of(err, rb_eException) || rb_obj_is_kind_of(err, rb_eSignal))
			rb_jump_tag(state);
		rb_set_errinfo(Qnil);
		return Qnil;
	}
	return RB_TYPE_P(v, T_STRING) ? v : Qnil;
}

/*
 * A call or return of a method with expressions; obj is the TracePoint of a
 * Ruby method or the receiver of a C method. The values are taken at the
 * call, or under --slow at the return of the calls slow enough (fast calls
 * then cost nothing more). Evaluating runs Ruby code, which may let other
 * threads run and stop this tracer: it is looked up again afterwards.
 */
static void expr_event(struct tracer *t, uint32_t id, int call, int ruby, VALUE obj)
{
	if (in_exprs)
		return;
	if (call && t->slow_ns) {
		on_call(t, id, NULL, 0, 0);
		return;
	}
	if (!call && !t->slow_ns) {
		on_return(t, id);
		return;
	}
	struct ret r;
	if (!call && !pop_call(t, id, &r))
		return;
	int slot = t->slot;
	uint32_t gen = t->gen;
	VALUE text = eval_exprs(t, id, ruby ? id_ruby_values : id_c_values, obj);
	if (!(t = tracer_again(slot, gen)))
		return;
	const char *p = NIL_P(text) ? "" : RSTRING_PTR(text);
	long n = NIL_P(text) ? 0 : RSTRING_LEN(text);
	if (n > EXPR_TEXT_MAX)
		n = EXPR_TEXT_MAX;
	if (call) {
		on_call(t, id, p, (uint32_t)n, 1);
	} else {
		emit_call(t, RING_RETURN, id, r.tid, r.now, r.dur, r.cpu, r.depth, p, (uint32_t)n);
		emit_callers(t, r.tid, id);
	}
	RB_GC_GUARD(text);
}

/* --- hooks --- */

typedef void (*raw_hook_fn)(VALUE data, rb_trace_arg_t *arg);
#define HOOK_FN(f) ((rb_event_hook_func_t)(void (*)(void))(raw_hook_fn)(f))

/*
 * The process-wide hook sees every C call of the process, and on a loop
 * that waits on memory every instruction it adds between one call's end and
 * the next call's start costs overlap (bench/trace). Ruby's accessors
 * (rb_tracearg_event_flag, _method_id, _defined_class) are calls, one of
 * them two deep; the hook reads the same fields from Ruby's trace argument
 * instead: struct rb_trace_arg_struct in vm_core.h, the same from 2.7 to
 * 3.3. That layout is private, so it is trusted only after the first events
 * of this process read the same through the API and directly (raw_state);
 * if ever not, the API serves. Only its first fields are read.
 */
struct raw_trace_arg {
	rb_event_flag_t event;
	void *ec;
	const void *cfp;
	VALUE self;
	ID id;
	ID called_id;
	VALUE klass; /* 0 when Ruby has not worked it out yet (then the API must) */
	VALUE data;
	int klass_solved;
};
static int raw_state;    /* > 0: read directly (after that many agreeing events, 8); < 0: through the API */
static uint32_t raw_seen; /* agreeing events so far */

/* What the API says the defined class is, from a raw klass (an include's iclass stands for its module). */
static inline VALUE klass_of(VALUE k)
{
	if (!SPECIAL_CONST_P(k) && RB_BUILTIN_TYPE(k) == T_ICLASS)
		k = RBASIC(k)->klass;
	return k;
}

/* The event, method ID and defined class of a hook's argument; klass is left unresolved (klass_of) on the fast path. */
static inline void read_arg(rb_trace_arg_t *arg, rb_event_flag_t *ev, ID *mid, VALUE *klass, int *raw)
{
	const struct raw_trace_arg *r = (const struct raw_trace_arg *)(void *)arg;
	if (__builtin_expect(raw_state > 0 && r->klass, 1)) {
		*ev = r->event, *mid = r->id, *klass = r->klass, *raw = 1;
		return;
	}
	/* Read directly first (the API fills klass in), then through the API; compare while still checking. */
	rb_event_flag_t rev = r->event;
	ID rid = r->id;
	VALUE rk = r->klass, rself = r->self;
	int unsolved = !r->klass_solved;
	*ev = rb_tracearg_event_flag(arg);
	VALUE sym = rb_tracearg_method_id(arg);
	*mid = NIL_P(sym) ? 0 : SYM2ID(sym);
	*klass = rb_tracearg_defined_class(arg);
	*raw = 0;
	if (raw_state || !rk || !unsolved)
		return;
	if (rev == *ev && rid == *mid && klass_of(rk) == *klass && rself == rb_tracearg_self(arg)) {
		if (++raw_seen >= 8)
			raw_state = 1;
	} else {
		raw_state = -1;
	}
}

/*
 * Process-wide hooks: C-call events while some tracer wants C methods
 * (data Qfalse), Ruby call events for --firehose (data Qtrue). What nobody
 * traces is rejected after one table lookup.
 */
static inline unsigned cmid_bit(ID mid)
{
	return (unsigned)(((uint64_t)mid * 0x9E3779B97F4A7C15ull) >> 52); /* 12 bits */
}

/* 0 when no tracer filters on a C method of this name (1 may still be a name no tracer wants). */
static inline int cmid_maybe(ID mid)
{
	unsigned b = cmid_bit(mid);
	return !!(cmid_bits[b >> 6] & (1ull << (b & 63)));
}

/* Everything but the common rejection (method_hook). */
static __attribute__((noinline)) void method_hook_full(rb_trace_arg_t *arg)
{
	rb_event_flag_t ev;
	ID mid;
	VALUE klass;
	int raw;
	read_arg(arg, &ev, &mid, &klass, &raw);
	int c_event = !!(ev & (RUBY_EVENT_C_CALL | RUBY_EVENT_C_RETURN));
	int call = !!(ev & (RUBY_EVENT_C_CALL | RUBY_EVENT_CALL));
	if (c_event && !nfirehose && !cmid_maybe(mid))
		return;
	if (raw)
		klass = klass_of(klass);
	for (int i = 0; i < nlive; i++) {
		struct tracer *t = live_tracers[i];
		if (!t || !t->live)
			continue;
		int64_t id = -1;
		if (c_event && (!t->firehose || t->cexprs))
			id = mtab_get(&t->cfilter, klass, mid);
		else if (!c_event && t->rexprs && mtab_get(&t->cfilter, klass, mid) >= 0)
			continue; /* written, with its values, by its own TracePoint */
		if (id >= 0 && (id & ID_EXPR)) {
			expr_event(t, (uint32_t)id & ~ID_EXPR, call, 0, rb_tracearg_self(arg));
			continue;
		}
		if (t->firehose)
			id = name_of(t, klass, mid);
		else if (id < 0)
			continue;
		if (call)
			on_call(t, (uint32_t)id, NULL, 0, 0);
		else
			on_return(t, (uint32_t)id);
	}
}

/* fast_hook's return of the call on top of s (a function of its own: the call path needs few registers). */
static __attribute__((noinline)) void fast_return(struct tracer *t, struct stk *s, uint32_t tid, uint32_t id)
{
	uint64_t now = tsc_now();
	uint32_t d = --s->depth;
	emit_ret(t, id, tid, now, now - s->f[d].t0, (uint16_t)d);
}

/*
 * The common case of a traced C call, in a quarter of method_hook_full's
 * instructions: one tracer, tracing C methods by name with no expressions,
 * --slow or --firehose (fast_tracer, set by update_global_hooks), and the
 * trace argument read directly. It keeps the same stack and writes the same
 * records as on_call and on_return; an unusual return (a call made before
 * the trace began, a stack too deep) is left to on_return.
 */
static __attribute__((noinline)) void fast_hook(const struct raw_trace_arg *r)
{
	struct tracer *t = fast_tracer;
	if (!t->live)
		return; /* a fork's child */
	int64_t id;
	if (r->klass == t->hit_klass && r->id == t->hit_mid) {
		id = t->hit_id;
	} else {
		VALUE k = klass_of(r->klass);
		id = mtab_get(&t->cfilter, k, r->id);
		if (id < 0)
			return;
		if (k == r->klass) /* not an iclass: a class t->keep holds, whose address stays its own */
			t->hit_klass = r->klass, t->hit_mid = r->id, t->hit_id = (uint32_t)id;
	}
	struct tstate *ts = tls;
	struct stk *s;
	if (__builtin_expect(!ts || !(s = ts->st[t->slot]) || s->gen != t->gen, 0)) {
		if (!(s = stack_first(t)))
			return;
		ts = tls;
	}
	uint32_t d = s->depth;
	if (r->event == RUBY_EVENT_C_CALL) {
		if (d < STK_MAX)
			s->f[d] = (struct frame){ .id = (uint32_t)id, .t0 = tsc_now() };
		s->depth = d + 1;
		return;
	}
	if (__builtin_expect(!d || d > STK_MAX || s->f[d - 1].id != (uint32_t)id || d - 1 > UINT16_MAX, 0)) {
		on_return(t, (uint32_t)id);
		return;
	}
	fast_return(t, s, ts->tid, (uint32_t)id);
}

/*
 * Most C calls a process makes are of methods nobody traces: those are
 * turned away here, in a dozen instructions and no stack frame; the
 * common traced call goes to fast_hook, the rest and anything unusual
 * (the API in use, --firehose, several tracers) to method_hook_full.
 */
static void method_hook(VALUE data, rb_trace_arg_t *arg)
{
	(void)data;
	const struct raw_trace_arg *r = (const struct raw_trace_arg *)(void *)arg;
	if (__builtin_expect(raw_state > 0 && r->klass && !nfirehose, 1)) {
		if (!cmid_maybe(r->id))
			return;
		if (fast_tracer) {
			fast_hook(r);
			return;
		}
	}
	method_hook_full(arg);
}

/* A targeted TracePoint of one Ruby method; data packs the tracer slot and the method number. */
static void tp_hook(VALUE tpval, void *data)
{
	uintptr_t d = (uintptr_t)data;
	struct tracer *t = tracers[d & 0xff];
	if (!t || !t->live || t->gen != (uint32_t)(d >> 40))
		return;
	uint32_t id = (uint32_t)((d >> 8) & 0xffffffff);
	rb_event_flag_t ev = rb_tracearg_event_flag(rb_tracearg_from_tracepoint(tpval));
	if (ev == RUBY_EVENT_CALL)
		on_call(t, id, NULL, 0, 0);
	else
		on_return(t, id);
}

/* tp_hook of a Ruby method with expressions: their values need the TracePoint (self, binding). */
static void tp_hook_expr(VALUE tpval, void *data)
{
	uintptr_t d = (uintptr_t)data;
	struct tracer *t = tracer_again((int)(d & 0xff), (uint32_t)(d >> 40));
	if (!t)
		return;
	rb_event_flag_t ev = rb_tracearg_event_flag(rb_tracearg_from_tracepoint(tpval));
	expr_event(t, (uint32_t)((d >> 8) & 0xffffffff), ev == RUBY_EVENT_CALL, 1, tpval);
}

static void gc_hook(VALUE tpval, void *data)
{
	struct tracer *t = data;
	if (!t->live)
		return;
	rb_event_flag_t ev = rb_tracearg_event_flag(rb_tracearg_from_tracepoint(tpval));
	uint64_t now = tsc_now();
	switch (ev) {
	case RUBY_INTERNAL_EVENT_GC_START:
		t->gc_phase = 1;
		t->gc_start = now;
		t->gc_pause = 0;
		t->gc_steps = 0;
		t->gc_major0 = rb_gc_stat(ID2SYM(id_major_gc_count));
		break;
	case RUBY_INTERNAL_EVENT_GC_END_MARK:
		if (t->gc_phase == 1) {
			t->gc_phase = 2;
			t->gc_mark = now - t->gc_start;
		}
		break;
	case RUBY_INTERNAL_EVENT_GC_END_SWEEP:
		if (t->gc_phase == 2) {
			t->gc_phase = 3;
			struct ring_gc *g = ring_reserve(&t->prod, sizeof(*g), RING_GC);
			if (!g)
				break;
			g->count = (uint64_t)rb_gc_count();
			g->major = rb_gc_stat(ID2SYM(id_major_gc_count)) != t->gc_major0;
			g->ts = t->gc_start;
			g->mark = t->gc_mark;
			g->total = now - t->gc_start;
			/* the step that is ending now is not counted yet: add it from its enter */
			g->pause = t->gc_pause + (t->gc_enter ? now - t->gc_enter : 0);
			g->steps = t->gc_steps + 1;
			ring_commit(&t->prod, g);
		}
		break;
	case RUBY_INTERNAL_EVENT_GC_ENTER:
		t->gc_enter = now;
		break;
	case RUBY_INTERNAL_EVENT_GC_EXIT:
		if (t->gc_enter && (t->gc_phase == 1 || t->gc_phase == 2)) {
			t->gc_pause += now - t->gc_enter;
			t->gc_steps++;
		}
		t->gc_enter = 0;
		break;
	}
}

/* Install the global hooks for what the live tracers want now, and nothing more. */
static void update_global_hooks(void)
{
	rb_event_flag_t want_c = 0, want_r = 0;
	int n = 0, nf = 0;
	memset(cmid_bits, 0, sizeof(cmid_bits));
	for (int i = 0; i < AGENT_MAX_TRACERS; i++) {
		struct tracer *t = tracers[i];
		if (!t)
			continue;
		live_tracers[n++] = t;
		nf += t->firehose;
		for (uint32_t k = 0; k < t->cfilter.cap; k++)
			if (t->cfilter.klass[k]) {
				unsigned b = cmid_bit(t->cfilter.mid[k]);
				cmid_bits[b >> 6] |= 1ull << (b & 63);
			}
		if (t->firehose || t->cfilter.n)
			want_c = RUBY_EVENT_C_CALL | RUBY_EVENT_C_RETURN;
		if (t->firehose)
			want_r = RUBY_EVENT_CALL | RUBY_EVENT_RETURN;
	}
	nlive = n;
	nfirehose = nf;
	struct tracer *f = n == 1 ? live_tracers[0] : NULL;
	fast_tracer = f && !f->firehose && !f->cexprs && !f->slow_ns && !f->slow_cpu ? f : NULL;
	if (want_c != c_events) {
		if (c_events)
			rb_remove_event_hook_with_data(HOOK_FN(method_hook), Qfalse);
		if (want_c)
			rb_add_event_hook2(HOOK_FN(method_hook), want_c, Qfalse,
					   RUBY_EVENT_HOOK_FLAG_SAFE | RUBY_EVENT_HOOK_FLAG_RAW_ARG);
		c_events = want_c;
	}
	if (want_r != r_events) {
		if (r_events)
			rb_remove_event_hook_with_data(HOOK_FN(method_hook), Qtrue);
		if (want_r)
			rb_add_event_hook2(HOOK_FN(method_hook), want_r, Qtrue,
					   RUBY_EVENT_HOOK_FLAG_SAFE | RUBY_EVENT_HOOK_FLAG_RAW_ARG);
		r_events = want_r;
	}
}

/* --- settings and set-up --- */

struct ring_hdr *agent_ring_create(const char *name, uint64_t size, int *fd, size_t *map_size)
{
	*fd = memfd_create(name, MFD_CLOEXEC);
	if (*fd < 0)
		return NULL;
	*map_size = ring_map_size(size);
	if (ftruncate(*fd, (off_t)*map_size) < 0) {
		close(*fd);
		return NULL;
	}
	struct ring_hdr *h = mmap(NULL, *map_size, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	if (h == MAP_FAILED) {
		close(*fd);
		return NULL;
	}
	h->magic = RING_MAGIC;
	h->version = RING_VERSION;
	h->size = size;
	h->data_off = 4096;
	return h;
}

/* One method a selector resolved to (from Ruby): [label, owner, method name, UnboundMethod, ruby?, Exprs or nil]. */
static void add_method(struct tracer *t, VALUE m)
{
	VALUE label = rb_ary_entry(m, 0), owner = rb_ary_entry(m, 1);
	VALUE name = (VALUE)rb_sym2id(rb_ary_entry(m, 2));
	VALUE um = rb_ary_entry(m, 3), ex = rb_ary_entry(m, 5);
	if (t->firehose && NIL_P(ex))
		return; /* the firehose's own hooks see every call of it already */
	uint32_t id = t->next_id++;
	emit_name(t, id, RSTRING_PTR(label), (size_t)RSTRING_LEN(label));
	rb_ary_store(t->labels, id, label);
	if (!NIL_P(ex))
		rb_ary_store(t->exprs, id, ex);
	if (RTEST(rb_ary_entry(m, 4))) {
		uintptr_t d = (uintptr_t)t->slot | (uintptr_t)id << 8 | (uintptr_t)t->gen << 40;
		VALUE tp = rb_tracepoint_new(Qnil, RUBY_EVENT_CALL | RUBY_EVENT_RETURN, NIL_P(ex) ? tp_hook : tp_hook_expr,
					     (void *)d);
		VALUE args[2] = { tp, um };
		int ok;
		VALUE r = agent_call(&ok, "enable_target", 2, args);
		if (ok && RTEST(r)) {
			rb_ary_push(t->tps, tp);
			if (t->firehose) { /* the firehose's hook is to leave its calls to this TracePoint */
				mtab_put(&t->cfilter, owner, name, id | ID_EXPR);
				t->rexprs++;
				rb_ary_push(t->keep, owner);
			}
			return;
		}
		/* Not targetable (an attr_reader, say): such methods fire C-call events instead. */
	}
	mtab_put(&t->cfilter, owner, name, NIL_P(ex) ? id : id | ID_EXPR);
	t->cexprs += !NIL_P(ex);
	rb_ary_push(t->keep, owner);
}

static void tracer_free(struct tracer *t)
{
	if (t->ring)
		munmap(t->ring, t->map_size);
	mtab_free(&t->cfilter);
	mtab_free(&t->names);
	free(t);
}

struct tracer *tracer_start(const char *settings, int *ring_fd, VALUE *err)
{
	int slot = -1;
	for (int i = 0; i < AGENT_MAX_TRACERS && slot < 0; i++)
		if (!tracers[i])
			slot = i;
	if (slot < 0) {
		*err = rb_sprintf("too many tracers on this process (at most %d)", AGENT_MAX_TRACERS);
		return NULL;
	}
	/* Ruby parses the settings and resolves selectors into methods. */
	int ok;
	VALUE sv = rb_str_new_cstr(settings);
	VALUE plan = agent_call(&ok, "trace_plan", 1, &sv);
	if (!ok || !RB_TYPE_P(plan, T_HASH)) {
		*err = rb_str_new_cstr("internal error in the agent while reading the trace settings");
		return NULL;
	}
	VALUE perr = rb_hash_aref(plan, ID2SYM(rb_intern("error")));
	if (!NIL_P(perr)) {
		*err = perr;
		return NULL;
	}
	struct tracer *t = calloc(1, sizeof(*t));
	if (!t) {
		*err = rb_str_new_cstr("out of memory");
		return NULL;
	}
	tsc_init();
	t->slot = slot;
	t->gen = ++tracer_gen & 0xffffff;
	t->firehose = RTEST(rb_hash_aref(plan, ID2SYM(rb_intern("firehose"))));
	t->gc = RTEST(rb_hash_aref(plan, ID2SYM(rb_intern("gc"))));
	t->slow_cpu = RTEST(rb_hash_aref(plan, ID2SYM(rb_intern("slow_cpu"))));
	t->slow_ns = NUM2ULL(rb_hash_aref(plan, ID2SYM(rb_intern("slow_ns"))));
	t->emit_calls = t->firehose && !t->slow_ns;
	uint64_t size = NUM2ULL(rb_hash_aref(plan, ID2SYM(rb_intern("buffer"))));
	t->ring = agent_ring_create("rbscope-ring", size, ring_fd, &t->map_size);
	if (!t->ring) {
		*err = rb_sprintf("cannot make the event ring: %s", strerror(errno));
		free(t);
		return NULL;
	}
	ring_prod_init(&t->prod, t->ring);
	t->keep = rb_ary_new();
	t->labels = rb_ary_new();
	rb_ary_push(t->keep, t->labels);
	t->tps = rb_ary_new();
	rb_ary_push(t->keep, t->tps);
	t->exprs = rb_ary_new();
	rb_ary_push(t->keep, t->exprs);
	rb_ary_push(keep_all, t->keep);
	VALUE methods = rb_hash_aref(plan, ID2SYM(rb_intern("methods")));
	VALUE notes = rb_hash_aref(plan, ID2SYM(rb_intern("notes")));
	for (long i = 0; i < RARRAY_LEN(methods); i++)
		add_method(t, rb_ary_entry(methods, i));
	if (t->gc) {
		/* rb_gc_stat() makes its key symbols on first use: here, never inside GC, where allocating is fatal. */
		rb_gc_stat(ID2SYM(id_major_gc_count));
		VALUE tp = rb_tracepoint_new(Qnil,
					     RUBY_INTERNAL_EVENT_GC_START | RUBY_INTERNAL_EVENT_GC_END_MARK |
						     RUBY_INTERNAL_EVENT_GC_END_SWEEP | RUBY_INTERNAL_EVENT_GC_ENTER |
						     RUBY_INTERNAL_EVENT_GC_EXIT,
					     gc_hook, t);
		rb_ary_push(t->tps, tp);
		rb_tracepoint_enable(tp);
	}
	t->live = 1;
	tracers[slot] = t;
	update_global_hooks();
	*err = rb_obj_as_string(notes);
	return t;
}

void tracer_stop(struct tracer *t)
{
	tracers[t->slot] = NULL;
	t->live = 0;
	update_global_hooks();
	/* Targeted TracePoints off: the methods' iseqs get their plain instructions back. */
	for (long i = 0; i < RARRAY_LEN(t->tps); i++)
		rb_tracepoint_disable(rb_ary_entry(t->tps, i));
	rb_ary_delete(keep_all, t->keep);
	tracer_free(t);
}

void tracer_forked(void)
{
	/* Runs in the child right after fork: only flags, no Ruby calls. */
	for (int i = 0; i < AGENT_MAX_TRACERS; i++)
		if (tracers[i])
			tracers[i]->live = 0;
}

void tracer_init(void)
{
	pthread_key_create(&tls_key, tstate_free);
	keep_all = rb_ary_new();
	rb_gc_register_mark_object(keep_all);
	id_major_gc_count = rb_intern("major_gc_count");
	id_ruby_values = rb_intern("ruby_values");
	id_c_values = rb_intern("c_values");
	/* RBSCOPE_TRACE_API=1: never read the trace argument directly (should that ever be in doubt). */
	const char *api = getenv("RBSCOPE_TRACE_API");
	if (api && *api && strcmp(api, "0"))
		raw_state = -1;
}
