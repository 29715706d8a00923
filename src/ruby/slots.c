/* slots.c: the walker's per-thread memory: a slot per thread, kept between samples. */
#include "slots.h"

#include <errno.h>
#include <stdlib.h>

void walk_slot_forget(struct walk_slot *w)
{
	free(w->last_cfps);
	free(w->last_frames);
	free(w->last_at);
	free(w->nat);
	w->last_cfps = NULL;
	w->last_frames = NULL;
	w->last_at = NULL;
	w->lwords.n = 0;
	w->nat = NULL;
	w->nat_n = 0;
	w->last_n = w->last_named = w->quiet = w->last_cap = 0;
}

void ruby_walk_free(struct ruby_target *t)
{
	if (!t->walk)
		return;
	for (int i = 0; i < CACHE_SLOTS; i++)
		walk_slot_forget(&t->walk->slot[i]);
	free(t->walk->buf);
	free(t->walk->at);
	free(t->walk->bth);
	free(t->walk->bcfps);
	free(t->walk->bq);
	free(t->walk->biov);
	free(t->walk->eps);
	free(t->walk->iov);
	if (t->walk->unwind)
		unwind_close(t->walk->unwind);
	free(t->walk->unwind);
	free(t->walk);
	t->walk = NULL;
}

struct walk_slot *walk_slot_of(struct walk_cache *c, uint64_t th, uint64_t now)
{
	unsigned h = (unsigned)((th * 0x9e3779b97f4a7c15ULL) >> 56);
	struct walk_slot *take = NULL;
	for (unsigned i = 0; i < SLOT_PROBES; i++) {
		struct walk_slot *w = &c->slot[(h + i) & (CACHE_SLOTS - 1)];
		if (w->th == th) {
			w->used = now;
			return w;
		}
		if (!take || (take->th && (!w->th || w->used < take->used)))
			take = w;
	}
	walk_slot_forget(take);
	*take = (struct walk_slot){ .th = th, .used = now };
	return take;
}

int walk_grow(struct walk_cache *c, size_t bytes, size_t n)
{
	if (bytes > c->cap) {
		unsigned char *b = realloc(c->buf, bytes);
		if (!b)
			return -ENOMEM;
		c->buf = b;
		c->cap = bytes;
	}
	if (n > c->n_cap) {
		void *e = realloc(c->eps, n * sizeof(*c->eps)), *v;
		if (!e)
			return -ENOMEM;
		c->eps = e;
		if (!(v = realloc(c->iov, n * sizeof(*c->iov))))
			return -ENOMEM;
		c->iov = v;
		c->n_cap = n;
	}
	return 0;
}
