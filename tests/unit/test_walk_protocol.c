/* test_walk_protocol.c: the walker's read-consistency protocol, on a small valid VM image a script changes mid-read. */
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
#include "ruby/label.h"
#include "ruby/layout.h"
#include "noise.h"
#include "ruby/iseq.h"
#include "ruby/jit.h"
#include "ruby/target.h"
#include "ruby/walk.h"

/*
 * The image: a VM, its main ractor's thread list, up to three threads (each
 * with a native thread for its tid, an ec and a VM stack) and an iseq per
 * method, each with its label, path and line table. Every field is placed
 * by the layout's offsets; only the places of the parts are this file's.
 */
#define BASE 0x10000000ULL
#define SIZE (512u << 10)
#define AT_VM 0x0
#define AT_RACTOR 0x1000
#define AT_THREADS 0x2000 /* THREAD_SPAN apart */
#define AT_NT 0x5000      /* 0x100 apart */
#define AT_EC 0x6000      /* 0x100 apart */
#define AT_SELF 0x7000
#define AT_NAMES 0x7800
#define AT_RACTOR2 0x8000
#define AT_ISEQS 0x10000  /* ISEQ_SPAN apart */
#define AT_STACKS 0x40000 /* STACK_SPAN apart */
#define THREAD_SPAN 0x800
#define ISEQ_SPAN 0x400
#define STACK_SPAN 0x4000
#define STACK_BYTES 0x2000 /* value stack up from the start, control frames down from the end */
#define MAX_ISEQS 192
#define FRAME_WORDS 5 /* a frame's share of the value stack: 2 locals, then its env (me, specval, flags) */
#define INSNS 16
#define PC_AT 5 /* a frame's saved pc: the instruction after the one at 4, which the second line-table entry covers */

struct image {
	const struct ruby_layout *L;
	unsigned char *m;
	char labels[MAX_ISEQS][16];
	int niseq;
	uint64_t hole_lo, hole_hi; /* reads that touch [lo, hi) fail: freed and unmapped */
};

static void put64(struct image *img, uint64_t addr, uint64_t v)
{
	assert_true(addr >= BASE && addr + 8 <= BASE + SIZE);
	memcpy(img->m + (addr - BASE), &v, 8);
}

static void put32(struct image *img, uint64_t addr, uint32_t v)
{
	assert_true(addr >= BASE && addr + 4 <= BASE + SIZE);
	memcpy(img->m + (addr - BASE), &v, 4);
}

static uint64_t off(int64_t field)
{
	assert_true(field >= 0); /* a field the walker reads, so one every 3.x layout has */
	return (uint64_t)field;
}

static uint64_t th_addr(int i) { return BASE + AT_THREADS + (uint64_t)i * THREAD_SPAN; }
static uint64_t ec_addr(int i) { return BASE + AT_EC + (uint64_t)i * 0x100; }
static uint64_t stack_addr(int i) { return BASE + AT_STACKS + (uint64_t)i * STACK_SPAN; }
static uint64_t stack_end(int i) { return stack_addr(i) + STACK_BYTES; }

/* Thread i's control frame at depth d (0: the dummy frame every thread starts with). */
static uint64_t frame_addr(const struct image *img, int i, int d)
{
	return stack_end(i) - (uint64_t)(d + 1) * (uint64_t)img->L->cfp_size;
}

/* An embedded String (labels and paths are short). */
static void put_string(struct image *img, uint64_t addr, const char *s)
{
	const struct ruby_layout *L = img->L;
	uint64_t len = strlen(s), flags = (uint64_t)L->t_string;
	assert_true(len < 64);
	if (L->rstring_len >= 0)
		put64(img, addr + (uint64_t)L->rstring_len, len);
	else
		flags |= (len << L->rstring_embed_len_shift) & (uint64_t)L->rstring_embed_len_mask;
	put64(img, addr + off(L->rbasic_flags), flags);
	memcpy(img->m + (addr + off(L->rstring_embed_ary) - BASE), s, len + 1);
}

static void path_of(const char *label, char *out, size_t cap)
{
	snprintf(out, cap, "/srv/app/%s.rb", strcmp(label, "<main>") ? label : "main");
}

/* Method k's lines: its def at 10k+1, then 10k+2 from instruction 0 and 10k+5 from instruction 3. */
static int32_t line_of(int k, int entry)
{
	return 10 * k + (entry ? 5 : 2);
}

static uint64_t iseq_addr(int k) { return BASE + AT_ISEQS + (uint64_t)k * ISEQ_SPAN; }
static uint64_t code_addr(int k) { return iseq_addr(k) + 0x180; }

/* The iseq of the method (or "<main>") named label, made on first use. */
static int iseq_of(struct image *img, const char *label)
{
	const struct ruby_layout *L = img->L;
	for (int k = 0; k < img->niseq; k++)
		if (!strcmp(img->labels[k], label))
			return k;
	assert_true(img->niseq < MAX_ISEQS);
	int k = img->niseq++;
	assert_true(strlen(label) < sizeof(img->labels[k]));
	strcpy(img->labels[k], label);
	uint64_t is = iseq_addr(k), body = is + 0x40, info = is + 0x200, pos = is + 0x240;
	char path[64];
	path_of(label, path, sizeof(path));
	put64(img, is + off(L->rbasic_flags), (uint64_t)L->t_imemo | (uint64_t)L->imemo_iseq << L->fl_ushift);
	put64(img, is + off(L->iseq_body), body);
	put32(img, body + off(L->body_type), (uint32_t)(strcmp(label, "<main>") ? L->iseq_type_method : L->iseq_type_main));
	put64(img, body + off(L->body_iseq_encoded), code_addr(k));
	put32(img, body + off(L->body_iseq_size), INSNS);
	if (L->body_first_lineno_size == 8)
		put64(img, body + off(L->body_first_lineno), (uint64_t)(10 * k + 1) << 1 | 1); /* a Fixnum */
	else
		put32(img, body + off(L->body_first_lineno), (uint32_t)(10 * k + 1));
	put_string(img, is + 0x280, label);
	put_string(img, is + 0x300, path);
	put64(img, body + off(L->body_label), is + 0x280);
	put64(img, body + off(L->body_pathobj), is + 0x300);
	put64(img, body + off(L->body_insns_info_body), info);
	put64(img, body + off(L->body_insns_info_positions), pos);
	put32(img, body + off(L->body_insns_info_size), 2);
	for (int e = 0; e < 2; e++) {
		put32(img, info + (uint64_t)e * (uint64_t)L->insn_info_size + off(L->insn_info_line_no), (uint32_t)line_of(k, e));
		put32(img, pos + (uint64_t)e * 4, e ? 3 : 0);
	}
	return k;
}

/*
 * Write thread i's frame at depth d (0: the dummy frame) running method
 * label ("" for the dummy), its env on the value stack below. Frames
 * deeper than the thread's cfp stay as they were, as Ruby leaves them.
 */
