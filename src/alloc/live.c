/* live.c: `heap live`: the sampled objects still alive, by the site that allocated them, and how each site grows. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../output/output.h"
#include "live.h"

void live_sites_init(struct live_sites *s)
{
	memset(s, 0, sizeof(*s));
	map_init(&s->index);
}

void live_sites_free(struct live_sites *s)
{
	for (uint32_t i = 0; i < s->n; i++)
		free(s->v[i].old_seen);
	free(s->v);
	map_free(&s->index);
	memset(s, 0, sizeof(*s));
}

static int by_objects(const void *a, const void *b)
{
	const struct live_site *x = a, *y = b;
	if (x->objects != y->objects)
		return x->objects < y->objects ? 1 : -1;
	return (x->bytes < y->bytes) - (x->bytes > y->bytes);
}

/* The site of stack st (its innermost frame under the class), made if new; NULL on ENOMEM or no such site. */
static struct live_site *site_of(struct live_sites *s, const struct profile *p, uint32_t st)
{
	uint32_t klass, where;
	if (alloc_stack_site(p, st, &where, &klass))
		return NULL;
	uint64_t key = (uint64_t)where << 32 | klass, *hit = map_get(&s->index, key);
	if (hit)
		return &s->v[*hit - 1];
	if (s->n == s->cap) {
		uint32_t cap = s->cap ? s->cap * 2 : 64;
		struct live_site *v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			return NULL;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n] = (struct live_site){ .where = where, .klass = klass };
	if (map_put(&s->index, key, s->n + 1))
		return NULL;
	return &s->v[s->n++];
}

int live_look(struct live_sites *s, struct alloc_reader *r)
{
	const struct profile *p = r->p;
	uint64_t every = p->alloc_interval ? p->alloc_interval : 1;
	int err = alloc_reader_compact(r);
	if (err)
		return err;
	for (uint32_t i = 0; i < s->n; i++)
		s->v[i].objects = s->v[i].bytes = s->v[i].stack_live = s->v[i].old = 0;
	/* The old ones: followed since before the look before this one (born in an epoch before the last). */
	for (uint64_t i = 0; i < r->nfollowed; i++) {
		const struct alloc_followed *f = &r->followed[i];
		if (f->stack == UINT32_MAX || f->born + 1 >= r->epoch)
			continue;
		struct live_site *site = site_of(s, p, f->stack);
		if (site)
			site->old++;
	}
	for (uint32_t st = 0; st < p->nstacks && st < r->live_cap; st++) {
		if (!r->live[st])
			continue;
		struct live_site *site = site_of(s, p, st);
		if (!site) {
			if (p->stacks[st].len < 2)
				continue;
			return -ENOMEM;
		}
		site->objects += r->live[st] * every;
		site->bytes += r->live_bytes[st] * every;
		if (r->live[st] > site->stack_live) {
			site->stack_live = r->live[st];
			site->stack = st;
		}
	}
	s->looks++;
	r->epoch++;
	for (uint32_t i = 0; i < s->n; i++) {
		struct live_site *site = &s->v[i];
		if (!site->looks)
			site->first = site->objects;
		site->looks++;
		site->prev = site->looks > 1 ? site->last : 0;
		site->last = site->objects;
		if (s->looks < 3)
			continue; /* (no object is old before the third look) */
		if (!site->old_looks)
			site->old_first = site->old;
		if (!(site->old_looks & (site->old_looks - 1))) { /* (a power of two: room for as many again) */
			uint64_t *v = realloc(site->old_seen, (site->old_looks ? site->old_looks * 2 : 1) * sizeof(*v));
			if (!v)
				return -ENOMEM;
			site->old_seen = v;
		}
		site->old_seen[site->old_looks++] = site->old;
		site->old_last = site->old;
	}
	qsort(s->v, s->n, sizeof(*s->v), by_objects);
	map_clear(&s->index);
	for (uint32_t i = 0; i < s->n; i++)
		if (map_put(&s->index, (uint64_t)s->v[i].where << 32 | s->v[i].klass, i + 1))
			return -ENOMEM;
	return 0;
}

void live_site_label(const struct alloc_reader *r, const struct live_site *site, char *out, size_t cap)
{
	alloc_site_label(r->p, site->where, site->klass, out, cap);
}

int live_site_growing(const struct live_site *site)
{
	uint32_t n = site->old_looks;
	/* (three samples more at least: one or two more alive is what any site's sampling noise gives) */
	if (n < 3 || site->old_last < site->old_first + 3)
		return 0;
	uint64_t floor[3];
	for (int k = 0; k < 3; k++) {
		uint32_t a = n * (uint32_t)k / 3, b = n * (uint32_t)(k + 1) / 3;
		floor[k] = UINT64_MAX;
		for (uint32_t i = a; i < b; i++)
			if (site->old_seen[i] < floor[k])
				floor[k] = site->old_seen[i];
	}
	return floor[1] >= floor[0] + 1 && floor[2] >= floor[1] + 1;
}

void live_site_stack(FILE *f, const struct alloc_reader *r, const struct live_site *site, uint32_t depth)
{
	const struct profile *p = r->p;
	const struct profile_stack *k = &p->stacks[site->stack];
	char label[1200];
	for (uint32_t j = k->len - 1, n = 0; j-- > 0 && n < depth; n++) { /* (under the class) */
		output_frame_label(p, p->pool[k->start + j], 1, label, sizeof(label));
		fprintf(f, "      %s\n", label);
	}
}

void live_to_profile(struct alloc_reader *r)
{
	struct profile *p = r->p;
	for (uint32_t st = 0; st < p->nstacks; st++) {
		p->stacks[st].count = st < r->live_cap ? r->live[st] : 0;
		p->stacks[st].bytes = st < r->live_cap ? r->live_bytes[st] : 0;
	}
	p->nsamples = 0;
	p->alloc_live = 1;
}
