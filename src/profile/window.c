/* window.c: the samples of the latest while, in a profile renewed as it grows (serve's requests, top's table). */
#include "window.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define RENEW_FRAMES 200000        /* a new profile past this many frames... */
#define RENEW_POOL (16u << 20)     /* ...or this many stack entries */
#define RENEW_NS 3600000000000ULL  /* ...or after an hour, so threads and stacks long gone do not pile up */

static struct profile *new_profile(uint32_t rate_hz)
{
	struct profile *p = calloc(1, sizeof(*p));
	if (!p || profile_init(p)) {
		free(p);
		return NULL;
	}
	p->keep_samples = 1;
	p->rate_hz = rate_hz;
	return p;
}

static void drop_profile(struct profile *p)
{
	if (p)
		profile_free(p);
	free(p);
}

int window_init(struct window *w, uint32_t rate_hz, uint64_t now)
{
	memset(w, 0, sizeof(*w));
	w->rate_hz = rate_hz;
	w->cur_since = now;
	w->cur = new_profile(rate_hz);
	return w->cur ? 0 : -ENOMEM;
}

void window_free(struct window *w)
{
	drop_profile(w->cur);
	drop_profile(w->old);
	memset(w, 0, sizeof(*w));
}

int window_trim(struct window *w, uint64_t keep_from, uint64_t now)
{
	profile_drop_samples(w->cur, profile_sample_at(w->cur, keep_from));
	if (w->old) {
		profile_drop_samples(w->old, profile_sample_at(w->old, keep_from));
		if (!w->old->nsamples) {
			drop_profile(w->old);
			w->old = NULL;
		}
	}
	/* A new profile when this one has grown, once the one before it is gone. */
	struct profile *p = w->cur;
	if (w->old || (p->nframes < RENEW_FRAMES && p->pool_len < RENEW_POOL && now - w->cur_since < RENEW_NS))
		return 0;
	struct profile *next = new_profile(w->rate_hz);
	if (!next)
		return -ENOMEM;
	if (p->nsamples)
		w->old = p;
	else
		drop_profile(p);
	w->cur = next;
	w->cur_since = now;
	return 1;
}

void window_clear(struct window *w)
{
	profile_drop_samples(w->cur, w->cur->nsamples);
	drop_profile(w->old);
	w->old = NULL;
}

int window_copy(const struct window *w, struct profile *dst, uint64_t from, uint64_t to,
		int (*keep)(void *ctx, int32_t tid, int state), void *ctx)
{
	const struct profile *gens[2] = { w->old, w->cur };
	int err = 0;
	for (int g = 0; g < 2 && !err; g++)
		if (gens[g])
			err = profile_copy_samples(dst, gens[g], profile_sample_at(gens[g], from),
						   profile_sample_at(gens[g], to), keep, ctx);
	return err;
}