static void put_frame(struct image *img, int i, int d, const char *label)
{
	const struct ruby_layout *L = img->L;
	uint64_t cfp = frame_addr(img, i, d), ep = stack_addr(i) + (uint64_t)(FRAME_WORDS * d + FRAME_WORDS - 1) * 8;
	uint64_t iseq = 0, pc = 0, magic = (uint64_t)L->frame_magic_dummy;
	if (*label) {
		int k = iseq_of(img, label);
		iseq = iseq_addr(k);
		pc = code_addr(k) + PC_AT * 8;
		magic = (uint64_t)(strcmp(label, "<main>") ? L->frame_magic_method : L->frame_magic_top);
	}
	put64(img, cfp + off(L->cfp_pc), pc);
	put64(img, cfp + off(L->cfp_sp), ep + 16); /* its env, and one operand */
	put64(img, cfp + off(L->cfp_iseq), iseq);
	put64(img, cfp + off(L->cfp_self), BASE + AT_SELF);
	put64(img, cfp + off(L->cfp_ep), ep);
	put64(img, ep - 16, 0);  /* no method entry: frames are named by their iseq's label */
	put64(img, ep - 8, 0);   /* no block */
	put64(img, ep, magic | (uint64_t)L->env_flag_local);
}

static void set_cfp(struct image *img, int i, int depth)
{
	put64(img, ec_addr(i) + off(img->L->ec_cfp), frame_addr(img, i, depth));
}

/* Thread i's stack: the methods in spec ("<main> a b": outermost first) over the dummy frame. */
static int set_stack(struct image *img, int i, const char *spec)
{
	char buf[512], *save = NULL;
	int d = 0;
	snprintf(buf, sizeof(buf), "%s", spec);
	put_frame(img, i, 0, "");
	for (char *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		put_frame(img, i, ++d, w);
	}
	set_cfp(img, i, d);
	return d;
}

/* Where the living threads' list and the GVL's owner are: the main ractor (3.x) or the VM. */
static uint64_t list_head(const struct image *img)
{
	const struct ruby_layout *L = img->L;
	return L->vm_main_ractor >= 0 ? BASE + AT_RACTOR + off(L->ractor_threads_set) : BASE + AT_VM + off(L->vm_living_threads);
}

static uint64_t gvl_owner(const struct image *img)
{
	const struct ruby_layout *L = img->L;
	return L->vm_main_ractor >= 0 ? BASE + AT_RACTOR + off(L->ractor_gvl_owner) : BASE + AT_VM + off(L->vm_gvl_owner);
}

/* The list of living threads: threads ids[0..n), in that order (a ccan list: next, then prev). */
static void link_threads(struct image *img, const int *ids, int n)
{
	uint64_t head = list_head(img), prev = head;
	for (int j = 0; j < n; j++) {
		uint64_t node = th_addr(ids[j]) + off(img->L->th_lt_node);
		put64(img, prev, node);
		put64(img, node + 8, prev);
		prev = node;
	}
	put64(img, prev, head);
	put64(img, head + 8, prev);
}

/* Thread i's status (thread_runnable ... thread_killed), in its bits of rb_thread_t. */
static void set_status(struct image *img, int i, int64_t status)
{
	const struct ruby_layout *L = img->L;
	unsigned char *st = img->m + (th_addr(i) + off(L->th_status_byte) - BASE);
	unsigned mask = ((1u << L->th_status_bits) - 1) << L->th_status_shift;
	*st = (unsigned char)((*st & ~mask) | ((unsigned)status << L->th_status_shift));
}

/* Thread i's rb_thread_t, native thread and ec, its status as Ruby keeps it; name NULL for none. */
static void put_thread(struct image *img, int i, int64_t status, int waits, uint32_t tid, const char *name)
{
	const struct ruby_layout *L = img->L;
	uint64_t th = th_addr(i), ec = ec_addr(i);
	set_status(img, i, status);
	put64(img, th + off(L->th_ec), ec);
	if (L->th_tid >= 0) {
		put32(img, th + (uint64_t)L->th_tid, tid);
	} else {
		uint64_t nt = BASE + AT_NT + (uint64_t)i * 0x100;
		put64(img, th + off(L->th_nt), nt);
		put32(img, nt + off(L->nt_tid), tid);
	}
	if (L->th_dedicated_byte >= 0) /* a native thread of its own, as without RUBY_MN_THREADS */
		img->m[th - BASE + (uint64_t)L->th_dedicated_byte] |= (unsigned char)(1u << L->th_dedicated_shift);
	put64(img, th + off(L->th_unblock_func), waits ? BASE + 0x9990 : 0); /* where it would be woken */
	put64(img, th + off(L->th_name), (uint64_t)L->qnil);
	if (name) {
		put_string(img, BASE + AT_NAMES + (uint64_t)i * 0x80, name);
		put64(img, th + off(L->th_name), BASE + AT_NAMES + (uint64_t)i * 0x80);
	}
	put64(img, ec + off(L->ec_vm_stack), stack_addr(i));
	put64(img, ec + off(L->ec_vm_stack_size), STACK_BYTES / 8);
}

static struct image *image_new(const char *version)
{
	struct image *img = calloc(1, sizeof(*img));
	assert_non_null(img);
	img->L = ruby_layout_find(version, NULL);
	assert_non_null(img->L);
	assert_non_null(img->m = calloc(1, SIZE));
	const struct ruby_layout *L = img->L;
	put64(img, BASE + AT_VM + off(L->vm_main_thread), th_addr(0));
	if (L->vm_main_ractor >= 0)
		put64(img, BASE + AT_VM + (uint64_t)L->vm_main_ractor, BASE + AT_RACTOR);
	return img;
}

static void image_free(struct image *img)
{
	free(img->m);
	free(img);
}

/* The image most tests start from: the main thread running, a worker thread asleep. */
#define MAIN_STACK "<main> a b c"
#define WORKER_STACK "serve handle parse"
static struct image *image_two_threads(const char *version)
{
	struct image *img = image_new(version);
	const struct ruby_layout *L = img->L;
	put_thread(img, 0, L->thread_runnable, 0, 4242, NULL);
	put_thread(img, 1, L->thread_stopped_forever, 1, 4243, "worker");
	set_stack(img, 0, MAIN_STACK);
	set_stack(img, 1, WORKER_STACK);
	link_threads(img, (const int[]){ 0, 1 }, 2);
	put64(img, gvl_owner(img), th_addr(0));
	return img;
}

/*
 * A script: changes to the image, each made just before the nth read (from
 * 1, once armed) that covers addr, in order; a change may also unmap memory.
 */
struct step {
	uint64_t addr;
	int nth;
	void (*change)(struct image *img);
};

struct script {
	struct image *img;
	struct step steps[4];
	int nsteps, done, seen, armed;
};

static int script_hook(struct mem *m, uint64_t i, uint64_t addr, size_t len, void *arg)
{
	struct script *sc = arg;
	(void)m, (void)i;
	if (sc->armed && sc->done < sc->nsteps) {
		struct step *st = &sc->steps[sc->done];
		if (st->addr >= addr && st->addr < addr + len && ++sc->seen == st->nth) {
			sc->seen = 0;
			sc->done++;
			st->change(sc->img);
		}
	}
	if (sc->img->hole_hi > addr && sc->img->hole_lo < addr + len)
		return -EFAULT;
	return 0;
}

static void target_open(struct ruby_target *t, struct script *sc)
{
	const struct ruby_layout *L = sc->img->L;
	memset(t, 0, sizeof(*t));
	assert_int_equal(strtab_init(&t->strs), 0);
	mem_open_script(&t->mem, BASE, sc->img->m, SIZE, script_hook, sc);
	t->L = L;
	t->vm = BASE + AT_VM;
	t->symbols_searched = 1; /* no symbol table: no frame here needs one */
	/* as much of rb_thread_t as the walker reads */
	const int64_t ths[] = { L->th_lt_node + 8, L->th_ec, L->th_name, L->th_status_byte, L->th_tid, L->th_nt,
				L->th_unblock_func, L->th_self, L->th_dedicated_byte };
	for (size_t j = 0; j < sizeof(ths) / sizeof(ths[0]); j++)
		if (ths[j] >= 0 && (size_t)ths[j] + 8 > t->th_read_len)
			t->th_read_len = (size_t)ths[j] + 8;
}

