/* ticker.c: sampling ticks at a rate, each at a random phase within its period; periods missed are skipped. */
#include "ticker.h"

#include <unistd.h>

void ticker_init(struct ticker *t, double rate, uint64_t start)
{
	t->interval = (uint64_t)(1e9 / rate);
	t->period = start;
	t->rnd = start ^ ((uint64_t)getpid() << 32) ^ 0x9e3779b97f4a7c15ULL;
}

static uint64_t next_random(uint64_t *state)
{
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	return *state * 0x2545f4914f6cdd1dULL;
}

uint64_t ticker_next(struct ticker *t, uint64_t now, uint64_t *missed)
{
	t->period += t->interval;
	if (t->period + t->interval <= now) { /* fell behind: skip the periods missed and count them */
		uint64_t n = (now - t->period) / t->interval;
		*missed += n;
		t->period += n * t->interval;
	}
	return t->period + next_random(&t->rnd) % t->interval;
}
