/* capture.c: load bpf/capture.bpf.c, give each Ruby thread a task clock running it, and name what it hands back. */
#include "capture.h"

#include <errno.h>
#include <stddef.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "../lib/clock.h"
#include "../lib/err.h"
#include "../proc/task.h"
#include "bpf/capture_rec.h"
#include "frames.h"
#include "label.h"
#include "native.h"
#include "vm.h"

/* The program, compiled by clang and placed in the binary by capture_obj.S. */
extern const unsigned char rbscope_capture_obj[], rbscope_capture_obj_end[];

#define EPOCH 32 /* samples of a thread at one rate */
/* --native: the user stack the kernel copies at a sample, and each thread's buffer for those samples */
#define NATIVE_STACK (16u << 10)
#define NATIVE_PAGES 32 /* (a power of 2) 128 KB: 7 samples, a few ticks' worth at 1000 Hz */
/* x86-64's perf registers (asm/perf_regs.h) AX BX CX DX SI DI BP SP IP and R8-R15, given in that order */
#define NATIVE_REGS (0x1ffULL | (0xffULL << 16))
#define NATIVE_NEAR 200000 /* ns between a sample's time and its record's, at most */

_Static_assert(EP_WORDS == CAPTURE_EP_WORDS, "capture_rec.h: the env words walk.c names frames from");
_Static_assert(offsetof(struct capture_mark, total) == offsetof(struct capture_rec, total),
	       "capture_rec.h: a mark and a record are told apart by their total");

/*
 * A native thread with a task clock, and the Ruby thread it runs (th; 0 while
 * it runs none, kept by the Ruby's thread cache for the next one).
 */
struct followed {
	uint64_t th;
	uint64_t unknown_ok; /* the last thread the program did not know that capture.c found ran here */
	uint32_t slot; /* the clock's (capture_rec.h) */
	int32_t tid;
	uint32_t name;
	int main;
	int fd; /* the thread's task clock (the link closes it) */
	int stat_fd; /* its /proc stat file, opened with its clock (ended); -1 without */
	struct bpf_link *link;
	uint64_t gen; /* the last follow that saw the thread */
	uint64_t period; /* its clock's, in ns of its CPU time */
	int taken;       /* samples since it was set */
	int64_t drift;   /* ns its ticks ran behind a steady clock at 1/hz, up to the last period set */
	void *ring;      /* --native: the event's buffer (a control page, then NATIVE_PAGES of samples) */
	size_t ring_len;
	struct capture_mark mark; /* --native: the latest, while it was on its CPU without the GVL */
};

struct ruby_capture {
	struct ruby_target *t;
	struct ruby_native_source source; /* (ruby_capture_source) */
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct ring_buffer *rb;
	int stats_fd, cfg_fd, env_fd; /* env_fd: the methods whose env parameter a sample takes (env_iseqs) */
	int slots_fd, known_fd;
	unsigned char slot_used[CAPTURE_SLOTS];
	struct capture_config conf;
	uint64_t period_ns, rng, gen;
	int native, labels;
	size_t page;
	unsigned char *rec; /* --native: a sample out of a buffer, in one piece (at most 64 KB) */
	struct followed *f;
	int nf, capf;
	struct ruby_frame *frames;
	struct ruby_frame_at at[CAPTURE_MAX_FRAMES + 2]; /* labels: where each of a sample's frames lives */
	unsigned char cfps[CAPTURE_MAX_FRAMES * CAPTURE_CFP_MAX]; /* a sample's control frames, cfp_size apart */
	uint64_t eps[CAPTURE_MAX_FRAMES][EP_WORDS];
	ruby_capture_fn fn; /* during a drain */
	void *arg;
	int err;
	struct ruby_capture_stats st;
};

/* libbpf's own messages (the verifier's log among them): with RBSCOPE_BPF_LOG=1 in the environment only. */
static int verbose_print;
static int bpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return verbose_print && level != LIBBPF_DEBUG ? vfprintf(stderr, fmt, ap) : 0;
}

