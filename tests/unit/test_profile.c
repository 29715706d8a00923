/* test_profile.c: thread states as stacks show them, counted per thread, kept through --raw files and merges; sample windows;
   samples put in time order; --raw files read whole or refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "output/thread_samples.h"
#include "profile/profile.h"

/* A stack of frames given as (name, kind) pairs, root first; its id. */
static uint32_t stack_of(struct profile *p, int n, const char *const *names, const uint32_t *kinds)
{
	uint32_t ids[8];
	for (int i = 0; i < n; i++) {
		int64_t id = profile_frame(p, names[i], "", 0, kinds[i]);
		assert_true(id >= 0);
		ids[i] = (uint32_t)id;
	}
	int64_t s = profile_stack(p, ids, (uint32_t)n);
	assert_true(s >= 0);
	return (uint32_t)s;
}

enum { RUNS, GVL, READ, SELECT, SLEEP, GC, NOGVL, NSTACKS };

/* One stack per case, for thread tids 1 and 2: what each shows is the test's expectation. */
static void make_stacks(struct profile *p, uint32_t *st)
{
	const uint32_t ruby2[] = { PROFILE_FRAME_RUBY, PROFILE_FRAME_RUBY };
	const uint32_t state[] = { PROFILE_FRAME_RUBY, PROFILE_FRAME_STATE };
	const uint32_t wait_state[] = { PROFILE_FRAME_WAIT, PROFILE_FRAME_STATE };
	const uint32_t wait[] = { PROFILE_FRAME_RUBY, PROFILE_FRAME_WAIT };
	const uint32_t gc[] = { PROFILE_FRAME_RUBY, PROFILE_FRAME_GC };
	const uint32_t cfunc[] = { PROFILE_FRAME_CFUNC, PROFILE_FRAME_STATE };
	st[RUNS] = stack_of(p, 2, (const char *const[]){ "main", "Foo#bar" }, ruby2);
	st[GVL] = stack_of(p, 2, (const char *const[]){ "Foo#bar", profile_state_frame(PROFILE_STATE_GVL) }, state);
	st[READ] = stack_of(p, 2, (const char *const[]){ "IO#read", "(blocked: read)" }, state);
	st[SELECT] = stack_of(p, 2, (const char *const[]){ "IO.select", "(blocked: select)" }, wait_state);
	st[SLEEP] = stack_of(p, 2, (const char *const[]){ "main", "Kernel#sleep" }, wait);
	st[GC] = stack_of(p, 2, (const char *const[]){ "main", "(garbage collection)" }, gc);
	st[NOGVL] = stack_of(p, 2, (const char *const[]){ "Zlib.deflate", profile_state_frame(PROFILE_STATE_RUNNING) }, cfunc);
}

static void test_stack_state(void **state)
{
	(void)state;
	struct profile p;
	uint32_t st[NSTACKS];
	assert_int_equal(profile_init(&p), 0);
	make_stacks(&p, st);
	assert_int_equal(profile_stack_state(&p, st[RUNS]), PROFILE_STATE_RUNNING);
	assert_int_equal(profile_stack_state(&p, st[GVL]), PROFILE_STATE_GVL);
	assert_int_equal(profile_stack_state(&p, st[READ]), PROFILE_STATE_BLOCKED);
	assert_int_equal(profile_stack_state(&p, st[SELECT]), PROFILE_STATE_IDLE); /* blocked in a wait: idle */
	assert_int_equal(profile_stack_state(&p, st[SLEEP]), PROFILE_STATE_IDLE);
	assert_int_equal(profile_stack_state(&p, st[GC]), PROFILE_STATE_GC);
	assert_int_equal(profile_stack_state(&p, st[NOGVL]), PROFILE_STATE_RUNNING);
	profile_free(&p);
}

/* Thread 1: 3 running, 2 GVL waits; thread 2: 4 blocked, 1 idle. */
static void record(struct profile *p, uint32_t *st)
{
	const uint32_t plan[][2] = { { 1, RUNS }, { 2, READ }, { 1, GVL }, { 2, READ }, { 1, RUNS }, { 2, READ },
				     { 1, GVL }, { 2, READ }, { 1, RUNS }, { 2, SLEEP } };
	assert_int_equal(profile_thread(p, 1, "main"), 0);
	assert_int_equal(profile_thread(p, 2, "reader"), 0);
	for (size_t i = 0; i < sizeof(plan) / sizeof(*plan); i++)
		assert_int_equal(profile_add(p, st[plan[i][1]], i * 1000, (int32_t)plan[i][0]), 0);
}

