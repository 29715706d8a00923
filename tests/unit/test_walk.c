/* test_walk.c: the stack walker over random and corrupted memory, through a fake memory source. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ruby/layout.h"
#include "ruby/target.h"
#include "ruby/walk.h"

#define BASE 0x10000000ULL
#define SIZE (1u << 20)

/* Fill with a mix of noise and pointers back into the buffer, so the walker follows chains. */
static void fill(unsigned char *m, unsigned seed)
{
	srand(seed);
	for (size_t i = 0; i < SIZE; i += 8) {
		uint64_t v;
		switch (rand() % 4) {
		case 0: v = BASE + ((uint64_t)rand() % SIZE & ~7ULL); break;
		case 1: v = (uint64_t)rand() % 64; break;
		case 2: v = 0; break;
		default: v = ((uint64_t)rand() << 32) | (uint64_t)rand(); break;
		}
		memcpy(m + i, &v, 8);
	}
}

static void test_random_memory(void **state)
{
	(void)state;
	unsigned char *m = malloc(SIZE);
	struct ruby_sample *s = malloc(sizeof(*s));
	for (int l = 0; ruby_layout_ranges[l].layout; l++) {
		for (unsigned seed = 1; seed <= 200; seed++) {
			fill(m, seed * 31 + (unsigned)l);
			struct ruby_target t;
			memset(&t, 0, sizeof(t));
			assert_int_equal(strtab_init(&t.strs), 0);
			mem_open_buffer(&t.mem, BASE, m, SIZE);
			t.L = ruby_layout_ranges[l].layout;
			t.vm = BASE + ((uint64_t)seed * 4096 % SIZE);
			t.symbols = BASE + 64;
			t.th_read_len = 512;
			int err = ruby_sample_take(&t, s, 0);
			assert_true(err <= 0);
			assert_true(s->nthreads >= 0 && s->nthreads <= WALK_MAX_THREADS);
			assert_true(s->nframes_total <= WALK_MAX_TOTAL);
			for (int i = 0; i < s->nthreads; i++)
				assert_true(s->threads[i].nframes >= 0 && s->threads[i].nframes <= WALK_MAX_FRAMES + 1);
			ruby_target_detach(&t);
		}
	}
	free(s);
	free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_memory),
	};
	return cmocka_run_group_tests_name("walk", tests, NULL, NULL);
}