/*
 * A thread's next period, for its next EPOCH samples: its clock's rate
 * (OVER times the ticks') times 1 - x or 1 + x, x drawn at random between
 * 1/8 and 1/4 (so the period moves by at least a ninth): faster when its
 * samples have run behind a steady clock at that rate (f->drift), slower
 * when ahead. So the samples of a run sweep the phase of any periodic work
 * at least EPOCH/9 times over, each run starts at a phase of its own, and
 * the count stays within EPOCH/2 samples of the rate times the time however
 * long the recording; and even at its slowest (1.01 times the ticks') a
 * clock takes a stack for nearly every tick that finds its thread holding
 * the GVL (sampler.c takes the tick's sample from those). The rate is drawn
 * evenly, not the period (the mean of 1/period is more than 1/(its mean)).
 * Steps are kept off 0, which would clump a run's samples at one phase.
 * (Against a 10 ms cycle at 100 Hz: docs/benchmarks.md.)
 */
#define OVER 1.35
static uint64_t jittered(struct ruby_capture *c, struct followed *f)
{
	c->rng ^= c->rng << 13, c->rng ^= c->rng >> 7, c->rng ^= c->rng << 17;
	double x = 0.125 + (double)(c->rng >> 11) / (double)(UINT64_C(1) << 53) * 0.125;
	int slower = f->drift < 0 || (f->drift == 0 && (c->rng & 1));
	return (uint64_t)((double)c->period_ns / (slower ? 1 - x : 1 + x));
}

static struct followed *find(const struct ruby_capture *c, uint64_t th)
{
	for (int i = 0; th && i < c->nf; i++)
		if (c->f[i].th == th)
			return &c->f[i];
	return NULL;
}

static struct followed *find_tid(const struct ruby_capture *c, int32_t tid)
{
	for (int i = 0; i < c->nf; i++)
		if (c->f[i].tid == tid)
			return &c->f[i];
	return NULL;
}

static struct followed *find_slot(const struct ruby_capture *c, uint32_t slot)
{
	for (int i = 0; i < c->nf; i++)
		if (c->f[i].slot == slot)
			return &c->f[i];
	return NULL;
}

/* f's native thread runs Ruby thread th now (0: none): the program told, and what was its thread's let go. */
static void set_thread(struct ruby_capture *c, struct followed *f, uint64_t th)
{
	if (f->th == th)
		return;
	uint32_t one = 1;
	if (f->th)
		bpf_map_delete_elem(c->known_fd, &f->th);
	if (th)
		bpf_map_update_elem(c->known_fd, &th, &one, BPF_ANY);
	bpf_map_update_elem(c->slots_fd, &f->slot, &th, BPF_ANY);
	f->th = th;
	f->name = 0;
	f->main = 0;
	f->mark.t_ns = 0;
}

/*
 * Each clock runs with a period drawn at random around its rate's, drawn
 * again every EPOCH samples: a period that happens to
 * fall in step with periodic work does so for a few samples only. Setting
 * a period starts the clock afresh, and the time it had run since its last
 * sample is lost: it is set only at a sample handed on right after it was
 * taken (within an eighth of a period), so that loss stays under 0.4%.
 */
static void rejitter(struct ruby_capture *c, struct followed *f, uint64_t t_ns)
{
	uint64_t now = clock_now_ns(), ran = now > t_ns ? now - t_ns : 0;
	if (++f->taken < EPOCH || ran > f->period / 8)
		return;
	/* (the time since the sample is lost: the clock starts afresh) */
	f->drift += (int64_t)f->taken * ((int64_t)f->period - (int64_t)c->period_ns) + (int64_t)ran;
	f->taken = 0;
	f->period = jittered(c, f);
	ioctl(f->fd, PERF_EVENT_IOC_PERIOD, &f->period);
}

/* n bytes at off in a buffer's data (size bytes, a power of 2, wrapping round) into out. */
static void ring_copy(const unsigned char *data, uint64_t size, uint64_t off, void *out, size_t n)
{
	uint64_t at = off & (size - 1), first = size - at < n ? size - at : n;
	memcpy(out, data + at, first);
	memcpy((unsigned char *)out + first, data, n - first);
}

/* A sample's time (its header at off), or 0 when it is not a sample of the layout asked for. */
static uint64_t sample_time(const unsigned char *data, uint64_t size, uint64_t off, const struct perf_event_header *h)
{
	uint64_t w[3]; /* pid and tid, time, the registers' ABI */
	if (h->type != PERF_RECORD_SAMPLE || h->size < sizeof(*h) + sizeof(w) + 17 * 8 + 16)
		return 0;
	ring_copy(data, size, off + sizeof(*h), w, sizeof(w));
	return w[2] ? w[1] : 0;
}