static void expect_states(const struct profile *p)
{
	const uint64_t want1[PROFILE_STATES] = { 3, 2, 0, 0, 0 }, want2[PROFILE_STATES] = { 0, 0, 4, 1, 0 };
	int seen = 0;
	for (uint32_t i = 0; i < p->nthreads; i++) {
		const uint64_t *want = p->threads[i].tid == 1 ? want1 : want2;
		assert_true(p->threads[i].tid == 1 || p->threads[i].tid == 2);
		assert_memory_equal(p->thread_states[i], want, sizeof(want1));
		seen |= 1 << p->threads[i].tid;
	}
	assert_int_equal(seen, 6);
	assert_string_equal(profile_thread_name(p, 2), "reader");
}

static void test_thread_states_counted(void **state)
{
	(void)state;
	struct profile p;
	uint32_t st[NSTACKS];
	assert_int_equal(profile_init(&p), 0);
	make_stacks(&p, st);
	record(&p, st);
	assert_int_equal(p.nthreads, 2);
	expect_states(&p);
	profile_free(&p);
}

/* A profile holding the test's stacks (st), its --raw writer started on a temporary file, returned. */
static FILE *raw_start(struct profile *p, struct raw_writer *w, uint32_t *st)
{
	FILE *f = tmpfile();
	assert_non_null(f);
	assert_int_equal(profile_init(p), 0);
	p->keep_samples = 1;
	make_stacks(p, st);
	assert_int_equal(raw_writer_start(w, f, p), 0);
	return f;
}

/* Written as a --raw file and read back, whether the reader keeps the samples or only counts them. */
static void test_thread_states_raw(void **state)
{
	(void)state;
	for (int keep = 0; keep < 2; keep++) {
		struct profile p, q;
		struct raw_writer w;
		uint32_t st[NSTACKS];
		FILE *f = raw_start(&p, &w, st);
		record(&p, st);
		assert_int_equal(raw_writer_finish(&w, &p, 0), 0);
		rewind(f);
		int cut = 1;
		assert_int_equal(profile_read_raw(&q, f, keep, &cut), 0);
		assert_int_equal(cut, 0);
		expect_states(&q);
		profile_free(&q);
		profile_free(&p);
		fclose(f);
	}
}

static void test_thread_states_merged(void **state)
{
	(void)state;
	struct profile p, m;
	uint32_t st[NSTACKS];
	assert_int_equal(profile_init(&p), 0);
	assert_int_equal(profile_init(&m), 0);
	make_stacks(&p, st);
	record(&p, st);
	assert_int_equal(profile_merge(&m, &p), 0);
	expect_states(&m);
	profile_free(&m);
	profile_free(&p);
}

/* Keep thread 2's samples in states other than running (a filter as serve's). */
static int keep_thread2_waits(void *ctx, int32_t tid, int state)
{
	(void)ctx;
	return tid == 2 && state != PROFILE_STATE_RUNNING;
}

