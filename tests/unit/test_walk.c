/* test_walk.c: the stack walker over random and corrupted memory, through a fake memory source. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "noise.h"

#include "ruby/frames.h"
#include "ruby/layout.h"
#include "ruby/slots.h"
#include "ruby/target.h"
#include "ruby/vm.h"
#include "ruby/walk.h"

#define BASE 0x10000000ULL
#define SIZE (1u << 20)


static void test_random_memory(void **state)
{
	(void)state;
	unsigned char *m = malloc(SIZE);
	struct ruby_sample *s = malloc(sizeof(*s));
	for (int l = 0; ruby_layout_ranges[l].layout; l++) {
		for (unsigned seed = 1; seed <= 200; seed++) {
			noise_fill(m, SIZE, BASE, seed * 31 + (unsigned)l);
			struct ruby_target t;
			memset(&t, 0, sizeof(t));
			assert_int_equal(strtab_init(&t.strs), 0);
			mem_open_buffer(&t.mem, BASE, m, SIZE);
			t.L = ruby_layout_ranges[l].layout;
			t.vm = BASE + ((uint64_t)seed * 4096 % SIZE);
			t.symbols = BASE + 64;
			t.th_read_len = 512;
			int err = ruby_sample_take(&t, s, 0);
			assert_true(err <= 0);
			struct ruby_gc_counts gc;
			assert_true(ruby_gc_counts(&t, &gc) <= 0);
			assert_true(s->nthreads >= 0 && s->nthreads <= WALK_MAX_THREADS);
			assert_true(s->nframes_total <= WALK_MAX_TOTAL);
			for (int i = 0; i < s->nthreads; i++)
				assert_true(s->threads[i].nframes >= 0 && s->threads[i].nframes <= WALK_MAX_FRAMES + 1);
			ruby_target_detach(&t);
		}
	}
	free(s);
	free(m);
}

static void put(unsigned char *m, uint64_t addr, uint64_t v)
{
	memcpy(m + (addr - BASE), &v, 8);
}

/*
 * The heap's slots of a made-up VM, laid out as each Ruby's table says:
 * counted per size pool (3.3, 3.4) or in rb_objspace itself (2.7, 3.1), as
 * GC.stat counts them; and counts read at different moments are not slots.
 */
static void test_gc_heap_slots(void **state)
{
	(void)state;
	const char *versions[] = { "2.7.4", "3.1.2", "3.3.8", "3.4.5" };
	unsigned char *m = calloc(1, SIZE);
	for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++) {
		const struct ruby_layout *L = ruby_layout_find(versions[v], NULL);
		assert_non_null(L);
		assert_true(L->gc_pool_eden_slots >= 0);
		memset(m, 0, SIZE);
		uint64_t vm = BASE + 0x1000, os = BASE + 0x10000;
		put(m, vm + (uint64_t)L->vm_main_thread, BASE + 0x2000);
		if (L->vm_main_ractor >= 0)
			put(m, vm + (uint64_t)L->vm_main_ractor, BASE + 0x3000);
		put(m, vm + (uint64_t)L->vm_objspace, os);
		int64_t n = L->gc_pool_count >= 0 ? L->gc_pool_count : 1;
		int64_t base = L->gc_pools >= 0 ? L->gc_pools : 0, stride = L->gc_pool_size >= 0 ? L->gc_pool_size : 0;
		uint64_t alloc = 0, freed = 0, final = 0, slots = 0;
		for (int64_t i = 0; i < n; i++) {
			uint64_t p = os + (uint64_t)(base + i * stride), k = (uint64_t)i + 1;
			put(m, p + (uint64_t)L->gc_pool_eden_slots, 1000 * k), slots += 1000 * k;
			if (L->gc_pool_tomb_slots >= 0)
				put(m, p + (uint64_t)L->gc_pool_tomb_slots, 100 * k), slots += 100 * k;
			if (L->gc_pool_allocated >= 0)
				put(m, p + (uint64_t)L->gc_pool_allocated, 5000 * k), alloc += 5000 * k;
			if (L->gc_pool_freed >= 0)
				put(m, p + (uint64_t)L->gc_pool_freed, 4500 * k), freed += 4500 * k;
			if (L->gc_pool_final >= 0)
				put(m, p + (uint64_t)L->gc_pool_final, 3 * k), final += 3 * k;
		}
		if (L->gc_allocated >= 0)
			put(m, os + (uint64_t)L->gc_allocated, 5000), alloc += 5000;
		if (L->gc_freed >= 0)
			put(m, os + (uint64_t)L->gc_freed, 4500), freed += 4500;
		if (L->gc_final >= 0)
			put(m, os + (uint64_t)L->gc_final, 3), final += 3;
		if (L->gc_count >= 0)
			put(m, os + (uint64_t)L->gc_count, 42);
		struct ruby_target t;
		memset(&t, 0, sizeof(t));
		mem_open_buffer(&t.mem, BASE, m, SIZE);
		t.L = L;
		t.vm = vm;
		struct ruby_gc_counts gc;
		assert_int_equal(ruby_gc_counts(&t, &gc), 0);
		assert_true(gc.have_slots);
		assert_int_equal(gc.count, 42);
		assert_int_equal(gc.live_slots, alloc - freed - final);
		assert_int_equal(gc.free_slots, slots - (alloc - freed - final) - final);
		/* more freed than allocated: counts of two moments; the counters stand, the slots do not */
		if (L->gc_freed >= 0)
			put(m, os + (uint64_t)L->gc_freed, 1000000);
		else
			put(m, os + (uint64_t)(base + L->gc_pool_freed), 1000000);
		assert_int_equal(ruby_gc_counts(&t, &gc), 0);
		assert_false(gc.have_slots);
		assert_true(gc.have_count);
	}
	free(m);
}

