/* test_agents.c: the agents bundle read back (every file as written), refused when cut or damaged; the decimal parser the agent uses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <cmocka.h>

#include "agent/proto.h"
#include "inject/agents.h"
#include "lib/err.h"

struct bundle {
	unsigned char b[8192];
	size_t n;
};

static void put32(struct bundle *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b->b[b->n++] = (unsigned char)(v >> (8 * i));
}

/* One entry in scripts/agent-bundle's format. */
static void add(struct bundle *b, const char *path, unsigned mode, const char *text)
{
	put32(b, (uint32_t)strlen(path));
	memcpy(b->b + b->n, path, strlen(path));
	b->n += strlen(path);
	uLongf zn = compressBound(strlen(text));
	unsigned char z[1024];
	assert_int_equal(compress(z, &zn, (const Bytef *)text, strlen(text)), Z_OK);
	put32(b, mode);
	put32(b, (uint32_t)strlen(text));
	put32(b, (uint32_t)zn);
	memcpy(b->b + b->n, z, zn);
	b->n += zn;
}

static void sample(struct bundle *b)
{
	memset(b, 0, sizeof(*b));
	memcpy(b->b, "RBSAGT1\n", 8);
	b->n = 8;
	add(b, "2.7/rbscope.rb", 0644, "require 'rbscope/rbscope'\n");
	add(b, "2.7/rbscope/rbscope.so", 0755, "\177ELF and the rest");
	add(b, "3.4/rbscope.rb", 0644, "");
	put32(b, 0);
}

struct seen {
	int n;
	char paths[8][64];
	char text[8][64];
	unsigned mode[8];
};

static int collect(const char *path, unsigned mode, const unsigned char *bytes, size_t len, void *arg)
{
	struct seen *s = arg;
	snprintf(s->paths[s->n], sizeof(s->paths[0]), "%s", path);
	snprintf(s->text[s->n], sizeof(s->text[0]), "%.*s", (int)len, (const char *)bytes);
	s->mode[s->n] = mode;
	return ++s->n == 8;
}

static void test_bundle_read_back(void **state)
{
	(void)state;
	struct bundle b;
	sample(&b);
	struct seen s = { 0 };
	assert_int_equal(agents_bundle_each(b.b, b.n, collect, &s), 0);
	assert_int_equal(s.n, 3);
	assert_string_equal(s.paths[0], "2.7/rbscope.rb");
	assert_string_equal(s.text[0], "require 'rbscope/rbscope'\n");
	assert_string_equal(s.paths[1], "2.7/rbscope/rbscope.so");
	assert_string_equal(s.text[1], "\177ELF and the rest");
	assert_int_equal(s.mode[1], 0755);
	assert_string_equal(s.paths[2], "3.4/rbscope.rb");
	assert_string_equal(s.text[2], "");
	/* an empty bundle, as the plain build links */
	const unsigned char empty[] = "RBSAGT1\n\0\0\0";
	s.n = 0;
	assert_int_equal(agents_bundle_each(empty, 12, collect, &s), 0);
	assert_int_equal(s.n, 0);
}

static void test_bundle_damaged(void **state)
{
	(void)state;
	struct bundle b;
	sample(&b);
	struct seen s = { 0 };
	/* cut anywhere before its end marker: refused, never read past */
	for (size_t cut = 0; cut < b.n; cut++) {
		unsigned char *copy = malloc(cut ? cut : 1);
		memcpy(copy, b.b, cut);
		s.n = 0;
		assert_int_equal(agents_bundle_each(copy, cut, collect, &s), ERR_CORRUPT);
		free(copy);
	}
	/* a compressed byte changed, a size that does not match, a wrong magic */
	sample(&b);
	b.b[8 + 4 + 14 + 12 + 3] ^= 0x55;
	assert_int_equal(agents_bundle_each(b.b, b.n, collect, &s), ERR_CORRUPT);
	sample(&b);
	b.b[8 + 4 + 14 + 4] += 1; /* the first file's size */
	assert_int_equal(agents_bundle_each(b.b, b.n, collect, &s), ERR_CORRUPT);
	sample(&b);
	b.b[0] = 'X';
	assert_int_equal(agents_bundle_each(b.b, b.n, collect, &s), ERR_CORRUPT);
}

static void test_agent_decimal(void **state)
{
	(void)state;
	const char *end;
	assert_int_equal(agent_decimal("12345.sock", &end), 12345);
	assert_string_equal(end, ".sock");
	assert_int_equal(agent_decimal("x1", &end), 0);
	assert_string_equal(end, "x1");
	assert_true(agent_decimal("18446744073709551615", NULL) == UINT64_MAX);
	assert_true(agent_decimal("18446744073709551616", NULL) == UINT64_MAX); /* past it: saturates */
	assert_true(agent_decimal("99999999999999999999999", NULL) == UINT64_MAX);
	assert_true(agent_decimal("1048576,", NULL) == 1048576);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bundle_read_back),
		cmocka_unit_test(test_bundle_damaged),
		cmocka_unit_test(test_agent_decimal),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