/* A thread's frames as the walker named them, innermost first: "c /srv/app/c.rb:35, b ...". */
static const char *got(struct ruby_target *t, const struct ruby_thread_sample *ts)
{
	static char out[4096];
	size_t n = 0;
	out[0] = '\0';
	for (int j = 0; j < ts->nframes && n < sizeof(out); j++) {
		const struct ruby_frame *f = &ts->frames[j];
		n += (size_t)snprintf(out + n, sizeof(out) - n, "%s%s%s %s:%d", j ? ", " : "", f->kind == FRAME_RUBY ? "" : "(kind?) ",
				      strtab_get(&t->strs, f->name), strtab_get(&t->strs, f->path), f->line);
	}
	return out;
}

/* Just their names, for messages: "c b a <main>". */
static const char *names(struct ruby_target *t, const struct ruby_thread_sample *ts)
{
	static char out[1024];
	size_t n = 0;
	out[0] = '\0';
	for (int j = 0; j < ts->nframes && n < sizeof(out); j++)
		n += (size_t)snprintf(out + n, sizeof(out) - n, "%s%s", j ? " " : "", strtab_get(&t->strs, ts->frames[j].name));
	return out;
}

/* The same for the stack spec (outermost first) as the image holds it, each frame at its line at PC_AT. */
static const char *want(struct image *img, const char *spec)
{
	static char out[4096];
	char buf[512], *w[128], *save = NULL;
	int n = 0;
	size_t len = 0;
	snprintf(buf, sizeof(buf), "%s", spec);
	for (char *s = strtok_r(buf, " ", &save); s && n < 128; s = strtok_r(NULL, " ", &save))
		w[n++] = s;
	out[0] = '\0';
	for (int j = n - 1; j >= 0; j--) {
		char path[64];
		int k = iseq_of(img, w[j]);
		path_of(w[j], path, sizeof(path));
		len += (size_t)snprintf(out + len, sizeof(out) - len, "%s%s %s:%d", j < n - 1 ? ", " : "", w[j], path, line_of(k, 1));
	}
	return out;
}

static struct ruby_sample *sample_new(void)
{
	struct ruby_sample *s = malloc(sizeof(*s));
	assert_non_null(s);
	return s;
}

/* Thread j of sample s is thread i of the image, with stack spec, nothing left out or salvaged. */
static void assert_thread(struct ruby_target *t, struct image *img, const struct ruby_sample *s, int j, int i,
			  const char *spec)
{
	assert_true(j < s->nthreads);
	assert_int_equal(s->threads[j].th, th_addr(i));
	assert_string_equal(got(t, &s->threads[j]), want(img, spec));
	assert_int_equal(s->threads[j].salvaged, 0);
}

/*
 * The image as built, sampled four times: cold (each thread's ec learnt), in
 * the steady state (the list read with the first thread), then quiet (both
 * threads' stacks stayed put: one batch of small reads), each time the same
 * two threads with exactly their stacks, states, tids and names.
 */
static void test_baseline_reads_the_stacks_built(void **state)
{
	(void)state;
	const char *versions[] = { "3.1.2", "3.3.8", "3.4.5" };
	struct ruby_sample *s = sample_new();
	for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++) {
		struct image *img = image_two_threads(versions[v]);
		struct script sc = { .img = img };
		struct ruby_target t;
		target_open(&t, &sc);
		for (int round = 0; round < 4; round++) {
			assert_int_equal(ruby_sample_take(&t, s, 0), 0);
			assert_int_equal(s->nthreads, 2);
			assert_int_equal(s->torn, 0);
			assert_int_equal(s->retried, 0);
			assert_int_equal(s->salvaged, 0);
			assert_int_equal(s->unchanged, round >= 2 ? 2 : 0);
			assert_thread(&t, img, s, 0, 0, MAIN_STACK);
			assert_thread(&t, img, s, 1, 1, WORKER_STACK);
			assert_true(s->threads[0].main);
			assert_false(s->threads[1].main);
			assert_int_equal(s->threads[0].state, THREAD_RUNNING);
			assert_int_equal(s->threads[1].state, THREAD_SLEEPING);
			assert_int_equal(s->threads[0].tid, 4242);
			assert_int_equal(s->threads[1].tid, 4243);
			assert_false(s->threads[0].shared);
			assert_false(s->threads[1].shared);
			assert_int_equal(s->threads[0].name, 0);
			assert_string_equal(strtab_get(&t.strs, s->threads[1].name), "worker");
		}
		ruby_target_detach(&t);
		image_free(img);
	}
	free(s);
}

/*
 * One scripted sample: the image sampled warm times as it is (1: the
 * steady state, each thread's ec known, read in one readv; 2: the quiet
 * way), then once with the script armed, which must have run whole.
 */
static int scripted_sample(struct ruby_target *t, struct script *sc, struct ruby_sample *s, int warm)
{
	for (int j = 0; j < warm; j++)
		assert_int_equal(ruby_sample_take(t, s, 0), 0);
	sc->armed = 1;
	int err = ruby_sample_take(t, s, 0);
	assert_int_equal(sc->done, sc->nsteps);
	return err;
}

/* The main thread's innermost frame (c, at depth 4): the first read that covers it is of its frames. */
#define MAIN_TOP 4

static void returned_to_a(struct image *img)
{
	set_cfp(img, 0, 2); /* c and b returned: their frames stay in memory, below ec->cfp */
}

/*
 * The main thread returns from c and b between the walker's first read of
 * ec->cfp and its read of the frames: the frames are still there, and the
 * sample is the stack as of that first read.
 */
static void test_stack_returned_under_read_gives_first_read(void **state)
{
	(void)state;
	struct ruby_sample *s = sample_new();
	struct image *img = image_two_threads("3.3.8");
	struct script sc = { .img = img, .nsteps = 1 };
	sc.steps[0] = (struct step){ frame_addr(img, 0, MAIN_TOP), 1, returned_to_a };
	struct ruby_target t;
	target_open(&t, &sc);
	assert_int_equal(scripted_sample(&t, &sc, s, 1), 0);
	assert_int_equal(s->nthreads, 2);
	assert_int_equal(s->retried, 0); /* kept as read: every frame names */
	assert_int_equal(s->salvaged, 0);
	assert_int_equal(s->torn, 0);
	assert_thread(&t, img, s, 0, 0, MAIN_STACK);
	assert_thread(&t, img, s, 1, 1, WORKER_STACK);
	ruby_target_detach(&t);
	image_free(img);
	free(s);
}

static void returned_and_went_deeper(struct image *img)
{
	set_stack(img, 0, "<main> a x y z"); /* c and b returned, then a called x, x y, y z */
}

/*
 * The same, but the thread went on deeper into other calls over the frames
 * it was in: what the walker reads from the first ec->cfp outwards is those
 * calls' outer frames, a stack the thread was in between the reads (its
 * frames one call path, never b or c under x).
 */
