/* fuzz_heap.c: libFuzzer target: the input as one heap-dump line, then as a whole dump through every heap analysis. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "heap/diff.h"
#include "heap/dump.h"
#include "heap/path.h"
#include "heap/retained.h"
#include "heap/strings.h"
#include "heap/summary.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *devnull;

/* The first "0x..." of the input, so that `heap path` sometimes asks for an object that is there. */
static uint64_t some_address(const char *p, size_t n)
{
	const char *x = memmem(p, n, "0x", 2);
	if (!x)
		return 0x10;
	size_t len = 2;
	while (x + len < p + n && len < 18 && strchr("0123456789abcdef", x[len]) && x[len])
		len++;
	uint64_t a = heap_hex((struct span){ x, len });
	return a ? a : 0x10;
}

static int count_record(const struct heap_rec *r, void *arg)
{
	(void)r;
	(void)arg;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct heap_rec r;
	char loc[1200];
	if (!heap_parse_line(text, size, &r))
		heap_location(&r, loc, sizeof(loc));
	if (!devnull && !(devnull = fopen("/dev/null", "w")))
		abort();
	int fd = memfd_create("dump", 0);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size)
		abort();
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	struct heap_stats st;
	heap_summary(path, HEAP_BY_CLASS, 0, 1, devnull, &st);
	heap_summary(path, HEAP_BY_GEM, 3, 0, devnull, &st);
	heap_path(path, some_address(text, size), devnull, &st);
	heap_retained(path, HEAP_RETAINED_OBJECTS, 5, 1, devnull, &st);
	heap_retained(path, HEAP_RETAINED_CLASS, 0, 0, devnull, &st);
	heap_retained(path, HEAP_RETAINED_LOCATION, 3, 1, devnull, &st);
	heap_strings(path, 0, 1, devnull, &st);
	const char *three[] = { path, path, path };
	struct heap_stats st3[3];
	int failed;
	heap_diff(three, 3, 5, devnull, st3, &failed);
	/* Cut into parts of 8 to 135 bytes, the dump must read as it does whole: each line once, at its number. */
	uint64_t part = 8 + (size ? data[0] % 128 : 0);
	heap_diff_parts(three, 2, 5, devnull, st3, &failed, part);
	heap_read(path, count_record, NULL, &st);
	if (st.records != st3[0].records || st.bad != st3[0].bad || st.lines != st3[0].lines ||
	    memcmp(st.first_bad_line, st3[0].first_bad_line, sizeof(st.first_bad_line)))
		abort();
	close(fd);
	return 0;
}
