/* sampler.c: one tick of sampling: read every thread and add its stack to the profile. */
#include "sampler.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/clock.h"
#include "../lib/err.h"
#include "../lib/vec.h"
#include "../proc/task.h"

/* A sample's frames go into the profile with their kinds as they are. */
_Static_assert((int)FRAME_RUBY == (int)PROFILE_FRAME_RUBY && (int)FRAME_CFUNC == (int)PROFILE_FRAME_CFUNC &&
		       (int)FRAME_TRUNCATED == (int)PROFILE_FRAME_TRUNCATED && (int)FRAME_GC == (int)PROFILE_FRAME_GC &&
		       (int)FRAME_WAIT == (int)PROFILE_FRAME_WAIT && (int)FRAME_NATIVE == (int)PROFILE_FRAME_NATIVE,
	       "frame kinds: walk.h and profile.h must agree");

int sampler_init(struct sampler *s, struct ruby_target *t, struct profile *p, const struct sampler_config *cfg)
{
	memset(s, 0, sizeof(*s));
	s->target = t;
	s->profile = p;
	s->cfg = *cfg;
	s->process_frame = -1;
	if (t) {
		t->user_labels = cfg->no_labels ? NULL : cfg->labels;
		t->nuser_labels = cfg->no_labels ? 0 : cfg->nlabels;
	}
	map_init(&s->frame_cache);
	map_init(&s->threads_seen);
	map_init(&s->mn_keys);
	map_init(&s->state_frames);
	map_init(&s->cpu_index);
	s->sample = malloc(sizeof(*s->sample));
	s->stack_buf = malloc((WALK_MAX_FRAMES + 5 + USER_LABELS_MAX) * sizeof(*s->stack_buf));
	return s->sample && s->stack_buf ? 0 : -ENOMEM;
}

void sampler_rebind(struct sampler *s, struct profile *p, const struct sampler_config *cfg)
{
	s->profile = p;
	s->cfg = *cfg;
	s->process_frame = -1;
	map_clear(&s->frame_cache);
	map_clear(&s->threads_seen);
	map_clear(&s->mn_keys);
	map_clear(&s->state_frames);
	map_clear(&s->cpu_index);
	s->ncpu_clocks = 0;
	s->npend = 0;
	s->last_t = s->last_tick_t = 0;
}

void sampler_stats(const struct sampler *s, struct sampler_stats *out)
{
	*out = s->st;
	if (s->capture) {
		struct ruby_capture_stats c;
		ruby_capture_stats(s->capture, &c);
		out->capture_lost = c.lost;
		out->capture_bad = c.bad;
		out->capture_unfollowed = c.unfollowed;
		out->capture_native = c.native;
		out->capture_native_missed = c.native_missed;
	}
}

void sampler_stats_add(struct sampler_stats *sum, const struct sampler_stats *one)
{
#define SAMPLER_STAT_ADD(name, about) sum->name += one->name;
	SAMPLER_STATS(SAMPLER_STAT_ADD)
#undef SAMPLER_STAT_ADD
}

void sampler_free(struct sampler *s)
{
	free(s->sample);
	free(s->stack_buf);
	map_free(&s->frame_cache);
	map_free(&s->threads_seen);
	map_free(&s->mn_keys);
	map_free(&s->state_frames);
	map_free(&s->cpu_index);
	free(s->cpu_clocks);
	free(s->pend);
	if (s->capture && s->target && s->target->native_source == ruby_capture_source(s->capture))
		s->target->native_source = NULL;
	ruby_capture_close(s->capture);
}

static int64_t profile_frame_of(struct sampler *s, const struct ruby_frame *f)
{
	uint64_t key = map_hash_bytes(f, sizeof(*f), 7);
	uint64_t *hit = map_get(&s->frame_cache, key);
	if (hit)
		return (int64_t)(*hit - 1);
	const struct strtab *ts = &s->target->strs;
	int64_t id = profile_frame(s->profile, strtab_get(ts, f->name), strtab_get(ts, f->path), f->line, f->kind);
	if (id >= 0)
		map_put(&s->frame_cache, key, (uint64_t)id + 1);
	return id;
}

