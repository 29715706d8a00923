/* hist_stats.c: what the CLI reads off a latency histogram: percentiles and log2 rows (see hist_stats.h). */
#include "hist_stats.h"

#include <math.h>

double hist_percentile(const struct agent_hist *h, const uint64_t *b, uint64_t count, double p)
{
	if (!count)
		return 0;
	uint64_t rank = (uint64_t)ceil(p * (double)count), seen = 0;
	if (rank < 1)
		rank = 1;
	for (unsigned i = 0; i < HIST_NBUCKETS; i++) {
		seen += b[i];
		if (seen < rank)
			continue;
		double lo = (double)hist_low(i);
		double hi = i + 1 < HIST_NBUCKETS ? (double)hist_low(i + 1) : 18446744073709551615.0;
		double v = i < HIST_SUB ? lo : (lo + hi) / 2;
		if (v > (double)h->max)
			v = (double)h->max;
		if (v < (double)h->min)
			v = (double)h->min;
		return v;
	}
	return (double)h->max;
}

int hist_log2_rows(const uint64_t *b, uint64_t *rows, uint64_t *lo)
{
	int n = 0;
	rows[n] = b[0], lo[n++] = 0;
	rows[n] = b[1], lo[n++] = 1;
	for (uint64_t p = 2; p < HIST_SUB; p *= 2, n++) {
		rows[n] = 0;
		lo[n] = p;
		for (uint64_t v = p; v < 2 * p; v++)
			rows[n] += b[v];
	}
	for (unsigned i = HIST_SUB; i < HIST_NBUCKETS; i += HIST_SUB, n++) {
		rows[n] = 0;
		lo[n] = hist_low(i);
		for (unsigned k = 0; k < HIST_SUB; k++)
			rows[n] += b[i + k];
	}
	return n;
}
