/* procs.c: the processes one sampling loop reads: found, attached, sampled into one profile, dropped. */
#include "procs.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../lib/err.h"
#include "../lib/vec.h"
#include "../proc/task.h"

#define SCAN_NS 2000000000ULL       /* look for new and exited processes every 2 s... */
#define SCAN_CHILDREN_NS 500000000ULL /* ...twice a second for a process's descendants (workers start fast) */
#define RECHECK_NS 30000000000ULL   /* a process that was not Ruby is looked at again after 30 s (it may exec one)... */
#define RECHECK_CHILD_NS 5000000000ULL /* ...a descendant after 5 s */
#define UNLIKELY_RESET 20           /* PROCS_ALL: the memory of non-Ruby pids starts afresh every 20 such periods (pids are reused) */
#define FORGET_NS 600000000000ULL   /* a process gone (or not Ruby after all) is forgotten after 10 min */
#define MAX_DESCENDANTS 1024

void procs_init(struct procs *ps, const struct procs_config *cfg, struct profile *p)
{
	memset(ps, 0, sizeof(*ps));
	ps->cfg = *cfg;
	ps->profile = p;
	map_init(&ps->tid_owner);
	map_init(&ps->unlikely);
}

/* Stop sampling e (live): its counters kept, its sampler and target let go. */
static void release(struct procs *ps, struct proc_entry *e)
{
	sampler_stats(&e->s, &e->st);
	if (ps->cfg.blocking)
		pauser_detach(&e->pz);
	sampler_free(&e->s);
	ruby_target_detach(&e->t);
}

static void entry_free(struct procs *ps, struct proc_entry *e)
{
	if (e->state == PROC_LIVE)
		release(ps, e);
	free(e);
}

void procs_free(struct procs *ps)
{
	for (int i = 0; i < ps->n; i++)
		entry_free(ps, ps->v[i]);
	free(ps->v);
	map_free(&ps->tid_owner);
	map_free(&ps->unlikely);
	memset(ps, 0, sizeof(*ps));
}

const struct proc_entry *procs_find(const struct procs *ps, pid_t pid)
{
	for (int i = ps->n - 1; i >= 0; i--) /* the newest first: a pid reused is the new process */
		if (ps->v[i]->pid == pid)
			return ps->v[i];
	return NULL;
}

const struct proc_entry *procs_owner(const struct procs *ps, int32_t tid)
{
	uint64_t *hit = map_get(&ps->tid_owner, (uint32_t)tid);
	return hit ? (const struct proc_entry *)(uintptr_t)*hit : NULL;
}

static struct proc_entry *new_entry(struct procs *ps, pid_t pid, unsigned long long started)
{
	struct proc_entry **v = vec_grow(ps->v, (size_t)ps->n, &ps->cap, sizeof(*v));
	if (!v)
		return NULL;
	ps->v = v;
	struct proc_entry *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->pid = pid;
	e->started = started;
	ps->v[ps->n++] = e;
	return e;
}

static void describe(struct proc_entry *e)
{
	task_cmdline(e->pid, e->command, sizeof(e->command));
	if (task_container_id(e->pid, e->container, sizeof(e->container)) != 1)
		e->container[0] = 0;
	if (task_environ(e->pid, "OTEL_SERVICE_NAME", e->service, sizeof(e->service)) &&
	    task_environ(e->pid, "PYROSCOPE_APPLICATION_NAME", e->service, sizeof(e->service)))
		e->service[0] = 0;
}

/* With process_frames, e's root frame in the profile. */
static void set_process_frame(struct procs *ps, struct proc_entry *e)
{
	if (!ps->cfg.process_frames)
		return;
	char name[320];
	snprintf(name, sizeof(name), "process %d %s", (int)e->pid, e->command);
	e->s.process_frame = profile_frame(ps->profile, name, "", 0, PROFILE_FRAME_THREAD);
}

/* Start sampling e, whose target is attached: 0 (it is live), or a negative code (its sampler let go, not its target). */
static int start(struct procs *ps, struct proc_entry *e)
{
	int err = sampler_init(&e->s, &e->t, ps->profile, &ps->cfg.sampler);
	if (!err && ps->cfg.blocking)
		err = pauser_attach(&e->pz, e->pid);
	if (err) {
		sampler_free(&e->s);
		return err;
	}
	if (ps->cfg.capture_hz) {
		char why[sizeof(ps->capture_why)];
		if (!sampler_capture(&e->s, ps->cfg.capture_hz, why, sizeof(why)))
			ps->captures++;
		else if (!ps->capture_why[0])
			snprintf(ps->capture_why, sizeof(ps->capture_why), "%s", why);
	}
	set_process_frame(ps, e);
	e->state = PROC_LIVE;
	ps->live++;
	return 0;
}