/* The key th's samples carry in the profile: its tid, or an M:N thread's own (profile_mn_thread). */
static int32_t thread_key(struct sampler *s, const struct ruby_thread_sample *th)
{
	if (!th->shared)
		return th->tid;
	uint64_t *hit = map_get(&s->mn_keys, th->th);
	if (hit)
		return (int32_t)(uint32_t)*hit;
	int32_t k = profile_mn_thread(s->profile);
	return k && !map_put(&s->mn_keys, th->th, (uint32_t)k) ? k : th->tid;
}

/* th's name in the profile: its own ("main" for the main thread), after its Ractor's unless the main one's. */
static const char *thread_name(struct sampler *s, const struct ruby_thread_sample *th, char *buf, size_t cap)
{
	const char *tn = th->name ? strtab_get(&s->target->strs, th->name) : th->main ? "main" : "";
	if (!th->ractor)
		return tn;
	const char *rn = th->ractor_name ? strtab_get(&s->target->strs, th->ractor_name) : "";
	snprintf(buf, cap, "Ractor %u%s%s%s%s", th->ractor, *rn ? " " : "", rn, *tn ? ": " : "", tn);
	return buf;
}

/* The --threads root frame of th, whose key is key. */
static int64_t thread_frame(struct sampler *s, const struct ruby_thread_sample *th, int32_t key)
{
	char name[320], ref[32], nbuf[256];
	const char *tn = thread_name(s, th, nbuf, sizeof(nbuf));
	profile_thread_ref(key, ref, sizeof(ref));
	snprintf(name, sizeof(name), "thread %s%s(%s)", tn, *tn ? " " : "", ref);
	return profile_frame(s->profile, name, "", 0, PROFILE_FRAME_THREAD);
}

/* The innermost frame of th's that is not native (--native puts those over the C method that called them). */
static int ruby_top(const struct ruby_thread_sample *th)
{
	int top = 0;
	while (top < th->nframes && th->frames[top].kind == FRAME_NATIVE)
		top++;
	return top;
}

/*
 * The frame over th's stack that says what it waits for: the GVL, a system
 * call, or nothing we can name; 0 with *id = -1 when it needs none (running,
 * in GC, or blocked or asleep in a method known to wait, which says it).
 */
static int state_frame(struct sampler *s, const struct ruby_thread_sample *th, int64_t *id)
{
	int top = ruby_top(th);
	int top_waits = top < th->nframes && th->frames[top].kind == FRAME_WAIT, state, sc = 0;
	*id = -1;
	if (th->state == THREAD_GVL_WAIT) {
		state = PROFILE_STATE_GVL;
	} else if (top_waits) {
		return 0;
	} else if (th->state == THREAD_BLOCKED && (th->syscall == TASK_ON_CPU || th->syscall == TASK_NO_SYSCALL)) {
		state = PROFILE_STATE_RUNNING; /* C code that let go of the GVL, on a CPU or ready for one */
		sc = th->syscall;
	} else if (th->state == THREAD_BLOCKED) {
		state = PROFILE_STATE_BLOCKED;
		sc = th->syscall >= 0 ? th->syscall + 1 : 0;
	} else if (th->state == THREAD_SLEEPING) {
		state = PROFILE_STATE_IDLE;
	} else {
		return 0;
	}
	uint64_t key = (uint64_t)state << 32 | (uint32_t)sc, *hit = map_get(&s->state_frames, key);
	if (hit) {
		*id = (int64_t)*hit - 1;
		return 0;
	}
	/* First time: its name, interned once. */
	char name[64];
	const char *call = sc > 0 ? task_syscall_name(sc - 1) : NULL;
	const char *frame = profile_state_frame(state);
	if (state != PROFILE_STATE_BLOCKED)
		snprintf(name, sizeof(name), "%s", frame);
	else if (call)
		snprintf(name, sizeof(name), "%s: %s)", frame, call);
	else if (sc > 0)
		snprintf(name, sizeof(name), "%s: system call %d)", frame, sc - 1);
	else
		snprintf(name, sizeof(name), "%s)", frame);
	if ((*id = profile_frame(s->profile, name, "", 0, PROFILE_FRAME_STATE)) < 0)
		return (int)*id;
	return map_put(&s->state_frames, key, (uint64_t)*id + 1);
}

/* In a method that waits: not where CPU time goes. */
static int in_wait(const struct ruby_thread_sample *th)
{
	int top = ruby_top(th);
	return top < th->nframes && th->frames[top].kind == FRAME_WAIT;
}

