/* alloc.c: an allocation profile: the agent's ring of sampled allocations read into a profile. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../agent/client.h"
#include "../agent/proto.h"
#include "../agent/trace_print.h"
#include "../lib/err.h"
#include "alloc.h"

int alloc_reader_init(struct alloc_reader *r, struct profile *p, int fd, int threads_root)
{
	memset(r, 0, sizeof(*r));
	r->h = trace_map_ring(fd, &r->map_len);
	if (!r->h)
		return ERR_CORRUPT;
	ring_cons_init(&r->rc, r->h);
	map_init(&r->frames);
	r->p = p;
	r->threads_root = threads_root;
	p->kind = PROFILE_ALLOCS;
	p->keep_samples = p->keep_samples || p->keep_samples_all;
	return 0;
}

int alloc_reader_open(struct alloc_reader *r, struct profile *p, struct agent_conn *c, uint64_t interval,
		      unsigned flags, int threads_root, int timeout_ms, char **reply)
{
	char settings[96];
	int live = (flags & ALLOC_LIVE) != 0;
	snprintf(settings, sizeof(settings), "interval=%llu buffer=%u%s%s", (unsigned long long)interval, 8u << 20,
		 live ? " live=1" : "", flags & ALLOC_NO_WINDOWS ? " windows=0" : "");
	int fd = -1;
	*reply = NULL;
	int err = agent_request(c, AGENT_ALLOCS, settings, strlen(settings), -1, timeout_ms, reply, NULL, &fd);
	if (!err)
		err = fd < 0 ? ERR_CORRUPT : alloc_reader_init(r, p, fd, threads_root);
	if (fd >= 0)
		close(fd);
	if (!err && live)
		alloc_reader_follow(r);
	return err;
}

void alloc_reader_follow(struct alloc_reader *r)
{
	r->follow = 1;
	map_init(&r->alive);
}

void alloc_reader_free(struct alloc_reader *r)
{
	if (r->h)
		munmap(r->h, r->map_len);
	map_free(&r->frames);
	map_free(&r->alive);
	free(r->followed);
	free(r->live);
	free(r->live_bytes);
	free(r->names);
	free(r->stack);
	memset(r, 0, sizeof(*r));
}

uint64_t alloc_reader_dropped(const struct alloc_reader *r)
{
	return r->h ? __atomic_load_n(&r->h->dropped, __ATOMIC_ACQUIRE) : 0;
}

/* Name id (agent's) as text name and path of this kind. */
static int set_name(struct alloc_reader *r, uint32_t id, const char *name, size_t nl, const char *path, size_t pl,
		    uint32_t kind)
{
	if (!id || id > (1u << 26))
		return ERR_CORRUPT;
	if (id >= r->nnames) {
		uint32_t n = r->nnames ? r->nnames : 256;
		while (n <= id)
			n *= 2;
		struct alloc_name *v = realloc(r->names, n * sizeof(*v));
		if (!v)
			return -ENOMEM;
		memset(v + r->nnames, 0, (n - r->nnames) * sizeof(*v));
		r->names = v;
		r->nnames = n;
	}
	int64_t a = strtab_intern(&r->p->strs, name, nl), b = strtab_intern(&r->p->strs, path, pl);
	if (a < 0 || b < 0)
		return a < 0 ? (int)a : (int)b;
	r->names[id] = (struct alloc_name){ (uint32_t)a, (uint32_t)b, kind, 1 };
	return 0;
}

static const struct alloc_name *name_of(const struct alloc_reader *r, uint32_t id)
{
	return id < r->nnames && r->names[id].known ? &r->names[id] : NULL;
}

/* The profile's frame for the agent's frame id at line (path and line another frame's for a C method). */
static int64_t frame_at(struct alloc_reader *r, const struct alloc_name *n, uint32_t id, uint32_t path, int32_t line)
{
	uint64_t key = (uint64_t)id << 32 | (uint32_t)line;
	uint64_t *hit = map_get(&r->frames, key);
	if (hit && n->kind != PROFILE_FRAME_CFUNC)
		return (int64_t)*hit - 1;
	const struct strtab *s = &r->p->strs;
	int64_t f = profile_frame(r->p, strtab_get(s, n->name), strtab_get(s, path), line, n->kind);
	if (f >= 0 && n->kind != PROFILE_FRAME_CFUNC) {
		int err = map_put(&r->frames, key, (uint64_t)f + 1);
		if (err)
			return err;
	}
	return f;
}

