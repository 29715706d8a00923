/* thread_samples.c: a recording's samples as one timeline per thread, for the per-thread writers. */
#include "thread_samples.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/map.h"
#include "../lib/vec.h"

/* Stack counts beyond this are a corrupt recording, not one to expand into samples. */
#define MADE_SAMPLES_MAX (UINT64_C(1) << 26)
/* A gap longer than this many periods is not time the sample stands for. */
#define GAP_PERIODS 4

static int make_samples(struct thread_samples *ts, const struct profile *p)
{
	uint64_t n = profile_total(p), k = 0;
	if (n > MADE_SAMPLES_MAX)
		return -EFBIG;
	ts->made = malloc((n ? n : 1) * sizeof(*ts->made));
	if (!ts->made)
		return -ENOMEM;
	for (uint32_t i = 0; i < p->nstacks; i++)
		for (uint64_t c = 0; c < p->stacks[i].count; c++, k++)
			ts->made[k] = (struct profile_sample){ k * ts->period_ns, 0, i };
	ts->samples = ts->made;
	ts->nsamples = n;
	ts->synthetic = 1;
	return 0;
}

static uint64_t key_of(int32_t tid)
{
	return (uint32_t)tid;
}

/* Number the threads in order of first sample and count each one's samples into start[t + 1]. */
static int count_threads(struct thread_samples *ts, struct map *index)
{
	size_t tids_cap = 0, start_cap = 0;
	for (uint64_t i = 0; i < ts->nsamples; i++) {
		uint64_t *t = map_get(index, key_of(ts->samples[i].tid));
		if (t) {
			ts->start[*t + 1]++;
			continue;
		}
		/* tids[nthreads], and start[nthreads + 1] (each thread's first sample, and the end) */
		int32_t *tids = vec_grow(ts->tids, ts->nthreads, &tids_cap, sizeof(*tids));
		if (tids)
			ts->tids = tids;
		uint64_t *start = tids ? vec_grow(ts->start, (size_t)ts->nthreads + 1, &start_cap, sizeof(*start)) : NULL;
		if (start)
			ts->start = start;
		if (!tids || !start)
			return -ENOMEM;
		if (map_put(index, key_of(ts->samples[i].tid), ts->nthreads))
			return -ENOMEM;
		ts->tids[ts->nthreads] = ts->samples[i].tid;
		ts->start[++ts->nthreads] = 1;
	}
	return 0;
}

int thread_samples_init(struct thread_samples *ts, const struct profile *p)
{
	memset(ts, 0, sizeof(*ts));
	ts->p = p;
	ts->period_ns = p->rate_hz ? UINT64_C(1000000000) / p->rate_hz : UINT64_C(10000000);
	ts->samples = p->samples;
	ts->nsamples = p->nsamples;
	int err = p->nsamples ? 0 : make_samples(ts, p);
	if (err)
		return err;
	struct map index;
	map_init(&index);
	ts->start = calloc(1, sizeof(*ts->start));
	ts->order = malloc((ts->nsamples ? ts->nsamples : 1) * sizeof(*ts->order));
	err = ts->start && ts->order ? count_threads(ts, &index) : -ENOMEM;
	uint64_t *next = err ? NULL : malloc((ts->nthreads + 1) * sizeof(*next));
	if (!err && !next)
		err = -ENOMEM;
	if (!err) {
		for (uint32_t t = 0; t < ts->nthreads; t++) {
			ts->start[t + 1] += ts->start[t];
			next[t] = ts->start[t];
		}
		/* A stable bucket sort keeps each thread's samples in recording (time) order. */
		for (uint64_t i = 0; i < ts->nsamples; i++)
			ts->order[next[*map_get(&index, key_of(ts->samples[i].tid))]++] = i;
	}
	free(next);
	map_free(&index);
	if (err)
		thread_samples_free(ts);
	return err;
}

void thread_samples_free(struct thread_samples *ts)
{
	free(ts->order);
	free(ts->start);
	free(ts->tids);
	free(ts->made);
	memset(ts, 0, sizeof(*ts));
}

/* The time of thread t's k-th sample (k indexes its run in order). */
static uint64_t time_of(const struct thread_samples *ts, uint64_t k)
{
	return ts->samples[ts->order[k]].t_ns;
}

uint64_t thread_samples_weight(const struct thread_samples *ts, uint32_t t, uint64_t k)
{
	const struct profile *p = ts->p;
	if (p->kind == PROFILE_ALLOCS) {
		const struct profile_stack *st = &p->stacks[ts->samples[ts->order[k]].stack];
		uint64_t every = p->alloc_interval ? p->alloc_interval : 1;
		return !p->by_bytes ? every : st->count ? st->bytes * every / st->count : 0;
	}
	/* Samples of one instant (a capture and a read of one tick) share the time to the next instant. */
	uint64_t begin = ts->start[t], end = ts->start[t + 1], a = time_of(ts, k), s = k, e = k + 1;
	while (s > begin && time_of(ts, s - 1) == a)
		s--;
	while (e < end && time_of(ts, e) == a)
		e++;
	if (e >= end)
		return ts->period_ns;
	uint64_t b = time_of(ts, e), n = e - s;
	if (b < a || b - a > GAP_PERIODS * ts->period_ns)
		return ts->period_ns;
	uint64_t w = (b - a) / n;
	if (k == e - 1)
		w = (b - a) - w * (n - 1); /* the rest: the run's weights add up to the time */
	return w ? w : 1;
}

const char *thread_samples_name(const struct thread_samples *ts, const struct profile *p, uint32_t t,
				char *buf, size_t cap)
{
	if (ts->synthetic)
		return "all threads";
	const char *name = profile_thread_name(p, ts->tids[t]);
	if (*name)
		return name;
	profile_thread_ref(ts->tids[t], buf, cap); /* "tid 1234", "M:N thread 3" */
	return buf;
}
