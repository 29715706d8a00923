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

#include "lib/err.h"
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


/* A Bignum of the 3.3 layout at addr: its sign and 32-bit digits, in its slot (n <= 3) or behind a pointer at digits. */
static void put_bignum(unsigned char *m, const struct ruby_layout *L, uint64_t addr, int negative, const uint32_t *d,
		       uint64_t n, uint64_t digits)
{
	uint64_t flags = (uint64_t)L->t_bignum | (negative ? 0 : (uint64_t)L->rbignum_sign_bit), klass = BASE + 0x8000;
	assert_int_equal(L->bdigit_size, 4);
	if (digits) {
		memcpy(m + (addr - BASE) + L->rbignum_heap_len, &n, 8);
		memcpy(m + (addr - BASE) + L->rbignum_heap_digits, &digits, 8);
		if (digits >= BASE && digits < BASE + SIZE)
			memcpy(m + (digits - BASE), d, n * 4);
	} else {
		flags |= (uint64_t)L->rbignum_embed_flag | n << L->rbignum_embed_len_shift;
		memcpy(m + (addr - BASE) + L->rbignum_embed_ary, d, n * 4);
	}
	memcpy(m + (addr - BASE) + L->rbasic_flags, &flags, 8);
	memcpy(m + (addr - BASE) + L->rbasic_klass, &klass, 8);
}

/* Bignums: their decimal digits as Integer#inspect writes them, in the slot or not; a huge one by its size. */
static void test_bignums(void **state)
{
	(void)state;
	unsigned char *m = calloc(1, SIZE);
	struct ruby_target t;
	target_on(&t, m, ruby_layout_find("3.3.8", NULL));
	const struct ruby_layout *L = t.L;
	const uint32_t two70[3] = { 0, 0, 64 };                       /* 2**70 */
	const uint32_t neg[4] = { 12345, 0, 0, 16 };                  /* 2**100 + 12345 */
	const uint32_t nines[4] = { 0x3b9ac9ff, 0, 0, 0 };            /* 999999999, its high digits 0 */
	const uint32_t carry[3] = { 0xdea00000, 0x35c9adc5, 0x36 };   /* 10**21: every 9-digit chunk but the first 0 */
	put_bignum(m, L, BASE + 0x1000, 0, two70, 3, 0);
	expect(&t, BASE + 0x1000, "1180591620717411303424", "Integer", 1);
	put_bignum(m, L, BASE + 0x2000, 1, neg, 4, BASE + 0x2100);
	expect(&t, BASE + 0x2000, "-1267650600228229401496703217721", "Integer", 1);
	put_bignum(m, L, BASE + 0x3000, 0, nines, 4, BASE + 0x3100);
	expect(&t, BASE + 0x3000, "999999999", "Integer", 1);
	put_bignum(m, L, BASE + 0x4000, 0, carry, 3, 0);
	expect(&t, BASE + 0x4000, "1000000000000000000000", "Integer", 1);
	/* 2**8191 (256 digits): in full; one more digit: its size */
	uint32_t *big = calloc(257, 4);
	big[255] = 0x80000000u;
	put_bignum(m, L, BASE + 0x5000, 0, big, 256, BASE + 0x10000);
	struct ruby_shown sh;
	assert_int_equal(ruby_value_show(&t, BASE + 0x5000, &sh), 0);
	assert_int_equal(strlen(sh.text), 2466);
	assert_memory_equal(sh.text, "545374", 6);
	assert_true(sh.simple);
	ruby_shown_free(&sh);
	put_bignum(m, L, BASE + 0x6000, 1, big, 257, BASE + 0x10000);
	expect(&t, BASE + 0x6000, "#<Integer: -8224 bits>", "Integer", 0);
	/* digits not mapped: said */
	put_bignum(m, L, BASE + 0x7000, 0, big, 4, BASE + SIZE + 0x1000);
	expect(&t, BASE + 0x7000, "(unreadable Integer)", "Integer", 0);
	free(big);
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
				char text[USER_LABEL_TEXT + 1];
				ruby_value_label(&t, w, text, sizeof(text));
				assert_true(strlen(text) < sizeof(text));
			}
			/* --label's over the frames read: every kind, never a crash, at most one value each */
			static const struct user_label ul[3] = { { "a", USER_LABEL_LOCAL, "x", "" }, { "b", USER_LABEL_IVAR, "@x", "" },
								 { "c", USER_LABEL_FIBER, "x", "" } };
			t.user_labels = ul;
			t.nuser_labels = 3;
			struct ruby_label_value out[USER_LABELS_MAX];
			if (s->nthreads)
				assert_true(ruby_user_labels(&t, s->threads[0].th, s->threads[0].frames, s->at,
							     s->threads[0].nframes, NULL, out) <= 3);
			ruby_target_detach(&t);
		}
	}
	free(s->at);
	free(s);
	free(m);
}

