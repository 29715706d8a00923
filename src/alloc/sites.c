/* sites.c: allocations by site over a sliding window of looks at an allocation profile (top --mode alloc). */
#include "sites.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

int alloc_window_init(struct alloc_window *w, uint32_t looks)
{
	memset(w, 0, sizeof(*w));
	w->looks = looks ? looks : 1;
	map_init(&w->index);
	w->snap = calloc(w->looks, sizeof(*w->snap));
	return w->snap ? 0 : -ENOMEM;
}

void alloc_window_free(struct alloc_window *w)
{
	for (uint32_t i = 0; w->snap && i < w->looks; i++) {
		free(w->snap[i].objects);
		free(w->snap[i].bytes);
	}
	free(w->snap);
	map_free(&w->index);
	memset(w, 0, sizeof(*w));
}

static int by_objects(const void *a, const void *b)
{
	const struct alloc_site_row *x = a, *y = b;
	if (x->objects != y->objects)
		return x->objects < y->objects ? 1 : -1;
	return (x->bytes < y->bytes) - (x->bytes > y->bytes);
}

static int by_bytes_first(const void *a, const void *b)
{
	const struct alloc_site_row *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	return (x->objects < y->objects) - (x->objects > y->objects);
}

int alloc_window_look(struct alloc_window *w, const struct profile *p, uint64_t now_ns, uint64_t start_ns,
		      int by_bytes, struct alloc_site_row **rows, uint32_t *n, uint64_t *span_ns, uint64_t *objects,
		      uint64_t *bytes)
{
	*rows = NULL;
	*n = 0;
	*objects = *bytes = 0;
	/* the oldest look kept (when the window is full: the one this look takes the place of) */
	const struct alloc_snap *old = w->have == w->looks ? &w->snap[w->next] : w->have ? &w->snap[0] : NULL;
	*span_ns = now_ns - (old ? old->at_ns : start_ns);
	uint64_t *objs = malloc((p->nstacks ? p->nstacks : 1) * sizeof(*objs));
	uint64_t *byts = malloc((p->nstacks ? p->nstacks : 1) * sizeof(*byts));
	struct alloc_site_row *v = NULL;
	uint32_t nv = 0, cap = 0;
	int err = objs && byts ? 0 : -ENOMEM;
	map_clear(&w->index);
	for (uint32_t st = 0; !err && st < p->nstacks; st++) {
		objs[st] = profile_stack_objects(p, st);
		byts[st] = profile_stack_bytes(p, st);
		uint64_t o = objs[st] - (old && st < old->n ? old->objects[st] : 0);
		uint64_t b = byts[st] - (old && st < old->n ? old->bytes[st] : 0);
		uint32_t where, klass;
		if (!o || alloc_stack_site(p, st, &where, &klass))
			continue;
		uint64_t key = (uint64_t)where << 32 | klass, *hit = map_get(&w->index, key);
		if (!hit) {
			if (nv == cap) {
				cap = cap ? cap * 2 : 64;
				struct alloc_site_row *g = realloc(v, cap * sizeof(*g));
				if (!g) {
					err = -ENOMEM;
					break;
				}
				v = g;
			}
			v[nv] = (struct alloc_site_row){ .where = where, .klass = klass, .stack = st };
			if ((err = map_put(&w->index, key, nv + 1)))
				break;
			hit = map_get(&w->index, key);
			nv++;
		}
		struct alloc_site_row *r = &v[*hit - 1];
		r->objects += o;
		r->bytes += b;
		if (o > r->stack_objects)
			r->stack = st, r->stack_objects = o;
		*objects += o;
		*bytes += b;
	}
	if (err) {
		free(objs);
		free(byts);
		free(v);
		return err;
	}
	qsort(v, nv, sizeof(*v), by_bytes ? by_bytes_first : by_objects);
	/* keep this look in the place of the oldest */
	struct alloc_snap *s = &w->snap[w->next];
	free(s->objects);
	free(s->bytes);
	*s = (struct alloc_snap){ objs, byts, p->nstacks, now_ns };
	w->next = (w->next + 1) % w->looks;
	if (w->have < w->looks)
		w->have++;
	*rows = v;
	*n = nv;
	return 0;
}