/* Sample id's object, of stack, is alive. */
static int follow(struct alloc_reader *r, uint64_t id, uint32_t stack, uint64_t bytes)
{
	if (stack >= r->live_cap) {
		uint32_t n = r->live_cap ? r->live_cap : 64;
		while (n <= stack)
			n *= 2;
		uint64_t *a = realloc(r->live, n * sizeof(*a));
		if (a)
			r->live = a;
		uint64_t *b = a ? realloc(r->live_bytes, n * sizeof(*b)) : NULL;
		if (!b)
			return -ENOMEM;
		r->live_bytes = b;
		memset(r->live + r->live_cap, 0, (n - r->live_cap) * sizeof(*a));
		memset(r->live_bytes + r->live_cap, 0, (n - r->live_cap) * sizeof(*b));
		r->live_cap = n;
	}
	if (r->nfollowed == r->followed_cap) {
		uint64_t cap = r->followed_cap ? r->followed_cap * 2 : 1024;
		struct alloc_followed *v = realloc(r->followed, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		r->followed = v;
		r->followed_cap = cap;
	}
	r->followed[r->nfollowed] = (struct alloc_followed){ stack, r->epoch, bytes, id };
	r->live[stack]++;
	r->live_bytes[stack] += bytes;
	return map_put(&r->alive, id, ++r->nfollowed);
}

/* Sample id's object was freed. */
static void unfollow(struct alloc_reader *r, uint64_t id)
{
	uint64_t *v = r->follow ? map_get(&r->alive, id) : NULL;
	if (!v || *v == UINT64_MAX) { /* (a sample never read: the ring was full then) */
		r->free_unknown++;
		return;
	}
	struct alloc_followed *f = &r->followed[*v - 1];
	r->live[f->stack]--;
	r->live_bytes[f->stack] -= f->bytes;
	f->stack = UINT32_MAX;
	*v = UINT64_MAX; /* (the map has no removal: an id is never reused) */
	r->freed++;
}

int alloc_reader_compact(struct alloc_reader *r)
{
	uint64_t alive = r->samples - r->freed;
	if (!r->follow || alive * 2 > r->nfollowed)
		return 0;
	uint64_t n = 0;
	map_clear(&r->alive);
	for (uint64_t i = 0; i < r->nfollowed; i++) {
		if (r->followed[i].stack == UINT32_MAX)
			continue;
		r->followed[n] = r->followed[i];
		if (map_put(&r->alive, r->followed[n].id, n + 1))
			return -ENOMEM;
		n++;
	}
	r->nfollowed = n;
	return 0;
}

static int add_sample(struct alloc_reader *r, const struct ring_alloc *a, const struct ring_alloc_frame *fr)
{
	struct profile *p = r->p;
	const struct alloc_name *cls = name_of(r, a->klass);
	uint32_t need = a->nframes + 3;
	if (need > r->stack_cap) {
		uint32_t *v = realloc(r->stack, need * sizeof(*v));
		if (!v)
			return -ENOMEM;
		r->stack = v;
		r->stack_cap = need;
	}
	uint32_t n = 0;
	if (r->threads_root) {
		char label[48];
		snprintf(label, sizeof(label), "thread %u", a->tid);
		int64_t f = profile_frame(p, label, "", 0, PROFILE_FRAME_THREAD);
		if (f < 0)
			return (int)f;
		r->stack[n++] = (uint32_t)f;
	}
	if (a->truncated) {
		int64_t f = profile_frame(p, "(truncated)", "", 0, PROFILE_FRAME_TRUNCATED);
		if (f < 0)
			return (int)f;
		r->stack[n++] = (uint32_t)f;
	}
	/* Outermost first; a C method runs at its caller's line, as in Ruby's own backtraces. */
	uint32_t path = 0;
	int32_t line = 0;
	int have_caller = 0;
	for (uint32_t i = a->nframes; i-- > 0;) {
		const struct alloc_name *nm = name_of(r, fr[i].id);
		if (!nm || nm->kind == PROFILE_FRAME_CLASS) {
			r->unnamed++;
			continue;
		}
		if (i == a->nframes - 1 && nm->kind == PROFILE_FRAME_RUBY && fr[i].line <= 0)
			continue; /* the frame Ruby starts the program in (rb_profile_frames gives it, lineless, before 3.3) */
		if (nm->kind == PROFILE_FRAME_RUBY) {
			path = nm->path;
			line = fr[i].line;
			have_caller = 1;
		}
		int64_t f = frame_at(r, nm, fr[i].id, nm->kind == PROFILE_FRAME_RUBY ? nm->path : path,
				     nm->kind == PROFILE_FRAME_RUBY ? fr[i].line : have_caller ? line : -1);
		if (f < 0)
			return (int)f;
		r->stack[n++] = (uint32_t)f;
	}
	int64_t leaf = profile_frame(p, cls && cls->kind == PROFILE_FRAME_CLASS ? strtab_get(&p->strs, cls->name)
										 : "(unknown class)",
				     "", 0, PROFILE_FRAME_CLASS);
	if (leaf < 0)
		return (int)leaf;
	r->stack[n++] = (uint32_t)leaf;
	int64_t st = profile_stack(p, r->stack, n);
	if (st < 0)
		return (int)st;
	int32_t tid = (int32_t)a->tid;
	int err = profile_thread(p, tid, "");
	uint64_t t = a->ts > r->t0 ? a->ts - r->t0 : 0;
	err = err ?: profile_add_alloc(p, (uint32_t)st, t, tid, a->bytes);
	r->samples++;
	r->truncated += a->truncated != 0;
	if (!err && r->follow)
		err = follow(r, a->id, (uint32_t)st, a->bytes);
	return err;
}

uint64_t alloc_weight(const struct ring_allocs *first, const struct ring_allocs *now)
{
	if (now->den <= 1 || now->seen <= first->seen || now->vm_total <= first->vm_total)
		return now->interval;
	double in = (double)now->interval / (double)now->den;
	double w = in * (double)(now->vm_total - first->vm_total) / (double)(now->seen - first->seen) + 0.5;
	return w < 1 ? 1 : w > 1e15 ? (uint64_t)1e15 : (uint64_t)w;
}

static int one(struct alloc_reader *r, const struct ring_rec *rec)
{
	size_t len = rec->len;
	switch (rec->type) {
	case RING_NAME: {
		const struct ring_name *nm = (const void *)rec;
		if (len < sizeof(*nm) || nm->len > len - sizeof(*nm))
			return ERR_CORRUPT;
		return set_name(r, nm->id, (const char *)(nm + 1), nm->len, "", 0, PROFILE_FRAME_CLASS);
	}
	case RING_FRAME: {
		const struct ring_frame *fr = (const void *)rec;
		if (len < sizeof(*fr) || fr->name_len > len - sizeof(*fr) || fr->path_len > len - sizeof(*fr) - fr->name_len)
			return ERR_CORRUPT;
		const char *s = (const char *)(fr + 1);
		return set_name(r, fr->id, s, fr->name_len, s + fr->name_len, fr->path_len,
				fr->kind == RING_FRAME_CFUNC ? PROFILE_FRAME_CFUNC : PROFILE_FRAME_RUBY);
	}
	case RING_ALLOC: {
		const struct ring_alloc *a = (const void *)rec;
		if (len < sizeof(*a) || a->nframes > (len - sizeof(*a)) / sizeof(struct ring_alloc_frame))
			return ERR_CORRUPT;
		return add_sample(r, a, (const struct ring_alloc_frame *)(a + 1));
	}
	case RING_FREE: {
		const struct ring_free *f = (const void *)rec;
		if (len < sizeof(*f))
			return ERR_CORRUPT;
		unfollow(r, f->id);
		return 0;
	}
	case RING_ALLOCS: {
		const struct ring_allocs *c = (const void *)rec;
		if (len < sizeof(*c))
			return ERR_CORRUPT;
		if (!r->started) {
			r->first = *c;
			r->t0 = c->ts;
			r->started = 1;
			r->p->alloc_interval = c->interval;
		}
		r->last = *c;
		r->ended |= rec->flags & 1;
		r->p->alloc_total = c->vm_total >= r->first.vm_total ? c->vm_total - r->first.vm_total : 0;
		r->p->alloc_interval = alloc_weight(&r->first, c);
		return 0;
	}
	default:
		return 0; /* (a newer agent's) */
	}
}

long alloc_reader_drain(struct alloc_reader *r)
{
	long n = 0;
	int bad = 0;
	const struct ring_rec *rec;
	while (n < ALLOC_DRAIN_BATCH && (rec = ring_peek(&r->rc, &bad))) {
		int err = one(r, rec);
		if (err)
			return err;
		ring_release(&r->rc, rec);
		n++;
	}
	ring_publish(&r->rc);
	return bad ? ERR_CORRUPT : n;
}

int alloc_reader_drain_all(struct alloc_reader *r)
{
	long n;
	while ((n = alloc_reader_drain(r)) == ALLOC_DRAIN_BATCH)
		;
	return n < 0 ? (int)n : 0;
}

int alloc_reader_drain_ctx(void *ctx)
{
	return alloc_reader_drain_all(ctx);
}

int alloc_stack_site(const struct profile *p, uint32_t st, uint32_t *where, uint32_t *klass)
{
	const struct profile_stack *k = &p->stacks[st];
	if (k->len < 2 || p->frames[p->pool[k->start + k->len - 1]].kind != PROFILE_FRAME_CLASS)
		return -1;
	*klass = p->pool[k->start + k->len - 1];
	*where = p->pool[k->start + k->len - 2];
	return 0;
}

void alloc_site_label(const struct profile *p, uint32_t where, uint32_t klass, char *out, size_t cap)
{
	const struct profile_frame *f = &p->frames[where];
	const char *path = strtab_get(&p->strs, f->path), *cls = strtab_get(&p->strs, p->frames[klass].name);
	if (*path && f->line > 0)
		snprintf(out, cap, "%s:%d %s", path, f->line, cls);
	else
		snprintf(out, cap, "%s %s", strtab_get(&p->strs, f->name), cls);
}
