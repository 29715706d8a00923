/* window.h: the samples of the latest while, in a profile renewed as it grows (serve's requests, top's table). */
#ifndef RBSCOPE_WINDOW_H
#define RBSCOPE_WINDOW_H

#include <stdint.h>

#include "profile.h"

/*
 * Samples go into cur (keep_samples set), in time order. When cur has grown
 * large (frames, stack entries, or an hour), window_trim starts a new one
 * and keeps the old one until none of its samples is wanted: memory stays
 * flat however long it runs, and a window read spans both.
 */
struct window {
	struct profile *cur, *old;
	uint64_t cur_since; /* when cur became current */
	uint32_t rate_hz;   /* (given to each profile) */
};

int window_init(struct window *w, uint32_t rate_hz, uint64_t now);
void window_free(struct window *w);
/*
 * Samples before keep_from are no longer wanted: drop them, and the old
 * profile once it is empty; then, if cur has grown large, a new cur. 1 when
 * cur is new (what samples into it must be pointed at it), 0, or -ENOMEM.
 */
int window_trim(struct window *w, uint64_t keep_from, uint64_t now);
/* Forget every sample (cur stays, empty of samples; old goes). */
void window_clear(struct window *w);
/*
 * Copy the samples in [from, to) that keep (NULL: all) keeps, given each
 * one's thread and state (enum profile_state), into dst (keep_samples set).
 */
int window_copy(const struct window *w, struct profile *dst, uint64_t from, uint64_t to,
		int (*keep)(void *ctx, int32_t tid, int state), void *ctx);

#endif
