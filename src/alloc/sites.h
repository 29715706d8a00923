/* sites.h: allocations by site over a sliding window of looks at an allocation profile (top --mode alloc). */
#ifndef RBSCOPE_SITES_H
#define RBSCOPE_SITES_H

#include <stdint.h>

#include "../lib/map.h"
#include "../profile/profile.h"

/* A site's allocations in the window: estimated (samples x interval), as the profile counts them. */
struct alloc_site_row {
	uint32_t where, klass; /* the frame that allocated and the class (alloc_stack_site) */
	uint32_t stack;        /* its stack that allocated the most in the window */
	uint64_t objects, bytes, stack_objects;
};

/*
 * The profile's stacks' counts at each of the last looks: a look's rows are
 * what each site allocated since the oldest look kept, so the window is the
 * span of `looks` looks (the first looks: since the start).
 */
struct alloc_window {
	uint32_t looks, next, have;
	struct alloc_snap {
		uint64_t *objects, *bytes; /* by stack id, as profile_stack_objects/_bytes said then */
		uint32_t n;                /* stacks the profile had then */
		uint64_t at_ns;
	} *snap;
	struct map index; /* where << 32 | klass -> row + 1 (a look's) */
};

/* looks >= 1. 0 or -ENOMEM. */
int alloc_window_init(struct alloc_window *w, uint32_t looks);
void alloc_window_free(struct alloc_window *w);
/*
 * A look at p (an allocation profile) at now_ns: the sites by objects (or,
 * by_bytes, bytes) allocated since the oldest look kept, most first, into
 * *rows (malloc'd, *n of them; sites that allocated nothing left out), the
 * window's span in *span_ns (since p's first look: now_ns - start_ns), its
 * totals in *objects and *bytes; then this look is kept, the oldest let go.
 * 0 or -ENOMEM.
 */
int alloc_window_look(struct alloc_window *w, const struct profile *p, uint64_t now_ns, uint64_t start_ns,
		      int by_bytes, struct alloc_site_row **rows, uint32_t *n, uint64_t *span_ns, uint64_t *objects,
		      uint64_t *bytes);

#endif