/* The sample at off (sample_time() said it is one) into c->rec: its registers (DWARF order) and stack. 1 if it has a stack. */
static int sample_parse(struct ruby_capture *c, const unsigned char *data, uint64_t size, uint64_t off, uint16_t n,
			uint64_t *regs, const unsigned char **stack, size_t *len)
{
	ring_copy(data, size, off, c->rec, n);
	const unsigned char *p = c->rec + sizeof(struct perf_event_header) + 24, *end = c->rec + n;
	uint64_t v[17], ssize, taken = 0;
	memcpy(v, p, sizeof(v));
	p += sizeof(v);
	memcpy(&ssize, p, 8);
	p += 8;
	if (ssize && (uint64_t)(end - p) >= ssize + 8)
		memcpy(&taken, p + ssize, 8);
	if (!taken)
		return 0;
	/* AX BX CX DX SI DI BP SP IP R8-R15 -> rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip */
	static const int from[17] = { 0, 3, 2, 1, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15, 16, 8 };
	for (int i = 0; i < 17; i++)
		regs[i] = v[from[i]];
	*stack = p;
	*len = (size_t)(taken < ssize ? taken : ssize);
	return 1;
}

/*
 * Go through f's buffer of kernel samples up to the first later than until
 * (left for later), and pick the latest at or after since: into c->rec, its
 * registers and stack valid until the next call. 1 if there is one. (With
 * regs NULL, only drop those up to until.)
 */
static int native_pick(struct ruby_capture *c, struct followed *f, uint64_t since, uint64_t until, uint64_t *regs,
		       const unsigned char **stack, size_t *len)
{
	struct perf_event_mmap_page *m = f->ring;
	const unsigned char *data = (const unsigned char *)f->ring + c->page;
	uint64_t size = (uint64_t)NATIVE_PAGES * c->page;
	uint64_t head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE), tail = m->data_tail, pick = UINT64_MAX;
	uint16_t pick_size = 0;
	while (tail + sizeof(struct perf_event_header) <= head) {
		struct perf_event_header h;
		ring_copy(data, size, tail, &h, sizeof(h));
		if (h.size < sizeof(h) || tail + h.size > head)
			break;
		uint64_t time = sample_time(data, size, tail, &h);
		if (time > until)
			break;
		if (time && time >= since)
			pick = tail, pick_size = h.size;
		tail += h.size;
	}
	int found = pick != UINT64_MAX && regs && sample_parse(c, data, size, pick, pick_size, regs, stack, len);
	__atomic_store_n(&m->data_tail, tail, __ATOMIC_RELEASE);
	return found;
}

int ruby_capture_native_of(struct ruby_capture *c, uint64_t th, const struct ruby_call *now, uint64_t *regs,
			   const unsigned char **stack, size_t *len)
{
	struct followed *f = c && c->native ? find(c, th) : NULL;
	if (!f || !f->ring || !f->mark.t_ns)
		return 0;
	const struct capture_mark *m = &f->mark;
	const struct ruby_call then = { m->cfp, m->self, m->ep, m->me };
	int same = ruby_call_same(&then, now);
	uint64_t t = m->t_ns;
	f->mark.t_ns = 0; /* (its sample is used once) */
	/* the sample taken with it, or (another call) none: older ones are dropped either way */
	return native_pick(c, f, t - NATIVE_NEAR, t + NATIVE_NEAR, regs, stack, len) && same ? 1 : -1;
}

