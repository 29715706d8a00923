/* sampling.h: the sampling loop record, top and serve share: the cadence, the processes read, where samples go. */
#ifndef RBSCOPE_SAMPLING_H
#define RBSCOPE_SAMPLING_H

#include <signal.h>
#include <stdint.h>

#include "../lib/ticker.h"
#include "procs.h"
#include "window.h"

struct sampling_options {
	double rate;        /* ticks a second (jittered: lib/ticker.h) */
	double duration;    /* seconds to run, or 0: until stopped */
	volatile sig_atomic_t *stop; /* set (by a signal handler) to stop */
	int no_bpf;         /* read the GVL holder from outside too (see sampler_capture_hz) */
	int no_capture;     /* never sample the GVL holder on its own CPU (serve) */
	struct procs_config procs; /* (sampler.period_ns and capture_hz are set from the above) */
};

/*
 * Every tick, at a random phase of its period: look for processes (the
 * scope's), read every live one into the profile, then hand over to the
 * consumer. Sample times are ns since the loop started (sampling_now). A
 * tick the loop could not take in time (it fell behind) is not taken late:
 * it is counted (missed) and the next tick's reads stand for it.
 */
struct sampling {
	struct sampling_options o;
	struct procs procs;
	struct window window;   /* without a profile of the caller's: the samples of the latest while (sampling_keep) */
	struct profile *profile; /* where samples go: the caller's, or window.cur */
	struct ticker tk;
	uint64_t start;          /* CLOCK_MONOTONIC when it started running (sampling_run), ns */
	uint64_t ticks, missed;  /* ticks taken; ticks missed */
	uint64_t lag_ns, lag_max_ns; /* how late the latest tick started; the most since lag_max_ns was set to 0 */
	int lead_errors;         /* the lead's reads in a row that failed */
};

/*
 * What uses the samples. ticked runs after each tick (now: sampling_now):
 * 0 goes on, anything else ends the loop, sampling_run returning it. wait
 * runs until the next tick is due (deadline: CLOCK_MONOTONIC ns), and may
 * return earlier (it is called again) or a value that ends the loop as
 * ticked's does; NULL: sleep.
 */
struct sampling_consumer {
	int (*ticked)(void *ctx, struct sampling *sm, uint64_t now);
	int (*wait)(void *ctx, struct sampling *sm, uint64_t deadline);
};

/*
 * Samples go into p, or (p NULL) into a window of them (keep_samples: the
 * caller says how far back with sampling_keep). No process is read until
 * sampling_add or the scope's scan finds one.
 */
int sampling_init(struct sampling *sm, const struct sampling_options *o, struct profile *p);
void sampling_free(struct sampling *sm);
/* Add a process already attached (the lead, if first); the loop takes over *attached. */
int sampling_add(struct sampling *sm, pid_t pid, const struct ruby_target *attached);
/*
 * Tick until stopped or the duration is up (0), the lead exits (ERR_GONE),
 * its reads fail 100 times in a row (that error), or the consumer ends it
 * (its value).
 */
int sampling_run(struct sampling *sm, const struct sampling_consumer *c, void *ctx);
/* The loop's time: ns since it started. */
uint64_t sampling_now(const struct sampling *sm);
/* The window's samples before keep_from are no longer wanted, nor processes gone long ago without samples kept. */
int sampling_keep(struct sampling *sm, uint64_t keep_from, uint64_t now);
/* Count by mode (enum sampler_mode) from now on, the samples so far forgotten (window only). */
int sampling_set_mode(struct sampling *sm, int mode);
/* The counters of every process sampled, added up. */
void sampling_stats(const struct sampling *sm, struct sampler_stats *sum);

#endif
