/* quiet.h: reading a thread whose stack stayed put the quiet way: a few small parts, not its whole stack (quiet.c). */
#ifndef RBSCOPE_QUIET_H
#define RBSCOPE_QUIET_H

#include "slots.h"

/* Judge a quiet read (th, q) of w: 1 and r's frames set when nothing moved, 0 to read the stack in full. */
int quiet_judge(const struct ruby_target *t, struct walk_slot *w, const unsigned char *th, const struct quiet_parts *q,
		struct thread_read *r);
/*
 * A quiet read of w on its own (th its rb_thread_t, read too unless
 * *have_th), with r's extras. Returns 1 when its frames are as they were
 * (r->nframes set), 0 to read the stack in full; *extra_done when r's
 * extras were read.
 */
int quiet_read(struct ruby_target *t, struct walk_cache *c, struct walk_slot *w, unsigned char *th, int *have_th,
	       struct thread_read *r, int *extra_done);
/* Read every quiet thread of the list order in one readv with extra parts: 1 when read, 0 when not. */
int quiet_read_batch(struct ruby_target *t, struct walk_cache *c, const struct mem_iov *extra, int nextra);

#endif
