/* fleet.h: every Ruby process `rbscope serve` samples: found, attached, sampled into one profile, dropped. */
#ifndef RBSCOPE_FLEET_H
#define RBSCOPE_FLEET_H

#include <stdint.h>
#include <sys/types.h>

#include "../lib/map.h"
#include "../ruby/target.h"
#include "profile.h"
#include "sampler.h"

enum fleet_state { FLEET_LIVE, FLEET_GONE, FLEET_FAILED };

/* Why a target's sample failed, for the counters /metrics shows. */
enum fleet_failure { FLEET_FAIL_TORN, FLEET_FAIL_READ, FLEET_FAIL_OTHER, FLEET_FAILURES };

struct fleet_target {
	pid_t pid;
	int state;                   /* enum fleet_state */
	unsigned long long started;  /* /proc/PID/stat starttime: a reused pid is another process */
	int failure;                 /* FLEET_FAILED: the error attaching gave */
	uint64_t gone_ns;            /* when it exited (or failed), to forget it later */
	struct ruby_target t;
	struct sampler s;
	char command[256];
	char container[72];          /* "" outside a container */
	char service[128];           /* OTEL_SERVICE_NAME or PYROSCOPE_APPLICATION_NAME, else "" */
	uint64_t ticks, ticks_in_gc, gcs_seen;
	int in_gc;                   /* at the last tick */
	uint64_t state_samples[PROFILE_STATES]; /* thread samples by state (enum profile_state) */
	uint32_t threads_now[PROFILE_STATES];   /* its threads in each state at the last tick */
	uint64_t failures[FLEET_FAILURES];
	int quiet;                   /* reads in a row (up to QUIET_READS) that found every thread parked in the calls of the read before */
	int left_out;                /* the last tick left it out (quiet): its next read counts for that tick too */
};

/*
 * The targets are the pids given, or with all set every Ruby process this
 * uid may read (root: all), found in /proc and dropped when they exit. All
 * samples go into one profile, cur; sample times are the monotonic clock's.
 * When cur has grown large it is replaced by a new one, and the old one kept
 * (old) until no one needs its samples: fleet_trim() says up to when.
 */
struct fleet {
	struct fleet_target **v;
	int n;
	size_t cap;
	int all;
	const pid_t *pids; /* without all: the processes to sample */
	int npids;
	const struct ruby_attach_opts *attach;
	struct profile *cur, *old;
	uint64_t cur_since;   /* when cur became current */
	struct map tid_owner; /* thread id -> its struct fleet_target *, for every sample held */
	struct map unlikely;  /* --all: pid -> when to look again at a process that did not look like Ruby */
	uint64_t next_scan, scans, attached, dropped;
	uint64_t unchanged; /* thread stacks that read as at the sample before (walk.h), in all processes */
	uint64_t left_out;  /* process reads left out, all its threads parked in unmoved calls (fleet_tick) */
	uint32_t rate_hz;
};

int fleet_init(struct fleet *f, uint32_t rate_hz);
void fleet_free(struct fleet *f);
/* Look for new targets and notice exited ones (rate-limited: at most every 2 s unless force). */
void fleet_scan(struct fleet *f, uint64_t now, int force);
/* Sample every live target at now (monotonic ns), the reads standing for missed ticks too; a process whose
   threads all stay parked, every other tick. */
void fleet_tick(struct fleet *f, uint64_t now, uint64_t missed);
/*
 * Samples before keep_from are no longer wanted (no request spans them):
 * drop them, forget an old profile whose samples are all before it, forget
 * targets gone long ago, and start a new profile when cur has grown large.
 */
int fleet_trim(struct fleet *f, uint64_t keep_from, uint64_t now);
/* The target that thread tid belongs to (among the samples held), or NULL. */
const struct fleet_target *fleet_owner(const struct fleet *f, int32_t tid);
/* The target for pid (live, gone or failed), or NULL. */
const struct fleet_target *fleet_find(const struct fleet *f, pid_t pid);
/*
 * Copy the samples in [from, to) of the processes pid (0: all), in the states
 * mask selects (1 << enum profile_state), into dst (keep_samples set).
 */
int fleet_window(const struct fleet *f, struct profile *dst, uint64_t from, uint64_t to, pid_t pid, unsigned mask);

#endif
