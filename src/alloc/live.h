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
	/*
	 * its samples alive that were already followed at the look before the last (garbage not among them):
	 * samples, not objects, for a sample's weight changes as the agent's windows' counts come
	 */
	uint64_t old, old_first, old_last;
	uint32_t old_looks;
	uint64_t *old_seen;      /* old at each look since the third (old_looks of them) */
	uint32_t looks;          /* looks it was in */
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
int live_look(struct live_sites *s, struct alloc_reader *r);
/*
 * A site that keeps growing: counting its objects alive at a look that were followed already at the look
 * before (garbage is freed sooner), the least of them in each third of the looks is more, by a sample at
 * least, than in the third before, and the last look has three samples more than the first. A leak's
 * floor keeps rising, whatever garbage of the same site a major GC frees now and then; a full cache's
 * stays, and objects made once and kept a while (a connection's buffers) come in a step.
 */
int live_site_growing(const struct live_site *site);
/*
 * Make r's profile the objects alive now: each stack's samples and bytes those of its followed objects still
 * alive, no samples in time (heap live's last look, in any format; pprof's inuse_objects and inuse_space).
 */
void live_to_profile(struct alloc_reader *r);
/* "path:line Class" of a site (the frame's own name when it has no file). */
void live_site_label(const struct alloc_reader *r, const struct live_site *site, char *out, size_t cap);
/* Print the site's stack (its stack with the most objects alive), innermost first, at most depth frames. */
void live_site_stack(FILE *f, const struct alloc_reader *r, const struct live_site *site, uint32_t depth);

#endif
