/* thread_samples.h: a recording's samples as one timeline per thread, for the per-thread writers. */
#ifndef RBSCOPE_THREAD_SAMPLES_H
#define RBSCOPE_THREAD_SAMPLES_H

#include <stdint.h>

#include "../profile/profile.h"

/*
 * Thread t's samples are samples[order[k]] for k in [start[t], start[t + 1]),
 * in time order. Threads come in the order of their first sample.
 *
 * A recording without samples (an old one, with only stack counts) becomes
 * one made-up thread: every counted sample, stack by stack, one period
 * apart. Such a timeline is "synthetic": its times mean nothing and its
 * single thread stands for all of them.
 */
struct thread_samples {
	const struct profile_sample *samples;
	uint64_t nsamples;
	uint64_t *order;
	uint64_t *start;  /* nthreads + 1 entries */
	int32_t *tids;
	uint32_t nthreads;
	uint64_t period_ns; /* the sampling period (10 ms if the rate is unknown) */
	int synthetic;
	struct profile_sample *made; /* owned: the samples of a synthetic timeline */
	const struct profile *p;
};

/* Split p's samples by thread; 0, -ENOMEM, or -EFBIG for an absurd sample count. */
int thread_samples_init(struct thread_samples *ts, const struct profile *p);
void thread_samples_free(struct thread_samples *ts);

/*
 * What the sample at order[k] of thread t weighs. In an allocation profile,
 * the objects it stands for (one sampling interval), or with by_bytes the
 * bytes (its stack's mean size, times the interval). Otherwise the time it
 * stands for: until that
 * thread's next sample, or one period for its last sample and across a gap
 * of more than a few periods (the thread was not running, or ticks were lost).
 * Samples of one instant share the time to the next (at least 1 ns each).
 */
uint64_t thread_samples_weight(const struct thread_samples *ts, uint32_t t, uint64_t k);

/* Thread t's name: Thread#name, else "thread TID"; "all threads" if synthetic. */
const char *thread_samples_name(const struct thread_samples *ts, const struct profile *p, uint32_t t,
				char *buf, size_t cap);

#endif