/* Thread tid's CPU clock (a new one at a random phase of its period), or NULL out of memory. */
static struct sampler_cpu_clock *cpu_clock(struct sampler *s, int32_t tid, uint64_t cpu_ns, uint64_t period)
{
	uint64_t *i = map_get(&s->cpu_index, (uint32_t)tid);
	if (i)
		return &s->cpu_clocks[*i - 1];
	struct sampler_cpu_clock *v = vec_grow(s->cpu_clocks, s->ncpu_clocks, &s->cpu_clocks_cap, sizeof(*v));
	if (!v || map_put(&s->cpu_index, (uint32_t)tid, s->ncpu_clocks + 1))
		return NULL;
	s->cpu_clocks = v;
	/* A random phase: a thread that runs less than a period between ticks is sampled as often as it runs. */
	v[s->ncpu_clocks] = (struct sampler_cpu_clock){ cpu_ns, (int64_t)(map_hash64(clock_now_ns() ^ (uint64_t)tid) % period) };
	return &v[s->ncpu_clocks++];
}

static int add_spread(struct sampler *s, const struct ruby_thread_sample *th, uint64_t prev, uint64_t t_ns, uint64_t n);

/* How many samples th gets at this tick in wall mode (one) or gvl mode (one if it waits for the GVL). */
static uint64_t samples_due(const struct sampler *s, const struct ruby_thread_sample *th)
{
	return s->cfg.mode == SAMPLER_GVL ? th->state == THREAD_GVL_WAIT : 1;
}

#define PEND_USED UINT32_MAX /* (a capture taken: its stack id) */

/*
 * Up to n of the captures of th held, added as samples at their own times
 * (none before since: samples of the ticks before are in): how many. In wall
 * mode th's own (its Ruby thread's), the latest first (nearest the tick: most
 * likely of the call, and the request, the tick found it in); in cpu mode its
 * native thread's (key: its CPU time is the native thread's), evenly spread
 * over those held from a random start.
 */
static uint64_t take_captures(struct sampler *s, const struct ruby_thread_sample *th, int32_t key, uint64_t n,
			      uint64_t since, int *err)
{
	int wall = s->cfg.mode == SAMPLER_WALL;
	uint64_t k = 0, seen = 0, kept = 0;
	for (size_t i = 0; i < s->npend; i++)
		k += s->pend[i].stack != PEND_USED && (wall ? s->pend[i].th == th->th : s->pend[i].tid == key);
	uint64_t keep = k < n ? k : n;
	if (!keep)
		return 0;
	uint64_t u = wall ? 0 : map_hash64(clock_now_ns() ^ th->th) % k;
	for (size_t j = 0; j < s->npend && kept < keep && !*err; j++) {
		struct sampler_pending *p = &s->pend[wall ? s->npend - 1 - j : j];
		if (p->stack == PEND_USED || (wall ? p->th != th->th : p->tid != key))
			continue;
		/* the j-th kept: the j-th newest, or the one at floor((j * k + u) / keep) */
		if (wall ? 1 : seen++ == (kept * k + u) / keep) {
			*err = profile_add(s->profile, p->stack, p->t_ns > since ? p->t_ns : since, key);
			s->st.samples += !*err;
			s->st.jit_lines += !*err && p->jit_line;
			p->stack = PEND_USED;
			kept++;
		}
	}
	return kept;
}

/*
 * The captures held for the ticks to come: in wall mode those not taken and
 * not older than two periods (a thread's clock runs a little faster than the
 * ticks: a tick that found none since the one before takes one a little
 * older), in cpu mode none.
 */
static void keep_captures(struct sampler *s, uint64_t t_ns, uint64_t period)
{
	size_t n = 0;
	for (size_t i = 0; s->cfg.mode == SAMPLER_WALL && i < s->npend; i++)
		if (s->pend[i].stack != PEND_USED && s->pend[i].t_ns + 2 * period >= t_ns)
			s->pend[n++] = s->pend[i];
	s->npend = n;
}