static void test_stack_moved_deeper_under_read_gives_one_stack(void **state)
{
	(void)state;
	struct ruby_sample *s = sample_new();
	struct image *img = image_two_threads("3.3.8");
	struct script sc = { .img = img, .nsteps = 1 };
	sc.steps[0] = (struct step){ frame_addr(img, 0, MAIN_TOP), 1, returned_and_went_deeper };
	struct ruby_target t;
	target_open(&t, &sc);
	assert_int_equal(scripted_sample(&t, &sc, s, 1), 0);
	assert_int_equal(s->nthreads, 2);
	assert_int_equal(s->retried, 0); /* kept as read: every frame names */
	assert_int_equal(s->salvaged, 0);
	assert_int_equal(s->torn, 0);
	assert_thread(&t, img, s, 0, 0, "<main> a x y");
	assert_thread(&t, img, s, 1, 1, WORKER_STACK);
	/* and the next sample, planned around where the stack went, reads it whole */
	sc.armed = 0;
	assert_int_equal(ruby_sample_take(&t, s, 0), 0);
	assert_thread(&t, img, s, 0, 0, "<main> a x y z");
	ruby_target_detach(&t);
	image_free(img);
	free(s);
}

/* "<main> p1 ... p25 f1 f2 f3 f4": deeper than the frames the walker reads first. */
#define DEEP 25
static const char *deep_stack(char *buf, size_t cap, char p, const char *tail)
{
	size_t n = (size_t)snprintf(buf, cap, "<main>");
	for (int j = 1; j <= DEEP; j++)
		n += (size_t)snprintf(buf + n, cap - n, " %c%d", p, j);
	snprintf(buf + n, cap - n, " f1 f2 f3 f4%s", tail);
	return buf;
}

static void outer_calls_replaced(struct image *img)
{
	char buf[512];
	set_stack(img, 0, deep_stack(buf, sizeof(buf), 'q', " g1 g2"));
}

/*
 * A deep stack: the walker reads the innermost frames (and a few more)
 * first, the outer ones after its second read of ec->cfp. Just before it
 * reads the outer ones, the thread returns to <main> and calls q1 ... q25,
 * f1 ... f4, g1, g2: its innermost frames of before (f1 ... f4) are again at
 * the same places, with the same self and env. The sample must be one of the
 * two stacks (the first, or the second read again), never p's inner frames
 * over q's outer ones.
 */
static void test_deep_stack_replaced_under_read_is_not_mixed(void **state)
{
	(void)state;
	char before[4096], after[4096], buf[512];
	struct ruby_sample *s = sample_new();
	struct image *img = image_two_threads("3.3.8");
	set_stack(img, 0, deep_stack(before, sizeof(before), 'p', ""));
	snprintf(before, sizeof(before), "%s", want(img, deep_stack(buf, sizeof(buf), 'p', "")));
	for (int j = 1; j <= DEEP; j++) { /* (the q's iseqs exist before the sample, as a running program's do) */
		snprintf(buf, sizeof(buf), "q%d", j);
		iseq_of(img, buf);
	}
	iseq_of(img, "g1"), iseq_of(img, "g2");
	snprintf(after, sizeof(after), "%s", want(img, deep_stack(buf, sizeof(buf), 'q', " g1 g2")));
	struct script sc = { .img = img, .nsteps = 1 };
	sc.steps[0] = (struct step){ frame_addr(img, 0, 1), 1, outer_calls_replaced }; /* <main>'s frame */
	struct ruby_target t;
	target_open(&t, &sc);
	assert_int_equal(scripted_sample(&t, &sc, s, 1), 0);
	assert_int_equal(s->nthreads + (int)s->torn, 2);
	if (s->threads[0].th == th_addr(0)) {
		const char *g = got(&t, &s->threads[0]);
		if (strcmp(g, before) && strcmp(g, after))
			fail_msg("a stack that never was, read clean (retried %u, salvaged %u): %s", s->retried, s->salvaged,
				 names(&t, &s->threads[0]));
	}
	ruby_target_detach(&t);
	image_free(img);
	free(s);
}

static void c_replaced_by_d(struct image *img)
{
	put_frame(img, 0, MAIN_TOP, "d"); /* c returned and b called d, at the same depth */
}

/*
 * The innermost frame is written over between the walker's two reads of
 * it (c returned, b called d, ec->cfp back where it was): the first read
 * is of one instant, and the sample is the stack then.
 */
static void test_frame_rewritten_between_its_reads_gives_first_read(void **state)
{
	(void)state;
	struct ruby_sample *s = sample_new();
	struct image *img = image_two_threads("3.3.8");
	iseq_of(img, "d");
	struct script sc = { .img = img, .nsteps = 1 };
	sc.steps[0] = (struct step){ frame_addr(img, 0, MAIN_TOP), 2, c_replaced_by_d };
	struct ruby_target t;
	target_open(&t, &sc);
	assert_int_equal(scripted_sample(&t, &sc, s, 1), 0);
	assert_int_equal(s->nthreads, 2);
	assert_int_equal(s->retried, 0); /* kept as read: every frame names */
	assert_int_equal(s->salvaged, 0);
	assert_thread(&t, img, s, 0, 0, MAIN_STACK);
	assert_thread(&t, img, s, 1, 1, WORKER_STACK);
	ruby_target_detach(&t);
	image_free(img);
	free(s);
}

static void d_pc_written(struct image *img)
{
	put64(img, frame_addr(img, 0, MAIN_TOP) + off(img->L->cfp_pc), code_addr(iseq_of(img, "d")) + PC_AT * 8);
}

static void d_iseq_written(struct image *img)
{
	put64(img, frame_addr(img, 0, MAIN_TOP) + off(img->L->cfp_iseq), iseq_addr(iseq_of(img, "d")));
}

/*
 * The frame the walker reads first is half written: c's slot with d's pc
 * and still c's iseq (pc_first) or the other way round; it is whole by the
 * walker's second read of it. A pc outside its iseq's code is no frame:
 * the sample may leave it out (salvaged), read the stack again (then d's
 * whole frame), or count the thread torn; it must not name it.
 */
static void check_half_written(int pc_first)
{
	struct ruby_sample *s = sample_new();
	struct image *img = image_two_threads("3.3.8");
	iseq_of(img, "d");
	struct script sc = { .img = img, .nsteps = 2 };
	sc.steps[0] = (struct step){ frame_addr(img, 0, MAIN_TOP), 1, pc_first ? d_pc_written : d_iseq_written };
	sc.steps[1] = (struct step){ frame_addr(img, 0, MAIN_TOP), 1, pc_first ? d_iseq_written : d_pc_written };
	struct ruby_target t;
	target_open(&t, &sc);
	assert_int_equal(scripted_sample(&t, &sc, s, 1), 0);
	assert_int_equal(s->nthreads + (int)s->torn, 2);
	if (s->threads[0].th == th_addr(0)) {
		const char *g = got(&t, &s->threads[0]);
		char whole[1024], left_out[1024];
		snprintf(whole, sizeof(whole), "%s", want(img, "<main> a b d"));
		snprintf(left_out, sizeof(left_out), "%s", want(img, "<main> a b"));
		if (!(s->retried && !strcmp(g, whole)) && !(s->threads[0].salvaged && !strcmp(g, left_out)))
			fail_msg("the half-written frame named (retried %u, salvaged %d): %s", s->retried,
				 s->threads[0].salvaged, g);
	}
	ruby_target_detach(&t);
	image_free(img);
	free(s);
}

static void test_half_written_frame_pc_first_is_not_named(void **state)
{
	(void)state;
	check_half_written(1);
}

