/* test_trace_print.c: trace events printed as lines: one line per call with its values, even when threads interleave. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "agent/trace_print.h"

/* Records built one at a time in an aligned buffer and handed to the printer. */
static union {
	struct ring_rec r;
	char b[512];
} rec;

static int name(struct trace_printer *p, uint32_t id, const char *label)
{
	struct ring_name *n = (struct ring_name *)rec.b;
	n->id = id;
	n->len = (uint32_t)strlen(label);
	memcpy(n + 1, label, n->len);
	n->r = (struct ring_rec){ .len = (uint32_t)ring_align(sizeof(*n) + n->len), .type = RING_NAME };
	return trace_printer_rec(p, &n->r);
}

static int call(struct trace_printer *p, int type, uint32_t tid, uint32_t id, uint32_t depth, uint64_t ts, uint64_t dur,
		const char *text)
{
	struct ring_call *c = (struct ring_call *)rec.b;
	memset(c, 0, sizeof(*c));
	c->id = id, c->tid = tid, c->depth = depth, c->ts = ts, c->dur = dur;
	c->text = text ? (uint32_t)strlen(text) : 0;
	if (text)
		memcpy(c + 1, text, c->text);
	c->r = (struct ring_rec){ .len = (uint32_t)ring_align(sizeof(*c) + c->text), .type = (uint16_t)type };
	return trace_printer_rec(p, &c->r);
}

static int ret(struct trace_printer *p, uint32_t tid, uint32_t id, uint32_t depth, uint64_t ts, uint64_t dur)
{
	struct ring_ret *s = (struct ring_ret *)rec.b;
	*s = (struct ring_ret){ .r = { .len = sizeof(*s), .type = RING_RET, .flags = (uint16_t)depth },
				.id = id, .tid = tid, .ts = ts, .dur = dur };
	return trace_printer_rec(p, &s->r);
}

/* A printer writing into a memory stream. */
static FILE *start(struct trace_printer *p, char **text, size_t *len)
{
	FILE *f = open_memstream(text, len);
	assert_non_null(f);
	trace_printer_init(p, f, 0);
	return f;
}

static char *printed(struct trace_printer *p, FILE *f, char **text)
{
	trace_printer_flush(p);
	fclose(f);
	trace_printer_free(p);
	return *text;
}

static void test_interleaved_threads(void **state)
{
	(void)state;
	char *text;
	size_t len;
	struct trace_printer p;
	FILE *f = start(&p, &text, &len);
	assert_int_equal(name(&p, 1, "Shop#price"), 0);
	assert_int_equal(name(&p, 2, "Shop#tax"), 0);
	/* thread 10 calls price(3), thread 20 calls tax(5) before price returns; each return then comes */
	assert_int_equal(call(&p, RING_CALL, 10, 1, 0, 100, 0, "n=3"), 0);
	assert_int_equal(call(&p, RING_CALL, 20, 2, 0, 150, 0, "m=5"), 0);
	assert_int_equal(ret(&p, 10, 1, 0, 300, 200000), 0);
	assert_int_equal(ret(&p, 20, 2, 0, 400, 1250000), 0);
	assert_string_equal(printed(&p, f, &text),
			    "-- thread 10\nShop#price(n=3) <0.000200>\n-- thread 20\nShop#tax(m=5) <0.001250>\n");
	free(text);
}

static void test_nested_and_pending(void **state)
{
	(void)state;
	char *text;
	size_t len;
	struct trace_printer p;
	FILE *f = start(&p, &text, &len);
	name(&p, 1, "A#outer");
	name(&p, 2, "A#inner");
	/* outer has a traced call inside: its own line, then inner on one line, then outer's return */
	call(&p, RING_CALL, 7, 1, 0, 1, 0, "x=1");
	call(&p, RING_CALL, 7, 2, 1, 2, 0, NULL);
	ret(&p, 7, 2, 1, 3, 1000);
	call(&p, RING_RETURN, 7, 1, 0, 4, 3000, "x=1");
	/* a call still running at the end is printed when flushed, without a duration */
	call(&p, RING_CALL, 8, 2, 0, 5, 0, "y=2");
	assert_string_equal(printed(&p, f, &text), "-- thread 7\nA#outer(x=1)\n  A#inner <0.000001>\n"
							 "A#outer(x=1) <0.000003>\n-- thread 8\nA#inner(y=2)\n");
	free(text);
}

static void test_flush_older(void **state)
{
	(void)state;
	char *text;
	size_t len;
	struct trace_printer p;
	FILE *f = start(&p, &text, &len);
	name(&p, 1, "Job#run");
	call(&p, RING_CALL, 3, 1, 0, 1000, 0, "id=1");
	call(&p, RING_CALL, 4, 1, 0, 5000, 0, "id=2");
	/* the ring is idle: only the call made before 2000 is shown; the other keeps waiting for its return */
	trace_printer_flush_older(&p, 2000);
	fflush(f);
	assert_string_equal(text, "-- thread 3\nJob#run(id=1)\n");
	ret(&p, 4, 1, 0, 6000, 1000);
	assert_string_equal(printed(&p, f, &text), "-- thread 3\nJob#run(id=1)\n-- thread 4\nJob#run(id=2) <0.000001>\n");
	free(text);
}

static void test_bad_records(void **state)
{
	(void)state;
	char *text;
	size_t len;
	struct trace_printer p;
	FILE *f = start(&p, &text, &len);
	/* a call whose text runs past its record, a name too short for itself: refused, not read past */
	struct ring_call *c = (struct ring_call *)rec.b;
	memset(c, 0, sizeof(*c));
	c->text = 100;
	c->r = (struct ring_rec){ .len = sizeof(*c) + 8, .type = RING_CALL };
	assert_int_equal(trace_printer_rec(&p, &c->r), -1);
	c->r = (struct ring_rec){ .len = 4, .type = RING_NAME };
	assert_int_equal(trace_printer_rec(&p, &c->r), -1);
	/* an unknown type from a newer agent is skipped */
	c->r = (struct ring_rec){ .len = 16, .type = 99 };
	assert_int_equal(trace_printer_rec(&p, &c->r), 0);
	/* a return of an id never named prints "?" */
	ret(&p, 1, 42, 0, 1, 500);
	assert_string_equal(printed(&p, f, &text), "-- thread 1\n? <0.000001>\n");
	free(text);
}

static void test_many_threads(void **state)
{
	(void)state;
	char *text;
	size_t len;
	struct trace_printer p;
	FILE *f = start(&p, &text, &len);
	name(&p, 1, "W#run");
	/* more threads with a call held than it keeps: the oldest are printed, every call printed once */
	for (uint32_t t = 1; t <= 300; t++)
		assert_int_equal(call(&p, RING_CALL, t, 1, 0, t, 0, NULL), 0);
	for (uint32_t t = 1; t <= 300; t++)
		assert_int_equal(ret(&p, t, 1, 0, 1000 + t, 1000), 0);
	printed(&p, f, &text);
	int lines = 0, alone = 0;
	for (char *s = text; (s = strstr(s, "W#run")); s++, lines++)
		alone += s[5] == '\n';
	assert_int_equal(lines, 300 + 44); /* 256 kept whole; 44 printed alone, then their returns */
	assert_int_equal(alone, 44);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_interleaved_threads),
		cmocka_unit_test(test_nested_and_pending),
		cmocka_unit_test(test_flush_older),
		cmocka_unit_test(test_bad_records),
		cmocka_unit_test(test_many_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
