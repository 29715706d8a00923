/* walk.h: one sample of every Ruby thread's stack, read from the target without stopping it. */
#ifndef RBSCOPE_WALK_H
#define RBSCOPE_WALK_H

#include <stdint.h>

#include "../proc/task.h"
#include "sample.h"
#include "target.h"

enum {
	WALK_KSTATE = 1,  /* read each thread's kernel state */
	WALK_SYSCALL = 2, /* read the system call each blocked thread is in (one read of /proc per blocked thread) */
	WALK_NATIVE = 4,  /* unwind each thread's native stack: off a CPU from /proc, running by stopping it (ptrace) */
	WALK_CPU = 8,     /* read the CPU time each thread has run (one read of /proc per thread) */
	WALK_LOCALS = 16, /* fill s->at beside each frame (every thread read in full: no quiet reads) */
	WALK_LABELS = 32, /* tell the request each thread serves (its label) */
};

/*
 * Take one sample. Returns 0 (threads that could not be read consistently are
 * counted in torn and left out), ERR_GONE if the target exited, or another
 * negative code when the VM itself cannot be read.
 */
int ruby_sample_take(struct ruby_target *t, struct ruby_sample *s, unsigned flags);
const char *ruby_thread_state_name(int state);

#endif