static void test_half_written_frame_iseq_first_is_not_named(void **state)
{
	(void)state;
	check_half_written(0);
}

/*
 * Frames that ran JIT code (their jit_return set), in a Ruby with one (3.1+):
 * the innermost keeps its method with its line unknown, whatever its pc
 * holds (0, or a pc an earlier call left in the slot: another method's);
 * an outer one with its saved pc has its line; an outer one whose pc is not
 * its iseq's keeps its method too, line unknown. The same pcs in frames that
 * never ran JIT code are no frames: left out, never named.
 */
static void test_jit_frames_keep_their_method(void **state)
{
	(void)state;
	const char *versions[] = { "3.1.2", "3.3.8", "3.4.5" };
	struct ruby_sample *s = sample_new();
	for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++) {
		for (int jit = 0; jit <= 1; jit++) {
			for (int stale = 0; stale <= 1; stale++) {
				struct image *img = image_two_threads(versions[v]);
				const struct ruby_layout *L = img->L;
				uint64_t c = frame_addr(img, 0, MAIN_TOP), b = frame_addr(img, 0, MAIN_TOP - 1);
				uint64_t elsewhere = code_addr(iseq_of(img, "serve")) + PC_AT * 8;
				assert_true(L->cfp_jit_return >= 0);
				put64(img, c + off(L->cfp_pc), stale ? elsewhere : 0);
				put64(img, b + off(L->cfp_pc), stale ? elsewhere : code_addr(iseq_of(img, "b")) + PC_AT * 8);
				for (int d = 1; d <= MAIN_TOP && jit; d++)
					put64(img, frame_addr(img, 0, d) + off(L->cfp_jit_return), BASE + 0x10);
				struct script sc = { .img = img };
				struct ruby_target t;
				target_open(&t, &sc);
				assert_int_equal(ruby_sample_take(&t, s, 0), 0);
				assert_int_equal(s->nthreads, 2);
				const struct ruby_thread_sample *ts = &s->threads[0];
				if (jit) {
					assert_string_equal(names(&t, ts), "c b a <main>");
					assert_int_equal(ts->frames[0].line, FRAME_LINE_UNKNOWN);
					assert_int_equal(ts->frames[1].line, stale ? FRAME_LINE_UNKNOWN : line_of(iseq_of(img, "b"), 1));
					assert_int_equal(ts->frames[2].line, line_of(iseq_of(img, "a"), 1));
				} else {
					/* (a stale pc in an outer frame: named only if its read was torn, never as that line) */
					for (int j = 0; j < ts->nframes; j++)
						assert_true(strcmp(strtab_get(&t.strs, ts->frames[j].name), "c") &&
							    ts->frames[j].line != FRAME_LINE_UNKNOWN);
				}
				assert_thread(&t, img, s, 1, 1, WORKER_STACK);
				ruby_target_detach(&t);
				image_free(img);
			}
		}
	}
	free(s);
}

/*
 * 3.1's YJIT: the line of a frame running JIT code, from the block of its
 * iseq's code that holds the thread's ip: a block on one line gives it, one
 * over several lines -ERANGE, code in no block (or a block listed for
 * another iseq, torn) -ENOENT. Rubies whose JIT tables are not known: -ENOTSUP.
 */
#define AT_JIT 0x60000
#define JIT_MAX_VERSIONS_TESTED 64 /* (jit.c's cap on one instruction's versions) */
#define JIT_CODE 0x7f0000000000ULL
static void put_block(struct image *img, uint64_t at, uint64_t iseq, uint32_t idx, uint32_t end_idx, uint64_t code)
{
	const struct ruby_layout *L = img->L;
	put64(img, at + off(L->yjit_block_iseq), iseq);
	put32(img, at + off(L->yjit_block_idx), idx);
	put32(img, at + off(L->yjit_block_end_idx), end_idx);
	put64(img, at + off(L->yjit_block_start), code);
	put64(img, at + off(L->yjit_block_end), code + 0x40);
}

static void test_jit_line_from_the_jits_blocks(void **state)
{
	(void)state;
	const char *versions[] = { "3.1.2", "3.3.8" };
	for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++) {
		struct image *img = image_two_threads(versions[v]);
		const struct ruby_layout *L = img->L;
		int k = iseq_of(img, "c");
		uint64_t is_at = iseq_addr(k), arr = BASE + AT_JIT, lists = arr + 0x100, blocks = arr + 0x400;
		if (v == 0) {
			assert_true(L->body_yjit_blocks >= 0);
			put64(img, is_at + 0x40 + off(L->body_yjit_blocks), arr);
			put32(img, arr + off(L->darray_size), INSNS);
			/* one block version listed at instructions 0, 1, 3 and 5 */
			const uint32_t at[] = { 0, 1, 3, 5 }, end[] = { 3, 6, 8, 8 };
			for (int i = 0; i < 4; i++) {
				uint64_t list = lists + (uint64_t)i * 0x40, b = blocks + (uint64_t)i * 0x100;
				put64(img, arr + off(L->darray_data) + at[i] * 8, list);
				put32(img, list + off(L->darray_size), 1);
				put64(img, list + off(L->darray_data), b);
				/* (the one at 5 names another iseq: a list read torn) */
				put_block(img, b, i == 3 ? iseq_addr(iseq_of(img, "b")) : is_at, at[i], end[i],
					  JIT_CODE + (uint64_t)(i + 1) * 0x1000);
			}
		}
		struct script sc = { .img = img };
		struct ruby_target t;
		target_open(&t, &sc);
		struct iseq_info *is = iseq_get(&t, is_at);
		assert_non_null(is);
		int32_t line = 0;
		if (v == 0) {
			assert_int_equal(ruby_jit_line(&t, is, JIT_CODE + 0x1008, &line), 0); /* instructions 0-2: a line */
			assert_int_equal(line, line_of(k, 0));
			assert_int_equal(ruby_jit_line(&t, is, JIT_CODE + 0x303f, &line), 0); /* 3-7: the other */
			assert_int_equal(line, line_of(k, 1));
			assert_int_equal(ruby_jit_line(&t, is, JIT_CODE + 0x2000, &line), -ERANGE); /* 1-5: both */
			assert_int_equal(ruby_jit_line(&t, is, JIT_CODE + 0x4010, &line), -ENOENT);
			assert_int_equal(ruby_jit_line(&t, is, JIT_CODE + 0x1040, &line), -ENOENT);
			/* The JIT's lists and blocks as noise (torn by the JIT writing them): read again, no crash. */
			for (unsigned seed = 1; seed <= 200; seed++) {
				noise_fill(img->m + AT_JIT, 0x1000, arr, seed);
				is->jit_read_ns = 0; /* (the cache a second old) */
				int r = ruby_jit_line(&t, is, JIT_CODE + 0x1008 + seed, &line);
				assert_true(r == 0 || r == -ERANGE || r == -ENOENT);
				assert_true(is->njit <= INSNS * JIT_MAX_VERSIONS_TESTED);
			}
		} else {
			assert_int_equal(L->body_yjit_blocks, -1);
			assert_int_equal(ruby_jit_line(&t, is, JIT_CODE + 0x1008, &line), -ENOTSUP);
		}
		ruby_target_detach(&t);
		image_free(img);
	}
}

/*
 * A method in Ruby marked c_trace (3.4+: YJIT's Array#each & co, Primitive.attr!
 * :c_trace) is a C method to Ruby's backtraces: named by its method, at its
 * caller's path and line. Before 3.4 there is no such mark: a Ruby frame, whatever
 * its attributes' word holds.
 */
