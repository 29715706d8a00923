/*
 * capture.bpf.c: a Ruby thread's stack, read on its own CPU when its task
 * clock goes off (a perf event per native thread), while it holds the GVL.
 *
 * Read from another CPU, the frame a short call pushes is visible for less
 * time than the call runs (the stores that open it reach other CPUs later
 * than the one that closes it): leaf calls lose samples to their callers.
 * Here the thread is interrupted, and sees its own stores.
 */
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

#include "capture_rec.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct capture_config);
} config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CAPTURE_STATS);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20); /* 20 samples 512 frames deep, 110 of 100 frames (at 1000 Hz, read every ms) */
} events SEC(".maps");

/* Labels: an iseq -> where its env parameter and --label's local are, in bytes below its frame's ep (capture_rec.h). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CAPTURE_ENV_ISEQS);
	__type(key, __u64);
	__type(value, __u64);
} env_iseqs SEC(".maps");

/* Each clock's slot -> the Ruby thread its native thread runs, and the Ruby threads known (capture_rec.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CAPTURE_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CAPTURE_SLOTS);
	__type(key, __u64);
	__type(value, __u32);
} known SEC(".maps");

#define VS_BUF (32 << 10) /* the top of the value stack read in one go (a power of 2) */

/*
 * A sample as it is put together: the record, the control frames read in
 * one go, and the top of the value stack, where the env words of all but
 * the frames of escaped blocks are (one read of a few KB costs less than a
 * read per frame).
 */
struct scratch {
	struct capture_rec rec;
	unsigned char cfps[(CAPTURE_MAX_FRAMES + 1) * CAPTURE_CFP_MAX]; /* (a frame's worth over: each is copied whole) */
	unsigned char vs[VS_BUF + 32];
};

/* One per CPU (capture.c sizes it): more than a per-CPU map's value may hold. A CPU runs one sample at a time. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

static void count(__u32 what)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &what);
	if (v)
		__sync_fetch_and_add(v, 1);
}

static __u64 word(__u64 addr)
{
	__u64 v = 0;
	if (bpf_probe_read_user(&v, sizeof(v), (const void *)addr))
		return 0;
	return v;
}

struct frame_ctx {
	__u64 csz, ep_off, iseq_off;
	__u64 vs_lo, vs_len; /* the part of the value stack in the scratch's vs */
};

/* The word at addr: from the scratch's copy of the value stack, or read. */
static __u64 stack_word(const struct frame_ctx *fc, const struct scratch *s, __u64 addr)
{
	__u64 d = addr - fc->vs_lo, v = 0;
	if (addr >= fc->vs_lo && d + 8 <= fc->vs_len) {
		d &= VS_BUF - 1;
		__builtin_memcpy(&v, s->vs + d, 8);
		return v;
	}
	return word(addr);
}

/* Frame i: its control frame from the scratch, its env words from the thread's memory. */
static long take_frame(__u32 i, void *arg)
{
	const struct frame_ctx *fc = arg;
	__u32 cpu = bpf_get_smp_processor_id();
	struct scratch *s = bpf_map_lookup_elem(&scratch, &cpu);
	/* i, bounded where the verifier sees it (the compiler would drop a plain mask after the test) */
	__u64 k = i;
	asm volatile("%0 &= %1" : "+r"(k) : "i"(CAPTURE_MAX_FRAMES - 1));
	if (!s || k != i)
		return 1;
	__u64 off = k * fc->csz;
	if (off > sizeof(s->cfps) - CAPTURE_CFP_MAX || fc->ep_off > CAPTURE_CFP_MAX - 8)
		return 1;
	struct capture_frame *f = &s->rec.frames[k];
	__builtin_memcpy(f->cfp, s->cfps + off, CAPTURE_CFP_MAX);
	__u64 ep;
	__builtin_memcpy(&ep, s->cfps + off + fc->ep_off, 8);
	__u64 d = ep - 16 - fc->vs_lo;
	if (ep > 16 && ep - 16 >= fc->vs_lo && d + sizeof(f->eps) <= fc->vs_len) {
		d &= VS_BUF - 1; /* (a bound the verifier sees: d < vs_len <= VS_BUF already) */
		__builtin_memcpy(f->eps, s->vs + d, sizeof(f->eps));
	} else if (ep <= 16 || (ep & 7) || bpf_probe_read_user(f->eps, sizeof(f->eps), (const void *)(ep - 16))) {
		f->eps[0] = 0;
		f->eps[1] = 0;
		f->eps[2] = 0;
	}
	/* the innermost call(env) frame's env and --label's local, as they are now: read later, their slots may hold
	   the next request's */
	__u64 io = fc->iseq_off;
	if ((!s->rec.env_at || !s->rec.label_at) && io <= CAPTURE_CFP_MAX - 8) {
		__u64 iseq;
		__builtin_memcpy(&iseq, s->cfps + off + (io & (CAPTURE_CFP_MAX - 8)), 8);
		__u64 *below = iseq ? bpf_map_lookup_elem(&env_iseqs, &iseq) : 0;
		__u64 env = below ? *below & 0xffffffff : 0, local = below ? *below >> 32 : 0;
		if (env && !s->rec.env_at && ep > env && !(ep & 7)) {
			s->rec.env_at = ep - env;
			s->rec.env = stack_word(fc, s, ep - env);
		}
		if (local && !s->rec.label_at && ep > local && !(ep & 7)) {
			s->rec.label_at = ep - local;
			s->rec.label = stack_word(fc, s, ep - local);
		}
	}
	return 0;
}

