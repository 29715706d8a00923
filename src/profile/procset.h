/* procset.h: the processes one recording samples: a Ruby process and, with --subprocesses, its descendants. */
#ifndef RBSCOPE_PROCSET_H
#define RBSCOPE_PROCSET_H

#include <stdint.h>
#include <sys/types.h>

#include "../proc/pause.h"
#include "../ruby/target.h"
#include "profile.h"
#include "sampler.h"

enum proc_state { PROC_NEW, PROC_LIVE, PROC_GONE, PROC_NOT_RUBY };

struct proc_entry {
	pid_t pid;
	int state;         /* enum proc_state */
	uint64_t retry_ns; /* PROC_NOT_RUBY: when to try attaching again */
	struct ruby_target t;
	struct sampler s;
	struct pauser pz; /* --blocking */
};

/*
 * All samplers write into one profile. With follow set, every stack gets a
 * "process PID COMMAND" root frame, and descendants of the first process
 * that turn out to be Ruby are attached as they appear (forked workers are
 * read with their parent's layout); one that exits just stops being sampled.
 */
struct procset {
	struct proc_entry **v; /* v[0] is the process the user named */
	int n, live;
	size_t cap;
	int follow, threads_root, verbose;
	int mode, syscalls, native; /* as struct sampler's */
	uint64_t period_ns;         /* as struct sampler's: the rate's period */
	int blocking; /* stop each process's threads around its sample (ptrace) */
	int capture_hz; /* sample each process's GVL holder on its own CPU at this rate (sampler_capture); 0: no */
	char capture_why[160]; /* why a process could not be: the first reason */
	int captures;   /* processes that are */
	uint64_t next_discover;
	uint64_t followed; /* descendants attached */
	struct profile *profile;
	const struct ruby_attach_opts *attach; /* how descendants are attached (NULL: as they say) */
};

void procset_init(struct procset *ps, struct profile *p);
/* Add a process already attached; the set takes over *attached (do not detach it yourself). */
int procset_add(struct procset *ps, pid_t pid, const struct ruby_target *attached);
/* With follow, attach new Ruby descendants (at most twice a second). */
void procset_discover(struct procset *ps, uint64_t now);
/*
 * Sample every live process, the reads standing for missed ticks (due since the tick before, not taken) too;
 * ERR_GONE when the first one exited, else the first one's error or 0.
 */
int procset_tick(struct procset *ps, uint64_t t_ns, uint64_t missed);
/* The samplers' counters added up. */
void procset_totals(const struct procset *ps, struct sampler *sum);
void procset_free(struct procset *ps);

#endif