static void test_c_trace_method_is_a_c_method(void **state)
{
	(void)state;
	const char *versions[] = { "3.3.8", "3.4.5" };
	struct ruby_sample *s = sample_new();
	for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++) {
		struct image *img = image_two_threads(versions[v]);
		const struct ruby_layout *L = img->L;
		int has = L->builtin_attr_c_trace > 0;
		assert_int_equal(has, v == 1);
		assert_true(L->body_builtin_attrs >= 0); /* (3.3's attributes: no c_trace among them) */
		uint64_t body = iseq_addr(iseq_of(img, "b")) + 0x40;
		put32(img, body + off(L->body_builtin_attrs), has ? (uint32_t)L->builtin_attr_c_trace | 1 : 0xf);
		struct script sc = { .img = img };
		struct ruby_target t;
		target_open(&t, &sc);
		assert_int_equal(ruby_sample_take(&t, s, 0), 0);
		const struct ruby_thread_sample *ts = &s->threads[0];
		assert_string_equal(names(&t, ts), "c b a <main>");
		const struct ruby_frame *b = &ts->frames[1], *a = &ts->frames[2];
		assert_int_equal(b->kind, has ? FRAME_CFUNC : FRAME_RUBY);
		assert_int_equal(b->line, has ? a->line : line_of(iseq_of(img, "b"), 1));
		if (has)
			assert_int_equal(b->path, a->path);
		else
			assert_int_not_equal(b->path, a->path);
		assert_int_equal(ts->frames[0].kind, FRAME_RUBY);
		assert_thread(&t, img, s, 1, 1, WORKER_STACK);
		ruby_target_detach(&t);
		image_free(img);
	}
	free(s);
}

/*
 * A thread asleep (its status stopped: Thread::Queue#pop, which 3.3+ writes in
 * Ruby, sleeping in a builtin) runs no JIT code: its innermost frame's pc is
 * the one the JIT saved before that call, and gives its line. One left in
 * the slot by another call is still not believed.
 */
static void test_jit_frame_of_a_sleeping_thread_has_its_line(void **state)
{
	(void)state;
	struct ruby_sample *s = sample_new();
	for (int stale = 0; stale <= 1; stale++) {
		struct image *img = image_two_threads("3.3.8");
		const struct ruby_layout *L = img->L;
		put_thread(img, 0, L->thread_stopped_forever, 0, 4242, NULL);
		uint64_t c = frame_addr(img, 0, MAIN_TOP);
		if (stale)
			put64(img, c + off(L->cfp_pc), code_addr(iseq_of(img, "serve")) + PC_AT * 8);
		for (int d = 1; d <= MAIN_TOP; d++)
			put64(img, frame_addr(img, 0, d) + off(L->cfp_jit_return), BASE + 0x10);
		struct script sc = { .img = img };
		struct ruby_target t;
		target_open(&t, &sc);
		assert_int_equal(ruby_sample_take(&t, s, 0), 0);
		const struct ruby_thread_sample *ts = &s->threads[0];
		assert_string_equal(names(&t, ts), "c b a <main>");
		assert_int_equal(ts->frames[0].line, stale ? FRAME_LINE_UNKNOWN : line_of(iseq_of(img, "c"), 1));
		ruby_target_detach(&t);
		image_free(img);
	}
	free(s);
}

/*
 * An M:N thread (3.3+, RUBY_MN_THREADS=1): no native thread of its own; on
 * none at the moment (th->nt NULL), it has no tid and no kernel state, and
 * says it is shared; on one, that one's tid. The main thread never is one.
 */
static void test_mn_thread_is_shared(void **state)
{
	(void)state;
	const char *versions[] = { "3.3.8", "3.4.5" };
	struct ruby_sample *s = sample_new();
	for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++) {
		for (int on_one = 0; on_one <= 1; on_one++) {
			struct image *img = image_two_threads(versions[v]);
			const struct ruby_layout *L = img->L;
			img->m[th_addr(1) - BASE + (uint64_t)L->th_dedicated_byte] &= (unsigned char)~(1u << L->th_dedicated_shift);
			if (!on_one)
				put64(img, th_addr(1) + off(L->th_nt), 0);
			struct script sc = { .img = img };
			struct ruby_target t;
			target_open(&t, &sc);
			assert_int_equal(ruby_sample_take(&t, s, WALK_KSTATE), 0);
			assert_int_equal(s->nthreads, 2);
			assert_false(s->threads[0].shared);
			assert_true(s->threads[1].shared);
			assert_int_equal(s->threads[1].tid, on_one ? 4243 : 0);
			if (!on_one)
				assert_int_equal(s->threads[1].kstate, '-');
			assert_thread(&t, img, s, 1, 1, WORKER_STACK);
			ruby_target_detach(&t);
			image_free(img);
		}
	}
	free(s);
}

/*
 * A second Ractor (3.0+) with a thread of its own, holding that Ractor's GVL:
 * read after the main Ractor's threads, running, labelled with its Ractor.
 * Its link in the VM's list of Ractors looping back on itself (torn, or
 * garbage) refuses the sample rather than go round for ever.
 */
static void test_other_ractor_threads_are_read(void **state)
{
	(void)state;
	const char *versions[] = { "3.1.2", "3.3.8", "3.4.5" };
	struct ruby_sample *s = sample_new();
	for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++) {
		for (int loops = 0; loops <= 1; loops++) {
			struct image *img = image_two_threads(versions[v]);
			const struct ruby_layout *L = img->L;
			uint64_t r1 = BASE + AT_RACTOR, r2 = BASE + AT_RACTOR2, rhead = BASE + AT_VM + off(L->vm_ractor_set);
			uint64_t n1 = r1 + off(L->ractor_vmlr_node), n2 = r2 + off(L->ractor_vmlr_node);
			put_thread(img, 2, L->thread_runnable, 0, 4244, NULL);
			set_stack(img, 2, "<main> crunch");
			put64(img, rhead, n1), put64(img, n1, n2), put64(img, n2, loops ? n2 : rhead);
			put32(img, BASE + AT_VM + off(L->vm_ractor_cnt), 2);
			uint64_t thead = r2 + off(L->ractor_threads_set), node = th_addr(2) + off(L->th_lt_node);
			put64(img, thead, node), put64(img, thead + 8, node), put64(img, node, thead), put64(img, node + 8, thead);
			put64(img, r2 + off(L->ractor_gvl_owner), th_addr(2));
			put32(img, r2 + off(L->ractor_id), 2);
			put64(img, r2 + off(L->ractor_name), (uint64_t)L->qnil);
			struct script sc = { .img = img };
			struct ruby_target t;
			target_open(&t, &sc);
			int err = ruby_sample_take(&t, s, 0);
			if (loops) {
				assert_int_equal(err, ERR_TORN);
			} else {
				assert_int_equal(err, 0);
				assert_int_equal(s->nthreads, 3);
				assert_int_equal(s->threads[0].ractor, 0);
				assert_int_equal(s->threads[1].ractor, 0);
				assert_int_equal(s->threads[2].ractor, 2);
				assert_int_equal(s->threads[2].ractor_name, 0);
				assert_int_equal(s->threads[2].state, THREAD_RUNNING);
				assert_int_equal(s->threads[0].state, THREAD_RUNNING); /* (each Ractor's own GVL) */
				assert_thread(&t, img, s, 2, 2, "<main> crunch");
			}
			ruby_target_detach(&t);
			image_free(img);
		}
	}
	free(s);
}