int procs_add(struct procs *ps, pid_t pid, const struct ruby_target *attached)
{
	unsigned long long started = 0;
	task_start_time(pid, &started);
	struct proc_entry *e = new_entry(ps, pid, started);
	if (!e)
		return -ENOMEM;
	describe(e);
	e->t = *attached; /* the entry owns it from now on */
	if (attached->L == &attached->dwarf_layout)
		e->t.L = &e->t.dwarf_layout; /* the layout lives inside the target */
	int err = start(ps, e);
	if (err) { /* the caller keeps the target */
		free(e);
		ps->n--;
		return err;
	}
	if (ps->n == 1)
		ps->lead = 1;
	return 0;
}

/* Only the uid we run as may be profiled through us (root: every process). */
static int ours(pid_t pid)
{
	char path[32];
	struct stat st;
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	return !stat(path, &st) && (geteuid() == 0 || st.st_uid == geteuid());
}

/* Attach e (new, or failed before) and start sampling it; a process that is not Ruby (or not ours) is PROC_FAILED. */
static void attach(struct procs *ps, struct proc_entry *e, uint64_t now)
{
	describe(e);
	int err = ours(e->pid) ? ruby_target_attach(&e->t, e->pid, ps->cfg.attach) : -EPERM;
	err = err ?: start(ps, e);
	if (err) {
		ruby_target_detach(&e->t);
		memset(&e->t, 0, sizeof(e->t));
		e->state = PROC_FAILED;
		e->failure = err;
		e->gone_ns = now;
		return;
	}
	ps->attached++;
	if (ps->cfg.followed)
		ps->cfg.followed(ps->cfg.ctx, e);
}

static void set_gone(struct procs *ps, struct proc_entry *e, uint64_t now)
{
	if (e->state != PROC_LIVE)
		return;
	release(ps, e);
	e->state = PROC_GONE;
	e->gone_ns = now;
	ps->live--;
	memset(e->threads_now, 0, sizeof(e->threads_now));
}

/* Is pid, started at started, one we know (in any state)? */
static struct proc_entry *known(struct procs *ps, pid_t pid, unsigned long long started)
{
	for (int i = ps->n - 1; i >= 0; i--)
		if (ps->v[i]->pid == pid && ps->v[i]->started == started)
			return ps->v[i];
	return NULL;
}

static void consider(struct procs *ps, pid_t pid, uint64_t now)
{
	int all = ps->cfg.scope == PROCS_ALL;
	uint64_t recheck = ps->cfg.scope == PROCS_DESCENDANTS ? RECHECK_CHILD_NS : RECHECK_NS;
	unsigned long long started;
	if (pid == getpid() || task_start_time(pid, &started) || (all && !ours(pid)))
		return; /* another user's process is not even listed */
	struct proc_entry *e = known(ps, pid, started);
	if (e) {
		/* Not Ruby when we looked: it may have exec'd one since (a shell script starting ruby). */
		if (e->state != PROC_FAILED || ps->cfg.scope == PROCS_GIVEN || e->failure == -EPERM ||
		    now < e->gone_ns + recheck || (all && !ruby_process_likely(pid)))
			return;
		attach(ps, e, now); /* (a failed entry never sampled: nothing refers to it) */
		return;
	}
	if (all) {
		/* Reading every process's maps every scan is the scan's whole cost: remember the ones that are not Ruby. */
		uint64_t *next = map_get(&ps->unlikely, (uint32_t)pid);
		if (next && *next > now)
			return;
		if (!ruby_process_likely(pid)) {
			if (next)
				*next = now + recheck;
			else
				map_put(&ps->unlikely, (uint32_t)pid, now + recheck);
			return;
		}
	}
	if ((e = new_entry(ps, pid, started)))
		attach(ps, e, now);
}