static int on_rec(void *ctx, void *data, size_t size)
{
	struct ruby_capture *c = ctx;
	const struct capture_rec *r = data;
	/* (a mark is shorter than a record's header: told apart by its total first, at the same place in both) */
	if (c->err || size < offsetof(struct capture_rec, n) + 2 * sizeof(uint32_t))
		return 0;
	if (r->total == CAPTURE_MARK) { /* --native: on its CPU without the GVL (ruby_capture_native_of) */
		struct followed *f = find(c, r->th);
		if (f && size >= sizeof(f->mark))
			memcpy(&f->mark, data, sizeof(f->mark));
		return 0;
	}
	if (size < offsetof(struct capture_rec, frames))
		return 0;
	struct followed *f = find_slot(c, r->slot);
	if (!f)
		return 0; /* a native thread no longer followed */
	/* A Ruby thread started since the last follow, holding the GVL as this clock went off: taken only if it ran
	   on this clock's native thread (a thread of Ruby's cache, running another Ruby thread now). */
	if (r->unknown && r->th != f->unknown_ok) {
		if (vm_thread_tid_at(c->t, r->th) != f->tid) {
			c->st.elsewhere++;
			return 0;
		}
		f->unknown_ok = r->th;
	}
	int ours = r->th == f->th;
	if (f->fd >= 0)
		rejitter(c, f, r->t_ns);
	if (r->gcc > c->t->gc_count_seen) /* (frames.c checks a method entry's name again once it changes) */
		c->t->gc_count_seen = r->gcc;
	int dropped = 0, k = ruby_gc_frame(c->t, r->gcw, &c->frames[0]);
	size_t csz = (size_t)c->t->L->cfp_size;
	int n = (int)(r->n < CAPTURE_MAX_FRAMES ? r->n : CAPTURE_MAX_FRAMES);
	if (size < offsetof(struct capture_rec, frames) + (size_t)n * sizeof(r->frames[0]))
		return 0;
	for (int i = 0; i < n; i++) {
		memcpy(c->cfps + (size_t)i * csz, r->frames[i].cfp, csz);
		memcpy(c->eps[i], r->frames[i].eps, sizeof(c->eps[i]));
	}
	if (k)
		c->at[0] = (struct ruby_frame_at){ 0 }; /* (the GC's frame) */
	/* (JIT code runs for the control frame r13 holds: ip is the innermost frame's code only when that is it) */
	const struct ruby_jit_at jit = { r->ip && r->r13 == r->cfp ? r->ip : 0, 0 };
	k += ruby_name_frames(c->t, c->cfps, c->eps, n, (int)(r->total - (uint32_t)n), 1, &jit, c->frames + k,
			      c->labels ? c->at + k : NULL, &dropped);
	struct ruby_thread_sample ts = {
		.th = r->th, .tid = f->tid, .name = ours ? f->name : 0, .state = THREAD_RUNNING, .kstate = 'R',
		.syscall = WALK_SYSCALL_UNKNOWN, .main = ours ? f->main : r->th == c->t->main_thread, .salvaged = dropped > 0,
		.nframes = k, .frames = c->frames,
	};
	if (c->labels) { /* (the GC's count as the frames were taken: a Rack env's label known unchanged while it is) */
		struct label_ctx cx = { .gc = r->gcc, .gc_known = r->gcc != 0, .by = 2, .word_at = r->env_at, .word = r->env,
					.local_at = r->label_at, .local = r->label };
		ts.label = ruby_request_label(c->t, c->frames, c->at, k, &cx);
		ts.nulabels = c->t->nuser_labels ? ruby_user_labels(c->t, ts.th, c->frames, c->at, k, &cx, ts.ulabels) : 0;
	}
	if (c->native && f->ring) {
		uint64_t regs[17];
		const unsigned char *stack;
		size_t len;
		/* the kernel's sample that goes with this record: their times are a few us apart (the kernel's is
		   taken before the program runs), a thread's samples half a period at least */
		if (native_pick(c, f, r->t_ns > NATIVE_NEAR ? r->t_ns - NATIVE_NEAR : 0, r->t_ns + NATIVE_NEAR, regs, &stack,
				&len) &&
		    ruby_native_sampled(c->t, &ts, CAPTURE_MAX_FRAMES + 2 + NATIVE_MAX, regs, stack, len))
			c->st.native++;
		else
			c->st.native_missed++;
	}
	c->err = c->fn(c->arg, &ts, r->t_ns);
	return 0;
}

/*
 * t->env_iseq_seen: the program takes the env parameter (local 0) or
 * --label's local (1) of iseq's frames, below bytes under their ep: one half
 * of the map's value each (capture_rec.h).
 */
static void env_iseq_seen(void *ctx, uint64_t iseq, uint64_t below, int local)
{
	struct ruby_capture *c = ctx;
	uint32_t zero = 0;
	uint64_t v = 0;
	if (below > UINT32_MAX)
		return;
	bpf_map_lookup_elem(c->env_fd, &iseq, &v); /* (none yet: 0) */
	v = local ? (v & UINT32_MAX) | below << 32 : (v & ~(uint64_t)UINT32_MAX) | below;
	if (bpf_map_update_elem(c->env_fd, &iseq, &v, BPF_ANY)) /* (full: those frames' words are read later) */
		return;
	if (!c->conf.envs) { /* (until then the program looks no frame up) */
		c->conf.envs = 1;
		bpf_map_update_elem(c->cfg_fd, &zero, &c->conf, BPF_ANY);
	}
}

