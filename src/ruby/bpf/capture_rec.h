/*
 * capture_rec.h: what the in-context sampler (bpf/capture.bpf.c) is told and
 * what it hands back, shared by the BPF program and capture.c.
 */
#ifndef RBSCOPE_CAPTURE_REC_H
#define RBSCOPE_CAPTURE_REC_H

#ifdef __bpf__
#include <linux/types.h>
typedef __u64 capture_u64;
typedef __u32 capture_u32;
typedef __u16 capture_u16;
#else
#include <stdint.h>
typedef uint64_t capture_u64;
typedef uint32_t capture_u32;
typedef uint16_t capture_u16;
#endif

#define CAPTURE_MAX_FRAMES 512 /* innermost frames taken (a power of 2); the outer ones of a deeper stack left out */
#define CAPTURE_CFP_MAX 64     /* bytes of one control frame, at most (rb_control_frame_t: 7 or 8 words) */
#define CAPTURE_EP_WORDS 3     /* ep[-2], ep[-1], ep[0] */

/* Where the Ruby's structures keep what the program reads, from the target's layout. */
struct capture_config {
	capture_u64 owner; /* the GVL owner word (rb_thread_t * of the thread that holds it) */
	capture_u64 gc;    /* the 4 bytes of rb_objspace that say whether and how it collects, 0 if unknown */
	capture_u32 th_ec; /* rb_thread_t.ec */
	capture_u32 ec_cfp, ec_stack, ec_stack_size; /* in the ec's first 24 bytes */
	capture_u32 cfp_size, cfp_sp, cfp_ep;
	capture_u32 native; /* 1: the kernel also writes the sample (user registers and stack) to the event's buffer */
	capture_u32 cfp_self, pad;
	capture_u64 gc_count; /* rb_objspace's GC count, 0 if unknown */
	capture_u32 cfp_iseq; /* rb_control_frame_t.iseq */
	capture_u32 envs;     /* 1 once env_iseqs has a method: frames are looked up in it */
};

/*
 * Labels: the methods whose env parameter, or --label's local, a sample
 * takes: iseq -> the bytes below the frame's ep where the env is (low 32
 * bits) and where the local is (high 32 bits), 0 for none.
 */
#define CAPTURE_ENV_ISEQS 256

/*
 * A task clock per native thread, its slot in the cookie: slots holds the
 * Ruby thread (rb_thread_t *) it runs now, 0 for none (one Ruby's thread
 * cache keeps for the next); known, every Ruby thread in slots. A clock that
 * goes off while a thread known to run elsewhere holds the GVL takes
 * nothing; while one not known yet does (started since capture.c last
 * looked), it takes it, marked unknown, for capture.c to tell whether it ran
 * here: so a Ruby thread started on a native thread of the cache is sampled
 * from its first instant, by a clock whose period runs on from the thread
 * before.
 */
#define CAPTURE_SLOTS 4096

enum capture_stat {
	CAPTURE_FIRED,     /* the thread's clock went off */
	CAPTURE_NOT_OWNER, /* ... while it did not hold the GVL (its stack is still: read from outside) */
	CAPTURE_LOST,      /* the ring was full */
	CAPTURE_BAD,       /* the ec or its frames did not read */
	CAPTURE_STATS
};

/*
 * --native, a thread on its CPU without the GVL: which call it was in (its
 * innermost control frame, that frame's self and ep, and the env's method
 * entry), so that the kernel's sample taken with it is used only for a read
 * of the same call. Told from a capture_rec by total == CAPTURE_MARK.
 */
#define CAPTURE_MARK 0xffffffffu
struct capture_mark {
	capture_u64 t_ns, th, ec, cfp;
	capture_u32 n, total; /* 0, CAPTURE_MARK */
	capture_u64 self, ep, me;
};

/* One frame as taken: its env words and its control frame (cfp_size bytes of cfp). */
struct capture_frame {
	capture_u64 eps[CAPTURE_EP_WORDS];
	unsigned char cfp[CAPTURE_CFP_MAX];
};

/*
 * One sample of a thread that holds the GVL, taken on its own CPU as its
 * clock went off: the header and its n frames, innermost first (the ring
 * holds the header and frames[0..n) only).
 */
struct capture_rec {
	capture_u64 t_ns; /* CLOCK_MONOTONIC */
	capture_u64 th, ec, cfp;
	capture_u32 n;     /* frames taken */
	capture_u32 total; /* frames on the stack (more than n: the outer ones left out) */
	capture_u32 gcw;   /* the GC's word (config.gc) */
	/* the clock's slot (its native thread's); 1 when th is a thread the program did not know (capture.c tells
	   whether it ran on that native thread) */
	capture_u16 slot, unknown;
	capture_u64 gcc;   /* the GC's count (config.gc_count; 0 if unknown) */
	/* the env parameter of the innermost frame whose method is in env_iseqs, as the sample was taken: where it
	   is (0: no such frame) and what it held */
	capture_u64 env_at, env;
	/* and --label's local of the innermost frame whose method has one (env_iseqs' high half), the same way */
	capture_u64 label_at, label;
	/* where the clock went off, in user mode (0: in the kernel), and r13 then: JIT code keeps the control frame it
	   runs for there (YJIT, 3.1-3.4), so ip is that frame's code only when r13 is its address (jit.c) */
	capture_u64 ip, r13;
	struct capture_frame frames[CAPTURE_MAX_FRAMES];
};

#endif
