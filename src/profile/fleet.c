/* fleet.c: every Ruby process `rbscope serve` samples: found, attached, sampled into one profile, dropped. */
#include "fleet.h"

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

#define SCAN_NS 2000000000ULL       /* look for new and exited processes every 2 s */
#define FORGET_NS 600000000000ULL   /* a process gone (or not Ruby after all) is forgotten after 10 min */
#define ROTATE_FRAMES 200000        /* start a new profile past this many frames... */
#define ROTATE_POOL (16u << 20)     /* ...or this many stack entries */
#define ROTATE_NS 3600000000000ULL  /* ...or after an hour, so threads and stacks long gone do not pile up */
#define RECHECK_NS 30000000000ULL   /* --all: a process that did not look like Ruby is looked at again after 30 s */
#define UNLIKELY_RESET 20           /* and that memory starts afresh every 20 such periods (pids are reused) */
#define QUIET_READS 3               /* reads with every thread parked in unmoved calls before a process is read every other tick */

static struct profile *new_profile(uint32_t rate_hz)
{
	struct profile *p = calloc(1, sizeof(*p));
	if (!p || profile_init(p)) {
		free(p);
		return NULL;
	}
	p->keep_samples = 1;
	p->rate_hz = rate_hz;
	return p;
}

static void drop_profile(struct profile *p)
{
	if (p)
		profile_free(p);
	free(p);
}

int fleet_init(struct fleet *f, uint32_t rate_hz)
{
	memset(f, 0, sizeof(*f));
	map_init(&f->tid_owner);
	map_init(&f->unlikely);
	f->rate_hz = rate_hz;
	f->cur = new_profile(rate_hz);
	return f->cur ? 0 : -ENOMEM;
}

static void target_free(struct fleet_target *e)
{
	if (e->state == FLEET_LIVE) {
		sampler_free(&e->s);
		ruby_target_detach(&e->t);
	}
	free(e);
}

void fleet_free(struct fleet *f)
{
	for (int i = 0; i < f->n; i++)
		target_free(f->v[i]);
	free(f->v);
	map_free(&f->tid_owner);
	map_free(&f->unlikely);
	drop_profile(f->cur);
	drop_profile(f->old);
}

const struct fleet_target *fleet_find(const struct fleet *f, pid_t pid)
{
	for (int i = f->n - 1; i >= 0; i--) /* the newest first: a pid reused is the new process */
		if (f->v[i]->pid == pid)
			return f->v[i];
	return NULL;
}

const struct fleet_target *fleet_owner(const struct fleet *f, int32_t tid)
{
	uint64_t *hit = map_get(&f->tid_owner, (uint32_t)tid);
	return hit ? (const struct fleet_target *)(uintptr_t)*hit : NULL;
}

/* Only the uid we run as may be profiled through us (root: every process). */
static int ours(pid_t pid)
{
	char path[32];
	struct stat st;
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	return !stat(path, &st) && (geteuid() == 0 || st.st_uid == geteuid());
}

static void describe(struct fleet_target *e)
{
	task_cmdline(e->pid, e->command, sizeof(e->command));
	if (task_container_id(e->pid, e->container, sizeof(e->container)) != 1)
		e->container[0] = 0;
	if (task_environ(e->pid, "OTEL_SERVICE_NAME", e->service, sizeof(e->service)) &&
	    task_environ(e->pid, "PYROSCOPE_APPLICATION_NAME", e->service, sizeof(e->service)))
		e->service[0] = 0;
}

/* Attach to pid as a new target; a process that is not Ruby (or not ours) is remembered as FLEET_FAILED. */
static void add(struct fleet *f, pid_t pid, unsigned long long started, uint64_t now)
{
	struct fleet_target **v = vec_grow(f->v, (size_t)f->n, &f->cap, sizeof(*v));
	if (!v)
		return;
	f->v = v;
	struct fleet_target *e = calloc(1, sizeof(*e));
	if (!e)
		return;
	e->pid = pid;
	e->started = started;
	describe(e);
	int err = ours(pid) ? ruby_target_attach(&e->t, pid, f->attach) : -EPERM;
	if (!err && (err = sampler_init(&e->s, &e->t, f->cur)))
		sampler_free(&e->s);
	if (err) {
		ruby_target_detach(&e->t);
		e->state = FLEET_FAILED;
		e->failure = err;
		e->gone_ns = now;
	} else {
		e->state = FLEET_LIVE;
		f->attached++;
	}
	f->v[f->n++] = e;
}

static void set_gone(struct fleet_target *e, uint64_t now)
{
	if (e->state != FLEET_LIVE)
		return;
	sampler_free(&e->s);
	ruby_target_detach(&e->t);
	e->state = FLEET_GONE;
	e->gone_ns = now;
	memset(e->threads_now, 0, sizeof(e->threads_now));
}

