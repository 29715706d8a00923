/* walk.h: one sample of every Ruby thread's stack, read from the target without stopping it. */
#ifndef RBSCOPE_WALK_H
#define RBSCOPE_WALK_H

#include <stdint.h>

#include "../proc/task.h"
#include "target.h"

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
	int32_t line;
	uint32_t kind;
};

enum thread_state {
	THREAD_RUNNING,  /* holds the GVL */
	THREAD_GVL_WAIT, /* runnable, waiting for the GVL */
	THREAD_BLOCKED,  /* in a blocking region: I/O or a C call without the GVL */
	THREAD_SLEEPING, /* sleep, Queue#pop, Mutex#lock, join */
	THREAD_KILLED,
};

struct ruby_thread_sample {
	uint64_t th;
	int32_t tid;        /* kernel thread id, 0 if unknown */
	uint32_t name;      /* strtab id of Thread#name, 0 if none */
	int state;          /* enum thread_state */
	char kstate;        /* from /proc/PID/task/TID/stat, '?' unless asked for */
	int has_cpu;        /* WALK_CPU: cpu_ns was read */
	uint64_t cpu_ns;    /* WALK_CPU: the CPU time it has run, by the kernel's account (task_cpu_ns) */
	int syscall;        /* a blocked thread's system call or TASK_ON_CPU (proc/task.h), WALK_SYSCALL_UNKNOWN unless asked for */
	int main;           /* the main thread */
	int unreadable;     /* it has frames, but they read as zeros (a core that left them out) */
	int salvaged, unchanged; /* its read, as struct ruby_sample counts them */
	int nframes;
	struct ruby_frame *frames; /* innermost first, inside the sample's frame array */
};

#define WALK_MAX_THREADS 256
#define WALK_MAX_FRAMES 4096      /* per thread; deeper stacks keep their innermost frames */
#define WALK_MAX_TOTAL (1u << 16) /* frames in one sample */

struct ruby_sample {
	int nthreads;
	struct ruby_thread_sample threads[WALK_MAX_THREADS];
	struct ruby_frame frames[WALK_MAX_TOTAL];
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

/* The GC's own counters, as GC.stat gives them; each only where the layout knows where it is (have_*). */
struct ruby_gc_counts {
	int have_count, have_time, have_slots;
	uint64_t count, major;          /* GC.count and GC.stat(:major_gc_count) */
	uint64_t time_ns;               /* GC.stat(:time) in ns: what the VM measured collecting (Ruby 3.1+) */
	uint64_t live_slots, free_slots; /* GC.stat(:heap_live_slots) and (:heap_free_slots) */
};
/* Read them from the target's rb_objspace: 0, or a negative code (ERR_UNSUPPORTED: none known for this Ruby). */
int ruby_gc_counts(struct ruby_target *t, struct ruby_gc_counts *out);

/*
 * For sampling a thread on its own CPU (capture.c): where the GVL owner's
 * word is, and the GC's state word (0: unknown). 0, or a negative code.
 */
int ruby_capture_addrs(struct ruby_target *t, uint64_t *owner, uint64_t *gc);
/* The GC's frame for the state word gcw read from there: 1 with *f set while it collects, else 0. */
int ruby_gc_frame(struct ruby_target *t, uint32_t gcw, struct ruby_frame *f);

enum {
	WALK_KSTATE = 1,  /* read each thread's kernel state */
	WALK_SYSCALL = 2, /* read the system call each blocked thread is in (one read of /proc per blocked thread) */
	WALK_NATIVE = 4,  /* unwind each thread's native stack: off a CPU from /proc, running by stopping it (ptrace) */
	WALK_CPU = 8,     /* read the CPU time each thread has run (one read of /proc per thread) */
};
#define NATIVE_MAX 128 /* native frames unwound per thread */
#define WALK_SYSCALL_UNKNOWN TASK_SYSCALL_UNREAD

/*
 * Take one sample. Returns 0 (threads that could not be read consistently are
 * counted in torn and left out), ERR_GONE if the target exited, or another
 * negative code when the VM itself cannot be read.
 */
int ruby_sample_take(struct ruby_target *t, struct ruby_sample *s, unsigned flags);
const char *ruby_thread_state_name(int state);
/* Is name ("Kernel#sleep", "Thread::Queue#pop"...) a method that waits: sleep, locks, queues, I/O readiness, children? */
int ruby_wait_method(const char *name);
/* Does name switch fibers (Fiber#resume, Fiber.yield, Enumerator#next...)? Nothing runs above it in its context. */
int ruby_switch_method(const char *name);
/*
 * Put the native frames over ts's Ruby frames (as WALK_NATIVE does) from the
 * registers (17, DWARF order) and the copy of the stack from their sp on
 * (len bytes) that the kernel took as it interrupted the thread: no stop.
 * ts->frames must have room for room frames. 1 if the unwind found frames.
 */
int ruby_native_sampled(struct ruby_target *t, struct ruby_thread_sample *ts, int room, const uint64_t *regs,
			const void *stack, size_t len);
/* Free the walker's per-thread memory (ruby_target_flush and detach call it). */
void ruby_walk_free(struct ruby_target *t);

#endif