/* Three threads: the main one, the worker and a third blocked in I/O. */
static struct image *image_three_threads(void)
{
	struct image *img = image_two_threads("3.3.8");
	put_thread(img, 2, img->L->thread_stopped, 1, 4244, NULL);
	set_stack(img, 2, "poll read");
	link_threads(img, (const int[]){ 0, 1, 2 }, 3);
	return img;
}

static void worker_exits(struct image *img)
{
	set_status(img, 1, img->L->thread_killed);
	link_threads(img, (const int[]){ 0, 2 }, 2); /* its own next still names the third */
}

static void worker_exits_zeroed(struct image *img)
{
	worker_exits(img);
	memset(img->m + (th_addr(1) - BASE), 0, THREAD_SPAN);
	memset(img->m + (ec_addr(1) - BASE), 0, 0x100);
	memset(img->m + (stack_addr(1) - BASE), 0, STACK_BYTES);
}

static void worker_exits_unmapped(struct image *img)
{
	worker_exits(img);
	img->hole_lo = th_addr(1);
	img->hole_hi = th_addr(1) + THREAD_SPAN;
}

/* The worker exits after the walker read the list, before it reads the worker: killed, left out; the third read. */
static void test_thread_killed_between_reads_is_left_out(void **state)
{
	(void)state;
	struct ruby_sample *s = sample_new();
	struct image *img = image_three_threads();
	struct script sc = { .img = img, .nsteps = 1 };
	sc.steps[0] = (struct step){ th_addr(1), 1, worker_exits };
	struct ruby_target t;
	target_open(&t, &sc);
	assert_int_equal(scripted_sample(&t, &sc, s, 1), 0);
	assert_int_equal(s->nthreads, 2);
	assert_int_equal(s->torn, 0);
	assert_thread(&t, img, s, 0, 0, MAIN_STACK);
	assert_thread(&t, img, s, 1, 2, "poll read");
	assert_int_equal(s->threads[1].state, THREAD_BLOCKED);
	assert_int_equal(s->threads[1].tid, 4244);
	ruby_target_detach(&t);
	image_free(img);
	free(s);
}

/*
 * The same, its rb_thread_t, ec and stack then zeroed (freed and scrubbed)
 * before the walker reads it, through the main thread's stale link: no
 * thread is made of the zeros. The sample is refused (ERR_TORN: the list
 * broke under the read), or holds the main thread and the third (or counts
 * the third torn, out of reach).
 */
static void test_thread_zeroed_between_reads_is_not_reported(void **state)
{
	(void)state;
	struct ruby_sample *s = sample_new();
	struct image *img = image_three_threads();
	struct script sc = { .img = img, .nsteps = 1 };
	sc.steps[0] = (struct step){ th_addr(1), 1, worker_exits_zeroed };
	struct ruby_target t;
	target_open(&t, &sc);
	int err = scripted_sample(&t, &sc, s, 1);
	if (err != ERR_TORN) {
		assert_int_equal(err, 0);
		for (int j = 0; j < s->nthreads; j++)
			if (s->threads[j].th == th_addr(1))
				fail_msg("the exited thread reported, from zeros: state %s, tid %d, %d frames; %d threads, %u torn",
					 ruby_thread_state_name(s->threads[j].state), s->threads[j].tid, s->threads[j].nframes,
					 s->nthreads, s->torn);
		assert_thread(&t, img, s, 0, 0, MAIN_STACK);
		if (s->nthreads == 2)
			assert_thread(&t, img, s, 1, 2, "poll read");
		else
			assert_int_equal(s->torn, 1);
	}
	ruby_target_detach(&t);
	image_free(img);
	free(s);
}

/* The same, its memory unmapped: the list cannot be followed past it, and the sample is refused whole. */
static void test_thread_unmapped_between_reads_refuses_sample(void **state)
{
	(void)state;
	struct ruby_sample *s = sample_new();
	struct image *img = image_three_threads();
	struct script sc = { .img = img, .nsteps = 1 };
	sc.steps[0] = (struct step){ th_addr(1), 1, worker_exits_unmapped };
	struct ruby_target t;
	target_open(&t, &sc);
	assert_int_equal(scripted_sample(&t, &sc, s, 1), ERR_TORN);
	/* and the next sample, the list without it, reads the other two */
	sc.armed = 0;
	assert_int_equal(ruby_sample_take(&t, s, 0), 0);
	assert_int_equal(s->nthreads, 2);
	assert_thread(&t, img, s, 0, 0, MAIN_STACK);
	assert_thread(&t, img, s, 1, 2, "poll read");
	ruby_target_detach(&t);
	image_free(img);
	free(s);
}

/*
 * The worker exits after the walker read its rb_thread_t, before it reads
 * its ec and stack (freed, zeroed): counted torn and left out, the third
 * thread read through the link read before.
 */
static void test_thread_exiting_under_its_stack_read_is_counted_torn(void **state)
{
	(void)state;
	struct ruby_sample *s = sample_new();
	struct image *img = image_three_threads();
	struct script sc = { .img = img, .nsteps = 1 };
	sc.steps[0] = (struct step){ ec_addr(1), 1, worker_exits_zeroed };
	struct ruby_target t;
	target_open(&t, &sc);
	assert_int_equal(scripted_sample(&t, &sc, s, 1), 0);
	assert_int_equal(s->nthreads, 2);
	assert_int_equal(s->torn, 1);
	assert_thread(&t, img, s, 0, 0, MAIN_STACK);
	assert_thread(&t, img, s, 1, 2, "poll read");
	ruby_target_detach(&t);
	image_free(img);
	free(s);
}

/*
 * Both threads parked (read the quiet way: a few small parts in one batch);
 * the main thread's stack moves deeper between the batch's read of its ec
 * and of its frames: the frames no longer read as they were, and the
 * thread is read again in full, its new stack whole; the worker stays quiet.
 */
static void test_quiet_thread_that_moved_is_read_in_full(void **state)
{
	(void)state;
	struct ruby_sample *s = sample_new();
	struct image *img = image_two_threads("3.3.8");
	struct script sc = { .img = img, .nsteps = 1 };
	sc.steps[0] = (struct step){ frame_addr(img, 0, MAIN_TOP), 1, returned_and_went_deeper };
	struct ruby_target t;
	target_open(&t, &sc);
	assert_int_equal(scripted_sample(&t, &sc, s, 2), 0);
	assert_int_equal(s->nthreads, 2);
	assert_int_equal(s->torn, 0);
	assert_int_equal(s->unchanged, 1);
	assert_thread(&t, img, s, 0, 0, "<main> a x y z");
	assert_thread(&t, img, s, 1, 1, WORKER_STACK);
	assert_false(s->threads[0].unchanged);
	assert_true(s->threads[1].unchanged);
	ruby_target_detach(&t);
	image_free(img);
	free(s);
}

/*
 * Method label's iseq gets a local table of two: names a and b (Symbols of
 * a table of global symbols at syms, made here), so --label reads them.
 */