static void test_sample_windows(void **state)
{
	(void)state;
	struct profile p, w;
	uint32_t st[NSTACKS];
	assert_int_equal(profile_init(&p), 0);
	p.keep_samples = 1;
	make_stacks(&p, st);
	assert_int_equal(profile_thread(&p, 2, "worker"), 0);
	for (uint64_t t = 0; t < 10; t++) { /* at t: thread 1 runs, thread 2 in stack t % NSTACKS */
		assert_int_equal(profile_add(&p, st[RUNS], t * 100, 1), 0);
		assert_int_equal(profile_add(&p, st[t % NSTACKS], t * 100, 2), 0);
	}
	assert_int_equal(profile_sample_at(&p, 0), 0);
	assert_int_equal(profile_sample_at(&p, 250), 6);
	assert_int_equal(profile_sample_at(&p, 300), 6);
	assert_int_equal(profile_sample_at(&p, 5000), 20);
	/* [200, 600): t = 2..5, thread 2 in READ, SELECT, SLEEP, GC: none running, all kept. */
	assert_int_equal(profile_init(&w), 0);
	w.keep_samples = 1;
	assert_int_equal(profile_copy_samples(&w, &p, profile_sample_at(&p, 200), profile_sample_at(&p, 600),
					      keep_thread2_waits, NULL), 0);
	assert_int_equal(w.nsamples, 4);
	assert_int_equal(profile_total(&w), 4);
	assert_int_equal(w.samples[0].t_ns, 200);
	assert_int_equal(w.samples[3].t_ns, 500);
	assert_string_equal(profile_thread_name(&w, 2), "worker");
	assert_int_equal(profile_stack_state(&w, w.samples[0].stack), PROFILE_STATE_BLOCKED);
	assert_int_equal(profile_stack_state(&w, w.samples[3].stack), PROFILE_STATE_GC);
	/* Stacks are the same by their text: copying again adds no new ones. */
	uint32_t nstacks = w.nstacks;
	assert_int_equal(profile_copy_samples(&w, &p, 0, p.nsamples, keep_thread2_waits, NULL), 0);
	assert_int_equal(w.nstacks, nstacks + 1); /* GVL (t = 1, 8) was outside the window */
	profile_free(&w);
	/* Dropping the oldest keeps the rest in order, and the counts. */
	uint64_t total = profile_total(&p);
	profile_drop_samples(&p, 6);
	assert_int_equal(p.nsamples, 14);
	assert_int_equal(p.samples[0].t_ns, 300);
	assert_int_equal(profile_total(&p), total);
	profile_drop_samples(&p, 100);
	assert_int_equal(p.nsamples, 0);
	profile_free(&p);
}

/* Samples added out of time order (two processes' captures in one tick) are put in order, ties kept as added. */
static void test_samples_ordered(void **state)
{
	(void)state;
	struct profile p;
	uint32_t st[NSTACKS];
	assert_int_equal(profile_init(&p), 0);
	p.keep_samples = 1;
	make_stacks(&p, st);
	/* The head, in order; then a tick's tail: process A at 500, B's captures at 350 and 420, B at 500. */
	const uint64_t t[] = { 100, 200, 300, 400, 500, 350, 420, 500, 300 };
	const int32_t tid[] = { 1, 1, 1, 1, 1, 2, 2, 2, 3 };
	for (int i = 0; i < 4; i++)
		assert_int_equal(profile_add(&p, st[RUNS], t[i], tid[i]), 0);
	assert_int_equal(profile_order_samples(&p, 2), 0); /* in order: untouched */
	for (int i = 4; i < 9; i++)
		assert_int_equal(profile_add(&p, st[i % NSTACKS], t[i], tid[i]), 0);
	assert_int_equal(profile_order_samples(&p, 4), 0);
	const uint64_t want_t[] = { 100, 200, 300, 300, 350, 400, 420, 500, 500 };
	const int32_t want_tid[] = { 1, 1, 1, 3, 2, 1, 2, 1, 2 };
	for (int i = 0; i < 9; i++) {
		assert_int_equal(p.samples[i].t_ns, want_t[i]);
		assert_int_equal(p.samples[i].tid, want_tid[i]);
	}
	assert_int_equal(profile_total(&p), 9);
	/* The whole of a file's samples, in any order. */
	for (uint64_t i = 0; i < p.nsamples; i++)
		p.samples[i].t_ns = 1000 - p.samples[i].t_ns;
	assert_int_equal(profile_order_samples(&p, 0), 0);
	for (uint64_t i = 1; i < p.nsamples; i++)
		assert_true(p.samples[i - 1].t_ns <= p.samples[i].t_ns);
	profile_free(&p);
}

/* A --raw file of 3 flushes, the second's samples timed before the first's (as `record -s` of a BPF-sampled cluster wrote). */
static FILE *raw_out_of_order(void)
{
	struct profile p;
	struct raw_writer w;
	uint32_t st[NSTACKS];
	FILE *f = raw_start(&p, &w, st);
	for (int flush = 0; flush < 3; flush++) {
		for (uint64_t i = 0; i < 100; i++)
			assert_int_equal(profile_add(&p, st[RUNS], (flush == 1 ? 0 : flush) * 100000 + i * 1000 + 7, 1), 0);
		assert_int_equal(raw_writer_flush(&w, &p, 0), 0);
	}
	p.duration_ns = 300000;
	assert_int_equal(raw_writer_finish(&w, &p, 0), 0);
	profile_free(&p);
	rewind(f);
	return f;
}