void procs_scan(struct procs *ps, uint64_t now, int force)
{
	if (!force && now < ps->next_scan)
		return;
	ps->next_scan = now + (ps->cfg.scope == PROCS_DESCENDANTS ? SCAN_CHILDREN_NS : SCAN_NS);
	if (++ps->scans % (UNLIKELY_RESET * (RECHECK_NS / SCAN_NS)) == 0)
		map_clear(&ps->unlikely);
	/* Exited first: a pid that no longer exists, or now is another process. */
	for (int i = 0; i < ps->n; i++) {
		struct proc_entry *e = ps->v[i];
		unsigned long long started;
		if (e->state == PROC_LIVE && (task_start_time(e->pid, &started) || (e->started && started != e->started)))
			set_gone(ps, e, now);
	}
	if (ps->cfg.scope == PROCS_GIVEN) {
		for (int i = 0; i < ps->cfg.npids; i++) {
			const struct proc_entry *e = procs_find(ps, ps->cfg.pids[i]);
			if (!e || e->state != PROC_LIVE)
				consider(ps, ps->cfg.pids[i], now);
		}
	} else if (ps->cfg.scope == PROCS_DESCENDANTS) {
		if (!ps->n || ps->v[0]->state != PROC_LIVE)
			return;
		pid_t kids[MAX_DESCENDANTS];
		int n = task_descendants(ps->v[0]->pid, kids, MAX_DESCENDANTS);
		for (int i = 0; i < n; i++)
			consider(ps, kids[i], now);
	} else {
		DIR *d = opendir("/proc");
		if (!d)
			return;
		for (struct dirent *de; (de = readdir(d));)
			if (de->d_name[0] >= '1' && de->d_name[0] <= '9')
				consider(ps, (pid_t)atoi(de->d_name), now);
		closedir(d);
	}
}

static int failure_of(int err)
{
	return err == ERR_TORN ? PROC_FAIL_TORN
	     : err == -EFAULT || err == -ESRCH || err == -EPERM || err == -EIO ? PROC_FAIL_READ : PROC_FAIL_OTHER;
}

/* Count what samples [from, to) of the profile, e's, say of e's threads, for ticks ticks (the read and those it stands for). */
static void tally(struct procs *ps, struct proc_entry *e, uint64_t from, uint64_t to, uint64_t ticks)
{
	const struct profile *p = ps->profile;
	uint32_t now[PROFILE_STATES] = { 0 };
	int gc = 0;
	for (uint64_t i = from; i < to; i++) {
		const struct profile_sample *s = &p->samples[i];
		int state = profile_stack_state(p, s->stack);
		now[state]++;
		e->state_samples[state] += ticks;
		gc |= state == PROFILE_STATE_GC;
		uint64_t *owner = map_get(&ps->tid_owner, (uint32_t)s->tid);
		if (owner)
			*owner = (uintptr_t)e;
		else
			map_put(&ps->tid_owner, (uint32_t)s->tid, (uintptr_t)e);
	}
	memcpy(e->threads_now, now, sizeof(now));
	e->ticks += ticks;
	e->ticks_in_gc += gc ? ticks : 0;
	e->gcs_seen += gc && !e->in_gc;
	e->in_gc = gc;
}

/* Did the last read find every thread of the process parked (blocked or idle) in the very calls of the read before? */
static int all_parked(const struct ruby_sample *s)
{
	if (!s->nthreads || s->gc || s->torn || s->salvaged || s->unchanged != (uint32_t)s->nthreads)
		return 0;
	for (int i = 0; i < s->nthreads; i++)
		if (s->threads[i].state != THREAD_BLOCKED && s->threads[i].state != THREAD_SLEEPING)
			return 0;
	return 1;
}

/* Read e at now: 0, or its error (ERR_GONE: it exited). */
static int read_one(struct procs *ps, struct proc_entry *e, uint64_t now, uint64_t missed)
{
	e->s.ticks_missed = missed;
	int err = ps->cfg.blocking ? pauser_stop(&e->pz) : 0;
	if (!err) {
		e->t.stopped = ps->cfg.blocking;
		err = sampler_tick(&e->s, now);
		e->t.stopped = 0;
		if (ps->cfg.blocking) {
			int rerr = pauser_resume(&e->pz);
			err = err ? err : rerr;
		}
	}
	return err;
}

/*
 * With skip_quiet, a process whose threads have all been parked in the same
 * calls for its last PROCS_QUIET_READS reads (an idle worker, a job queue with
 * nothing to do) is read every other tick: most of the cost is the kernel
 * finding the pages of a read, and such a read finds what the one before
 * found. The read after the tick left out counts for both (its samples
 * twice, at its time), so every process's samples stay one per thread per
 * tick, and the first read that sees a thread move or run brings the process
 * back to every tick.
 */
