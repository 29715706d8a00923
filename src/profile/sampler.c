/* sampler.c: one tick of sampling: read every thread and add its stack to the profile. */
#include "sampler.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/clock.h"
#include "../lib/err.h"
#include "../proc/task.h"

/* A sample's frames go into the profile with their kinds as they are. */
_Static_assert((int)FRAME_RUBY == (int)PROFILE_FRAME_RUBY && (int)FRAME_CFUNC == (int)PROFILE_FRAME_CFUNC &&
		       (int)FRAME_TRUNCATED == (int)PROFILE_FRAME_TRUNCATED && (int)FRAME_GC == (int)PROFILE_FRAME_GC &&
		       (int)FRAME_WAIT == (int)PROFILE_FRAME_WAIT && (int)FRAME_NATIVE == (int)PROFILE_FRAME_NATIVE,
	       "frame kinds: walk.h and profile.h must agree");

int sampler_init(struct sampler *s, struct ruby_target *t, struct profile *p)
{
	memset(s, 0, sizeof(*s));
	s->target = t;
	s->profile = p;
	s->process_frame = -1;
	map_init(&s->frame_cache);
	map_init(&s->threads_seen);
	map_init(&s->state_frames);
	s->sample = malloc(sizeof(*s->sample));
	s->stack_buf = malloc((WALK_MAX_FRAMES + 4) * sizeof(*s->stack_buf));
	return s->sample && s->stack_buf ? 0 : -ENOMEM;
}