/* --label NAME=EXPR parsed: its kinds, its name given or its variable's; refusals. A value's label text. */
static void test_user_labels(void **state)
{
	(void)state;
	struct user_label u;
	char why[200];
	assert_int_equal(ruby_user_label_parse("order=order_id", &u, why, sizeof(why)), 0);
	assert_string_equal(u.key, "order");
	assert_int_equal(u.kind, USER_LABEL_LOCAL);
	assert_string_equal(u.var, "order_id");
	assert_int_equal(ruby_user_label_parse("@tenant", &u, why, sizeof(why)), 0);
	assert_string_equal(u.key, "tenant");
	assert_int_equal(u.kind, USER_LABEL_IVAR);
	assert_string_equal(u.var, "@tenant");
	assert_int_equal(ruby_user_label_parse("rid=Thread.current[:request_id]", &u, why, sizeof(why)), 0);
	assert_int_equal(u.kind, USER_LABEL_FIBER);
	assert_string_equal(u.var, "request_id");
	assert_string_equal(u.key, "rid");
	assert_int_equal(ruby_user_label_parse("n=Busy.run:n", &u, why, sizeof(why)), 0);
	assert_int_equal(u.kind, USER_LABEL_LOCAL);
	assert_string_equal(u.method, "Busy.run");
	assert_string_equal(u.var, "n");
	assert_int_equal(ruby_user_label_parse("OrdersController#show:order_id", &u, why, sizeof(why)), 0);
	assert_string_equal(u.key, "order_id");
	assert_string_equal(u.method, "OrdersController#show");
	static const char *const bad[] = { "x=1a", "x=Foo", "endpoint=@x", "=@x", "x=", "x y=@a", "x=Thread.current[:]",
					   "x=Thread.current[:a]b", "x=@", "x=a-b", "x=Busy:n", "x=:n", "x=A#b:@c", "x=A#b.c:n" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		assert_int_equal(ruby_user_label_parse(bad[i], &u, why, sizeof(why)), ERR_USAGE);
		assert_non_null(strstr(why, "--label"));
	}
	unsigned char *m = calloc(1, SIZE);
	struct ruby_target t;
	target_on(&t, m, ruby_layout_find("3.3.8", NULL));
	const struct ruby_layout *L = t.L;
	char text[USER_LABEL_TEXT + 1];
	assert_int_equal(ruby_value_label(&t, (uint64_t)L->qnil, text, sizeof(text)), 0);
	assert_string_equal(text, "nil");
	assert_int_equal(ruby_value_label(&t, 42 * 2 + 1, text, sizeof(text)), 0);
	assert_string_equal(text, "42");
	put_string(m, L, BASE + 0x1000, "ac\nme", 5, (unsigned)L->encindex_utf_8);
	assert_int_equal(ruby_value_label(&t, BASE + 0x1000, text, sizeof(text)), 0);
	assert_string_equal(text, "ac?me"); /* its own bytes, a control byte as '?' */
	char big[100];
	memset(big, 'b', sizeof(big));
	memcpy(big + 63, "\xc3\xa9", 2); /* a character across the 64th byte: left out whole */
	put_string(m, L, BASE + 0x2000, big, sizeof(big), (unsigned)L->encindex_utf_8);
	assert_int_equal(ruby_value_label(&t, BASE + 0x2000, text, sizeof(text)), 0);
	assert_int_equal(strlen(text), 63);
	assert_int_equal(ruby_value_label(&t, BASE + 0x6000, text, sizeof(text)), ERR_TORN); /* a freed slot */
	ruby_target_detach(&t);
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
	uint32_t l = ruby_request_label(t, frames, NULL, n, NULL);
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

static void put64(unsigned char *m, uint64_t addr, uint64_t v)
{
	memcpy(m + (addr - BASE), &v, 8);
}

/* A global symbol table at syms naming ID serial `serial` name (at str), as object.c reads one. */
static uint64_t put_symbol(unsigned char *m, const struct ruby_layout *L, uint64_t syms, uint64_t serial, uint64_t str,
			   const char *name)
{
	uint64_t ids = syms + 0x100, idsbuf = syms + 0x140, chunk = syms + 0x180, chunkbuf = syms + 0x200;
	uint32_t last = 1000;
	memcpy(m + (syms + (uint64_t)L->symbols_last_id - BASE), &last, 4);
	put64(m, syms + (uint64_t)L->symbols_ids, ids);
	put64(m, ids, (uint64_t)L->t_array);
	put64(m, ids + (uint64_t)L->rarray_heap_len, 1);
	put64(m, ids + (uint64_t)L->rarray_heap_ptr, idsbuf);
	put64(m, idsbuf, chunk);
	put64(m, chunk, (uint64_t)L->t_array);
	put64(m, chunk + (uint64_t)L->rarray_heap_len, (uint64_t)L->id_entry_unit * (uint64_t)L->id_entry_size);
	put64(m, chunk + (uint64_t)L->rarray_heap_ptr, chunkbuf);
	put64(m, chunkbuf + serial * (uint64_t)L->id_entry_size * 8, str);
	put_string(m, L, str, name, strlen(name), 0);
	return serial << L->id_scope_shift;
}

/* A Hash at h whose st_table (inline, as 3.3 keeps it) holds n pairs whose entries are at entries. */
static void put_st_hash(unsigned char *m, const struct ruby_layout *L, uint64_t h, uint64_t entries, const uint64_t *kv,
			int n)
{
	uint64_t table = h + (uint64_t)L->rhash_table_inline;
	put64(m, h, (uint64_t)L->t_hash | (uint64_t)L->rhash_st_flag);
	put64(m, table + (uint64_t)L->st_num_entries, (uint64_t)n);
	put64(m, table + (uint64_t)L->st_entries, entries);
	put64(m, table + (uint64_t)L->st_entries_start, 0);
	put64(m, table + (uint64_t)L->st_entries_bound, (uint64_t)n);
	for (int i = 0; i < n; i++) {
		uint64_t e = entries + (uint64_t)i * (uint64_t)L->st_entry_size;
		put64(m, e + (uint64_t)L->st_entry_hash, 1);
		put64(m, e + (uint64_t)L->st_entry_key, kv[2 * i]);
		put64(m, e + (uint64_t)L->st_entry_record, kv[2 * i + 1]);
	}
}

/* Reads as a live process makes them: a readv is one system call. */
static int (*buffer_readv_fn)(struct mem *m, const struct mem_iov *iov, int n);
static int (*buffer_read_fn)(struct mem *m, uint64_t addr, void *buf, size_t len);
static uint64_t syscalls;
static int counted_readv(struct mem *m, const struct mem_iov *iov, int n)
{
	syscalls++;
	return buffer_readv_fn(m, iov, n);
}
static int counted_read(struct mem *m, uint64_t addr, void *buf, size_t len)
{
	syscalls++;
	return buffer_read_fn(m, addr, buf, len);
}

/*
 * A plain Rack app's request, from the env of its call(env): read in full
 * once, then told unchanged in one read while the GC's count stands and the
 * Hash keeps its size; a key added (routing), another Hash in the slot, a
 * GC since (the slot may hold another Hash), or no count known: read again.
 */
static void test_rack_env_labels(void **state)
{
	(void)state;
	unsigned char *m = calloc(1, SIZE);
	struct ruby_target t;
	const struct ruby_layout *L = ruby_layout_find("3.3.8", NULL);
	target_on(&t, m, L);
	buffer_readv_fn = t.mem.readv, buffer_read_fn = t.mem.read;
	t.mem.readv = counted_readv, t.mem.read = counted_read;
	map_init(&t.labels);
	t.symbols = BASE + 0x1000;
	t.symbols_searched = 1;
	uint64_t env_id = put_symbol(m, L, t.symbols, 300, BASE + 0x1800, "env");
	/* call(env)'s iseq: one parameter, env, in a local table of 2 */
	uint64_t iseq = BASE + 0x2000, body = BASE + 0x2100, table = BASE + 0x2400, ep = BASE + 0x3000;
	put64(m, iseq + (uint64_t)L->iseq_body, body);
	put64(m, body + (uint64_t)L->body_local_table, table);
	uint32_t two = 2, one = 1;
	memcpy(m + (body + (uint64_t)L->body_local_table_size - BASE), &two, 4);
	memcpy(m + (body + (uint64_t)L->body_param_size - BASE), &one, 4);
	put64(m, table, env_id);
	uint64_t slot = ep - (2 + 2) * 8;
	/* the keys, the values, two envs */
	uint64_t k_method = BASE + 0x4000, k_path = BASE + 0x4080, k_route = BASE + 0x4100, v_get = BASE + 0x4180,
		 v_path = BASE + 0x4200, v_path2 = BASE + 0x4280, v_route = BASE + 0x4300;
	put_string(m, L, k_method, "REQUEST_METHOD", 14, 0);
	put_string(m, L, k_path, "PATH_INFO", 9, 0);
	put_string(m, L, k_route, "sinatra.route", 13, 0);
	put_string(m, L, v_get, "GET", 3, 0);
	put_string(m, L, v_path, "/orders/42", 10, 0);
	put_string(m, L, v_path2, "/users/7/edit", 13, 0);
	put_string(m, L, v_route, "GET /orders/:order", 18, 0);
	uint64_t env = BASE + 0x5000, env2 = BASE + 0x5400, entries = BASE + 0x6000, entries2 = BASE + 0x6400;
	uint64_t kv[6] = { k_method, v_get, k_path, v_path, k_route, v_route };
	put_st_hash(m, L, env, entries, kv, 2);
	put64(m, slot, env);
	struct ruby_frame frames[2] = { { ruby_intern(&t, "BenchRack#call"), 0, 1, FRAME_RUBY },
					{ ruby_intern(&t, "<main>"), 0, 1, FRAME_RUBY } };
	struct ruby_frame_at at[2] = { { iseq, ep, 0 }, { 0, 0, 0 } };
	struct label_ctx cx = { .gc = 5, .gc_known = 1 };
#define LABEL() strtab_get(&t.strs, ruby_request_label(&t, frames, at, 2, &cx))
	assert_string_equal(LABEL(), "GET /orders/:id");
	uint64_t before = syscalls;
	assert_string_equal(LABEL(), "GET /orders/:id");
	assert_int_equal(syscalls - before, 1); /* (the slot, the Hash's head and its size: one read) */
	/* the value stack copied with the frames: the slot is not read */
	unsigned char vs[64];
	memcpy(vs, m + (slot - 16 - BASE), sizeof(vs));
	cx.vs = vs, cx.vs_lo = slot - 16, cx.vs_hi = slot - 16 + sizeof(vs);
	before = syscalls;
	assert_string_equal(LABEL(), "GET /orders/:id");
	assert_int_equal(syscalls - before, 1);
	/* told unchanged by a capture drained before the walker's next sample: that sample reads nothing */
	cx.vs = NULL, cx.by = 2;
	assert_string_equal(LABEL(), "GET /orders/:id");
	t.samples++;
	cx.vs = vs, cx.by = 1;
	before = syscalls;
	assert_string_equal(LABEL(), "GET /orders/:id");
	assert_int_equal(syscalls - before, 0);
	t.samples++; /* (a sample later, not) */
	assert_string_equal(LABEL(), "GET /orders/:id");
	assert_int_equal(syscalls - before, 1);
	cx.vs = NULL, cx.by = 0;
	/* routed: a key more */
	put_st_hash(m, L, env, entries, kv, 3);
	assert_string_equal(LABEL(), "GET /orders/:order");
	/* the next request's env, in the slot */
	kv[3] = v_path2;
	put_st_hash(m, L, env2, entries2, kv, 2);
	put64(m, slot, env2);
	assert_string_equal(LABEL(), "GET /users/:id/edit");
	/* a GC since: the same address may be another Hash, of the same size */
	kv[3] = v_path;
	put_st_hash(m, L, env2, entries2, kv, 2);
	cx.gc = 6;
	assert_string_equal(LABEL(), "GET /orders/:id");
	/* no count known: read in full each time */
	cx.gc_known = 0;
	kv[3] = v_path2;
	put_st_hash(m, L, env2, entries2, kv, 2);
	assert_string_equal(LABEL(), "GET /users/:id/edit");
	before = syscalls;
	assert_string_equal(LABEL(), "GET /users/:id/edit");
	assert_true(syscalls - before >= 3);
#undef LABEL
	ruby_target_detach(&t);
	free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_labels),
		cmocka_unit_test(test_user_labels),
		cmocka_unit_test(test_rack_env_labels),
		cmocka_unit_test(test_immediates),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_bignums),
		cmocka_unit_test(test_random_memory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