/*
 * cpu mode: th's samples at this tick are one for each period of CPU time it
 * ran since the tick before, by the kernel's account: not whether it is
 * runnable now, which a thread waiting for a CPU is too. Its own CPU's
 * clock's captures of that time (held in pend since the drain) give the
 * stacks as far as they go, evenly chosen if there are more than the
 * kernel's count; the rest goes to the stack read now. A thread waiting for
 * the GVL ran in the call it is in (a C call that let the GVL go); one in a
 * method that waits (sleep, a queue) ran before it: that time waits for a
 * tick that finds it out of the wait (at most CPU_CARRY_NS of it).
 */
#define CPU_CARRY_NS INT64_C(1000000000)
static int place_cpu(struct sampler *s, const struct ruby_thread_sample *th, uint64_t period, uint64_t prev,
		     uint64_t t_ns)
{
	struct sampler_cpu_clock *c = th->has_cpu ? cpu_clock(s, th->tid, th->cpu_ns, period) : NULL;
	int32_t key = thread_key(s, th);
	uint64_t k = 0, n = 0;
	for (size_t i = 0; i < s->npend; i++)
		k += s->pend[i].tid == key && s->pend[i].stack != PEND_USED;
	if (c) {
		if (th->cpu_ns > c->cpu_ns)
			c->credit_ns += (int64_t)(th->cpu_ns - c->cpu_ns);
		c->cpu_ns = th->cpu_ns;
		n = c->credit_ns >= (int64_t)period ? (uint64_t)c->credit_ns / period : 0;
	} else if (th->shared) {
		/* An M:N thread: its native thread's clock runs others too. It runs while it holds its GVL: a
		   tick's worth then, none while it waits or sleeps. */
		n = th->state == THREAD_RUNNING ? 1 + s->ticks_missed : 0;
	} else {
		n = k; /* no CPU time to go by (a thread without a tid): its captures as taken */
	}
	int err = 0;
	uint64_t keep = take_captures(s, th, key, n, prev, &err);
	uint64_t rest = n - keep;
	if (c)
		c->credit_ns -= (int64_t)(keep * period);
	if (!err && !c && rest && th->shared && !in_wait(th)) {
		s->st.salvaged += (uint64_t)th->salvaged;
		return add_spread(s, th, prev, t_ns, rest);
	}
	if (err || !c || !rest)
		return err;
	if (in_wait(th)) {
		if (c->credit_ns > CPU_CARRY_NS)
			c->credit_ns = CPU_CARRY_NS;
		return 0;
	}
	c->credit_ns -= (int64_t)(rest * period);
	/* Its CPU time went to the call it is in: Ruby code (it waits for the GVL back), or C code that let the GVL
	   go (it may be blocked in a system call by now). */
	struct ruby_thread_sample ran = *th;
	ran.state = th->state == THREAD_GVL_WAIT ? THREAD_RUNNING : th->state;
	ran.syscall = th->state == THREAD_BLOCKED ? TASK_ON_CPU : th->syscall;
	s->st.salvaged += (uint64_t)th->salvaged;
	s->st.unchanged += (uint64_t)th->unchanged;
	return add_spread(s, &ran, prev, t_ns, rest);
}

/*
 * th's stack interned in the profile (its thread, whose key is key, named
 * there): its id, -1 for a thread with no frames, or a negative code.
 */