void sampler_free(struct sampler *s)
{
	free(s->sample);
	free(s->stack_buf);
	map_free(&s->frame_cache);
	map_free(&s->threads_seen);
	map_free(&s->state_frames);
	if (s->capture && s->target && s->target->native_capture == s->capture)
		s->target->native_capture = NULL;
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

static int64_t thread_frame(struct sampler *s, const struct ruby_thread_sample *th)
{
	char name[320];
	const char *tn = th->name ? strtab_get(&s->target->strs, th->name) : th->main ? "main" : "";
	snprintf(name, sizeof(name), "thread %s%s(tid %d)", tn, *tn ? " " : "", th->tid);
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
	if (state == PROFILE_STATE_GVL)
		snprintf(name, sizeof(name), PROFILE_STATE_GVL_FRAME);
	else if (state == PROFILE_STATE_RUNNING)
		snprintf(name, sizeof(name), PROFILE_STATE_NOGVL_FRAME);
	else if (state == PROFILE_STATE_IDLE)
		snprintf(name, sizeof(name), PROFILE_STATE_SLEEPING_FRAME);
	else if (call)
		snprintf(name, sizeof(name), PROFILE_STATE_BLOCKED_FRAME ": %s)", call);
	else if (sc > 0)
		snprintf(name, sizeof(name), PROFILE_STATE_BLOCKED_FRAME ": system call %d)", sc - 1);
	else
		snprintf(name, sizeof(name), PROFILE_STATE_BLOCKED_FRAME ")");
	if ((*id = profile_frame(s->profile, name, "", 0, PROFILE_FRAME_STATE)) < 0)
		return (int)*id;
	return map_put(&s->state_frames, key, (uint64_t)*id + 1);
}

/* Does the profile count th, by the sampler's mode? */
static int counted(const struct sampler *s, const struct ruby_thread_sample *th)
{
	switch (s->mode) {
	case SAMPLER_CPU: {
		/* Running by the kernel's account, and not in a method that waits nor for the GVL (a thread
		   that was running a moment ago as the stack was read, on its way into a wait). */
		int top = ruby_top(th);
		return th->kstate == 'R' && th->state != THREAD_GVL_WAIT && !(top < th->nframes && th->frames[top].kind == FRAME_WAIT);
	}
	case SAMPLER_GVL: return th->state == THREAD_GVL_WAIT;
	}
	return 1;
}

/* Add th's stack to the profile as a sample at t_ns. */
static int add_thread(struct sampler *s, const struct ruby_thread_sample *th, uint64_t t_ns)
{
	int err;
	if (!th->nframes) {
		s->empty++;
		return 0;
	}
	uint32_t n = 0;
	if (s->process_frame >= 0)
		s->stack_buf[n++] = (uint32_t)s->process_frame;
	if (s->threads_root) {
		int64_t id = thread_frame(s, th);
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
	uint64_t named = ((uint64_t)th->name << 1 | (uint64_t)!!th->main) + 1, *seen;
	if (!(seen = map_get(&s->threads_seen, (uint32_t)th->tid)) || *seen != named) {
		const char *tn = th->name ? strtab_get(&s->target->strs, th->name) : th->main ? "main" : "";
		if ((err = profile_thread(s->profile, th->tid, tn)) ||
		    (err = map_put(&s->threads_seen, (uint32_t)th->tid, named)))
			return err;
	}
	int64_t st = profile_stack(s->profile, s->stack_buf, n);
	if (st < 0)
		return (int)st;
	if ((err = profile_add(s->profile, (uint32_t)st, t_ns, th->tid)))
		return err;
	s->samples++;
	return 0;
}

int sampler_capture_hz(int mode, int blocking, int no_bpf, double rate)
{
	if (no_bpf || blocking || mode == SAMPLER_GVL || rate < 1)
		return 0;
	return (int)rate;
}

int sampler_capture(struct sampler *s, int hz, char *why, size_t whylen)
{
	int err = ruby_capture_open(s->target, hz, s->native, &s->capture, why, whylen);
	if (!err && s->native)
		s->target->native_capture = s->capture;
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
	d->s->captured++;
	if (!counted(d->s, th))
		return 0;
	d->s->salvaged += (uint64_t)th->salvaged;
	return add_thread(d->s, th, t);
}

int sampler_tick(struct sampler *s, uint64_t t_ns)
{
	s->ticks++;
	if (s->capture) {
		/* What the GVL holder did since the last tick, taken on its own CPU: first, as it came first. */
		struct drain d = { s, clock_now_ns() - t_ns, t_ns };
		int err = ruby_capture_drain(s->capture, add_captured, &d);
		if (err)
			return err;
	}
	unsigned flags = (s->mode == SAMPLER_CPU ? WALK_KSTATE : 0) | (s->syscalls ? WALK_SYSCALL : 0) |
			 (s->native ? WALK_NATIVE : 0);
	int err = ruby_sample_take(s->target, s->sample, flags);
	if (err == ERR_TORN) {
		s->torn++;
		return 0;
	}
	if (err) {
		if (err != ERR_GONE)
			s->errors++;
		return err;
	}
	s->torn += s->sample->torn;
	if (s->native) {
		s->native_moved += s->sample->native_moved;
		s->native_sampled += s->sample->native_sampled;
		s->native_stops = s->sample->native_stops;
		s->native_stop_ns = s->sample->native_stop_ns;
	}
	for (int i = 0; i < s->sample->nthreads; i++) {
		const struct ruby_thread_sample *th = &s->sample->threads[i];
		/* The GVL holder's time is the captures' (each period of its CPU time); the others' stacks
		   stand still, and are read from outside at each tick. */
		if (s->capture && th->state == THREAD_RUNNING && ruby_capture_covers(s->capture, th->th)) {
			/* ... but its clock stands still while it is off its CPU (preempted, throttled, blocked
			   holding the GVL): in a wall profile, that time goes to its stack as read here. */
			int owed = s->mode == SAMPLER_WALL ? ruby_capture_owed(s->capture, th->th, s->ticks, clock_now_ns()) : 0;
			s->owed += (uint64_t)owed;
			for (; owed > 0; owed--) {
				s->salvaged += (uint64_t)th->salvaged;
				if ((err = add_thread(s, th, t_ns)))
					return err;
			}
			continue;
		}
		if (!counted(s, th))
			continue;
		/* (what the reads of threads it adds were like: the others' were thrown away) */
		s->salvaged += (uint64_t)th->salvaged;
		s->unchanged += (uint64_t)th->unchanged;
		if ((err = add_thread(s, th, t_ns)))
			return err;
	}
	if (t_ns > s->last_t)
		s->last_t = t_ns;
	/* A task clock for each thread that appeared, none for those gone. */
	return s->capture ? ruby_capture_follow(s->capture, s->sample) : 0;
}
