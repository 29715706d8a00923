/* native.h: a thread's native frames over its Ruby frames (WALK_NATIVE), unwound without stopping it where it can be (native.c). */
#ifndef RBSCOPE_NATIVE_H
#define RBSCOPE_NATIVE_H

#include <stddef.h>
#include <stdint.h>

#include "slots.h"

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

/*
 * Put the native frames over ts's Ruby frames (as WALK_NATIVE does) from the
 * registers (17, DWARF order) and the copy of the stack from their sp on
 * (len bytes) that the kernel took as it interrupted the thread: no stop.
 * ts->frames must have room for room frames. 1 if the unwind found frames.
 */
int ruby_native_sampled(struct ruby_target *t, struct ruby_thread_sample *ts, int room, const uint64_t *regs,
			const void *stack, size_t len);
/* Put thread ts's own native frames (read into slot w) over its Ruby frames, counting in s what it took. */
void native_add(struct ruby_target *t, struct ruby_sample *s, struct ruby_thread_sample *ts, struct walk_slot *w);

#endif
