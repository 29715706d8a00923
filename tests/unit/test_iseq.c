/* test_iseq.c: the succinct bit-vector rank query against tables built the way Ruby's iseq.c builds them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ruby/iseq.h"

/* Build the table for the sorted positions data[0..n) as iseq.c's succ_index_table_create does. */
static uint64_t *build(int max_pos, const int *data, int n, size_t *words)
{
	int imm = (max_pos < 54 ? max_pos + 8 : 54) / 9, blocks = (max_pos < 54 ? 0 : max_pos - 54 + 511) / 512;
	*words = 6 + (size_t)blocks * 10;
	uint64_t *t = calloc(*words, 8);
	int r = 0;
	for (int j = 0; j < imm; j++)
		for (int i = 0; i < 9; i++) {
			if (r < n && data[r] == j * 9 + i)
				r++;
			t[j] |= (uint64_t)r << (i * 7);
		}
	for (int k = 0; k < blocks; k++) {
		uint64_t *b = t + 6 + k * 10;
		int small = 0;
		b[0] = (uint64_t)r;
		for (int j = 0; j < 8; j++) {
			uint64_t bits = 0;
			if (j)
				b[1] |= (uint64_t)small << ((j - 1) * 9);
			for (int i = 0; i < 64; i++)
				if (r < n && data[r] == k * 512 + j * 64 + i + 54) {
					bits |= 1ULL << i;
					r++;
				}
			b[2 + j] = bits;
			small += __builtin_popcountll(bits);
		}
	}
	return t;
}

static void check_positions(int max_pos, const int *data, int n)
{
	size_t words;
	uint64_t *t = build(max_pos, data, n, &words);
	for (int x = 0; x < max_pos; x++) {
		int expect = 0;
		while (expect < n && data[expect] <= x)
			expect++;
		assert_int_equal(iseq_succ_rank(t, words, (uint32_t)x), expect);
	}
	free(t);
}

static void test_short_iseq(void **state)
{
	(void)state;
	int data[] = { 0, 3, 4, 10, 20 };
	check_positions(30, data, 5);
}

static void test_long_iseq(void **state)
{
	(void)state;
	int n = 0, data[2000];
	for (int p = 0; p < 5000 && n < 2000; p += 1 + (p * 7919) % 5)
		data[n++] = p;
	check_positions(data[n - 1] + 3, data, n);
}

static void test_out_of_table(void **state)
{
	(void)state;
	int data[] = { 0, 60 };
	size_t words;
	uint64_t *t = build(100, data, 2, &words);
	assert_int_equal(iseq_succ_rank(t, words, 5000), -1); /* past the last block: refused, not read */
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_short_iseq),
		cmocka_unit_test(test_long_iseq),
		cmocka_unit_test(test_out_of_table),
	};
	return cmocka_run_group_tests_name("iseq", tests, NULL, NULL);
}