int ruby_capture_open(struct ruby_target *t, int hz, int native, int labels, struct ruby_capture **out, char *why,
		      size_t whylen)
{
	uint64_t owner, gc;
	*out = NULL;
	if (t->core || hz <= 0) {
		snprintf(why, whylen, "not a live process");
		return ERR_UNSUPPORTED;
	}
	int err = ruby_capture_addrs(t, &owner, &gc);
	if (err) {
		snprintf(why, whylen, "no GVL owner known for this Ruby");
		return err;
	}
	const struct ruby_layout *L = t->L;
	if (L->cfp_size <= 0 || L->cfp_size > CAPTURE_CFP_MAX || L->ec_cfp > 16 || L->ec_vm_stack > 16 ||
	    L->ec_vm_stack_size > 16) {
		snprintf(why, whylen, "this Ruby's frames are not laid out as the BPF program reads them");
		return ERR_UNSUPPORTED;
	}
	struct ruby_capture *c = calloc(1, sizeof(*c));
	if (!c || !(c->frames = malloc((CAPTURE_MAX_FRAMES + 2 + NATIVE_MAX) * sizeof(*c->frames))) ||
	    (native && !(c->rec = malloc(1u << 16)))) {
		if (c)
			free(c->frames);
		free(c);
		return -ENOMEM;
	}
	c->t = t;
	c->native = native;
	c->labels = labels;
	c->page = (size_t)sysconf(_SC_PAGESIZE);
	c->stats_fd = -1;
	c->period_ns = (uint64_t)(1e9 / ((double)hz * OVER));
	c->rng = clock_now_ns() | 1;
	const char *log = getenv("RBSCOPE_BPF_LOG");
	verbose_print = log && *log && strcmp(log, "0");
	libbpf_set_print(bpf_print);
	c->obj = bpf_object__open_mem(rbscope_capture_obj, (size_t)(rbscope_capture_obj_end - rbscope_capture_obj), NULL);
	if (!c->obj) {
		err = -errno;
		snprintf(why, whylen, "cannot open the BPF program: %s", strerror(errno));
		goto fail;
	}
	struct bpf_map *scratch = bpf_object__find_map_by_name(c->obj, "scratch");
	int ncpus = libbpf_num_possible_cpus();
	if (!scratch || ncpus <= 0 || bpf_map__set_max_entries(scratch, (uint32_t)ncpus)) {
		err = ERR_CORRUPT;
		snprintf(why, whylen, "cannot size the BPF program's buffers");
		goto fail;
	}
	if ((err = bpf_object__load(c->obj))) {
		snprintf(why, whylen, "cannot load the BPF program: %s%s", strerror(-err),
			 err == -EPERM ? " (it needs root, or CAP_BPF and CAP_PERFMON)" : "");
		goto fail;
	}
	c->prog = bpf_object__find_program_by_name(c->obj, "capture");
	struct bpf_map *cfg = bpf_object__find_map_by_name(c->obj, "config"),
		       *stats = bpf_object__find_map_by_name(c->obj, "stats"),
		       *events = bpf_object__find_map_by_name(c->obj, "events"),
		       *envs = bpf_object__find_map_by_name(c->obj, "env_iseqs"),
		       *slots = bpf_object__find_map_by_name(c->obj, "slots"),
		       *known = bpf_object__find_map_by_name(c->obj, "known");
	if (!c->prog || !cfg || !stats || !events || !envs || !slots || !known) {
		err = ERR_CORRUPT;
		snprintf(why, whylen, "the BPF program lacks its maps");
		goto fail;
	}
	c->conf = (struct capture_config){
		.owner = owner, .gc = gc, .th_ec = (uint32_t)L->th_ec, .ec_cfp = (uint32_t)L->ec_cfp,
		.ec_stack = (uint32_t)L->ec_vm_stack, .ec_stack_size = (uint32_t)L->ec_vm_stack_size,
		.cfp_size = (uint32_t)L->cfp_size, .cfp_sp = (uint32_t)L->cfp_sp, .cfp_ep = (uint32_t)L->cfp_ep,
		.native = native ? 1 : 0, .cfp_self = (uint32_t)L->cfp_self,
		.gc_count = labels && t->objspace && L->gc_count >= 0 ? t->objspace + (uint64_t)L->gc_count : 0,
		.cfp_iseq = L->cfp_iseq >= 0 && L->cfp_iseq <= CAPTURE_CFP_MAX - 8 ? (uint32_t)L->cfp_iseq : CAPTURE_CFP_MAX,
	};
	uint32_t zero = 0;
	c->cfg_fd = bpf_map__fd(cfg);
	if (bpf_map_update_elem(c->cfg_fd, &zero, &c->conf, BPF_ANY)) {
		err = -errno;
		snprintf(why, whylen, "cannot configure the BPF program: %s", strerror(errno));
		goto fail;
	}
	c->stats_fd = bpf_map__fd(stats);
	c->env_fd = bpf_map__fd(envs);
	c->slots_fd = bpf_map__fd(slots);
	c->known_fd = bpf_map__fd(known);
	if (!(c->rb = ring_buffer__new(bpf_map__fd(events), on_rec, c, NULL))) {
		err = -errno;
		snprintf(why, whylen, "cannot map the BPF ring: %s", strerror(errno));
		goto fail;
	}
	if (labels) { /* (what label.c knows of methods is learnt again, for this program to be told) */
		map_clear(&t->labels);
		t->env_iseq_seen = env_iseq_seen;
		t->env_iseq_ctx = c;
	}
	*out = c;
	return 0;
fail:
	ruby_capture_close(c);
	return err < 0 ? err : -EINVAL;
}

