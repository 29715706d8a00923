/* sampler.h: the sampling loop: take samples of a target at a rate and add them to a profile. */
#ifndef RBSCOPE_SAMPLER_H
#define RBSCOPE_SAMPLER_H

#include <signal.h>
#include <stdint.h>

#include "../ruby/capture.h"
#include "../ruby/target.h"
#include "../ruby/walk.h"
#include "profile.h"

/* What a profile counts: every thread at every tick, threads on a CPU, or threads waiting for the GVL. */
enum sampler_mode { SAMPLER_WALL, SAMPLER_CPU, SAMPLER_GVL };

struct sampler {
	struct ruby_target *target;
	struct profile *profile;
	struct ruby_sample *sample;
	struct map frame_cache; /* target frame hash -> profile frame id + 1 */
	struct map threads_seen; /* tid -> its name as last given to the profile (see sampler_tick) */
	uint32_t *stack_buf;
	int64_t process_frame; /* --subprocesses: a profile frame at the root of every stack, or -1 */
	int threads_root; /* --threads: a root frame per thread */
	int mode;         /* enum sampler_mode (--mode; --on-cpu is SAMPLER_CPU) */
	int syscalls;     /* --syscalls: name the system call of each blocked thread */
	int native;       /* --native: native frames over the C method that called them */
	struct map state_frames; /* state << 32 | system call -> profile frame id + 1 */
	uint64_t samples, errors, torn, empty;
	uint64_t salvaged; /* thread stacks kept from their older frames after the top moved */
	uint64_t unchanged; /* thread stacks that read as at the last sample (walk.h) */
	uint64_t native_stops, native_stop_ns; /* --native: threads stopped for their registers, and for how long */
	uint64_t native_moved; /* --native: thread stacks left without native frames (moved on during the unwind) */
	uint64_t native_sampled; /* --native: threads on a CPU without the GVL unwound from a kernel sample (no stop) */
	struct ruby_capture *capture; /* sampler_capture: the GVL holder sampled on its own CPU, or NULL */
	uint64_t captured;     /* samples from it */
	uint64_t owed;         /* samples of it read from outside for its time off its CPU (ruby_capture_owed) */
	uint64_t ticks;
	uint64_t capture_lost; /* (procset_totals) samples it could not hand on: its ring was full */
	uint64_t capture_bad;  /* (procset_totals) samples whose ec or frames did not read */
	uint64_t capture_unfollowed; /* (procset_totals) threads it could not give a clock (read from outside) */
	uint64_t capture_native, capture_native_missed; /* (procset_totals) --native: its samples with native frames, without */
	uint64_t last_t;       /* the latest sample time added */
	/* Ticks due since the tick before that the loop could not take (it fell behind): set by the caller
	   before sampler_tick, the next tick's reads from outside stand for them too (wall and gvl modes),
	   as the captures of the GVL holder, taken on its own CPU, lost none of that time. */
	uint64_t ticks_missed;
	/* --mode cpu: a thread's samples are its CPU time by the kernel's account, one per period_ns (the
	   rate's period; 0: the time between ticks), each with its stack at the tick after that time ran. */
	uint64_t period_ns;
	struct map cpu_index;  /* tid -> index in cpu_clocks + 1 */
	struct sampler_cpu_clock {
		uint64_t cpu_ns;   /* its CPU time at the tick before */
		int64_t credit_ns; /* run and not yet sampled */
	} *cpu_clocks;
	size_t ncpu_clocks, cpu_clocks_cap;
	uint64_t last_tick_t;
	struct sampler_pending { /* --mode cpu: the tick's captures, until their threads' CPU time is read */
		uint64_t t_ns;
		int32_t tid;
		uint32_t stack; /* profile stack id */
	} *pend;
	size_t npend, pend_cap;
};

int sampler_init(struct sampler *s, struct ruby_target *t, struct profile *p);
void sampler_free(struct sampler *s);
/*
 * The rate at which to sample the GVL holder on its own CPU for these options
 * (rate: the samples asked for a second), or 0 where that does not apply:
 * --no-bpf asks not to, --blocking stops the threads it reads (their Ruby
 * frames are read exactly then), and --mode gvl counts only the threads
 * waiting for the holder. (--native takes the holder's native stack from the
 * registers and stack the kernel copies at each of its samples.)
 */
int sampler_capture_hz(int mode, int blocking, int no_bpf, double rate);
/*
 * Sample the thread holding the GVL on its own CPU, hz times a second of its
 * CPU time (capture.h), the others at each tick: 0, or a negative code with
 * why set to one line (sampling goes on from outside). hz from
 * sampler_capture_hz.
 */
int sampler_capture(struct sampler *s, int hz, char *why, size_t whylen);
/* Take one sample now and add it; 0, ERR_GONE when the target exited, or another negative code. */
int sampler_tick(struct sampler *s, uint64_t t_ns);

#endif