/* Is pid, started at started, one we know (in any state)? */
static struct fleet_target *known(struct fleet *f, pid_t pid, unsigned long long started)
{
	for (int i = f->n - 1; i >= 0; i--)
		if (f->v[i]->pid == pid && f->v[i]->started == started)
			return f->v[i];
	return NULL;
}

static void consider(struct fleet *f, pid_t pid, uint64_t now)
{
	unsigned long long started;
	if (pid == getpid() || task_start_time(pid, &started) || (f->all && !ours(pid)))
		return; /* another user's process is not even listed */
	struct fleet_target *e = known(f, pid, started);
	if (e) {
		/* Not Ruby when we looked: it may have exec'd one since (a shell script starting ruby). */
		if (e->state != FLEET_FAILED || !f->all || e->failure == -EPERM || now < e->gone_ns + RECHECK_NS ||
		    !ruby_process_likely(pid))
			return;
		e->pid = -e->pid; /* the old entry stays until forgotten, under a pid nobody has */
	} else if (f->all) {
		/* Reading every process's maps every scan is the scan's whole cost: remember the ones that are not Ruby. */
		uint64_t *next = map_get(&f->unlikely, (uint32_t)pid);
		if (next && *next > now)
			return;
		if (!ruby_process_likely(pid)) {
			if (next)
				*next = now + RECHECK_NS;
			else
				map_put(&f->unlikely, (uint32_t)pid, now + RECHECK_NS);
			return;
		}
	}
	add(f, pid, started, now);
}

void fleet_scan(struct fleet *f, uint64_t now, int force)
{
	if (!force && now < f->next_scan)
		return;
	f->next_scan = now + SCAN_NS;
	if (++f->scans % (UNLIKELY_RESET * (RECHECK_NS / SCAN_NS)) == 0)
		map_clear(&f->unlikely);
	/* Exited first: a pid that no longer exists, or now is another process. */
	for (int i = 0; i < f->n; i++) {
		struct fleet_target *e = f->v[i];
		unsigned long long started;
		if (e->state == FLEET_LIVE && (task_start_time(e->pid, &started) || started != e->started))
			set_gone(e, now);
	}
	if (!f->all) {
		for (int i = 0; i < f->npids; i++) {
			const struct fleet_target *e = fleet_find(f, f->pids[i]);
			if (!e || e->state != FLEET_LIVE)
				consider(f, f->pids[i], now);
		}
		return;
	}
	DIR *d = opendir("/proc");
	if (!d)
		return;
	for (struct dirent *de; (de = readdir(d));)
		if (de->d_name[0] >= '1' && de->d_name[0] <= '9')
			consider(f, (pid_t)atoi(de->d_name), now);
	closedir(d);
}

static int failure_of(int err)
{
	return err == ERR_TORN ? FLEET_FAIL_TORN
	     : err == -EFAULT || err == -ESRCH || err == -EPERM || err == -EIO ? FLEET_FAIL_READ : FLEET_FAIL_OTHER;
}

