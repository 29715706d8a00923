/* test_diff.c: pprof files read back (the writer's own output, cut, garbage), and two profiles compared (report --diff). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lib/err.h"
#include "output/output.h"
#include "profile/diff.h"
#include "profile/pprof_read.h"
#include "profile/profile.h"

/* A stack of frames named by the letters of s ("abc": a, then b called by it, then c), counted n times. */
static void add(struct profile *p, const char *s, uint64_t n)
{
	uint32_t ids[16];
	size_t k = strlen(s);
	for (size_t i = 0; i < k; i++) {
		char name[2] = { s[i], 0 };
		int64_t id = profile_frame(p, name, "app.rb", (int32_t)i + 1, PROFILE_FRAME_RUBY);
		assert_true(id >= 0);
		ids[i] = (uint32_t)id;
	}
	int64_t st = profile_stack(p, ids, (uint32_t)k);
	assert_true(st >= 0);
	p->stacks[st].count += n;
}

/* The count of the stack named s in p (by its frames' names), 0 if it has none. */
static uint64_t count_of(const struct profile *p, const char *s)
{
	for (uint32_t i = 0; i < p->nstacks; i++) {
		const struct profile_stack *st = &p->stacks[i];
		if (st->len != strlen(s))
			continue;
		uint32_t j = 0;
		while (j < st->len && strtab_get(&p->strs, p->frames[p->pool[st->start + j]].name)[0] == s[j])
			j++;
		if (j == st->len)
			return st->count;
	}
	return 0;
}

static FILE *written(const struct profile *p, size_t *len)
{
	FILE *f = tmpfile();
	assert_non_null(f);
	assert_int_equal(output_pprof(p, f), 0);
	fflush(f);
	*len = (size_t)ftell(f);
	rewind(f);
	return f;
}

/* What the pprof writer writes reads back stack by stack, frames root first, counts and rate kept. */
static void test_round_trip(void **state)
{
	(void)state;
	struct profile p, q;
	assert_int_equal(profile_init(&p), 0);
	p.rate_hz = 100;
	add(&p, "abc", 7);
	add(&p, "abd", 3);
	add(&p, "e", 1);
	size_t len;
	FILE *f = written(&p, &len);
	assert_int_equal(profile_read_pprof(&q, f), 0);
	assert_int_equal(count_of(&q, "abc"), 7);
	assert_int_equal(count_of(&q, "abd"), 3);
	assert_int_equal(count_of(&q, "e"), 1);
	assert_int_equal(q.rate_hz, 100);
	fclose(f);
	profile_free(&q);
	/* cut anywhere: refused whole, never a profile of a part */
	f = written(&p, &len);
	unsigned char *b = malloc(len);
	assert_int_equal(fread(b, 1, len, f), len);
	fclose(f);
	for (size_t cut = 1; cut < len; cut += 7) {
		FILE *g = tmpfile();
		fwrite(b, 1, cut, g);
		rewind(g);
		assert_int_equal(profile_read_pprof(&q, g), ERR_BAD_FILE);
		profile_free(&q);
		fclose(g);
	}
	free(b);
	profile_free(&p);
}

/* Random bytes, gzip'd or not, never crash the reader: a profile or ERR_BAD_FILE. */
static void test_garbage(void **state)
{
	(void)state;
	srand(7);
	for (int round = 0; round < 2000; round++) {
		unsigned char b[512];
		size_t n = (size_t)(rand() % (int)sizeof(b));
		for (size_t i = 0; i < n; i++)
			b[i] = (unsigned char)rand();
		FILE *g = tmpfile();
		fwrite(b, 1, n, g);
		rewind(g);
		struct profile q;
		int err = profile_read_pprof(&q, g);
		assert_true(err == 0 || err == ERR_BAD_FILE);
		profile_free(&q);
		fclose(g);
	}
}

/* The diff: one set of frames, NEW's weights and BASE's beside them, shares compared in pp. */
static void test_diff(void **state)
{
	(void)state;
	struct profile base, newer;
	assert_int_equal(profile_init(&base), 0);
	assert_int_equal(profile_init(&newer), 0);
	add(&base, "ab", 50);
	add(&base, "ac", 50);
	add(&newer, "ab", 150);
	add(&newer, "ac", 50);
	add(&newer, "ad", 200);
	struct profile_diff d;
	assert_int_equal(profile_diff_build(&d, &base, &newer), 0);
	assert_int_equal(d.base_total, 100);
	assert_int_equal(d.new_total, 400);
	assert_int_equal(d.p.nstacks, 3);
	for (uint32_t i = 0; i < d.p.nstacks; i++) {
		uint64_t n = d.p.stacks[i].count, b = d.base[i];
		double pp = profile_diff_pp(&d, n, b);
		if (n == 150) /* 50% -> 37.5% */
			assert_true(pp > -12.51 && pp < -12.49);
		else if (n == 50) /* 50% -> 12.5% */
			assert_true(pp > -37.51 && pp < -37.49);
		else /* new: 0 -> 50% */
			assert_true(n == 200 && b == 0 && pp > 49.99 && pp < 50.01);
	}
	profile_diff_free(&d);
	base.kind = PROFILE_ALLOCS;
	assert_int_equal(profile_diff_build(&d, &base, &newer), -EINVAL); /* unlike kinds */
	profile_diff_free(&d);
	profile_free(&base);
	profile_free(&newer);
}

/* Label frames left out: stacks that differed by them alone merged, samples kept with their new stacks. */
static void test_without_labels(void **state)
{
	(void)state;
	struct profile p, q;
	assert_int_equal(profile_init(&p), 0);
	p.keep_samples = 1;
	int64_t a = profile_frame(&p, "a", "app.rb", 1, PROFILE_FRAME_RUBY), b = profile_frame(&p, "b", "app.rb", 2, PROFILE_FRAME_RUBY);
	int64_t g = profile_frame(&p, "GET /x", "", 0, PROFILE_FRAME_LABEL), h = profile_frame(&p, "GET /y", "", 0, PROFILE_FRAME_LABEL);
	uint32_t s1[] = { (uint32_t)g, (uint32_t)a, (uint32_t)b }, s2[] = { (uint32_t)h, (uint32_t)a, (uint32_t)b };
	int64_t x = profile_stack(&p, s1, 3), y = profile_stack(&p, s2, 3);
	assert_int_equal(profile_add(&p, (uint32_t)x, 10, 1), 0);
	assert_int_equal(profile_add(&p, (uint32_t)y, 20, 1), 0);
	assert_int_equal(profile_add(&p, (uint32_t)y, 30, 2), 0);
	assert_true(profile_has_labels(&p));
	assert_int_equal(profile_stack_label(&p, (uint32_t)y), h);
	assert_int_equal(profile_without_labels(&q, &p), 0);
	assert_false(profile_has_labels(&q));
	assert_int_equal(q.nstacks, 1);
	assert_int_equal(q.stacks[0].count, 3);
	assert_int_equal(q.stacks[0].len, 2);
	assert_int_equal(q.nsamples, 3);
	assert_int_equal(q.samples[2].t_ns, 30);
	assert_int_equal(q.samples[2].stack, 0);
	assert_int_equal(q.nthreads, 2);
	profile_free(&q);
	profile_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_without_labels),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_diff),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