static void test_raw_out_of_order(void **state)
{
	(void)state;
	for (int keep = 0; keep < 2; keep++) {
		FILE *f = raw_out_of_order();
		struct profile q;
		int cut = 1;
		assert_int_equal(profile_read_raw(&q, f, keep, &cut), 0);
		assert_int_equal(cut, 0);
		assert_int_equal(profile_total(&q), 300);
		assert_int_equal(q.duration_ns, 300000);
		if (keep) {
			assert_int_equal(q.nsamples, 300);
			for (uint64_t i = 1; i < q.nsamples; i++)
				assert_true(q.samples[i - 1].t_ns <= q.samples[i].t_ns);
		}
		profile_free(&q);
		fclose(f);
	}
}

/* A file cut inside its last record reads what came before; a bad record with the file going on after it does not read. */
static void test_raw_cut_or_bad(void **state)
{
	(void)state;
	FILE *f = raw_out_of_order();
	char *bytes = malloc(1 << 20);
	assert_non_null(bytes);
	size_t n = fread(bytes, 1, 1 << 20, f);
	fclose(f);
	assert_true(n > 1000);
	for (int keep = 0; keep < 2; keep++) {
		/* Cut 40 bytes into the end: in the last 'D' record, or its end record. */
		struct profile q;
		int cut = 0;
		f = fmemopen(bytes, n - 60, "rb");
		assert_int_equal(profile_read_raw(&q, f, keep, &cut), 0);
		assert_int_equal(cut, 1);
		assert_true(profile_total(&q) >= 200);
		profile_free(&q);
		fclose(f);
		/* A record tag no writer makes, in the middle: the file is refused, not read up to it. */
		char *bad = malloc(n);
		assert_non_null(bad);
		memcpy(bad, bytes, n);
		size_t at = 24; /* after the header: magic, pid, rate, start */
		for (int k = 0; k < 8; k++) { /* skip the first 8 records: well past the first samples */
			uint64_t len;
			memcpy(&len, bad + at + 1, 8);
			at += 9 + len;
		}
		assert_true(at < n - 100);
		bad[at] = 'Z';
		f = fmemopen(bad, n, "rb");
		assert_int_not_equal(profile_read_raw(&q, f, keep, &cut), 0);
		profile_free(&q);
		fclose(f);
		free(bad);
	}
	free(bytes);
}

/* Timeline weights: until the thread's next sample; samples of one instant share the time to the next, none 0. */
static void test_sample_weights(void **state)
{
	(void)state;
	struct profile p;
	struct thread_samples ts;
	uint32_t st[NSTACKS];
	assert_int_equal(profile_init(&p), 0);
	p.keep_samples = 1;
	p.rate_hz = 100; /* a 10 ms period */
	make_stacks(&p, st);
	const uint64_t ms = 1000000, t[] = { 0, 10 * ms, 10 * ms, 10 * ms, 41 * ms, 500 * ms };
	const uint64_t want[] = { 10 * ms, 10333333, 10333333, 10333334, 10 * ms, 10 * ms }; /* 41-10 = 31 ms over 3 */
	for (int i = 0; i < 6; i++)
		assert_int_equal(profile_add(&p, st[RUNS], t[i], 1), 0);
	assert_int_equal(thread_samples_init(&ts, &p), 0);
	assert_int_equal(ts.nthreads, 1);
	for (uint64_t k = 0; k < 6; k++)
		assert_int_equal(thread_samples_weight(&ts, 0, k), want[k]); /* (41 -> 500 ms: a gap, one period) */
	thread_samples_free(&ts);
	profile_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stack_state),
		cmocka_unit_test(test_thread_states_counted),
		cmocka_unit_test(test_thread_states_raw),
		cmocka_unit_test(test_thread_states_merged),
		cmocka_unit_test(test_sample_windows),
		cmocka_unit_test(test_samples_ordered),
		cmocka_unit_test(test_raw_out_of_order),
		cmocka_unit_test(test_raw_cut_or_bad),
		cmocka_unit_test(test_sample_weights),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
