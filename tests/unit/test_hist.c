/* test_hist.c: the latency histogram: buckets, percentiles within their promised error, and log2 rows. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "agent/hist_stats.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void test_hist_buckets(void **state)
{
	(void)state;
	/* every bucket holds [hist_low(i), hist_low(i + 1)), and the values map back to it */
	for (unsigned i = 0; i + 1 < HIST_NBUCKETS; i++) {
		assert_true(hist_low(i) < hist_low(i + 1));
		assert_int_equal(hist_index(hist_low(i)), i);
		assert_int_equal(hist_index(hist_low(i + 1) - 1), i);
	}
	assert_int_equal(hist_index(UINT64_MAX), HIST_NBUCKETS - 1);
}

static void test_hist_percentiles(void **state)
{
	(void)state;
	static struct agent_hist h;
	enum { N = 20000 };
	static uint64_t v[N];
	srand(7);
	memset(&h, 0, sizeof(h));
	for (int i = 0; i < N; i++) {
		/* a log-normal-ish spread from ~100 ns to ~10 ms, and a few negatives that must not count */
		v[i] = (uint64_t)exp(4.6 + 11.5 * ((double)rand() / RAND_MAX) * ((double)rand() / RAND_MAX));
		hist_add(&h, (int64_t)v[i]);
	}
	hist_add(&h, -5);
	assert_int_equal(h.count, N);
	assert_int_equal(h.negative, 1);
	qsort(v, N, sizeof(v[0]), cmp_u64);
	const double ps[] = { 0.5, 0.9, 0.99, 0.999 };
	for (size_t k = 0; k < sizeof(ps) / sizeof(ps[0]); k++) {
		double exact = (double)v[(size_t)ceil(ps[k] * N) - 1], got = hist_percentile(&h, h.bucket, h.count, ps[k]);
		assert_true(fabs(got - exact) <= exact / HIST_SUB); /* within one fine bucket: 1/16 */
	}
	assert_true(hist_percentile(&h, h.bucket, h.count, 1.0) <= (double)h.max);
	assert_true(hist_percentile(&h, h.bucket, 0, 0.5) == 0);
	/* log2 rows: the counts add up, each row starts at a power of two (after [0] and [1]) */
	uint64_t rows[HIST_LOG2_ROWS], lo[HIST_LOG2_ROWS], total = 0;
	int n = hist_log2_rows(h.bucket, rows, lo);
	assert_true(n > 2 && n <= (int)HIST_LOG2_ROWS);
	for (int i = 0; i < n; i++) {
		total += rows[i];
		if (i >= 2)
			assert_int_equal(lo[i] & (lo[i] - 1), 0);
	}
	assert_int_equal(total, N);
}

static void test_hist_small_values_exact(void **state)
{
	(void)state;
	static struct agent_hist h;
	memset(&h, 0, sizeof(h));
	for (int v = 1; v <= 10; v++)
		hist_add(&h, v);
	/* below HIST_SUB each value has its own bucket: percentiles are exact */
	assert_true(hist_percentile(&h, h.bucket, h.count, 0.5) == 5);
	assert_true(hist_percentile(&h, h.bucket, h.count, 0.9) == 9);
	assert_true(hist_percentile(&h, h.bucket, h.count, 1.0) == 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hist_buckets),
		cmocka_unit_test(test_hist_percentiles),
		cmocka_unit_test(test_hist_small_values_exact),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
