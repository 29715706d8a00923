/* procs.h: the processes one sampling loop reads: found, attached, sampled into one profile, dropped. */
#ifndef RBSCOPE_PROCS_H
#define RBSCOPE_PROCS_H

#include <stdint.h>
#include <sys/types.h>

#include "../lib/map.h"
#include "../proc/pause.h"
#include "../ruby/target.h"
#include "profile.h"
#include "sampler.h"

/* Which processes: those given (and added), the first one's descendants too, or every Ruby process we may read. */
enum procs_scope { PROCS_GIVEN, PROCS_DESCENDANTS, PROCS_ALL };

enum proc_state { PROC_LIVE, PROC_GONE, PROC_FAILED };

/* Why a process's read failed, for the counters serve's /metrics shows. */
enum proc_failure { PROC_FAIL_TORN, PROC_FAIL_READ, PROC_FAIL_OTHER, PROC_FAILURES };

struct proc_entry {
	pid_t pid;
	int state;                   /* enum proc_state */
	unsigned long long started;  /* /proc/PID/stat starttime: a reused pid is another process */
	int failure;                 /* PROC_FAILED: the error attaching gave */
	uint64_t gone_ns;            /* when it exited (or failed) */
	struct ruby_target t;        /* PROC_LIVE */
	struct sampler s;            /* PROC_LIVE */
	struct sampler_stats st;     /* PROC_GONE: its sampler's counters when it exited */
	struct pauser pz;            /* --blocking */
	char command[256];
	char container[72];          /* "" outside a container */
	char service[128];           /* OTEL_SERVICE_NAME or PYROSCOPE_APPLICATION_NAME, else "" */
	uint64_t ticks, ticks_in_gc, gcs_seen;
	int in_gc;                   /* at the last tick */
	uint64_t state_samples[PROFILE_STATES]; /* thread samples by state (enum profile_state) */
	uint32_t threads_now[PROFILE_STATES];   /* its threads in each state at the last tick */
	uint64_t failures[PROC_FAILURES];
	int quiet;                   /* reads in a row (at most PROCS_QUIET_READS) that found every thread parked in the calls of the read before */
	int left_out;                /* the last tick left it out (quiet): its next read counts for that tick too */
};

struct procs_config {
	int scope;                   /* enum procs_scope */
	const pid_t *pids;           /* PROCS_GIVEN: the processes to look for (besides those added) */
	int npids;
	const struct ruby_attach_opts *attach; /* how processes are attached (NULL: as they say) */
	struct sampler_config sampler;
	int process_frames;          /* a "process PID COMMAND" root frame over every stack */
	int blocking;                /* stop each process's threads around its read (ptrace) */
	int capture_hz;              /* sample each process's GVL holder on its own CPU at this rate (sampler_capture); 0: no */
	int skip_quiet;              /* read a process whose threads all stay parked every other tick (procs_tick) */
	int tally;                   /* keep each process's threads by state, its GC seen, and which process each
					thread is (procs_owner): serve's /metrics and per-process profiles */
	/* Told of each process procs_scan attaches (NULL: nobody), with ctx. */
	void (*followed)(void *ctx, const struct proc_entry *e);
	void *ctx;
};

/*
 * Every process's samples go into one profile, with their times as given to
 * procs_tick. v[0], with PROCS_GIVEN or PROCS_DESCENDANTS the first process
 * added, leads: procs_tick says when it exits. A process that exits just
 * stops being sampled; with procs_forget, it is forgotten once gone long and
 * none of its samples is wanted.
 */
struct procs {
	struct procs_config cfg;
	struct proc_entry **v;
	int n, live;
	size_t cap;
	int lead;                    /* v[0] leads (procs_add made it) */
	struct profile *profile;
	struct map tid_owner;        /* (tally) thread id -> its struct proc_entry *, for the samples held */
	struct map unlikely;         /* PROCS_ALL: pid -> when to look again at a process that did not look like Ruby */
	uint64_t next_scan, scans;
	uint64_t attached, dropped;  /* processes attached by procs_scan (followed), forgotten */
	uint64_t left_out;           /* process reads left out, all its threads parked in unmoved calls */
	struct sampler_stats forgotten; /* the counters of the processes forgotten (procs_stats counts them) */
	char capture_why[160];       /* why a process's GVL holder could not be sampled on its CPU: the first reason */
	int captures;                /* processes whose GVL holder is */
};

#define PROCS_QUIET_READS 3

void procs_init(struct procs *ps, const struct procs_config *cfg, struct profile *p);
void procs_free(struct procs *ps);
/* Add a process already attached; the set takes over *attached (do not detach it yourself). */
int procs_add(struct procs *ps, pid_t pid, const struct ruby_target *attached);
/* Look for new processes of the scope and notice exited ones (at most every 0.5 s, 2 s for PROCS_ALL, unless force). */
void procs_scan(struct procs *ps, uint64_t now, int force);
/*
 * Read every live process at now, the reads standing for missed ticks (due
 * since the tick before, not taken) too, and put the tick's samples in time
 * order. ERR_GONE when the lead exited, else the lead's error (0 when it read
 * or there is none); the others' errors are counted in their entries.
 */
int procs_tick(struct procs *ps, uint64_t now, uint64_t missed);
/* Sample into p from now on (its profile was renewed), or with another mode: cfg.sampler. */
void procs_rebind(struct procs *ps, struct profile *p);
/* Forget processes gone longer than 10 min none of whose samples is kept (all before keep_from). */
int procs_forget(struct procs *ps, uint64_t keep_from, uint64_t now);
/* The counters of every process sampled, added up. */
void procs_stats(const struct procs *ps, struct sampler_stats *sum);
/* The process thread tid belongs to (among the samples held), or NULL. */
const struct proc_entry *procs_owner(const struct procs *ps, int32_t tid);
/* The newest entry for pid (live, gone or failed), or NULL. */
const struct proc_entry *procs_find(const struct procs *ps, pid_t pid);

#endif