/* The bucket walk_slot_of starts from for th. */
static unsigned bucket(uint64_t th)
{
	return (unsigned)((th * 0x9e3779b97f4a7c15ULL) >> 56) & (CACHE_SLOTS - 1);
}

/*
 * Threads whose hashes meet keep a slot each from sample to sample (two
 * rb_thread_t of one Ruby 3.1 process met, and evicted each other's memory
 * every sample); past SLOT_PROBES of them, the longest unasked gives way.
 */
static void test_slots_shared_bucket(void **state)
{
	(void)state;
	struct walk_cache *c = calloc(1, sizeof(*c));
	assert_non_null(c);
	/* the two threads seen (main and another of parked.rb), and SLOT_PROBES more in one bucket */
	uint64_t th[SLOT_PROBES + 3] = { 0x5622069230f0ULL, 0x562206bdbdf0ULL };
	assert_int_equal(bucket(th[0]), bucket(th[1]));
	int n = 2;
	for (uint64_t a = 0x7f0000001000ULL; n < SLOT_PROBES + 3; a += 0x10)
		if (bucket(a) == bucket(th[0]))
			th[n++] = a;
	struct walk_slot *first[SLOT_PROBES];
	uint64_t now = 0; /* (the sample each is asked for at) */
	for (int gen = 0; gen < 5; gen++) {
		now++;
		for (int i = 0; i < SLOT_PROBES; i++) {
			struct walk_slot *w = walk_slot_of(c, th[i], now);
			assert_true(w->th == th[i]);
			if (!gen) {
				first[i] = w;
				w->last_n = i + 1; /* its memory */
			}
			assert_ptr_equal(w, first[i]);
			assert_int_equal(w->last_n, i + 1);
		}
	}
	/* one more: it takes the slot asked for longest ago, th[1]'s (th[0] asked again first) */
	now++;
	walk_slot_of(c, th[0], now);
	now++;
	for (int i = 2; i < SLOT_PROBES; i++)
		walk_slot_of(c, th[i], now);
	struct walk_slot *w = walk_slot_of(c, th[SLOT_PROBES], now);
	assert_ptr_equal(w, first[1]);
	assert_true(w->th == th[SLOT_PROBES] && w->last_n == 0);
	assert_int_equal(walk_slot_of(c, th[0], now)->last_n, 1);
	for (int i = 0; i < CACHE_SLOTS; i++)
		walk_slot_forget(&c->slot[i]);
	free(c);
}

