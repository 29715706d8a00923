/* walk.h: one sample of every Ruby thread's stack, read from the target without stopping it. */
#ifndef RBSCOPE_WALK_H
#define RBSCOPE_WALK_H

#include <stdint.h>

#include "../proc/task.h"
#include "sample.h"
#include "target.h"

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
/*
 * Put the native frames over ts's Ruby frames (as WALK_NATIVE does) from the
 * registers (17, DWARF order) and the copy of the stack from their sp on
 * (len bytes) that the kernel took as it interrupted the thread: no stop.
 * ts->frames must have room for room frames. 1 if the unwind found frames.
 */
int ruby_native_sampled(struct ruby_target *t, struct ruby_thread_sample *ts, int room, const uint64_t *regs,
			const void *stack, size_t len);
/*
 * Where WALK_NATIVE finds the kernel's copies of a running thread's registers
 * and stack, taken at its own samples (capture.c gives one: ruby_capture_source),
 * so that it is not stopped: covers(ctx, th) says whether thread th is
 * sampled there (then, holding the GVL, its native frames come with its
 * samples); sample_of(ctx, th, now, ...) hands its latest sample if taken in
 * the call read now, as ruby_capture_native_of says. The target's
 * native_source, NULL for none.
 */
struct ruby_native_source {
	void *ctx;
	int (*covers)(const void *ctx, uint64_t th);
	int (*sample_of)(void *ctx, uint64_t th, const struct ruby_call *now, uint64_t *regs, const unsigned char **stack,
			 size_t *len);
};
/* Free the walker's per-thread memory (ruby_target_flush and detach call it). */
void ruby_walk_free(struct ruby_target *t);

#endif
