/* test_usdt.c: the USDT object writer (ext/rbscope/usdt_elf.c) read back by the stapsdt reader, and the latency histogram's buckets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/hist.h"
#include "elf/stapsdt.h"
#include "usdt_elf.h"

static void test_names(void **state)
{
	(void)state;
	assert_true(usdt_valid_name("request_done"));
	assert_true(usdt_valid_name("_x9"));
	assert_false(usdt_valid_name(""));
	assert_false(usdt_valid_name("9x"));
	assert_false(usdt_valid_name("my-app"));
	assert_false(usdt_valid_name("a b"));
	char big[USDT_NAME_MAX + 1];
	memset(big, 'a', sizeof(big) - 1);
	big[USDT_NAME_MAX] = '\0';
	assert_false(usdt_valid_name(big));
	big[USDT_NAME_MAX - 1] = '\0';
	assert_true(usdt_valid_name(big));
}

/* Write the object, read it back as any tool would: the notes, their semaphores and stubs in the file. */
static void test_object_round_trip(void **state)
{
	(void)state;
	struct usdt_elf_probe p[3] = {
		{ .name = "request_done", .nargs = 2, .args = { USDT_ARG_INT64, USDT_ARG_STRING } },
		{ .name = "tick", .nargs = 0 },
		{ .name = "six", .nargs = 6, .args = { USDT_ARG_INT64, USDT_ARG_INT64, USDT_ARG_INT64, USDT_ARG_STRING,
						       USDT_ARG_INT64, USDT_ARG_STRING } },
	};
	struct usdt_elf_image img;
	assert_int_equal(usdt_elf_build("myapp", p, 3, &img), 0);
	char path[] = "/tmp/rbscope-test-usdt-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, img.data, img.size), (ssize_t)img.size);
	close(fd);
	struct stapsdt_list l;
	assert_int_equal(stapsdt_read(path, &l), 0);
	unlink(path);
	assert_int_equal(l.n, 3);
	const char *args[3] = { "-8@%rdi 8@%rsi", "", "-8@%rdi -8@%rsi -8@%rdx 8@%rcx -8@%r8 8@%r9" };
	for (int i = 0; i < 3; i++) {
		assert_string_equal(l.v[i].provider, "myapp");
		assert_string_equal(l.v[i].name, p[i].name);
		assert_string_equal(l.v[i].args, args[i]);
		assert_int_equal(l.v[i].pc, p[i].stub_off);
		assert_int_equal(l.v[i].sem, p[i].sem_off);
		/* the semaphore lies in the file (a tracer's reference counter is a file offset), 2-byte aligned */
		int64_t off = stapsdt_file_offset(&l, l.v[i].sem);
		assert_true(off > 0 && (size_t)off + 2 <= img.size && off % 2 == 0);
		off = stapsdt_file_offset(&l, l.v[i].pc);
		assert_true(off > 0);
		assert_int_equal(img.data[off], 0x90); /* nop: where the breakpoint goes */
		assert_int_equal(img.data[off + 1], 0xc3);
	}
	stapsdt_free(&l);
	usdt_elf_free(&img);
	assert_int_equal(usdt_elf_build("my-app", p, 1, &img), -22);
	p[1].nargs = 7;
	assert_int_equal(usdt_elf_build("myapp", p, 2, &img), -22);
}

static void test_stapsdt_not_elf(void **state)
{
	(void)state;
	char path[] = "/tmp/rbscope-test-usdt-XXXXXX";
	int fd = mkstemp(path);
	assert_int_equal(write(fd, "not an ELF file at all", 22), 22);
	close(fd);
	struct stapsdt_list l;
	assert_true(stapsdt_read(path, &l) < 0);
	unlink(path);
}

/* Every value falls in the bucket whose bounds hold it, and buckets above HIST_SUB are within 1/HIST_SUB wide. */
static void test_hist_buckets(void **state)
{
	(void)state;
	uint64_t vals[] = { 0, 1, 15, 16, 17, 31, 32, 33, 1000, 65535, 65536, 123456789, 1ull << 40, (1ull << 62) + 12345,
			    UINT64_MAX / 2, UINT64_MAX };
	for (size_t k = 0; k < sizeof(vals) / sizeof(vals[0]); k++) {
		uint64_t v = vals[k];
		unsigned i = hist_index(v);
		assert_true(i < HIST_NBUCKETS);
		assert_true(hist_low(i) <= v);
		if (i + 1 < HIST_NBUCKETS)
			assert_true(v < hist_low(i + 1));
		if (v >= HIST_SUB && i + 1 < HIST_NBUCKETS)
			assert_true((hist_low(i + 1) - hist_low(i)) * HIST_SUB <= hist_low(i));
	}
	for (unsigned i = 1; i + 1 < HIST_NBUCKETS; i++)
		assert_true(hist_low(i) > hist_low(i - 1));
	struct agent_hist *h = calloc(1, sizeof(*h));
	hist_add(h, 100);
	hist_add(h, 5);
	hist_add(h, -3);
	assert_int_equal(h->count, 2);
	assert_int_equal(h->negative, 1);
	assert_int_equal(h->min, 5);
	assert_int_equal(h->max, 100);
	assert_int_equal(h->sum, 105);
	free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_object_round_trip),
		cmocka_unit_test(test_stapsdt_not_elf),
		cmocka_unit_test(test_hist_buckets),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
