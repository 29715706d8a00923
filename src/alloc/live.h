/* live.h: `heap live`: the sampled objects still alive, by the site that allocated them, and how each site grows. */
#ifndef RBSCOPE_LIVE_H
#define RBSCOPE_LIVE_H

#include <stdint.h>
#include <stdio.h>

#include "alloc.h"

/* A site: the line that allocated (its innermost frame's file and line) and the class allocated. */
struct live_site {
	uint32_t where; /* a frame id of the profile: the innermost frame under the class */
	uint32_t klass; /* the class frame's id */
	uint64_t objects, bytes; /* alive now, estimated (samples x interval) */
	uint64_t first, last;    /* objects at the first and the last look (live_look) */
	uint64_t prev;           /* objects at the look before the last */
	uint32_t stack;          /* the stack with the most of its objects alive at the last look */
	uint64_t stack_live;
	uint32_t looks, shrank;  /* looks it was in; how many of them found fewer than the one before */
};

/* The sites of a reader, kept from look to look. */
struct live_sites {
	struct live_site *v;
	uint32_t n, cap;
	struct map index; /* where << 32 | klass -> index + 1 */
	uint32_t looks;
};

void live_sites_init(struct live_sites *s);
void live_sites_free(struct live_sites *s);
/*
 * Count what r says is alive by site, and how each site changed since the last look; s->v is then sorted
 * by objects alive, most first. 0 or -ENOMEM.
 */
int live_look(struct live_sites *s, const struct alloc_reader *r);
/*
 * A site that only grew: three samples' worth (interval objects each) or more at the last look than at its
 * first, and fewer at none than at the one before.
 */
int live_site_growing(const struct live_site *site, uint64_t interval);
/* "path:line Class" of a site (the frame's own name when it has no file). */
void live_site_label(const struct alloc_reader *r, const struct live_site *site, char *out, size_t cap);
/* Print the site's stack (its stack with the most objects alive), innermost first, at most depth frames. */
void live_site_stack(FILE *f, const struct alloc_reader *r, const struct live_site *site, uint32_t depth);

#endif
