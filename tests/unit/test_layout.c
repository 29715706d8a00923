/* test_layout.c: every release of every supported series resolves to exactly one generated layout. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "ruby/layout.h"

/* Every known release X.Y.0 .. X.Y.last is served by exactly one range, and find() returns its table. */
static void test_each_release_resolves_exactly_once(void **state)
{
	(void)state;
	int series = 0;
	for (const struct ruby_layout_range *r = ruby_layout_ranges; r->layout; r++) {
		assert_true(r->first <= r->last);
		assert_int_equal(r->layout->api_major, r->major);
		assert_int_equal(r->layout->api_minor, r->minor);
		if (r == ruby_layout_ranges || r[-1].major != r->major || r[-1].minor != r->minor) {
			series++;
			assert_int_equal(r->first, 0); /* a series starts at X.Y.0 */
		} else {
			assert_int_equal(r->first, r[-1].last + 1); /* and has no gap or overlap */
		}
		for (int teeny = r->first; teeny <= r->last; teeny++) {
			char v[32];
			int claims = 0;
			snprintf(v, sizeof(v), "%d.%d.%d", r->major, r->minor, teeny);
			for (const struct ruby_layout_range *o = ruby_layout_ranges; o->layout; o++)
				claims += o->major == r->major && o->minor == r->minor && teeny >= o->first && teeny <= o->last;
			assert_int_equal(claims, 1);
			enum layout_match how;
			assert_ptr_equal(ruby_layout_find(v, &how), r->layout);
			assert_int_equal(how, LAYOUT_EXACT);
		}
		/* The table's own release is one it serves. */
		enum layout_match how;
		assert_ptr_equal(ruby_layout_find(r->layout->version, &how), r->layout);
	}
	assert_int_equal(series, 8); /* 2.6 2.7 3.0 3.1 3.2 3.3 3.4 4.0 */
	assert_string_equal(ruby_layout_series(), "2.6, 2.7, 3.0, 3.1, 3.2, 3.3, 3.4, 4.0");
}

/* A newer patch release of a known series gets the series' newest table, and says it is newer. */
static void test_newer_patch_release(void **state)
{
	(void)state;
	enum layout_match how;
	const struct ruby_layout *l = ruby_layout_find("3.4.99", &how);
	assert_non_null(l);
	assert_int_equal(how, LAYOUT_NEWER);
	assert_ptr_equal(l, ruby_layout_find("3.4.11", NULL));
	assert_ptr_equal(ruby_layout_find("4.0.42p0", &how), ruby_layout_find("4.0.6", NULL));
	assert_int_equal(how, LAYOUT_NEWER);
	/* 4.0's two tables: 4.0.0 to 4.0.5 share one, 4.0.6 (rb_thread_t grew) has its own */
	assert_ptr_equal(ruby_layout_find("4.0.0", NULL), ruby_layout_find("4.0.5", NULL));
	assert_ptr_not_equal(ruby_layout_find("4.0.5", NULL), ruby_layout_find("4.0.6", NULL));
	assert_int_equal(ruby_layout_find("4.0.6", NULL)->th_name - ruby_layout_find("4.0.5", NULL)->th_name, 8);
	/* and 3.1.5 moved rb_vm_t's objspace */
	assert_int_equal(ruby_layout_find("3.1.5", NULL)->vm_objspace - ruby_layout_find("3.1.4", NULL)->vm_objspace, 8);
}

static void test_other_versions_have_none(void **state)
{
	(void)state;
	const char *none[] = { "2.5.9", "1.9.3", "4.1.0", "3.5.0", "", "3", "x.y.z", NULL };
	for (int i = 0; none[i]; i++) {
		enum layout_match how = LAYOUT_EXACT;
		assert_null(ruby_layout_find(none[i], &how));
		assert_int_equal(how, LAYOUT_NONE);
	}
	assert_null(ruby_layout_find(NULL, NULL));
}

/* Fields every walk needs are set (a generator that lost one would leave -1 or 0). */
static void test_required_fields_present(void **state)
{
	(void)state;
	for (const struct ruby_layout_range *r = ruby_layout_ranges; r->layout; r++) {
		const struct ruby_layout *l = r->layout;
		assert_true(l->cfp_size == 56 || l->cfp_size == 64);
		assert_true(l->th_ec >= 0 && l->ec_cfp >= 0 && l->cfp_ep >= 0 && l->cfp_iseq >= 0 && l->cfp_pc >= 0);
		assert_true(l->iseq_body >= 0 && l->body_label >= 0 && l->me_def >= 0 && l->svar_cref_or_me == 8);
		assert_true(l->th_lt_node >= 0 && l->th_name >= 0 && l->th_unblock_func >= 0);
		/* one way to the thread list and the GVL owner, a way to the tid, one way to the classext */
		assert_true((l->vm_living_threads >= 0) != (l->ractor_threads_set >= 0));
		assert_true(l->th_tid >= 0 || l->th_nt >= 0 || l->th_thread_id >= 0);
		assert_true((l->classext_ptr >= 0) != (l->classext_inline >= 0));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_release_resolves_exactly_once),
		cmocka_unit_test(test_newer_patch_release),
		cmocka_unit_test(test_other_versions_have_none),
		cmocka_unit_test(test_required_fields_present),
	};
	return cmocka_run_group_tests_name("layout", tests, NULL, NULL);
}
