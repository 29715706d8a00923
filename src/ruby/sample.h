/* sample.h: what one sample of a Ruby process holds: its threads, their states and frames (walk.c takes it). */
#ifndef RBSCOPE_SAMPLE_H
#define RBSCOPE_SAMPLE_H

#include <stdint.h>

#include "../proc/task.h"

/* The numbers are profile.h's (PROFILE_FRAME_*): a sample's frames go into a profile as they are. */
enum frame_kind {
	FRAME_RUBY = 0,
	FRAME_CFUNC = 1,
	FRAME_TRUNCATED = 2,
	FRAME_GC = 3,   /* "(garbage collection: marking)": the VM is collecting; above the frame that allocated */
	FRAME_WAIT = 4, /* a method known to wait (ruby_wait_method) */
	FRAME_NATIVE = 6, /* WALK_NATIVE: a native function the innermost C method called; path is its file */
};

struct ruby_frame {
	uint32_t name;  /* strtab id: "Foo#bar", "block in Foo#bar", "Hash#key?" */
	uint32_t path;  /* strtab id; for C methods, the calling Ruby frame's path */
	int32_t line;   /* -1: none (a C method called from C); FRAME_LINE_UNKNOWN */
	uint32_t kind;
};
/* The line of a Ruby frame running JIT code, whose pc the JIT has not saved (profile.h's PROFILE_LINE_UNKNOWN). */
#define FRAME_LINE_UNKNOWN (-2)

enum thread_state {
	THREAD_RUNNING,  /* holds the GVL */
	THREAD_GVL_WAIT, /* runnable, waiting for the GVL */
	THREAD_BLOCKED,  /* in a blocking region: I/O or a C call without the GVL */
	THREAD_SLEEPING, /* sleep, Queue#pop, Mutex#lock, join */
	THREAD_KILLED,
};

/* --label's values (label.h): at most this many a sample; each its frame's text ("key=value") and key, strtab ids. */
#define USER_LABELS_MAX 4
struct ruby_label_value {
	uint32_t text, key;
};

struct ruby_thread_sample {
	uint64_t th;
	int32_t tid;        /* kernel thread id, 0 if unknown (or, shared, when it runs on none now) */
	int shared;         /* an M:N thread (3.3+, RUBY_MN_THREADS=1): no native thread of its own, its tid the one
			       it runs on now; its identity is th */
	uint32_t name;      /* strtab id of Thread#name, 0 if none */
	int state;          /* enum thread_state */
	char kstate;        /* from /proc/PID/task/TID/stat, '?' unless asked for, '-' for a shared thread on none */
	int has_cpu;        /* WALK_CPU: cpu_ns was read */
	uint64_t cpu_ns;    /* WALK_CPU: the CPU time it has run, by the kernel's account (task_cpu_ns) */
	int syscall;        /* a blocked thread's system call or TASK_ON_CPU (proc/task.h), WALK_SYSCALL_UNKNOWN unless asked for */
	int main;           /* the main thread */
	uint32_t ractor;    /* the id of its Ractor (Ractor#inspect's), 0 for the main Ractor's threads */
	uint32_t ractor_name; /* strtab id of that Ractor's name, 0 if none */
	int unreadable;     /* it has frames, but they read as zeros (a core that left them out) */
	int unstarted;      /* created, not yet run: no VM stack, no frames (Thread#backtrace says []) */
	int salvaged, unchanged; /* its read, as struct ruby_sample counts them */
	uint32_t label;     /* WALK_LABELS: strtab id of the request it serves (ruby_request_label), 0 if none */
	int nulabels;       /* WALK_LABELS: --label's values found (ruby_user_labels) */
	struct ruby_label_value ulabels[USER_LABELS_MAX];
	int nframes;
	struct ruby_frame *frames; /* innermost first, inside the sample's frame array */
};

/* Where a frame of a sample lives in the target (WALK_LOCALS): a Ruby frame's iseq, env (ep) and self, a C frame's self. */
struct ruby_frame_at {
	uint64_t iseq, ep, self;
};

#define WALK_MAX_THREADS 256
#define WALK_MAX_FRAMES 4096      /* per thread; deeper stacks keep their innermost frames */
#define WALK_MAX_TOTAL (1u << 16) /* frames in one sample */
#define WALK_SYSCALL_UNKNOWN TASK_SYSCALL_UNREAD /* a thread sample's syscall when not read */
#define NATIVE_MAX 128 /* native frames unwound per thread (WALK_NATIVE) */

struct ruby_sample {
	int nthreads;
	struct ruby_thread_sample threads[WALK_MAX_THREADS];
	struct ruby_frame frames[WALK_MAX_TOTAL];
	struct ruby_frame_at *at; /* WALK_LOCALS: the caller's array of WALK_MAX_TOTAL, beside frames[]; else unused */
	uint32_t nframes_total;
	uint32_t torn;     /* threads left out: no consistent picture of their stack after retries */
	uint32_t retried;  /* re-reads because the stack moved under the read */
	uint32_t salvaged; /* threads kept without frames that did not read as frames (the stack moved under the read) */
	uint32_t unchanged; /* threads whose frames read as at the last sample, to the byte: named as then (a short read) */
	int gc;            /* the VM was collecting garbage (enum gc_phase), its frame on the thread that holds the GVL */
	uint64_t native_moved; /* WALK_NATIVE: threads left without native frames, having moved on during the unwind */
	uint64_t native_sampled; /* WALK_NATIVE: threads on a CPU without the GVL unwound from a kernel sample (no stop) */
	uint64_t native_stops, native_stop_ns; /* WALK_NATIVE, since attaching: threads stopped for their registers, and for how long */
};

enum gc_phase { GC_NONE, GC_RUNNING, GC_MARKING, GC_SWEEPING, GC_COMPACTING };

/*
 * Which call a thread is in: its innermost control frame, that frame's self
 * and ep, and the env's method entry (or cref). Two reads with the same are
 * of one call, its Ruby frames unmoved between them.
 */
struct ruby_call {
	uint64_t cfp, self, ep, me;
};

static inline int ruby_call_same(const struct ruby_call *a, const struct ruby_call *b)
{
	return a->cfp == b->cfp && a->self == b->self && a->ep == b->ep && a->me == b->me;
}

#endif
