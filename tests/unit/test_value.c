/* test_value.c: values shown as Ruby's inspect shows them (snapshot --locals), and locals over random memory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "noise.h"

#include "ruby/frames.h"
#include "ruby/label.h"
#include "ruby/layout.h"
#include "ruby/locals.h"
#include "ruby/target.h"
#include "ruby/value.h"
#include "ruby/walk.h"

#define BASE 0x10000000ULL
#define SIZE (1u << 20)

static void target_on(struct ruby_target *t, unsigned char *m, const struct ruby_layout *L)
{
	memset(t, 0, sizeof(*t));
	assert_int_equal(strtab_init(&t->strs), 0);
	mem_open_buffer(&t->mem, BASE, m, SIZE);
	t->L = L;
}

static void expect(struct ruby_target *t, uint64_t v, const char *text, const char *cls, int simple)
{
	struct ruby_shown s;
	assert_int_equal(ruby_value_show(t, v, &s), 0);
	assert_string_equal(s.text, text);
	assert_string_equal(s.cls ? strtab_get(&t->strs, s.cls) : "", cls);
	assert_int_equal(s.simple, simple);
	ruby_shown_free(&s);
}

/* A Float as a Flonum, the way Ruby makes one (only doubles of a middling exponent are). */
static uint64_t flonum(double d)
{
	uint64_t b;
	memcpy(&b, &d, 8);
	assert_true((((b >> 60 & 7) - 3) & ~1ULL) == 0);
	return ((b << 3 | b >> 61) & ~1ULL) | 2;
}

/* Immediates and Floats print as Ruby's inspect prints them (Float#inspect's shortest digits and its forms). */
static void test_immediates(void **state)
{
	(void)state;
	unsigned char *m = calloc(1, SIZE);
	struct ruby_target t;
	target_on(&t, m, ruby_layout_find("3.3.8", NULL));
	const struct ruby_layout *L = t.L;
	expect(&t, (uint64_t)L->qnil, "nil", "NilClass", 1);
	expect(&t, (uint64_t)L->qtrue, "true", "TrueClass", 1);
	expect(&t, (uint64_t)L->qfalse, "false", "FalseClass", 1);
	expect(&t, (uint64_t)(-5 * 2 + 1), "-5", "Integer", 1);
	expect(&t, ((1ULL << 62) - 1) << 1 | 1, "4611686018427387903", "Integer", 1);
	expect(&t, flonum(2.5), "2.5", "Float", 1);
	expect(&t, flonum(0.1), "0.1", "Float", 1);
	expect(&t, flonum(100.0), "100.0", "Float", 1);
	expect(&t, flonum(1e15), "1.0e+15", "Float", 1);
	expect(&t, flonum(123456789012345.0), "123456789012345.0", "Float", 1);
	expect(&t, flonum(1e-4), "0.0001", "Float", 1);
	expect(&t, flonum(1.5e-5), "1.5e-05", "Float", 1);
	expect(&t, flonum(1.0 / 3), "0.3333333333333333", "Float", 1);
	expect(&t, flonum(-1234.5), "-1234.5", "Float", 1);
	expect(&t, 0x8000000000000002ULL, "0.0", "Float", 1);
	expect(&t, (uint64_t)L->qundef, "(undefined)", "", 1);
	ruby_target_detach(&t);
	free(m);
}

/* An embedded String of the 3.3 layout at addr: its flags (type, encoding index), length and bytes. */
static void put_string(unsigned char *m, const struct ruby_layout *L, uint64_t addr, const char *s, size_t n, unsigned enc)
{
	uint64_t flags = (uint64_t)L->t_string | (uint64_t)enc << L->enc_shift, klass = BASE + 0x8000, len = n;
	memcpy(m + (addr - BASE) + L->rbasic_flags, &flags, 8);
	memcpy(m + (addr - BASE) + L->rbasic_klass, &klass, 8);
	memcpy(m + (addr - BASE) + L->rstring_len, &len, 8);
	memcpy(m + (addr - BASE) + L->rstring_embed_ary, s, n);
}

/* Strings: String#inspect's escapes, UTF-8 kept, bytes not of the encoding as \xNN, a long one cut on a character. */
static void test_strings(void **state)
{
	(void)state;
	unsigned char *m = calloc(1, SIZE);
	struct ruby_target t;
	target_on(&t, m, ruby_layout_find("3.3.8", NULL));
	const struct ruby_layout *L = t.L;
	unsigned utf8 = (unsigned)L->encindex_utf_8, bin = (unsigned)L->encindex_binary;
	const char *esc = "q\"b\\s\n\t\033#{x}\001";
	put_string(m, L, BASE + 0x1000, esc, strlen(esc), utf8);
	expect(&t, BASE + 0x1000, "\"q\\\"b\\\\s\\n\\t\\e\\#{x}\\u0001\"", "String", 1);
	put_string(m, L, BASE + 0x2000, "h\xc3\xa9 \xe6\x97\xa5\xff", 8, utf8);
	expect(&t, BASE + 0x2000, "\"h\xc3\xa9 \xe6\x97\xa5\\xFF\"", "String", 1);
	put_string(m, L, BASE + 0x3000, "\xff\x00" "ab", 4, bin);
	expect(&t, BASE + 0x3000, "\"\\xFF\\x00ab\"", "String", 1);
	char big[200];
	memset(big, 'a', sizeof(big));
	memcpy(big + 63, "\xc3\xa9", 2); /* a character across the 64th byte: left out whole */
	put_string(m, L, BASE + 0x4000, big, sizeof(big), utf8);
	char want[120];
	snprintf(want, sizeof(want), "\"%.*s\"... (200 bytes)", 63, big);
	expect(&t, BASE + 0x4000, want, "String", 1);
	put_string(m, L, BASE + 0x5000, "x", 1, 77);
	expect(&t, BASE + 0x5000, "\"x\" (encoding #77)", "String", 1);
	/* a slot freed under the read: said, not followed */
	expect(&t, BASE + 0x6000, "(freed)", "", 0);
	ruby_target_detach(&t);
	free(m);
}


