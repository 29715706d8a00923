/* ticker.h: sampling ticks at a rate, each at a random phase within its period; periods missed are skipped. */
#ifndef RBSCOPE_TICKER_H
#define RBSCOPE_TICKER_H

#include <stdint.h>

/*
 * One tick somewhere in each period, at a random phase: a fixed phase would
 * see a workload whose period the rate divides at the same point every time
 * (a 10 ms cycle at 100 Hz: one phase).
 */
struct ticker {
	uint64_t interval, period; /* ns; the period the last tick fell in starts at period */
	uint64_t rnd;              /* xorshift64* state: no two runs alike, nothing to seed by hand */
};

/* Ticks at rate (Hz) from start (monotonic ns), the first at start. */
void ticker_init(struct ticker *t, double rate, uint64_t start);
/*
 * After a tick that ended at now: when the next one is due. Periods that have
 * passed meanwhile (the tick ran late) are skipped and added to *missed.
 */
uint64_t ticker_next(struct ticker *t, uint64_t now, uint64_t *missed);

#endif