/* An Array of n elements at addr, its elements at buf (held apart, as a long Array's are). */
static void put_heap_array(unsigned char *m, const struct ruby_layout *L, uint64_t addr, uint64_t buf, uint64_t n)
{
	put(m, addr, (uint64_t)L->t_array);
	put(m, addr + (uint64_t)L->rarray_heap_len, n);
	put(m, addr + (uint64_t)L->rarray_heap_ptr, buf);
}

/*
 * A C method's frame whose method entry lives where a torn read once showed
 * something else (an object): once the slot holds the entry, the frame is
 * named, however often that garbage was looked at before. (A heap slot
 * given up on as "not a method entry" kept a late-loaded library's C method
 * "(unknown C method)" for a whole recording: rubocop's Psych::Parser#parse.)
 */
static void test_cfunc_named_once_its_slot_holds_its_entry(void **state)
{
	(void)state;
	const struct ruby_layout *L = ruby_layout_find("3.1.2", NULL);
	assert_non_null(L);
	unsigned char *m = calloc(1, SIZE);
	struct ruby_target t;
	memset(&t, 0, sizeof(t));
	assert_int_equal(strtab_init(&t.strs), 0);
	mem_open_buffer(&t.mem, BASE, m, SIZE);
	t.L = L;
	/* the symbol table: ID serial 100 ("parse") in chunk 0 */
	uint64_t syms = BASE + 0x1000, ids = BASE + 0x2000, idsbuf = BASE + 0x2100, chunk = BASE + 0x3000,
		 chunkbuf = BASE + 0x4000, str = BASE + 0x8000, me = BASE + 0x9000, def = BASE + 0x9100;
	uint64_t serial = 100, id = serial << L->id_scope_shift;
	assert_true(id > (uint64_t)L->last_op_id);
	uint32_t last_id = 200;
	memcpy(m + (syms + (uint64_t)L->symbols_last_id - BASE), &last_id, 4);
	put(m, syms + (uint64_t)L->symbols_ids, ids);
	put_heap_array(m, L, ids, idsbuf, 1);
	put(m, idsbuf, chunk);
	uint64_t slots = (uint64_t)L->id_entry_unit * (uint64_t)L->id_entry_size;
	put_heap_array(m, L, chunk, chunkbuf, slots);
	put(m, chunkbuf + serial * (uint64_t)L->id_entry_size * 8, str);
	uint64_t sflags = (uint64_t)L->t_string;
	if (L->rstring_len >= 0)
		put(m, str + (uint64_t)L->rstring_len, 5);
	else
		sflags |= (5ULL << L->rstring_embed_len_shift) & (uint64_t)L->rstring_embed_len_mask;
	put(m, str, sflags);
	memcpy(m + (str + (uint64_t)L->rstring_embed_ary - BASE), "parse", 6);
	t.symbols = syms;
	t.symbols_searched = 1;
	/* a C method's frame and its env words: its method entry at me */
	unsigned char cfp[256] = { 0 };
	assert_true((size_t)L->cfp_size <= sizeof(cfp));
	uint64_t eps[1][EP_WORDS] = { { me, 0, (uint64_t)L->frame_magic_cfunc } };
	struct ruby_frame out[2];
	/* first an object there, looked at as a torn read would, many times */
	put(m, me, (uint64_t)L->t_object);
	for (int i = 0; i < 40; i++) {
		int dropped = 0;
		assert_int_equal(ruby_name_frames(&t, cfp, eps, 1, 0, i & 1, NULL, out, NULL, &dropped), 0);
		assert_int_equal(dropped, 1);
	}
	/* then its method entry: named within a few lookups, and from then on */
	put(m, me, (uint64_t)L->t_imemo | (uint64_t)L->imemo_ment << L->fl_ushift);
	put(m, me + (uint64_t)L->me_def, def);
	put(m, me + (uint64_t)L->me_called_id, id);
	put(m, def + (uint64_t)L->def_original_id, id);
	int named = 0;
	for (int i = 0; i < 40; i++) {
		int dropped = 0;
		int n = ruby_name_frames(&t, cfp, eps, 1, 0, 1, NULL, out, NULL, &dropped);
		assert_int_equal(n, 1);
		const char *name = strtab_get(&t.strs, out[0].name);
		if (!strcmp(name, "parse"))
			named++;
		else
			assert_false(named); /* (once named, always) */
	}
	assert_true(named >= 30);
	/* another C method, while the symbol table does not read (being grown, say) for longer than its tries:
	   unknown then, named once it reads again (the entry and the ID are read again now and then) */
	uint64_t me2 = me + 0x40;
	put(m, me2, (uint64_t)L->t_imemo | (uint64_t)L->imemo_ment << L->fl_ushift);
	put(m, me2 + (uint64_t)L->me_def, def);
	put(m, me2 + (uint64_t)L->me_called_id, id);
	uint64_t eps2[1][EP_WORDS] = { { me2, 0, (uint64_t)L->frame_magic_cfunc } };
	uint32_t short_last = 50;
	memcpy(m + (syms + (uint64_t)L->symbols_last_id - BASE), &short_last, 4);
	map_clear(&t.ids);
	for (int i = 0; i < 40; i++) {
		int dropped = 0;
		assert_int_equal(ruby_name_frames(&t, cfp, eps2, 1, 0, 1, NULL, out, NULL, &dropped), 1);
		assert_string_equal(strtab_get(&t.strs, out[0].name), "(unknown C method)");
	}
	memcpy(m + (syms + (uint64_t)L->symbols_last_id - BASE), &last_id, 4);
	named = 0;
	for (int i = 0; i < 40; i++) {
		int dropped = 0;
		assert_int_equal(ruby_name_frames(&t, cfp, eps2, 1, 0, 1, NULL, out, NULL, &dropped), 1);
		named += !strcmp(strtab_get(&t.strs, out[0].name), "parse");
	}
	assert_true(named >= 20);
	ruby_target_detach(&t);
	free(m);
}

