/* hist_stats.h: what the CLI reads off a latency histogram (hist.h): percentiles and bpftrace-like log2 rows. */
#ifndef RBSCOPE_HIST_STATS_H
#define RBSCOPE_HIST_STATS_H

#include <stdint.h>

#include "hist.h"

/* Rows hist_log2_rows() can write: [0], [1], the powers of two below HIST_SUB, then one per power of two. */
#define HIST_LOG2_ROWS (HIST_NBUCKETS / HIST_SUB + HIST_SUB_BITS + 1)

/*
 * The p-th percentile (0 < p <= 1) of count values in the buckets b (a copy
 * of h->bucket taken at one time; h gives min and max): the middle of the
 * bucket that holds it (exact below HIST_SUB), kept within [min, max]; 0
 * when count is 0.
 */
double hist_percentile(const struct agent_hist *h, const uint64_t *b, uint64_t count, double p);
/*
 * The buckets b summed into log2 rows, [0], [1], [2, 4), [4, 8) ...: each
 * row's count in rows[], its lowest value in lo[]; returns the rows written
 * (at most HIST_LOG2_ROWS).
 */
int hist_log2_rows(const uint64_t *b, uint64_t *rows, uint64_t *lo);

#endif
