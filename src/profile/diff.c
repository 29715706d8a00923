/* diff.c: two profiles compared, BASE's stacks and NEW's in one set of frames (report --diff). */
#include "diff.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/vec.h"

/* Intern stack i of q into d->p, its frames by their text: its id, or negative. */
static int64_t intern(struct profile_diff *d, const struct profile *q, uint32_t i, uint32_t **buf, size_t *cap)
{
	const struct profile_stack *s = &q->stacks[i];
	uint32_t *b = vec_grow(*buf, s->len + 1, cap, sizeof(*b));
	if (!b)
		return -ENOMEM;
	*buf = b;
	for (uint32_t j = 0; j < s->len; j++) {
		const struct profile_frame *fr = &q->frames[q->pool[s->start + j]];
		int64_t id = profile_frame(&d->p, strtab_get(&q->strs, fr->name), strtab_get(&q->strs, fr->path), fr->line,
					   fr->kind);
		if (id < 0)
			return id;
		b[j] = (uint32_t)id;
	}
	return profile_stack(&d->p, b, s->len);
}

int profile_diff_build(struct profile_diff *d, const struct profile *base, const struct profile *newer)
{
	memset(d, 0, sizeof(*d));
	int err = profile_init(&d->p);
	if (err)
		return err;
	struct profile *p = &d->p;
	p->kind = newer->kind;
	p->by_bytes = newer->by_bytes;
	p->alloc_interval = 1; /* (weights are stored as they weigh) */
	p->alloc_live = newer->alloc_live;
	p->pid = newer->pid;
	p->rate_hz = newer->rate_hz;
	p->duration_ns = newer->duration_ns;
	p->start_ns = newer->start_ns;
	uint32_t *buf = NULL;
	size_t cap = 0, base_cap = 0;
	if (newer->kind != base->kind)
		err = -EINVAL; /* (the caller says which is which) */
	for (int which = 0; which < 2 && !err; which++) {
		const struct profile *q = which ? base : newer;
		for (uint32_t i = 0; i < q->nstacks && !err; i++) {
			uint64_t w = profile_stack_weight(q, i);
			if (!w)
				continue;
			int64_t id = intern(d, q, i, &buf, &cap);
			if (id < 0) {
				err = (int)id;
				break;
			}
			if ((size_t)id >= base_cap) { /* (base: one word per stack of p, 0 until BASE has it) */
				size_t ncap = base_cap ? base_cap * 2 : 1024;
				while (ncap <= (size_t)id)
					ncap *= 2;
				uint64_t *b = realloc(d->base, ncap * sizeof(*b));
				if (b)
					d->base = b;
				uint64_t(*v)[2] = b ? realloc(d->base_vals, ncap * sizeof(*v)) : NULL;
				if (!v) {
					err = -ENOMEM;
					break;
				}
				d->base_vals = v;
				memset(b + base_cap, 0, (ncap - base_cap) * sizeof(*b));
				memset(v + base_cap, 0, (ncap - base_cap) * sizeof(*v));
				base_cap = ncap;
			}
			if (which) {
				d->base[id] += w;
				d->base_vals[id][0] += p->kind == PROFILE_ALLOCS ? profile_stack_objects(q, i) : w;
				d->base_vals[id][1] += profile_stack_bytes(q, i);
				d->base_total += w;
			} else {
				p->stacks[id].count += p->kind == PROFILE_ALLOCS ? profile_stack_objects(q, i) : w;
				p->stacks[id].bytes += profile_stack_bytes(q, i);
				d->new_total += w;
			}
		}
	}
	free(buf);
	if (!err)
		profile_restate(p);
	return err;
}

void profile_diff_free(struct profile_diff *d)
{
	profile_free(&d->p);
	free(d->base);
	free(d->base_vals);
	memset(d, 0, sizeof(*d));
}

double profile_diff_pp(const struct profile_diff *d, uint64_t newer, uint64_t base)
{
	double n = d->new_total ? 100.0 * (double)newer / (double)d->new_total : 0;
	double b = d->base_total ? 100.0 * (double)base / (double)d->base_total : 0;
	return n - b;
}
