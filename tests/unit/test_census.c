/* test_census.c: the heap census on a small heap image of each Ruby whose layout has heap pages, whole and torn. */
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
#include "ruby/census.h"
#include "ruby/layout.h"
#include "ruby/target.h"

/*
 * The image: rb_objspace at AT_OBJSPACE, its sorted page array (or 3.4's
 * darray) at AT_SORTED, each page's struct heap_page PAGE_SPAN apart from
 * AT_PAGES, their slots SLOTS_SPAN apart from AT_SLOTS. A class object at
 * AT_CLASS is every object's class. Only these places are the file's: the
 * fields are where the layout says.
 */
#define BASE 0x20000000ULL
#define SIZE (1u << 20)
#define AT_OBJSPACE 0x0
#define AT_SORTED 0x1000
#define AT_PAGES 0x2000
#define PAGE_SPAN 0x100
#define AT_SLOTS 0x10000
#define SLOTS_SPAN 0x4000
#define AT_CLASS 0xf0000
#define NPAGES 4
#define SLOTS 100
#define STRIDE 40 /* every slot's size here (what 2.7's pages, which say none, have) */

struct image {
	const struct ruby_layout *L;
	unsigned char *m;
	uint64_t hole_lo, hole_hi; /* reads that touch it fail: freed and unmapped */
};

static void put(struct image *img, uint64_t addr, const void *v, size_t n)
{
	assert_true(addr >= BASE && addr + n <= BASE + SIZE);
	memcpy(img->m + (addr - BASE), v, n);
}

static void put64(struct image *img, uint64_t addr, uint64_t v)
{
	put(img, addr, &v, 8);
}

/*
 * Pages of SLOTS slots: in each, slot i holds an object of types[i % n] (0:
 * free, flags 0) whose class word is AT_CLASS.
 */
static void build(struct image *img, const char *version, const int *types, int ntypes)
{
	const struct ruby_layout *L = img->L = ruby_layout_find(version, NULL);
	assert_non_null(L);
	img->m = calloc(1, SIZE);
	assert_non_null(img->m);
	uint64_t sorted = BASE + AT_SORTED;
	if (L->gc_pages_darray >= 0) { /* its length, then its elements */
		put64(img, sorted, NPAGES);
		sorted += (uint64_t)L->gc_pages_darray;
		put64(img, BASE + AT_OBJSPACE + (uint64_t)L->gc_pages_sorted, BASE + AT_SORTED);
	} else {
		put64(img, BASE + AT_OBJSPACE + (uint64_t)L->gc_pages_sorted, sorted);
		put64(img, BASE + AT_OBJSPACE + (uint64_t)L->gc_pages_allocated, NPAGES);
	}
	for (int p = 0; p < NPAGES; p++) {
		uint64_t page = BASE + AT_PAGES + (uint64_t)p * PAGE_SPAN, slots = BASE + AT_SLOTS + (uint64_t)p * SLOTS_SPAN;
		uint16_t total = SLOTS, size = STRIDE;
		put64(img, sorted + (uint64_t)p * 8, page);
		put64(img, page + (uint64_t)L->gc_page_start, slots);
		put(img, page + (uint64_t)L->gc_page_total_slots, &total, 2);
		if (L->gc_page_slot_size >= 0)
			put(img, page + (uint64_t)L->gc_page_slot_size, &size, 2);
		for (int i = 0; i < SLOTS; i++) {
			int type = types[i % ntypes];
			put64(img, slots + (uint64_t)i * STRIDE, (uint64_t)type);
			put64(img, slots + (uint64_t)i * STRIDE + 8, type ? BASE + AT_CLASS : 0);
		}
	}
}

static int hook(struct mem *m, uint64_t i, uint64_t addr, size_t len, void *arg)
{
	(void)m, (void)i;
	const struct image *img = arg;
	return img->hole_hi > addr && img->hole_lo < addr + len ? -EFAULT : 0;
}

static void target_open(struct ruby_target *t, struct image *img)
{
	memset(t, 0, sizeof(*t));
	assert_int_equal(strtab_init(&t->strs), 0);
	mem_open_script(&t->mem, BASE, img->m, SIZE, hook, img);
	t->L = img->L;
	t->main_thread = 1; /* (read already: the census needs only the objspace) */
	t->objspace = BASE + AT_OBJSPACE;
}

static const char *const versions[] = { "2.7.4", "3.1.2", "3.3.8", "3.4.5" };

