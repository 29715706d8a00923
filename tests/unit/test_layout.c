/* test_layout.c: every generated layout is found, exactly once, for its own series and for no other. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "ruby/layout.h"

/* Each table answers for every release of its X.Y series, with itself. */
static void test_each_version_resolves_to_its_own_layout(void **state)
{
	(void)state;
	int n = 0;
	for (int i = 0; ruby_layouts[i]; i++, n++) {
		const struct ruby_layout *l = ruby_layouts[i];
		char v[32];
		assert_ptr_equal(ruby_layout_find(l->version), l);
		for (int teeny = 0; teeny < 12; teeny++) {
			snprintf(v, sizeof(v), "%lld.%lld.%d", (long long)l->api_major, (long long)l->api_minor, teeny);
			assert_ptr_equal(ruby_layout_find(v), l);
		}
		/* and no other table claims the series */
		for (int j = 0; ruby_layouts[j]; j++)
			if (j != i)
				assert_false(ruby_layouts[j]->api_major == l->api_major && ruby_layouts[j]->api_minor == l->api_minor);
	}
	assert_int_equal(n, 3); /* 2.7, 3.1, 3.3 */
}

static void test_other_versions_have_none(void **state)
{
	(void)state;
	const char *none[] = { "2.6.10", "3.0.6", "3.2.4", "3.4.1", "1.9.3", "4.0.0", "", "3", "x.y.z", NULL };
	for (int i = 0; none[i]; i++)
		assert_null(ruby_layout_find(none[i]));
	assert_null(ruby_layout_find(NULL));
}

/* Fields every walk needs are set (a generator that lost one would leave -1 or 0). */
static void test_required_fields_present(void **state)
{
	(void)state;
	for (int i = 0; ruby_layouts[i]; i++) {
		const struct ruby_layout *l = ruby_layouts[i];
		assert_true(l->cfp_size == 56 || l->cfp_size == 64);
		assert_true(l->th_ec >= 0 && l->ec_cfp >= 0 && l->cfp_ep >= 0 && l->cfp_iseq >= 0 && l->cfp_pc >= 0);
		assert_true(l->iseq_body >= 0 && l->body_label >= 0 && l->me_def >= 0 && l->svar_cref_or_me == 8);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_version_resolves_to_its_own_layout),
		cmocka_unit_test(test_other_versions_have_none),
		cmocka_unit_test(test_required_fields_present),
	};
	return cmocka_run_group_tests_name("layout", tests, NULL, NULL);
}