static void unmap_ring(struct followed *f)
{
	if (f->ring)
		munmap(f->ring, f->ring_len);
	f->ring = NULL;
}

static void unfollow(struct ruby_capture *c, struct followed *f)
{
	set_thread(c, f, 0);
	c->slot_used[f->slot] = 0;
	if (f->link)
		bpf_link__destroy(f->link); /* detaches, and closes the event */
	else if (f->fd >= 0)
		close(f->fd);
	f->link = NULL;
	f->fd = -1;
	if (f->stat_fd >= 0)
		close(f->stat_fd);
	f->stat_fd = -1;
	unmap_ring(f);
}

void ruby_capture_close(struct ruby_capture *c)
{
	if (!c)
		return;
	if (c->t && c->t->env_iseq_ctx == c) {
		c->t->env_iseq_seen = NULL;
		c->t->env_iseq_ctx = NULL;
	}
	for (int i = 0; i < c->nf; i++)
		unfollow(c, &c->f[i]);
	free(c->f);
	ring_buffer__free(c->rb);
	bpf_object__close(c->obj);
	free(c->frames);
	free(c->rec);
	free(c);
}

/* A task clock on f's tid, running the program with its slot as the cookie; 0, or -errno (ESRCH: the thread is gone). */
static int follow_one(struct ruby_capture *c, struct followed *f)
{
	struct perf_event_attr a = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(a),
		.config = PERF_COUNT_SW_TASK_CLOCK,
		.sample_period = f->period = jittered(c, f),
	};
	if (c->native) {
		a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
		a.sample_regs_user = NATIVE_REGS;
		a.sample_stack_user = NATIVE_STACK;
		a.use_clockid = 1;
		a.clockid = CLOCK_MONOTONIC; /* the program's bpf_ktime_get_ns() */
	}
	int fd = (int)syscall(SYS_perf_event_open, &a, f->tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (c->native) {
		size_t len = (1 + NATIVE_PAGES) * c->page;
		void *ring = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (ring == MAP_FAILED) {
			int err = -errno;
			close(fd);
			return err;
		}
		f->ring = ring;
		f->ring_len = len;
	}
	LIBBPF_OPTS(bpf_perf_event_opts, o, .bpf_cookie = f->slot);
	struct bpf_link *l = bpf_program__attach_perf_event_opts(c->prog, fd, &o);
	if (!l) {
		int err = -errno;
		close(fd);
		unmap_ring(f);
		return err;
	}
	f->fd = fd;
	f->link = l;
	if (f->stat_fd < 0)
		f->stat_fd = task_stat_open(c->t->pid, f->tid);
	return 0;
}

/* Has f's native thread ended? (a tid may be given again: its /proc file, opened with its clock, is not) */
static int ended(const struct followed *f)
{
	return f->stat_fd < 0 || task_fd_gone(f->stat_fd);
}