static void put_locals(struct image *img, const char *label, uint64_t syms)
{
	const struct ruby_layout *L = img->L;
	uint64_t is = iseq_addr(iseq_of(img, label)), body = is + 0x40, table = is + 0x380;
	uint64_t ids = syms + 0x100, idsbuf = syms + 0x140, chunk = syms + 0x180, chunkbuf = syms + 0x200;
	put32(img, syms + off(L->symbols_last_id), 1000);
	put64(img, syms + off(L->symbols_ids), ids);
	put64(img, ids, (uint64_t)L->t_array);
	put64(img, ids + off(L->rarray_heap_len), 1);
	put64(img, ids + off(L->rarray_heap_ptr), idsbuf);
	put64(img, idsbuf, chunk);
	put64(img, chunk, (uint64_t)L->t_array);
	put64(img, chunk + off(L->rarray_heap_len), (uint64_t)L->id_entry_unit * (uint64_t)L->id_entry_size);
	put64(img, chunk + off(L->rarray_heap_ptr), chunkbuf);
	const char *names[2] = { "a", "b" };
	for (uint64_t j = 0; j < 2; j++) {
		uint64_t serial = 300 + j, str = syms + 0x800 + j * 0x80;
		put64(img, chunkbuf + serial * (uint64_t)L->id_entry_size * 8, str);
		put_string(img, str, names[j]);
		put64(img, table + j * 8, serial << L->id_scope_shift);
	}
	put64(img, body + off(L->body_local_table), table);
	put32(img, body + off(L->body_local_table_size), 2);
}

/* The target of sc's image, its Symbols at syms, with --label spec (into u, which must outlive it). */
static void target_with_label(struct ruby_target *t, struct script *sc, uint64_t syms, const char *spec,
			      struct user_label *u)
{
	char msg[128];
	target_open(t, sc);
	t->symbols = syms;
	map_init(&t->labels);
	assert_int_equal(ruby_user_label_parse(spec, u, msg, sizeof(msg)), 0);
	t->user_labels = u;
	t->nuser_labels = 1;
}

/* The text of --label's value of thread sample ts ("" for none). */
static const char *label_of(struct ruby_target *t, const struct ruby_thread_sample *ts)
{
	return ts->nulabels ? strtab_get(&t->strs, ts->ulabels[0].text) : "";
}

/*
 * --label b=b over a parked thread read the quiet way: the thread returns
 * from handle and calls it again at the same place with another b (its
 * frames the same to the byte): the next sample reads it in full and has
 * the new value, not the last full read's.
 */
static void test_quiet_thread_keeps_labels_only_while_their_words_stand(void **state)
{
	(void)state;
	struct ruby_sample *s = sample_new();
	struct image *img = image_two_threads("3.3.8");
	uint64_t syms = BASE + 0xa000;
	put_locals(img, "handle", syms);
	uint64_t b = stack_addr(1) + (uint64_t)(FRAME_WORDS * 2 + 1) * 8; /* handle (depth 2)'s local 1 */
	put64(img, b, 7 << 1 | 1);
	struct script sc = { .img = img };
	struct ruby_target t;
	struct user_label u;
	target_with_label(&t, &sc, syms, "b", &u);
	for (int round = 0; round < 3; round++) {
		assert_int_equal(ruby_sample_take(&t, s, WALK_LABELS), 0);
		assert_int_equal(s->threads[1].unchanged, round >= 2);
		assert_string_equal(label_of(&t, &s->threads[1]), "b=7");
	}
	put64(img, b, 8 << 1 | 1);
	assert_int_equal(ruby_sample_take(&t, s, WALK_LABELS), 0);
	assert_false(s->threads[1].unchanged);
	assert_thread(&t, img, s, 1, 1, WORKER_STACK);
	assert_string_equal(label_of(&t, &s->threads[1]), "b=8");
	assert_int_equal(ruby_sample_take(&t, s, WALK_LABELS), 0);
	assert_true(s->threads[1].unchanged);
	assert_string_equal(label_of(&t, &s->threads[1]), "b=8");
	ruby_target_detach(&t);
	image_free(img);
	free(s);
}

/* c's local b (the main thread's innermost frame, c at depth MAIN_TOP): another call's word there. */
static uint64_t c_local_b(void) { return stack_addr(0) + (uint64_t)(FRAME_WORDS * MAIN_TOP + 1) * 8; }
static void called_again_at_c(struct image *img) { put64(img, c_local_b(), 99 << 1 | 1); }
static void returned_from_c(struct image *img) { set_cfp(img, 0, MAIN_TOP - 1); }

/*
 * --label b=b over the main thread, its innermost frame c: c returns and
 * another call at its depth writes over c's locals after the walker read c's
 * frame and env, and before it read the value stack; that call returns too
 * before the last read of ec->cfp. The frames read are c's (its env intact),
 * but its locals are not its own: the sample has no b, not the other call's.
 */
static void test_returned_frame_gives_no_label_of_another_call(void **state)
{
	(void)state;
	struct ruby_sample *s = sample_new();
	struct image *img = image_two_threads("3.3.8");
	uint64_t syms = BASE + 0xa000;
	put_locals(img, "c", syms);
	put64(img, c_local_b(), 7 << 1 | 1);
	struct script sc = { .img = img, .nsteps = 2 };
	sc.steps[0] = (struct step){ c_local_b(), 1, called_again_at_c };
	sc.steps[1] = (struct step){ ec_addr(0) + off(img->L->ec_cfp), 2, returned_from_c };
	struct ruby_target t;
	struct user_label u;
	target_with_label(&t, &sc, syms, "b", &u);
	assert_int_equal(ruby_sample_take(&t, s, WALK_LABELS), 0);
	assert_string_equal(label_of(&t, &s->threads[0]), "b=7");
	sc.armed = 1;
	assert_int_equal(ruby_sample_take(&t, s, WALK_LABELS), 0);
	assert_int_equal(sc.done, 2);
	assert_thread(&t, img, s, 0, 0, MAIN_STACK);
	assert_string_equal(label_of(&t, &s->threads[0]), "");
	ruby_target_detach(&t);
	image_free(img);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_baseline_reads_the_stacks_built),
		cmocka_unit_test(test_stack_returned_under_read_gives_first_read),
		cmocka_unit_test(test_stack_moved_deeper_under_read_gives_one_stack),
		cmocka_unit_test(test_deep_stack_replaced_under_read_is_not_mixed),
		cmocka_unit_test(test_frame_rewritten_between_its_reads_gives_first_read),
		cmocka_unit_test(test_half_written_frame_pc_first_is_not_named),
		cmocka_unit_test(test_half_written_frame_iseq_first_is_not_named),
		cmocka_unit_test(test_jit_frames_keep_their_method),
		cmocka_unit_test(test_c_trace_method_is_a_c_method),
		cmocka_unit_test(test_jit_line_from_the_jits_blocks),
		cmocka_unit_test(test_jit_frame_of_a_sleeping_thread_has_its_line),
		cmocka_unit_test(test_mn_thread_is_shared),
		cmocka_unit_test(test_other_ractor_threads_are_read),
		cmocka_unit_test(test_thread_killed_between_reads_is_left_out),
		cmocka_unit_test(test_thread_zeroed_between_reads_is_not_reported),
		cmocka_unit_test(test_thread_unmapped_between_reads_refuses_sample),
		cmocka_unit_test(test_thread_exiting_under_its_stack_read_is_counted_torn),
		cmocka_unit_test(test_quiet_thread_that_moved_is_read_in_full),
		cmocka_unit_test(test_quiet_thread_keeps_labels_only_while_their_words_stand),
		cmocka_unit_test(test_returned_frame_gives_no_label_of_another_call),
	};
	return cmocka_run_group_tests_name("walk_protocol", tests, NULL, NULL);
}