/* Count what sample [from, to) of cur, e's, says of e's threads, for ticks ticks (the read and those it stands for). */
static void tally(struct fleet *f, struct fleet_target *e, uint64_t from, uint64_t to, uint64_t ticks)
{
	const struct profile *p = f->cur;
	uint32_t now[PROFILE_STATES] = { 0 };
	int gc = 0;
	for (uint64_t i = from; i < to; i++) {
		const struct profile_sample *s = &p->samples[i];
		int state = profile_stack_state(p, s->stack);
		now[state]++;
		e->state_samples[state] += ticks;
		gc |= state == PROFILE_STATE_GC;
		uint64_t *owner = map_get(&f->tid_owner, (uint32_t)s->tid);
		if (owner)
			*owner = (uintptr_t)e;
		else
			map_put(&f->tid_owner, (uint32_t)s->tid, (uintptr_t)e);
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

/*
 * Sample every live target. A process whose threads have all been parked in
 * the same calls for its last QUIET_READS reads (an idle worker, a job queue
 * with nothing to do) is read every other tick: most of serve's cost is the
 * kernel finding the pages of a read, and such a read finds what the one
 * before found. The read after the tick left out counts for both (its
 * samples twice, at its time), so every process's samples stay one per
 * thread per tick, and the first read that sees a thread move or run brings
 * the process back to every tick.
 */
void fleet_tick(struct fleet *f, uint64_t now, uint64_t missed)
{
	uint64_t first = f->cur->nsamples;
	for (int i = 0; i < f->n; i++) {
		struct fleet_target *e = f->v[i];
		if (e->state != FLEET_LIVE)
			continue;
		if (e->quiet >= QUIET_READS && !e->left_out) {
			e->left_out = 1;
			f->left_out++;
			continue;
		}
		uint64_t before = f->cur->nsamples, unchanged = e->s.unchanged, torn = e->s.torn;
		uint64_t ticks = 1 + (uint64_t)e->left_out;
		e->left_out = 0;
		e->s.ticks_missed = missed;
		int err = sampler_tick(&e->s, now);
		f->unchanged += e->s.unchanged - unchanged;
		if (err == ERR_GONE) {
			set_gone(e, now);
			continue;
		}
		if (err)
			e->failures[failure_of(err)]++;
		/* (held at QUIET_READS: a process parked for months must not overflow it) */
		e->quiet = !err && e->s.torn == torn && all_parked(e->s.sample) ? (e->quiet < QUIET_READS ? e->quiet + 1 : QUIET_READS) : 0;
		uint64_t after = f->cur->nsamples;
		for (uint64_t k = 1; k < ticks; k++)
			for (uint64_t j = before; j < after; j++) {
				const struct profile_sample s = f->cur->samples[j];
				if (profile_add(f->cur, s.stack, s.t_ns, s.tid))
					break;
			}
		tally(f, e, before, after, ticks);
	}
	/* In time order for the windows (profile_sample_at): each process's captures came before the tick. Out of
	   memory, they stay as added: a window's edges are then a tick off, nothing is lost. */
	(void)profile_order_samples(f->cur, first);
}

/* Has e been gone long enough, with all its samples dropped, to be forgotten? */
static int forgettable(const struct fleet_target *e, uint64_t keep_from, uint64_t now)
{
	return e->state != FLEET_LIVE && e->gone_ns + FORGET_NS <= now && e->gone_ns < keep_from;
}

/* The thread -> target map without the targets about to be forgotten. */
static int drop_owners(struct fleet *f, uint64_t keep_from, uint64_t now)
{
	struct map keep;
	size_t it = 0;
	uint64_t tid, e;
	map_init(&keep);
	while (map_next(&f->tid_owner, &it, &tid, &e))
		if (!forgettable((const struct fleet_target *)(uintptr_t)e, keep_from, now) && map_put(&keep, tid, e)) {
			map_free(&keep);
			return -ENOMEM;
		}
	map_free(&f->tid_owner);
	f->tid_owner = keep;
	return 0;
}

int fleet_trim(struct fleet *f, uint64_t keep_from, uint64_t now)
{
	profile_drop_samples(f->cur, profile_sample_at(f->cur, keep_from));
	if (f->old) {
		profile_drop_samples(f->old, profile_sample_at(f->old, keep_from));
		if (!f->old->nsamples) {
			drop_profile(f->old);
			f->old = NULL;
		}
	}
	/* Forget targets long gone whose samples are all dropped: their threads first, then them. */
	int forget = 0;
	for (int i = 0; i < f->n && !forget; i++)
		forget = forgettable(f->v[i], keep_from, now);
	if (forget && drop_owners(f, keep_from, now))
		return -ENOMEM;
	for (int i = 0; forget && i < f->n; i++) {
		if (!forgettable(f->v[i], keep_from, now))
			continue;
		target_free(f->v[i]);
		memmove(f->v + i, f->v + i + 1, (size_t)(f->n - i - 1) * sizeof(*f->v));
		f->n--;
		i--;
		f->dropped++;
	}
	/* A new profile when this one has grown, once the one before it is gone: memory stays flat. */
	struct profile *p = f->cur;
	if (f->old || (p->nframes < ROTATE_FRAMES && p->pool_len < ROTATE_POOL && now - f->cur_since < ROTATE_NS))
		return 0;
	struct profile *next = new_profile(f->rate_hz);
	if (!next)
		return -ENOMEM;
	for (int i = 0; i < f->n; i++) {
		struct fleet_target *e = f->v[i];
		if (e->state != FLEET_LIVE)
			continue;
		sampler_free(&e->s);
		if (sampler_init(&e->s, &e->t, next)) {
			sampler_free(&e->s);
			ruby_target_detach(&e->t);
			e->state = FLEET_FAILED;
			e->failure = -ENOMEM;
			e->gone_ns = now;
		}
	}
	if (p->nsamples)
		f->old = p;
	else
		drop_profile(p);
	f->cur = next;
	f->cur_since = now;
	return 0;
}

struct window_filter {
	const struct fleet *f;
	pid_t pid;
	unsigned mask;
};

static int keep_sample(void *ctx, int32_t tid, int state)
{
	const struct window_filter *w = ctx;
	if (!(w->mask & 1u << state))
		return 0;
	if (!w->pid)
		return 1;
	const struct fleet_target *e = fleet_owner(w->f, tid);
	return e && e->pid == w->pid;
}

int fleet_window(const struct fleet *f, struct profile *dst, uint64_t from, uint64_t to, pid_t pid, unsigned mask)
{
	struct window_filter w = { f, pid, mask };
	const struct profile *gens[2] = { f->old, f->cur };
	int err = 0;
	for (int g = 0; g < 2 && !err; g++)
		if (gens[g])
			err = profile_copy_samples(dst, gens[g], profile_sample_at(gens[g], from),
						   profile_sample_at(gens[g], to), keep_sample, &w);
	return err;
}
