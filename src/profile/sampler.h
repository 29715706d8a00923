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

/*
 * A sampler's counters, one table: name and what it counts. The capture's
 * own counters (capture_*) are read from it when the stats are taken
 * (sampler_stats). Adding up any number of samplers: sampler_stats_add.
 */
#define SAMPLER_STATS(X)                                                                                   \
	X(ticks, "ticks taken")                                                                            \
	X(samples, "thread samples added")                                                                 \
	X(errors, "ticks whose read failed")                                                               \
	X(torn, "reads that did not hold still (the thread list, or a stack, changed under them)")         \
	X(empty, "threads with no frames")                                                                 \
	X(salvaged, "thread stacks kept from their older frames after the top moved")                      \
	X(unchanged, "thread stacks that read as at the sample before (walk.h)")                           \
	X(jit_lines, "thread samples whose innermost Ruby frame ran JIT code: its line unknown")           \
	X(jit_table_asked, "innermost frames caught in their JIT code, asked of the JIT's tables (target.h)")  \
	X(jit_table_found, "those whose line the tables gave")                                                \
	X(jit_table_spanning, "those in a block of code over several lines")                                  \
	X(native_stops, "--native: threads stopped for their registers")                                   \
	X(native_stop_ns, "--native: the time they were stopped, ns")                                      \
	X(native_moved, "--native: thread stacks left without native frames (moved on during the unwind)") \
	X(native_sampled, "--native: threads on a CPU without the GVL unwound from a kernel sample")       \
	X(captured, "stacks of the GVL holder taken on its own CPU (BPF)")                                 \
	X(holder_own, "wall mode: the GVL holder's samples that are one of those")                         \
	X(holder_read, "wall mode: its samples read from outside (it took no stack since the tick before)") \
	X(capture_lost, "captures it could not hand on: its ring was full")                                \
	X(capture_bad, "captures whose ec or frames did not read")                                         \
	X(capture_unfollowed, "threads it could not give a clock (read from outside)")                     \
	X(capture_native, "--native: its captures with native frames")                                     \
	X(capture_native_missed, "--native: its captures without")

struct sampler_stats {
#define SAMPLER_STAT_FIELD(name, about) uint64_t name;
	SAMPLER_STATS(SAMPLER_STAT_FIELD)
#undef SAMPLER_STAT_FIELD
};

/* How a sampler reads and counts: the same for every process of a recording. */
struct sampler_config {
	int mode;         /* enum sampler_mode (--mode; --on-cpu is SAMPLER_CPU) */
	int threads_root; /* --threads: a root frame per thread */
	int syscalls;     /* --syscalls: name the system call of each blocked thread */
	int native;       /* --native: native frames over the C method that called them */
	int no_labels;    /* --no-labels: no frame of the request a thread serves (ruby_request_label) */
	const struct user_label *labels; /* --label's (label.h): a frame of each value found, beside the request's */
	int nlabels;
	/* --mode cpu: a thread's samples are its CPU time by the kernel's account, one per period_ns (the
	   rate's period; 0: the time between ticks), each with its stack at the tick after that time ran. */
	uint64_t period_ns;
};

struct sampler {
	struct ruby_target *target;
	struct profile *profile;
	struct sampler_config cfg;
	struct ruby_sample *sample;
	struct map frame_cache; /* target frame hash -> profile frame id + 1 */
	struct map threads_seen; /* tid -> its name as last given to the profile (see sampler_tick) */
	struct map mn_keys;      /* an M:N thread's rb_thread_t -> its key in the profile (profile_mn_thread) */
	uint32_t *stack_buf;
	int64_t process_frame; /* a profile frame at the root of every stack (a process's, with several), or -1 */
	struct map state_frames; /* state << 32 | system call -> profile frame id + 1 */
	struct sampler_stats st; /* (capture_*: see sampler_stats) */
	struct ruby_capture *capture; /* sampler_capture: the GVL holder sampled on its own CPU, or NULL */
	uint64_t last_t;       /* the latest sample time added */
	/* Ticks due since the tick before that the loop could not take (it fell behind): set by the caller
	   before sampler_tick, the next tick's reads from outside stand for them too (wall and gvl modes),
	   as the captures of the GVL holder, taken on its own CPU, lost none of that time. */
	uint64_t ticks_missed;
	struct map cpu_index;  /* --mode cpu: tid -> index in cpu_clocks + 1 */
	struct sampler_cpu_clock {
		uint64_t cpu_ns;   /* its CPU time at the tick before */
		int64_t credit_ns; /* run and not yet sampled */
	} *cpu_clocks;
	size_t ncpu_clocks, cpu_clocks_cap;
	uint64_t last_tick_t;
	struct sampler_pending { /* the tick's captures, until the walk says which thread each tick's sample is of */
		uint64_t t_ns, th;
		int32_t tid;
		uint32_t stack; /* profile stack id */
		int jit_line;   /* its innermost Ruby frame ran JIT code, its line unknown */
	} *pend;
	size_t npend, pend_cap;
};

int sampler_init(struct sampler *s, struct ruby_target *t, struct profile *p, const struct sampler_config *cfg);
void sampler_free(struct sampler *s);
/*
 * Sample into p from now on, with cfg: what the sampler knew of the profile
 * before (its frames, threads) and of the threads' CPU time is forgotten; its
 * counters and its capture go on. process_frame is to be set again (-1).
 */
void sampler_rebind(struct sampler *s, struct profile *p, const struct sampler_config *cfg);
/* Its counters, the capture's included. */
void sampler_stats(const struct sampler *s, struct sampler_stats *out);
/* Add one's counters to sum's. */
void sampler_stats_add(struct sampler_stats *sum, const struct sampler_stats *one);
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