/* Every slot counted: free ones apart, objects by type and by their class. */
static void test_census_counts_every_slot(void **state)
{
	(void)state;
	for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++) {
		struct image img = { 0 };
		const struct ruby_layout *L = ruby_layout_find(versions[v], NULL);
		const int types[] = { 0, (int)L->t_string, (int)L->t_string, (int)L->t_array, (int)L->t_imemo };
		build(&img, versions[v], types, 5);
		struct ruby_target t;
		target_open(&t, &img);
		struct census c;
		assert_int_equal(census_take(&t, &c), 0);
		assert_int_equal(c.pages, NPAGES);
		assert_int_equal(c.slots, NPAGES * SLOTS);
		assert_int_equal(c.free, NPAGES * SLOTS / 5);
		assert_int_equal(c.types[L->t_string].count, NPAGES * SLOTS * 2 / 5);
		assert_int_equal(c.types[L->t_array].count, NPAGES * SLOTS / 5);
		assert_int_equal(c.types[L->t_imemo].count, NPAGES * SLOTS / 5);
		assert_int_equal(c.bytes, NPAGES * SLOTS * 4 / 5 * 40);
		assert_int_equal(c.torn, 0);
		/* by class: the strings and arrays under the class, the IMEMOs under none */
		assert_int_equal(c.nclasses, 2);
		for (uint64_t k = 0; k < c.nclasses; k++)
			assert_int_equal(c.classes[k].count, c.classes[k].key ? NPAGES * SLOTS * 3 / 5 : NPAGES * SLOTS / 5);
		census_free(&c);
		strtab_free(&t.strs);
		free(img.m);
	}
}

/* Slots whose type no object has (written as they were read) are left out and counted, never a crash. */
static void test_census_counts_torn_slots(void **state)
{
	(void)state;
	struct image img = { 0 };
	const int types[] = { (int)ruby_layout_find("3.3.8", NULL)->t_object, 0x11 /* nil's: no heap object's */, 0x1f };
	build(&img, "3.3.8", types, 3);
	struct ruby_target t;
	target_open(&t, &img);
	struct census c;
	assert_int_equal(census_take(&t, &c), 0);
	assert_int_equal(c.torn, NPAGES * (SLOTS - (SLOTS + 2) / 3)); /* (slots 1, 2, 4, 5, ... of each page) */
	assert_int_equal(c.objects + c.torn + c.free, c.slots);
	census_free(&c);
	strtab_free(&t.strs);
	free(img.m);
}

/* A page freed as it is read (its slots unmapped, or its header) is left out and counted; the rest counted. */
static void test_census_page_freed_meanwhile(void **state)
{
	(void)state;
	for (int what = 0; what < 3; what++) {
		struct image img = { 0 };
		const struct ruby_layout *L = ruby_layout_find("3.1.2", NULL);
		const int types[] = { (int)L->t_string };
		build(&img, "3.1.2", types, 1);
		if (what == 0) { /* page 1's slots */
			img.hole_lo = BASE + AT_SLOTS + SLOTS_SPAN;
			img.hole_hi = img.hole_lo + 64;
		} else if (what == 1) { /* page 2's header */
			img.hole_lo = BASE + AT_PAGES + 2 * PAGE_SPAN;
			img.hole_hi = img.hole_lo + 8;
		} else { /* page 3's header says nonsense: a page being set up */
			uint16_t total = 0xffff;
			put(&img, BASE + AT_PAGES + 3 * PAGE_SPAN + (uint64_t)L->gc_page_total_slots, &total, 2);
		}
		struct ruby_target t;
		target_open(&t, &img);
		struct census c;
		assert_int_equal(census_take(&t, &c), 0);
		assert_int_equal(c.pages_gone, 1);
		assert_int_equal(c.pages, NPAGES - 1);
		assert_int_equal(c.types[L->t_string].count, (NPAGES - 1) * SLOTS);
		census_free(&c);
		strtab_free(&t.strs);
		free(img.m);
	}
}

/* A page list longer than any heap, or its array gone: an error, nothing counted. */
static void test_census_bad_page_list(void **state)
{
	(void)state;
	struct image img = { 0 };
	const struct ruby_layout *L = ruby_layout_find("3.3.8", NULL);
	const int types[] = { (int)L->t_string };
	build(&img, "3.3.8", types, 1);
	put64(&img, BASE + AT_OBJSPACE + (uint64_t)L->gc_pages_allocated, UINT64_C(1) << 40);
	struct ruby_target t;
	target_open(&t, &img);
	struct census c;
	assert_int_equal(census_take(&t, &c), ERR_CORRUPT);
	put64(&img, BASE + AT_OBJSPACE + (uint64_t)L->gc_pages_allocated, NPAGES);
	img.hole_lo = BASE + AT_SORTED;
	img.hole_hi = img.hole_lo + 8;
	assert_int_equal(census_take(&t, &c), -EFAULT);
	strtab_free(&t.strs);
	free(img.m);
}

/* A table without heap pages (4.0's, from headers only): unsupported, said as such. */
static void test_census_unsupported_table(void **state)
{
	(void)state;
	struct ruby_target t;
	memset(&t, 0, sizeof(t));
	t.L = ruby_layout_find("3.2.0", NULL);
	assert_non_null(t.L);
	struct census c;
	assert_int_equal(census_take(&t, &c), ERR_UNSUPPORTED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_census_counts_every_slot),
		cmocka_unit_test(test_census_counts_torn_slots),
		cmocka_unit_test(test_census_page_freed_meanwhile),
		cmocka_unit_test(test_census_bad_page_list),
		cmocka_unit_test(test_census_unsupported_table),
	};
	return cmocka_run_group_tests_name("census", tests, NULL, NULL);
}