SEC("perf_event")
int capture(void *ctx)
{
	__u64 t_ns = bpf_ktime_get_ns(), e[4] = { 0 };
	__u32 zero = 0, cpu = bpf_get_smp_processor_id(), slot = (__u32)bpf_get_attach_cookie(ctx);
	struct capture_config *c = bpf_map_lookup_elem(&config, &zero);
	struct scratch *s = bpf_map_lookup_elem(&scratch, &cpu);
	__u64 *here = bpf_map_lookup_elem(&slots, &slot);
	count(CAPTURE_FIRED);
	if (!c || !s || !here)
		return 0;
	__u64 th = *here, owner = word(c->owner);
	__u16 unknown = 0;
	if (owner && owner != th && !bpf_map_lookup_elem(&known, &owner)) {
		th = owner; /* (a thread started since capture.c looked: perhaps here) */
		unknown = 1;
	}
	if (!th)
		return 0;
	if (owner != th) {
		count(CAPTURE_NOT_OWNER);
		if (!c->native)
			return 0;
		/* --native: a thread on its CPU without the GVL (in C code that let it go) has its native stack in
		   the kernel's sample; its Ruby frames stand still and are read from outside: the call it is in,
		   for that read to match. */
		struct capture_mark m = { .t_ns = t_ns, .th = th, .total = CAPTURE_MARK };
		m.ec = word(th + c->th_ec);
		if (m.ec && !bpf_probe_read_user(e, 24, (const void *)m.ec)) {
			m.cfp = e[(c->ec_cfp / 8) & 3];
			m.self = word(m.cfp + c->cfp_self);
			m.ep = word(m.cfp + c->cfp_ep);
			m.me = m.ep > 16 ? word(m.ep - 16) : 0;
		}
		if (!m.cfp || bpf_ringbuf_output(&events, &m, sizeof(m), BPF_RB_NO_WAKEUP))
			return 0;
		return 1;
	}
	__u64 ec = word(th + c->th_ec);
	if (!ec || bpf_probe_read_user(e, 24, (const void *)ec)) {
		count(CAPTURE_BAD);
		return 0;
	}
	__u64 cfp = e[(c->ec_cfp / 8) & 3], stack = e[(c->ec_stack / 8) & 3], size = e[(c->ec_stack_size / 8) & 3];
	__u64 csz = c->cfp_size, end = stack + size * 8;
	if (!csz || csz > CAPTURE_CFP_MAX || c->cfp_ep > csz - 8 || cfp < stack || cfp >= end || (end - cfp) % csz) {
		count(CAPTURE_BAD);
		return 0;
	}
	__u64 total = (end - cfp) / csz, n = total < CAPTURE_MAX_FRAMES ? total : CAPTURE_MAX_FRAMES;
	__u64 bytes = n * csz;
	if (bytes > CAPTURE_MAX_FRAMES * CAPTURE_CFP_MAX)
		bytes = CAPTURE_MAX_FRAMES * CAPTURE_CFP_MAX;
	if (bpf_probe_read_user(s->cfps, (__u32)bytes, (const void *)cfp)) {
		count(CAPTURE_BAD);
		return 0;
	}
	/* Every env word on the VM stack is under the innermost frame's sp (and over the stack's base). */
	struct frame_ctx fc = { csz, c->cfp_ep, c->envs ? c->cfp_iseq : CAPTURE_CFP_MAX, 0, 0 };
	s->rec.env_at = 0;
	s->rec.env = 0;
	s->rec.label_at = 0;
	s->rec.label = 0;
	__u64 sp;
	if (c->cfp_sp <= CAPTURE_CFP_MAX - 8) {
		__builtin_memcpy(&sp, s->cfps + (c->cfp_sp & (CAPTURE_CFP_MAX - 1)), 8);
		__u64 hi = sp + 8 < cfp ? sp + 8 : cfp, lo = hi - stack > VS_BUF ? hi - VS_BUF : stack;
		__u64 len = hi - lo;
		asm volatile("if %0 <= %1 goto +1; %0 = %1" : "+r"(len) : "i"(VS_BUF)); /* (a bound the verifier sees) */
		if (sp >= stack && hi > lo && len && !bpf_probe_read_user(s->vs, (__u32)len, (const void *)lo)) {
			fc.vs_lo = lo;
			fc.vs_len = hi - lo;
		}
	}
	bpf_loop((__u32)n, take_frame, &fc, 0);
	struct capture_rec *r = &s->rec;
	r->t_ns = t_ns;
	r->th = th;
	r->ec = ec;
	r->cfp = cfp;
	r->n = (__u32)n;
	r->total = (__u32)total;
	r->gcw = 0;
	r->slot = (__u16)slot;
	r->unknown = unknown;
	const struct pt_regs *regs = &((const struct bpf_perf_event_data *)ctx)->regs;
	int user = (regs->cs & 3) == 3;
	r->ip = user ? regs->rip : 0;
	r->r13 = user ? regs->r13 : 0;
	if (c->gc) {
		__u32 w = 0;
		if (!bpf_probe_read_user(&w, sizeof(w), (const void *)c->gc))
			r->gcw = w;
	}
	r->gcc = 0;
	if (c->gc_count) {
		__u64 n = 0;
		if (!bpf_probe_read_user(&n, sizeof(n), (const void *)c->gc_count))
			r->gcc = n;
	}
	__u64 len = sizeof(*r) - sizeof(r->frames) + n * sizeof(r->frames[0]);
	if (len > sizeof(*r))
		len = sizeof(*r);
	if (bpf_ringbuf_output(&events, r, len, BPF_RB_NO_WAKEUP)) { /* (read at each tick: no one waits on it) */
		count(CAPTURE_LOST);
		return 0;
	}
	/* --native: the kernel's sample too, its user registers and stack, paired with this record by time. */
	return c->native ? 1 : 0;
}