/*
 * A thread's tid where it lives in its native thread (3.3+): a thread read
 * in full is asked again, as a new Ruby thread may have taken an ended one's
 * rb_thread_t and native thread memory, the old tid still there in a cache
 * (3.3 and 3.4 free both, and malloc gives them again: a new thread read as
 * the ended one's tid made its clock fail and its samples go to that row);
 * one read the quiet way (parked, its frames as before) keeps it.
 */
static void test_tid_read_again_for_a_full_read(void **state)
{
	(void)state;
	const struct ruby_layout *L = NULL;
	for (int l = 0; ruby_layout_ranges[l].layout && !L; l++)
		if (ruby_layout_ranges[l].layout->th_tid < 0 && ruby_layout_ranges[l].layout->th_nt >= 0)
			L = ruby_layout_ranges[l].layout;
	assert_non_null(L);
	unsigned char *m = calloc(1, SIZE);
	struct ruby_target t;
	memset(&t, 0, sizeof(t));
	mem_open_buffer(&t.mem, BASE, m, SIZE);
	t.L = L;
	uint64_t nt = BASE + 0x1000;
	unsigned char th[1024] = { 0 };
	memcpy(th + L->th_nt, &nt, 8);
	uint32_t tid = 4242;
	memcpy(m + (nt - BASE) + L->nt_tid, &tid, 4);
	struct walk_slot w;
	memset(&w, 0, sizeof(w));
	assert_int_equal(vm_thread_tid(&t, &w, th, 0), 4242);
	tid = 4343; /* a new native thread where the ended one was */
	memcpy(m + (nt - BASE) + L->nt_tid, &tid, 4);
	assert_int_equal(vm_thread_tid(&t, &w, th, 1), 4242); /* (parked: its frames as before) */
	assert_int_equal(vm_thread_tid(&t, &w, th, 0), 4343);
	assert_int_equal(vm_thread_tid(&t, &w, th, 1), 4343);
	free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_memory),
		cmocka_unit_test(test_gc_heap_slots),
		cmocka_unit_test(test_slots_shared_bucket),
		cmocka_unit_test(test_cfunc_named_once_its_slot_holds_its_entry),
		cmocka_unit_test(test_tid_read_again_for_a_full_read),
	};
	return cmocka_run_group_tests_name("walk", tests, NULL, NULL);
}