static int64_t thread_stack(struct sampler *s, const struct ruby_thread_sample *th, int32_t key)
{
	int err;
	if (!th->nframes) {
		s->st.empty++;
		return -1;
	}
	uint32_t n = 0;
	if (s->process_frame >= 0)
		s->stack_buf[n++] = (uint32_t)s->process_frame;
	if (s->cfg.threads_root) {
		int64_t id = thread_frame(s, th, key);
		if (id < 0)
			return (int)id;
		s->stack_buf[n++] = (uint32_t)id;
	}
	if (th->label) { /* the request it serves, over its Ruby frames */
		struct ruby_frame lf = { th->label, 0, 0, PROFILE_FRAME_LABEL };
		int64_t id = profile_frame_of(s, &lf);
		if (id < 0)
			return (int)id;
		s->stack_buf[n++] = (uint32_t)id;
	}
	for (int k = 0; k < th->nulabels && k < USER_LABELS_MAX; k++) { /* --label's: "key=value", its key the path */
		struct ruby_frame lf = { th->ulabels[k].text, th->ulabels[k].key, 0, PROFILE_FRAME_LABEL };
		int64_t id = profile_frame_of(s, &lf);
		if (id < 0)
			return (int)id;
		s->stack_buf[n++] = (uint32_t)id;
	}
	for (int j = th->nframes - 1; j >= 0; j--) { /* root first */
		int64_t id = profile_frame_of(s, &th->frames[j]);
		if (id < 0)
			return (int)id;
		s->stack_buf[n++] = (uint32_t)id;
	}
	int64_t state;
	if ((err = state_frame(s, th, &state)))
		return err;
	if (state >= 0)
		s->stack_buf[n++] = (uint32_t)state;
	/* The profile's thread table changes only when a thread appears or is (re)named. */
	/* (what it is named by, mixed: a collision would only miss a renaming) */
	uint64_t named = (((uint64_t)th->name * UINT64_C(0x9E3779B97F4A7C15) ^ ((uint64_t)th->ractor_name << 32 | th->ractor))
			  << 1 | (uint64_t)!!th->main) + 1, *seen;
	if (!(seen = map_get(&s->threads_seen, (uint32_t)key)) || *seen != named) {
		char nbuf[256];
		const char *tn = thread_name(s, th, nbuf, sizeof(nbuf));
		if ((err = profile_thread(s->profile, key, tn)) || (err = map_put(&s->threads_seen, (uint32_t)key, named)))
			return err;
	}
	int64_t st = profile_stack(s->profile, s->stack_buf, n);
	return st < 0 ? (st == -1 ? -ENOMEM : st) : st;
}

/* Is th's innermost Ruby frame (or the C method it called) one running JIT code, its line unknown? */
static int jit_line_unknown(const struct ruby_thread_sample *th)
{
	for (int j = 0; j < th->nframes; j++)
		if (th->frames[j].kind == FRAME_RUBY || th->frames[j].kind == FRAME_CFUNC || th->frames[j].kind == FRAME_WAIT)
			return th->frames[j].line == FRAME_LINE_UNKNOWN;
	return 0;
}

/* Add th's stack to the profile as a sample at t_ns. */
static int add_thread(struct sampler *s, const struct ruby_thread_sample *th, uint64_t t_ns)
{
	int32_t key = thread_key(s, th);
	int64_t st = thread_stack(s, th, key);
	if (st == -1)
		return 0;
	int err = st < 0 ? (int)st : profile_add(s->profile, (uint32_t)st, t_ns, key);
	s->st.samples += !err;
	s->st.jit_lines += !err && jit_line_unknown(th);
	return err;
}

/*
 * Add n samples of th at this tick: one at t_ns, the others (ticks missed,
 * CPU time run since the tick before, time off its CPU) spread evenly back
 * over the time since the tick before (prev), for timelines to give each a
 * share of the time, none at the same instant.
 */
static int add_spread(struct sampler *s, const struct ruby_thread_sample *th, uint64_t prev, uint64_t t_ns, uint64_t n)
{
	uint64_t span = prev && t_ns > prev ? t_ns - prev : 0;
	int err = 0;
	for (uint64_t k = n; k-- > 0 && !err;)
		err = add_thread(s, th, span ? t_ns - span * k / n : t_ns);
	return err;
}

int sampler_capture_hz(int mode, int blocking, int no_bpf, double rate)
{
	if (no_bpf || blocking || mode == SAMPLER_GVL || rate < 1)
		return 0;
	return (int)rate;
}

int sampler_capture(struct sampler *s, int hz, char *why, size_t whylen)
{
	int err = ruby_capture_open(s->target, hz, s->cfg.native, !s->cfg.no_labels, &s->capture, why, whylen);
	if (!err && s->cfg.native)
		s->target->native_source = ruby_capture_source(s->capture);
	return err;
}

struct drain {
	struct sampler *s;
	uint64_t base, now; /* CLOCK_MONOTONIC at the recording's start, and the tick's time in it */
};

