/* sampling.c: the sampling loop record, top and serve share: the cadence, the processes read, where samples go. */
#include "sampling.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "../lib/clock.h"
#include "../lib/err.h"

#define LEAD_ERRORS_MAX 100 /* the lead's reads failing this many times in a row end the loop */

int sampling_init(struct sampling *sm, const struct sampling_options *o, struct profile *p)
{
	memset(sm, 0, sizeof(*sm));
	sm->o = *o;
	struct procs_config *pc = &sm->o.procs;
	pc->sampler.period_ns = (uint64_t)(1e9 / o->rate);
	pc->capture_hz = o->no_capture ? 0 : sampler_capture_hz(pc->sampler.mode, pc->blocking, o->no_bpf, o->rate);
	sm->start = clock_now_ns(); /* (again when it runs: attaching takes a while) */
	int err = 0;
	if (!p) {
		err = window_init(&sm->window, (uint32_t)o->rate, 0);
		p = sm->window.cur;
	}
	sm->profile = p;
	procs_init(&sm->procs, pc, p);
	return err;
}

void sampling_free(struct sampling *sm)
{
	procs_free(&sm->procs);
	if (sm->window.cur)
		window_free(&sm->window);
	memset(sm, 0, sizeof(*sm));
}

int sampling_add(struct sampling *sm, pid_t pid, const struct ruby_target *attached)
{
	return procs_add(&sm->procs, pid, attached);
}

uint64_t sampling_now(const struct sampling *sm)
{
	return clock_now_ns() - sm->start;
}

/* One tick at now (the loop's time): 0, or what ends the loop. */
static int tick(struct sampling *sm, uint64_t now, uint64_t missed)
{
	procs_scan(&sm->procs, now, sm->ticks == 0);
	sm->ticks++;
	int err = procs_tick(&sm->procs, now, missed);
	if (err == ERR_GONE)
		return err;
	sm->lead_errors = err ? sm->lead_errors + 1 : 0;
	return sm->lead_errors >= LEAD_ERRORS_MAX ? err : 0;
}

static void sleep_until(uint64_t deadline)
{
	struct timespec ts = { (time_t)(deadline / 1000000000ULL), (long)(deadline % 1000000000ULL) };
	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

int sampling_run(struct sampling *sm, const struct sampling_consumer *c, void *ctx)
{
	if (!sm->ticks) {
		sm->start = clock_now_ns();
		ticker_init(&sm->tk, sm->o.rate, sm->start);
	}
	uint64_t end = sm->o.duration > 0 ? sm->start + (uint64_t)(sm->o.duration * 1e9) : UINT64_MAX;
	uint64_t due = clock_now_ns(), missed = 0;
	int rc = 0;
	while (!rc && !*sm->o.stop) {
		uint64_t mono = clock_now_ns();
		if (mono >= end)
			break;
		if (mono < due) {
			if (c->wait)
				rc = c->wait(ctx, sm, due);
			else
				sleep_until(due);
			continue;
		}
		sm->lag_ns = mono - due;
		if (sm->lag_ns > sm->lag_max_ns)
			sm->lag_max_ns = sm->lag_ns;
		uint64_t now = mono - sm->start;
		rc = tick(sm, now, missed);
		if (!rc && c->ticked)
			rc = c->ticked(ctx, sm, now);
		/* The ticks that passed meanwhile are missed: the next read stands for them. */
		uint64_t before = sm->missed;
		due = ticker_next(&sm->tk, clock_now_ns(), &sm->missed);
		missed = sm->missed - before;
		sm->profile->dropped += missed;
	}
	return rc;
}

int sampling_keep(struct sampling *sm, uint64_t keep_from, uint64_t now)
{
	int renewed = sm->window.cur ? window_trim(&sm->window, keep_from, now) : 0;
	if (renewed < 0)
		return renewed;
	if (renewed) {
		sm->profile = sm->window.cur;
		procs_rebind(&sm->procs, sm->profile);
	}
	return procs_forget(&sm->procs, keep_from, now);
}

int sampling_set_mode(struct sampling *sm, int mode)
{
	sm->procs.cfg.sampler.mode = mode;
	if (sm->window.cur)
		window_clear(&sm->window);
	procs_rebind(&sm->procs, sm->profile);
	return 0;
}

void sampling_stats(const struct sampling *sm, struct sampler_stats *sum)
{
	procs_stats(&sm->procs, sum);
}