int ruby_capture_follow(struct ruby_capture *c, const struct ruby_sample *s)
{
	c->gen++;
	for (int i = 0; i < s->nthreads; i++) {
		const struct ruby_thread_sample *ts = &s->threads[i];
		/* (an M:N thread moves between native threads, each running others: its clock would be theirs; another
		   Ractor's threads hold another GVL than the one whose owner the program checks) */
		if (ts->tid <= 0 || ts->state == THREAD_KILLED || ts->shared || ts->ractor)
			continue;
		struct followed *f = find_tid(c, ts->tid), *was = find(c, ts->th);
		if (was && was != f)
			set_thread(c, was, 0); /* (a Ruby thread on another native thread than before) */
		if (f && f->th != ts->th && f->link && ended(f)) {
			unfollow(c, f); /* a new native thread with an old one's tid */
			*f = c->f[--c->nf];
			f = NULL;
		}
		if (!f) {
			uint32_t slot = 0;
			while (slot < CAPTURE_SLOTS && c->slot_used[slot])
				slot++;
			if (slot == CAPTURE_SLOTS) {
				c->st.unfollowed++;
				continue;
			}
			if (c->nf == c->capf) {
				int cap = c->capf ? 2 * c->capf : 8;
				struct followed *v = realloc(c->f, (size_t)cap * sizeof(*v));
				if (!v)
					return -ENOMEM;
				c->f = v;
				c->capf = cap;
			}
			f = &c->f[c->nf++];
			memset(f, 0, sizeof(*f));
			f->fd = -1;
			f->stat_fd = -1;
			f->slot = slot;
			f->tid = ts->tid;
			c->slot_used[slot] = 1;
		}
		set_thread(c, f, ts->th);
		f->name = ts->name;
		f->main = ts->main;
		f->gen = c->gen;
		/* A thread that gets no clock (gone, or out of file descriptors) is read from outside. */
		if (!f->link && follow_one(c, f))
			c->st.unfollowed++;
	}
	/* A native thread that runs no Ruby thread now keeps its clock, for the next Ruby thread it may run, until it
	   ends. */
	for (int i = 0; i < c->nf;) {
		struct followed *f = &c->f[i];
		if (f->gen != c->gen)
			set_thread(c, f, 0);
		if (f->gen == c->gen || (f->link && !ended(f))) {
			i++;
			continue;
		}
		unfollow(c, f);
		*f = c->f[--c->nf];
	}
	return 0;
}

int ruby_capture_covers(const struct ruby_capture *c, uint64_t th)
{
	const struct followed *f = find(c, th);
	return f && f->link;
}

static int source_covers(const void *ctx, uint64_t th)
{
	return ruby_capture_covers(ctx, th);
}

static int source_sample_of(void *ctx, uint64_t th, const struct ruby_call *now, uint64_t *regs,
			    const unsigned char **stack, size_t *len)
{
	return ruby_capture_native_of(ctx, th, now, regs, stack, len);
}

const struct ruby_native_source *ruby_capture_source(struct ruby_capture *c)
{
	c->source = (struct ruby_native_source){ c, source_covers, source_sample_of };
	return &c->source;
}

int ruby_capture_drain(struct ruby_capture *c, ruby_capture_fn fn, void *arg)
{
	c->fn = fn;
	c->arg = arg;
	c->err = 0;
	int n = ring_buffer__consume(c->rb);
	if (c->err)
		return c->err;
	/* --native: the kernel's samples no record or mark will ask for (a thread off its CPU at the ticks, or
	   one whose mark went unused) are dropped, or its buffer would fill and lose the ones to come */
	uint64_t now = c->native ? clock_now_ns() : 0;
	for (int i = 0; c->native && i < c->nf; i++) {
		struct followed *f = &c->f[i];
		if (f->ring)
			native_pick(c, f, UINT64_MAX, (f->mark.t_ns ? f->mark.t_ns : now) - NATIVE_NEAR - 1, NULL, NULL, NULL);
	}
	return n < 0 ? n : 0;
}

void ruby_capture_stats(const struct ruby_capture *c, struct ruby_capture_stats *out)
{
	uint64_t v[CAPTURE_STATS] = { 0 };
	for (uint32_t k = 0; k < CAPTURE_STATS; k++)
		bpf_map_lookup_elem(c->stats_fd, &k, &v[k]);
	*out = c->st;
	out->fired = v[CAPTURE_FIRED];
	out->not_owner = v[CAPTURE_NOT_OWNER] + c->st.elsewhere;
	out->lost = v[CAPTURE_LOST];
	out->bad = v[CAPTURE_BAD];
}
