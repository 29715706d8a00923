/* test_alloc.c: an allocation ring read into a profile: stacks root first under their class, C methods at their caller's line, totals scaled (by windows' counts too), bad records refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "alloc/alloc.h"
#include "lib/err.h"
#include "output/output.h"

/* A ring as the agent makes it (ext/rbscope/alloc.c), written through ring.h's producer. */
struct ring {
	int fd;
	struct ring_hdr *h;
	struct ring_prod prod;
};

static void ring_open(struct ring *r)
{
	size_t size = 1 << 16;
	r->fd = memfd_create("test-allocs", MFD_CLOEXEC);
	assert_true(r->fd >= 0);
	assert_int_equal(ftruncate(r->fd, (off_t)ring_map_size(size)), 0);
	r->h = mmap(NULL, ring_map_size(size), PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
	assert_true(r->h != MAP_FAILED);
	*r->h = (struct ring_hdr){ .magic = RING_MAGIC, .version = RING_VERSION, .size = size, .data_off = 4096 };
	ring_prod_init(&r->prod, r->h);
}

static void ring_close(struct ring *r)
{
	munmap(r->h, ring_map_size(r->h->size));
	close(r->fd);
}

static void put_frame(struct ring *r, uint32_t id, uint32_t kind, const char *name, const char *path)
{
	size_t nl = strlen(name), pl = strlen(path);
	struct ring_frame *f = ring_reserve(&r->prod, (uint32_t)(sizeof(*f) + nl + pl), RING_FRAME);
	assert_non_null(f);
	f->id = id;
	f->kind = kind;
	f->name_len = (uint32_t)nl;
	f->path_len = (uint32_t)pl;
	memcpy(f + 1, name, nl);
	memcpy((char *)(f + 1) + nl, path, pl);
	ring_commit(&r->prod, f);
}

static void put_class(struct ring *r, uint32_t id, const char *name)
{
	struct ring_name *n = ring_reserve(&r->prod, (uint32_t)(sizeof(*n) + strlen(name)), RING_NAME);
	assert_non_null(n);
	n->id = id;
	n->len = (uint32_t)strlen(name);
	memcpy(n + 1, name, n->len);
	ring_commit(&r->prod, n);
}

static void put_counts(struct ring *r, uint64_t vm_total, int end)
{
	struct ring_allocs *c = ring_reserve(&r->prod, sizeof(*c), RING_ALLOCS);
	assert_non_null(c);
	*c = (struct ring_allocs){ .r = c->r, .vm_total = vm_total, .interval = 100, .ts = 1000 };
	c->r.flags = (uint16_t)end;
	ring_commit(&r->prod, c);
}

/* A sample: frames innermost first as pairs id, line. */
static void put_sample(struct ring *r, uint32_t klass, uint64_t bytes, uint32_t n, const uint32_t *fr)
{
	struct ring_alloc *a = ring_reserve(&r->prod, (uint32_t)(sizeof(*a) + n * sizeof(struct ring_alloc_frame)), RING_ALLOC);
	assert_non_null(a);
	a->tid = 7;
	a->klass = klass;
	a->ts = 2000;
	a->bytes = bytes;
	a->nframes = n;
	a->truncated = 0;
	struct ring_alloc_frame *f = (struct ring_alloc_frame *)(a + 1);
	for (uint32_t i = 0; i < n; i++)
		f[i] = (struct ring_alloc_frame){ fr[2 * i], (int32_t)fr[2 * i + 1] };
	ring_commit(&r->prod, a);
}

static void test_stacks(void **state)
{
	(void)state;
	struct ring r;
	ring_open(&r);
	put_counts(&r, 5000, 0);
	put_frame(&r, 1, RING_FRAME_RUBY, "<main>", "app.rb");
	put_frame(&r, 2, RING_FRAME_RUBY, "Shop#add", "shop.rb");
	put_frame(&r, 3, RING_FRAME_CFUNC, "Array#map", "");
	put_class(&r, 4, "String");
	/* String.new in Array#map in Shop#add at shop.rb:12, from app.rb:3, over the program's lineless first frame */
	const uint32_t fr[] = { 3, 0, 2, 12, 1, 3, 1, 0 };
	put_sample(&r, 4, 40, 4, fr);
	put_sample(&r, 4, 60, 4, fr);
	put_counts(&r, 5400, 1);

	struct profile p;
	assert_int_equal(profile_init(&p), 0);
	struct alloc_reader ar;
	assert_int_equal(alloc_reader_init(&ar, &p, r.fd, 0), 0);
	assert_int_equal(alloc_reader_drain(&ar), 8);
	assert_int_equal(p.kind, PROFILE_ALLOCS);
	assert_int_equal(p.alloc_interval, 100);
	assert_int_equal(p.alloc_total, 400);
	assert_true(ar.ended);
	assert_int_equal(ar.samples, 2);
	assert_int_equal(p.nstacks, 1);
	const struct profile_stack *s = &p.stacks[0];
	assert_int_equal(s->len, 4); /* <main>, Shop#add, Array#map, String: the lineless first frame left out */
	const char *want[] = { "<main>", "Shop#add", "Array#map", "String" };
	const int32_t lines[] = { 3, 12, 12, 0 };
	const char *paths[] = { "app.rb", "shop.rb", "shop.rb", "" };
	for (uint32_t i = 0; i < 4; i++) {
		const struct profile_frame *f = &p.frames[p.pool[s->start + i]];
		assert_string_equal(strtab_get(&p.strs, f->name), want[i]);
		assert_string_equal(strtab_get(&p.strs, f->path), paths[i]);
		assert_int_equal(f->line, lines[i]);
	}
	assert_int_equal(p.frames[p.pool[s->start + 2]].kind, PROFILE_FRAME_CFUNC);
	assert_int_equal(p.frames[p.pool[s->start + 3]].kind, PROFILE_FRAME_CLASS);
	assert_int_equal(profile_stack_objects(&p, 0), 200);
	assert_int_equal(profile_stack_bytes(&p, 0), 10000);
	assert_int_equal(profile_stack_weight(&p, 0), 200);
	p.by_bytes = 1;
	assert_int_equal(profile_stack_weight(&p, 0), 10000);
	assert_string_equal(profile_unit(&p), "bytes");
	alloc_reader_free(&ar);
	profile_free(&p);
	ring_close(&r);
}

/* In windows a sample weighs the interval inside them times the VM's allocations over those the hook saw. */
static void test_window_weight(void **state)
{
	(void)state;
	struct ring_allocs first = { .vm_total = 1000, .seen = 0, .interval = 4096, .den = 64 }, now = first;
	assert_int_equal(alloc_weight(&first, &now), 4096); /* nothing seen yet: the interval */
	now.vm_total = 1001000;
	now.seen = 10000;
	assert_int_equal(alloc_weight(&first, &now), 6400); /* 64 a sample inside, the hook in for 1% of them */
	now.den = 1;
	assert_int_equal(alloc_weight(&first, &now), 4096); /* in throughout: the interval, as set */

	/* Through the ring: the profile's weight follows each count record. */
	struct ring r;
	ring_open(&r);
	struct ring_allocs *c = ring_reserve(&r.prod, sizeof(*c), RING_ALLOCS);
	assert_non_null(c);
	*c = (struct ring_allocs){ .r = c->r, .vm_total = 1000, .interval = 4096, .den = 64, .ts = 1 };
	ring_commit(&r.prod, c);
	c = ring_reserve(&r.prod, sizeof(*c), RING_ALLOCS);
	assert_non_null(c);
	*c = (struct ring_allocs){ .r = c->r, .vm_total = 2001000, .seen = 25000, .interval = 4096, .den = 64, .windows = 3,
				   .ts = 2 };
	ring_commit(&r.prod, c);
	struct profile p;
	assert_int_equal(profile_init(&p), 0);
	struct alloc_reader ar;
	assert_int_equal(alloc_reader_init(&ar, &p, r.fd, 0), 0);
	assert_int_equal(alloc_reader_drain(&ar), 2);
	assert_int_equal(p.alloc_interval, 5120); /* 64 * 2,000,000 / 25,000 */
	assert_int_equal(p.alloc_total, 2000000);
	alloc_reader_free(&ar);
	profile_free(&p);
	ring_close(&r);
}

static void test_bad_records(void **state)
{
	(void)state;
	for (int k = 0; k < 2; k++) {
		struct ring r;
		ring_open(&r);
		put_counts(&r, 1, 0);
		if (k == 0) { /* a name longer than its record */
			struct ring_frame *f = ring_reserve(&r.prod, sizeof(*f) + 8, RING_FRAME);
			*f = (struct ring_frame){ f->r, 1, RING_FRAME_RUBY, 4000, 4 };
			ring_commit(&r.prod, f);
		} else { /* more frames than the record holds */
			struct ring_alloc *a = ring_reserve(&r.prod, sizeof(*a) + 8, RING_ALLOC);
			*a = (struct ring_alloc){ .r = a->r, .tid = 1, .klass = 1, .nframes = 50 };
			ring_commit(&r.prod, a);
		}
		struct profile p;
		assert_int_equal(profile_init(&p), 0);
		struct alloc_reader ar;
		assert_int_equal(alloc_reader_init(&ar, &p, r.fd, 0), 0);
		assert_int_equal(alloc_reader_drain(&ar), ERR_CORRUPT);
		alloc_reader_free(&ar);
		profile_free(&p);
		ring_close(&r);
	}
}

static void test_unknown_names(void **state)
{
	(void)state;
	struct ring r;
	ring_open(&r);
	put_counts(&r, 1, 0);
	const uint32_t fr[] = { 9, 5 }; /* a frame never named, a class never named */
	put_sample(&r, 8, 40, 1, fr);
	struct profile p;
	assert_int_equal(profile_init(&p), 0);
	struct alloc_reader ar;
	assert_int_equal(alloc_reader_init(&ar, &p, r.fd, 1), 0);
	assert_int_equal(alloc_reader_drain(&ar), 2);
	assert_int_equal(ar.unnamed, 1);
	assert_int_equal(p.nstacks, 1);
	assert_int_equal(p.stacks[0].len, 2); /* the thread's root and the class */
	assert_string_equal(strtab_get(&p.strs, p.frames[p.pool[p.stacks[0].start]].name), "thread 7");
	assert_string_equal(strtab_get(&p.strs, p.frames[p.pool[p.stacks[0].start + 1]].name), "(unknown class)");
	alloc_reader_free(&ar);
	profile_free(&p);
	ring_close(&r);
}

static void test_not_a_ring(void **state)
{
	(void)state;
	int fd = memfd_create("test-not-a-ring", MFD_CLOEXEC);
	assert_int_equal(ftruncate(fd, 8192), 0);
	struct profile p;
	assert_int_equal(profile_init(&p), 0);
	struct alloc_reader ar;
	assert_int_equal(alloc_reader_init(&ar, &p, fd, 0), ERR_CORRUPT);
	profile_free(&p);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stacks),
		cmocka_unit_test(test_window_weight),
		cmocka_unit_test(test_bad_records),
		cmocka_unit_test(test_unknown_names),
		cmocka_unit_test(test_not_a_ring),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
