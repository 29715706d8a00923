/* procset.c: the processes one recording samples: a Ruby process and, with --subprocesses, its descendants. */
#include "procset.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/err.h"
#include "../proc/task.h"
#include "../lib/vec.h"

#define DISCOVER_NS 500000000ULL /* look for new children twice a second */
#define RETRY_NS 5000000000ULL   /* ask a child that was not (yet) Ruby again after 5 s: it may exec ruby */
#define MAX_DESCENDANTS 1024

void procset_init(struct procset *ps, struct profile *p)
{
	memset(ps, 0, sizeof(*ps));
	ps->profile = p;
}

static struct proc_entry *find(struct procset *ps, pid_t pid)
{
	for (int i = 0; i < ps->n; i++)
		if (ps->v[i]->pid == pid)
			return ps->v[i];
	return NULL;
}

static struct proc_entry *new_entry(struct procset *ps, pid_t pid)
{
	struct proc_entry **v = vec_grow(ps->v, (size_t)ps->n, &ps->cap, sizeof(*v));
	if (!v)
		return NULL;
	ps->v = v;
	struct proc_entry *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->pid = pid;
	ps->v[ps->n++] = e;
	return e;
}

/* Start sampling e, whose target is attached. */
static int start(struct procset *ps, struct proc_entry *e)
{
	int err = sampler_init(&e->s, &e->t, ps->profile);
	if (!err && ps->blocking && (err = pauser_attach(&e->pz, e->pid)))
		sampler_free(&e->s);
	if (err)
		return err;
	e->s.threads_root = ps->threads_root;
	e->s.mode = ps->mode;
	e->s.period_ns = ps->period_ns;
	e->s.syscalls = ps->syscalls;
	e->s.native = ps->native;
	if (ps->capture_hz) {
		char why[sizeof(ps->capture_why)];
		if (!sampler_capture(&e->s, ps->capture_hz, why, sizeof(why)))
			ps->captures++;
		else if (!ps->capture_why[0])
			snprintf(ps->capture_why, sizeof(ps->capture_why), "%s", why);
	}
	if (ps->follow) {
		char cmd[256] = "", name[320];
		task_cmdline(e->pid, cmd, sizeof(cmd));
		snprintf(name, sizeof(name), "process %d %s", (int)e->pid, cmd);
		e->s.process_frame = profile_frame(ps->profile, name, "", 0, PROFILE_FRAME_THREAD);
	}
	e->state = PROC_LIVE;
	ps->live++;
	return 0;
}

int procset_add(struct procset *ps, pid_t pid, const struct ruby_target *attached)
{
	struct proc_entry *e = new_entry(ps, pid);
	if (!e)
		return -ENOMEM;
	e->t = *attached; /* the entry owns it from now on */
	if (attached->L == &attached->dwarf_layout)
		e->t.L = &e->t.dwarf_layout; /* the layout lives inside the target */
	return start(ps, e);
}

void procset_discover(struct procset *ps, uint64_t now)
{
	if (!ps->follow || now < ps->next_discover || !ps->n)
		return;
	ps->next_discover = now + DISCOVER_NS;
	pid_t kids[MAX_DESCENDANTS];
	int n = task_descendants(ps->v[0]->pid, kids, MAX_DESCENDANTS);
	for (int i = 0; i < n; i++) {
		struct proc_entry *e = find(ps, kids[i]);
		if (e && (e->state != PROC_NOT_RUBY || now < e->retry_ns))
			continue;
		if (!e && !(e = new_entry(ps, kids[i])))
			return;
		/* A forked Ruby (a Puma or Unicorn worker) is read exactly like its parent. */
		if (ruby_target_attach(&e->t, kids[i], ps->attach)) {
			ruby_target_detach(&e->t);
			e->state = PROC_NOT_RUBY;
			e->retry_ns = now + RETRY_NS;
			continue;
		}
		if (start(ps, e)) {
			ruby_target_detach(&e->t);
			e->state = PROC_NOT_RUBY;
			e->retry_ns = UINT64_MAX;
			continue;
		}
		ps->followed++;
		if (ps->verbose)
			fprintf(stderr, "rbscope: following process %d (Ruby %s)\n", (int)kids[i], e->t.version);
	}
}

static int tick_all(struct procset *ps, uint64_t t_ns, uint64_t missed)
{
	int first_err = 0;
	for (int i = 0; i < ps->n; i++) {
		struct proc_entry *e = ps->v[i];
		if (e->state != PROC_LIVE)
			continue;
		e->s.ticks_missed = missed;
		int err = ps->blocking ? pauser_stop(&e->pz) : 0;
		if (!err) {
			err = sampler_tick(&e->s, t_ns);
			if (ps->blocking) {
				int rerr = pauser_resume(&e->pz);
				err = err ? err : rerr;
			}
		}
		if (err == ERR_GONE) {
			/* A worker that exits leaves its samples; only the first process ends the recording. */
			e->state = PROC_GONE;
			ps->live--;
			if (i == 0)
				return ERR_GONE;
			continue;
		}
		if (i == 0)
			first_err = err;
	}
	return first_err;
}

int procset_tick(struct procset *ps, uint64_t t_ns, uint64_t missed)
{
	uint64_t before = ps->profile->nsamples;
	int err = tick_all(ps, t_ns, missed);
	/* Each process's captures are timed within the tick, before the samples of the processes ticked ahead of it. */
	int oerr = profile_order_samples(ps->profile, before);
	return err ?: oerr;
}

void procset_totals(const struct procset *ps, struct sampler *sum)
{
	memset(sum, 0, sizeof(*sum));
	for (int i = 0; i < ps->n; i++) {
		const struct sampler *s = &ps->v[i]->s;
		if (ps->v[i]->state == PROC_NOT_RUBY)
			continue;
		sum->samples += s->samples;
		sum->errors += s->errors;
		sum->torn += s->torn;
		sum->empty += s->empty;
		sum->salvaged += s->salvaged;
		sum->captured += s->captured;
		sum->owed += s->owed;
		if (s->capture) {
			struct ruby_capture_stats st;
			ruby_capture_stats(s->capture, &st);
			sum->capture_lost += st.lost;
			sum->capture_bad += st.bad;
			sum->capture_unfollowed += st.unfollowed;
			sum->capture_native += st.native;
			sum->capture_native_missed += st.native_missed;
		}
		sum->unchanged += s->unchanged;
		sum->native_stops += s->native_stops;
		sum->native_moved += s->native_moved;
		sum->native_sampled += s->native_sampled;
		sum->native_stop_ns += s->native_stop_ns;
	}
}

void procset_free(struct procset *ps)
{
	for (int i = 0; i < ps->n; i++) {
		struct proc_entry *e = ps->v[i];
		if (e->state == PROC_LIVE || e->state == PROC_GONE) {
			if (ps->blocking)
				pauser_detach(&e->pz);
			sampler_free(&e->s);
			ruby_target_detach(&e->t);
		}
		free(e);
	}
	free(ps->v);
	memset(ps, 0, sizeof(*ps));
}
