/* clock.h: the monotonic clock, in nanoseconds: every timer, deadline and sample time of the tool. */
#ifndef RBSCOPE_CLOCK_H
#define RBSCOPE_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC now, in ns. */
static inline uint64_t clock_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

#endif