static int add_captured(void *arg, const struct ruby_thread_sample *th, uint64_t t_mono)
{
	struct drain *d = arg;
	uint64_t t = t_mono > d->base ? t_mono - d->base : 0;
	if (t < d->s->last_t)
		t = d->s->last_t; /* samples of two CPUs, handed on a little out of order */
	if (t > d->now)
		t = d->now;
	d->s->last_t = t;
	d->s->st.captured++;
	/* Held until the walk: cpu mode takes as many as the thread's CPU time read at this tick says (place_cpu;
	   one in a method that waits, its C code on the way into the wait, is left to the thread's CPU clock, as an
	   outside read is); wall mode, the ticks' samples of the thread while it holds the GVL (keep_captures). */
	if (d->s->cfg.mode == SAMPLER_GVL || (d->s->cfg.mode == SAMPLER_CPU && in_wait(th)))
		return 0;
	int32_t key = thread_key(d->s, th);
	int64_t st = thread_stack(d->s, th, key);
	if (st < 0)
		return st == -1 ? 0 : (int)st;
	struct sampler_pending *v = vec_grow(d->s->pend, d->s->npend, &d->s->pend_cap, sizeof(*v));
	if (!v)
		return -ENOMEM;
	d->s->pend = v;
	v[d->s->npend++] = (struct sampler_pending){ t, th->th, key, (uint32_t)st, jit_line_unknown(th) };
	d->s->st.salvaged += (uint64_t)th->salvaged;
	return 0;
}

int sampler_tick(struct sampler *s, uint64_t t_ns)
{
	s->st.ticks++;
	uint64_t prev_tick = s->last_tick_t;
	/* The period a sample stands for: the rate's, or (not given) the time since the tick before. */
	uint64_t period = s->cfg.period_ns ?: t_ns > s->last_tick_t && s->last_tick_t ? t_ns - s->last_tick_t : UINT64_C(10000000);
	s->last_tick_t = t_ns;
	if (s->capture) {
		/* What the GVL holder did since the last tick, taken on its own CPU: first, as it came first. */
		struct drain d = { s, clock_now_ns() - t_ns, t_ns };
		int err = ruby_capture_drain(s->capture, add_captured, &d);
		if (err)
			return err;
	}
	unsigned flags = (s->cfg.mode == SAMPLER_CPU ? WALK_CPU : 0) | (s->cfg.syscalls ? WALK_SYSCALL : 0) |
			 (s->cfg.native ? WALK_NATIVE : 0) | (s->cfg.no_labels ? 0 : WALK_LABELS);
	int err = ruby_sample_take(s->target, s->sample, flags);
	if (err == ERR_TORN) {
		s->st.torn++;
		return 0;
	}
	if (err) {
		if (err != ERR_GONE)
			s->st.errors++;
		return err;
	}
	s->st.torn += s->sample->torn;
	/* (the captures drained above and this read asked them) */
	s->st.jit_table_asked = s->target->jit_table.asked;
	s->st.jit_table_found = s->target->jit_table.found;
	s->st.jit_table_spanning = s->target->jit_table.spanning;
	if (s->cfg.native) {
		s->st.native_moved += s->sample->native_moved;
		s->st.native_sampled += s->sample->native_sampled;
		s->st.native_stops = s->sample->native_stops;
		s->st.native_stop_ns = s->sample->native_stop_ns;
	}
	for (int i = 0; i < s->sample->nthreads; i++) {
		const struct ruby_thread_sample *th = &s->sample->threads[i];
		if (s->cfg.mode == SAMPLER_CPU) {
			if ((err = place_cpu(s, th, period, prev_tick, t_ns)))
				return err;
			continue;
		}
		uint64_t due = samples_due(s, th) * (1 + s->ticks_missed);
		/* The thread that holds the GVL: the tick's sample is one its own CPU took since the tick before, a
		   stack as the thread saw it (a short call is seen for as long as it runs); the outside read if it
		   took none (it took the GVL since). */
		if (s->capture && th->state == THREAD_RUNNING && due) {
			int32_t key = thread_key(s, th);
			uint64_t kept = take_captures(s, th, key, due, prev_tick, &err);
			if (err)
				return err;
			due -= kept;
			s->st.holder_own += kept;
			s->st.holder_read += due;
		}
		if (!due)
			continue;
		/* (what the reads of threads it adds were like: the others' were thrown away) */
		s->st.salvaged += (uint64_t)th->salvaged;
		s->st.unchanged += (uint64_t)th->unchanged;
		if ((err = add_spread(s, th, prev_tick, t_ns, due)))
			return err;
	}
	keep_captures(s, t_ns, period);
	if (t_ns > s->last_t)
		s->last_t = t_ns;
	s->ticks_missed = 0;
	/* A task clock for each thread that appeared, none for those gone. */
	return s->capture ? ruby_capture_follow(s->capture, s->sample) : 0;
}
