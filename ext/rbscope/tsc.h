/* tsc.h: CLOCK_MONOTONIC nanoseconds for the tracer's hot path, from the CPU's time-stamp counter where the kernel trusts it. */
#ifndef RBSCOPE_TSC_H
#define RBSCOPE_TSC_H

/*
 * A traced call reads the clock twice; clock_gettime() costs about 16 ns
 * here against 7 ns for a bare rdtsc. Where the kernel's own clocksource is
 * the TSC (so it is invariant and synchronised across CPUs: the kernel
 * checked), tsc_now() scales rdtsc to CLOCK_MONOTONIC's nanoseconds with a
 * factor measured once against it; elsewhere it calls clock_gettime().
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

struct tsc_clock {
	int ok;
	uint64_t base_tsc, base_ns;
	uint64_t mult; /* ns per tick, << 32 */
};

extern struct tsc_clock tsc_clock;

/* Out of line: its timespec on the stack would cost the hot path a stack protector. */
static __attribute__((noinline, unused)) uint64_t tsc_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__)
static inline uint64_t tsc_read(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}
#else
static inline uint64_t tsc_read(void)
{
	return 0;
}
#endif

static inline uint64_t tsc_now(void)
{
	if (!tsc_clock.ok)
		return tsc_mono_ns();
	uint64_t d = tsc_read() - tsc_clock.base_tsc;
	return tsc_clock.base_ns + (uint64_t)(((unsigned __int128)d * tsc_clock.mult) >> 32);
}

/* Decide and calibrate (about 2 ms, once): the TSC if the kernel's clocksource is "tsc", else clock_gettime. */
static inline void tsc_init(void)
{
	if (tsc_clock.mult)
		return;
	tsc_clock.mult = 1; /* tried */
#if defined(__x86_64__)
	char cs[32] = "";
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
	if (f) {
		if (!fgets(cs, sizeof(cs), f))
			cs[0] = '\0';
		fclose(f);
	}
	if (strncmp(cs, "tsc\n", 4))
		return;
	uint64_t t0 = tsc_read(), n0 = tsc_mono_ns(), t1, n1;
	do {
		t1 = tsc_read();
		n1 = tsc_mono_ns();
	} while (n1 - n0 < 2000000);
	if (t1 <= t0)
		return;
	tsc_clock.mult = (uint64_t)(((unsigned __int128)(n1 - n0) << 32) / (t1 - t0));
	tsc_clock.base_tsc = t1;
	tsc_clock.base_ns = n1;
	tsc_clock.ok = tsc_clock.mult > 0;
#endif
}

#endif