/* Over random memory, every layout: locals and values read without a crash, each with some text. */
static void test_random_memory(void **state)
{
	(void)state;
	unsigned char *m = malloc(SIZE);
	struct ruby_sample *s = malloc(sizeof(*s));
	s->at = calloc(WALK_MAX_TOTAL, sizeof(*s->at));
	for (int l = 0; ruby_layout_ranges[l].layout; l++) {
		for (unsigned seed = 1; seed <= 60; seed++) {
			noise_fill(m, SIZE, BASE, seed * 17 + (unsigned)l);
			struct ruby_target t;
			target_on(&t, m, ruby_layout_ranges[l].layout);
			t.vm = BASE + ((uint64_t)seed * 4096 % SIZE);
			t.symbols = BASE + 64;
			t.th_read_len = 512;
			assert_true(ruby_sample_take(&t, s, WALK_LOCALS) <= 0);
			struct ruby_locals lv;
			for (uint32_t i = 0; i < s->nframes_total; i++) {
				if (ruby_frame_locals(&t, &s->at[i], &lv) == 0)
					for (int k = 0; k < lv.n; k++)
						assert_non_null(lv.v[k].value.text);
				ruby_locals_free(&lv);
			}
			for (int k = 0; k < 200; k++) {
				uint64_t w;
				memcpy(&w, m + (size_t)(rand() % (SIZE / 8)) * 8, 8);
				struct ruby_shown v;
				assert_int_equal(ruby_value_show(&t, w, &v), 0);
				assert_non_null(v.text);
				ruby_shown_free(&v);
				struct ruby_frame_at at = { w, BASE + ((uint64_t)rand() % SIZE & ~7ULL), w };
				if (ruby_frame_locals(&t, &at, &lv) == 0)
					assert_true(lv.n <= LOCALS_MAX);
				ruby_locals_free(&lv);
				if (ruby_fiber_locals(&t, BASE + ((uint64_t)rand() % SIZE & ~7ULL), &lv) == 0)
					assert_true(lv.n <= LOCALS_MAX);
				ruby_locals_free(&lv);
			}
			ruby_target_detach(&t);
		}
	}
	free(s->at);
	free(s);
	free(m);
}

/* A thread sample of the frames named (innermost first), all Ruby frames but those starting with "C:". */
static const char *label_of(struct ruby_target *t, const char *const *names, int n)
{
	struct ruby_frame frames[16];
	for (int i = 0; i < n; i++) {
		int c = !strncmp(names[i], "C:", 2);
		frames[i] = (struct ruby_frame){ ruby_intern(t, names[i] + (c ? 2 : 0)), 0, 1, c ? FRAME_CFUNC : FRAME_RUBY };
	}
	uint32_t l = ruby_request_label(t, frames, NULL, n);
	return l ? strtab_get(&t->strs, l) : "";
}

/* The request a thread serves, from its frames: a Sinatra route's method, the action Rails's send_action called. */
static void test_labels(void **state)
{
	(void)state;
	unsigned char *m = calloc(1, SIZE);
	struct ruby_target t;
	target_on(&t, m, ruby_layout_find("3.3.8", NULL));
	map_init(&t.labels);
	const char *sinatra[] = { "RoutesApp.busy", "block in <class:RoutesApp>", "ShopApp#GET /orders/:id", "Method#call",
				  "Sinatra::Base#route!", "Sinatra::Base#call" };
	assert_string_equal(label_of(&t, sinatra, 6), "GET /orders/:id");
	const char *rails[] = { "C:Array#map", "OrdersController#show", "C:Kernel#public_send",
				"ActionController::BasicImplicitRender#send_action", "AbstractController::Base#process_action" };
	assert_string_equal(label_of(&t, rails, 5), "OrdersController#show");
	const char *none[] = { "Foo#GETTER /x", "Foo#get /x", "Foo#GET", "Object#work", "<main>" };
	assert_string_equal(label_of(&t, none, 5), "");
	assert_string_equal(label_of(&t, sinatra, 6), "GET /orders/:id"); /* (cached) */
	ruby_target_detach(&t);
	free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_labels),
		cmocka_unit_test(test_immediates),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_random_memory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
