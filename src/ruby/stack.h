/* stack.h: reading one thread's stack consistently: plan the read, judge it, name its frames (stack.c). */
#ifndef RBSCOPE_STACK_H
#define RBSCOPE_STACK_H

#include "slots.h"

/*
 * Read and name the frames of the thread whose rb_thread_t is at w->th, as
 * r asks. th holds its first t->th_read_len bytes: read here if *have_th is
 * 0, and in the same readv as the frames when the slot already knows the ec.
 * 0, ERR_TORN after retries, or another negative code.
 */
int stack_read_thread(struct ruby_target *t, struct walk_cache *c, struct walk_slot *w, unsigned char *th, int *have_th,
		      struct thread_read *r);

#endif