int procs_tick(struct procs *ps, uint64_t now, uint64_t missed)
{
	if (ps->lead && ps->v[0]->state != PROC_LIVE)
		return ERR_GONE;
	uint64_t first = ps->profile->nsamples;
	int lead_err = 0;
	for (int i = 0; i < ps->n; i++) {
		struct proc_entry *e = ps->v[i];
		if (e->state != PROC_LIVE)
			continue;
		if (ps->cfg.skip_quiet && e->quiet >= PROCS_QUIET_READS && !e->left_out) {
			e->left_out = 1;
			ps->left_out++;
			continue;
		}
		uint64_t before = ps->profile->nsamples, torn = e->s.st.torn;
		uint64_t ticks = 1 + (uint64_t)e->left_out;
		e->left_out = 0;
		int err = read_one(ps, e, now, missed);
		if (err == ERR_GONE) {
			/* A worker that exits leaves its samples; only the lead's exit ends the loop. */
			set_gone(ps, e, now);
			if (i == 0 && ps->lead)
				lead_err = ERR_GONE;
			continue;
		}
		if (err)
			e->failures[failure_of(err)]++;
		if (i == 0 && ps->lead)
			lead_err = err;
		/* (held at PROCS_QUIET_READS: a process parked for months must not overflow it) */
		e->quiet = !err && e->s.st.torn == torn && all_parked(e->s.sample)
				 ? (e->quiet < PROCS_QUIET_READS ? e->quiet + 1 : PROCS_QUIET_READS) : 0;
		uint64_t after = ps->profile->nsamples;
		for (uint64_t k = 1; k < ticks; k++)
			for (uint64_t j = before; j < after; j++) {
				const struct profile_sample s = ps->profile->samples[j];
				if (profile_add(ps->profile, s.stack, s.t_ns, s.tid))
					break;
			}
		if (ps->cfg.tally)
			tally(ps, e, before, after, ticks);
	}
	/* Each process's captures are timed within the tick, before the samples of the processes read ahead of it. */
	int oerr = profile_order_samples(ps->profile, first);
	return lead_err ?: oerr;
}

void procs_rebind(struct procs *ps, struct profile *p)
{
	ps->profile = p;
	for (int i = 0; i < ps->n; i++) {
		struct proc_entry *e = ps->v[i];
		if (e->state != PROC_LIVE)
			continue;
		sampler_rebind(&e->s, p, &ps->cfg.sampler);
		set_process_frame(ps, e);
	}
}

/* Has e been gone long enough, with all its samples dropped, to be forgotten? */
static int forgettable(const struct proc_entry *e, uint64_t keep_from, uint64_t now)
{
	return e->state != PROC_LIVE && e->gone_ns + FORGET_NS <= now && e->gone_ns < keep_from;
}

/* The thread -> process map without the processes about to be forgotten. */
static int drop_owners(struct procs *ps, uint64_t keep_from, uint64_t now)
{
	struct map keep;
	size_t it = 0;
	uint64_t tid, e;
	map_init(&keep);
	while (map_next(&ps->tid_owner, &it, &tid, &e))
		if (!forgettable((const struct proc_entry *)(uintptr_t)e, keep_from, now) && map_put(&keep, tid, e)) {
			map_free(&keep);
			return -ENOMEM;
		}
	map_free(&ps->tid_owner);
	ps->tid_owner = keep;
	return 0;
}

int procs_forget(struct procs *ps, uint64_t keep_from, uint64_t now)
{
	int forget = 0;
	for (int i = ps->lead; i < ps->n && !forget; i++)
		forget = forgettable(ps->v[i], keep_from, now);
	if (!forget)
		return 0;
	if (drop_owners(ps, keep_from, now))
		return -ENOMEM;
	for (int i = ps->lead; i < ps->n; i++) {
		if (!forgettable(ps->v[i], keep_from, now))
			continue;
		if (ps->v[i]->state == PROC_GONE)
			sampler_stats_add(&ps->forgotten, &ps->v[i]->st);
		entry_free(ps, ps->v[i]);
		memmove(ps->v + i, ps->v + i + 1, (size_t)(ps->n - i - 1) * sizeof(*ps->v));
		ps->n--;
		i--;
		ps->dropped++;
	}
	return 0;
}

void procs_stats(const struct procs *ps, struct sampler_stats *sum)
{
	*sum = ps->forgotten;
	for (int i = 0; i < ps->n; i++) {
		const struct proc_entry *e = ps->v[i];
		struct sampler_stats one;
		if (e->state == PROC_LIVE)
			sampler_stats(&e->s, &one);
		else if (e->state == PROC_GONE)
			one = e->st;
		else
			continue;
		sampler_stats_add(sum, &one);
	}
}
