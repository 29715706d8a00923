/* hist.h: the shared-memory latency histogram that `rbscope latency` reads while the agent fills it from a probe's fires. */
#ifndef RBSCOPE_HIST_H
#define RBSCOPE_HIST_H

/*
 * The agent creates a memfd holding one agent_hist and passes it to the CLI
 * (AGENT_LATENCY), which maps it read-only and reads it whenever it likes.
 * One writer (fires run holding the GVL), so plain stores suffice; the
 * reader may see a fire half-counted, which only matters by one.
 *
 * Buckets are log-linear: values below HIST_SUB have a bucket each; above,
 * each power of two is split into HIST_SUB equal parts, so a percentile read
 * off a bucket is within 1/HIST_SUB (6%) of the truth, and HIST_SUB of them
 * add up to one bucket of a log2 histogram.
 */
#include <stdint.h>

#define HIST_MAGIC 0x72626869u /* "rbhi" */
#define HIST_VERSION 1
#define HIST_SUB_BITS 4
#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_NBUCKETS ((64 - HIST_SUB_BITS + 1) * HIST_SUB)

struct agent_hist {
	uint32_t magic, version;
	uint64_t count;    /* values counted in the buckets */
	uint64_t negative; /* values below zero: counted here only */
	uint64_t sum, min, max;
	uint64_t bucket[HIST_NBUCKETS];
};

static inline unsigned hist_index(uint64_t v)
{
	if (v < HIST_SUB)
		return (unsigned)v;
	unsigned e = 63u - (unsigned)__builtin_clzll(v); /* >= HIST_SUB_BITS */
	unsigned sub = (unsigned)(v >> (e - HIST_SUB_BITS)) & (HIST_SUB - 1);
	return (e - HIST_SUB_BITS + 1) * HIST_SUB + sub;
}

/* The smallest value of bucket i; the bucket holds [hist_low(i), hist_low(i + 1)). */
static inline uint64_t hist_low(unsigned i)
{
	if (i < HIST_SUB)
		return i;
	unsigned e = i / HIST_SUB + HIST_SUB_BITS - 1, sub = i % HIST_SUB;
	return (uint64_t)(HIST_SUB + sub) << (e - HIST_SUB_BITS);
}

static inline void hist_add(struct agent_hist *h, int64_t v)
{
	if (v < 0) {
		h->negative++;
		return;
	}
	uint64_t u = (uint64_t)v;
	h->bucket[hist_index(u)]++;
	if (!h->count || u < h->min)
		h->min = u;
	if (u > h->max)
		h->max = u;
	h->sum += u;
	h->count++;
}

#endif
