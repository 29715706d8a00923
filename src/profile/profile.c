/* profile.c: interning frames and stacks, and counting samples. */
#include "profile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/vec.h"

/* Room in ptr (n items, cap slots) for one more, or return -ENOMEM from the caller. */
#define GROW(ptr, n, cap)                                                       \
	do {                                                                    \
		void *v_ = vec_grow((ptr), (size_t)(n), &(cap), sizeof(*(ptr))); \
		if (!v_)                                                        \
			return -ENOMEM;                                         \
		(ptr) = v_;                                                     \
	} while (0)

int profile_init(struct profile *p)
{
	memset(p, 0, sizeof(*p));
	map_init(&p->frame_index);
	map_init(&p->stack_index);
	map_init(&p->thread_index);
	return strtab_init(&p->strs);
}

void profile_free(struct profile *p)
{
	strtab_free(&p->strs);
	free(p->frames);
	free(p->pool);
	free(p->stacks);
	free(p->samples);
	free(p->threads);
	free(p->thread_states);
	map_free(&p->thread_index);
	map_free(&p->frame_index);
	map_free(&p->stack_index);
	memset(p, 0, sizeof(*p));
}

static int frame_eq(const struct profile_frame *a, const struct profile_frame *b)
{
	return a->name == b->name && a->path == b->path && a->line == b->line && a->kind == b->kind;
}

static int64_t intern_frame(struct profile *p, const struct profile_frame *f)
{
	for (uint64_t seed = 0;; seed++) {
		uint64_t h = map_hash_bytes(f, sizeof(*f), seed);
		uint64_t *hit = map_get(&p->frame_index, h);
		if (hit && frame_eq(&p->frames[*hit - 1], f))
			return (int64_t)(*hit - 1);
		if (hit)
			continue;
		GROW(p->frames, p->nframes, p->frames_cap);
		p->frames[p->nframes] = *f;
		int err = map_put(&p->frame_index, h, (uint64_t)p->nframes + 1);
		if (err)
			return err;
		return p->nframes++;
	}
}

int64_t profile_frame(struct profile *p, const char *name, const char *path, int32_t line, uint32_t kind)
{
	int64_t n = strtab_intern(&p->strs, name, strlen(name)), s = strtab_intern(&p->strs, path, strlen(path));
	if (n < 0 || s < 0)
		return n < 0 ? n : s;
	struct profile_frame f = { (uint32_t)n, (uint32_t)s, line, kind };
	return intern_frame(p, &f);
}

static uint32_t state_of(const struct profile *p, const uint32_t *f, uint32_t n);

int64_t profile_stack(struct profile *p, const uint32_t *frames, uint32_t n)
{
	for (uint64_t seed = 0;; seed++) {
		uint64_t h = map_hash_bytes(frames, n * sizeof(*frames), seed);
		uint64_t *hit = map_get(&p->stack_index, h);
		if (hit) {
			const struct profile_stack *s = &p->stacks[*hit - 1];
			if (s->len == n && !memcmp(p->pool + s->start, frames, n * sizeof(*frames)))
				return (int64_t)(*hit - 1);
			continue;
		}
		GROW(p->pool, p->pool_len + n, p->pool_cap); /* room for its n frames (and one more) */
		GROW(p->stacks, p->nstacks, p->stacks_cap);
		memcpy(p->pool + p->pool_len, frames, n * sizeof(*frames));
		p->stacks[p->nstacks] = (struct profile_stack){ (uint32_t)p->pool_len, n, 0, state_of(p, frames, n), 0 };
		p->pool_len += n;
		int err = map_put(&p->stack_index, h, (uint64_t)p->nstacks + 1);
		if (err)
			return err;
		return p->nstacks++;
	}
}

int profile_add(struct profile *p, uint32_t stack, uint64_t t_ns, int32_t tid)
{
	if (stack >= p->nstacks)
		return -EINVAL;
	p->stacks[stack].count++;
	int err = profile_count_states(p, tid, stack, 1);
	if (err || !p->keep_samples)
		return err;
	GROW(p->samples, p->nsamples, p->samples_cap);
	p->samples[p->nsamples++] = (struct profile_sample){ t_ns, tid, stack };
	return 0;
}

int profile_add_alloc(struct profile *p, uint32_t stack, uint64_t t_ns, int32_t tid, uint64_t bytes)
{
	int err = profile_add(p, stack, t_ns, tid);
	if (!err)
		p->stacks[stack].bytes += bytes;
	return err;
}

uint64_t profile_stack_objects(const struct profile *p, uint32_t stack)
{
	return p->stacks[stack].count * (p->kind == PROFILE_ALLOCS && p->alloc_interval ? p->alloc_interval : 1);
}

uint64_t profile_stack_bytes(const struct profile *p, uint32_t stack)
{
	return p->stacks[stack].bytes * (p->alloc_interval ? p->alloc_interval : 1);
}

uint64_t profile_stack_weight(const struct profile *p, uint32_t stack)
{
	if (p->kind != PROFILE_ALLOCS)
		return p->stacks[stack].count;
	return p->by_bytes ? profile_stack_bytes(p, stack) : profile_stack_objects(p, stack);
}

const char *profile_unit(const struct profile *p)
{
	return p->kind != PROFILE_ALLOCS ? "samples" : p->by_bytes ? "bytes" : "objects";
}

uint64_t profile_total_weight(const struct profile *p)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < p->nstacks; i++)
		n += profile_stack_weight(p, i);
	return n;
}

int64_t profile_thread_index(struct profile *p, int32_t tid)
{
	uint64_t *hit = map_get(&p->thread_index, (uint32_t)tid);
	if (hit)
		return (int64_t)*hit - 1;
	size_t states_cap = p->threads_cap;
	GROW(p->threads, p->nthreads, p->threads_cap);
	if (p->threads_cap != states_cap || !p->thread_states) {
		void *v = realloc(p->thread_states, p->threads_cap * sizeof(*p->thread_states));
		if (!v)
			return -ENOMEM;
		p->thread_states = v;
	}
	int err = map_put(&p->thread_index, (uint32_t)tid, (uint64_t)p->nthreads + 1);
	if (err)
		return err;
	p->threads[p->nthreads] = (struct profile_thread){ tid, 0 };
	memset(p->thread_states[p->nthreads], 0, sizeof(*p->thread_states));
	return p->nthreads++;
}

int32_t profile_mn_thread(struct profile *p)
{
	return p->n_mn_threads < INT32_MAX ? -++p->n_mn_threads : 0;
}

void profile_thread_ref(int32_t tid, char *out, size_t cap)
{
	if (tid < 0)
		snprintf(out, cap, "M:N thread %d", -(int)tid);
	else
		snprintf(out, cap, "tid %d", (int)tid);
}

int profile_thread(struct profile *p, int32_t tid, const char *name)
{
	int64_t i = profile_thread_index(p, tid);
	if (i < 0)
		return (int)i;
	if (p->threads[i].name || !*name)
		return 0;
	int64_t id = strtab_intern(&p->strs, name, strlen(name));
	if (id < 0)
		return (int)id;
	p->threads[i].name = (uint32_t)id;
	return 0;
}

int profile_count_states(struct profile *p, int32_t tid, uint32_t stack, uint64_t n)
{
	int64_t i = profile_thread_index(p, tid);
	if (i < 0)
		return (int)i;
	p->thread_states[i][profile_stack_state(p, stack)] += n;
	return 0;
}

uint64_t profile_thread_samples(const struct profile *p, uint32_t i)
{
	uint64_t n = 0;
	for (int k = 0; k < PROFILE_STATES; k++)
		n += p->thread_states[i][k];
	return n;
}

static const struct {
	const char *name, *label, *frame;
} STATES[PROFILE_STATES] = {
	[PROFILE_STATE_RUNNING] = { "running", "running", "(running without GVL)" },
	[PROFILE_STATE_GVL] = { "GVL wait", "gvl_wait", "(waiting for GVL)" },
	[PROFILE_STATE_BLOCKED] = { "blocked", "blocked", "(blocked" },
	[PROFILE_STATE_IDLE] = { "idle", "idle", "(sleeping)" },
	[PROFILE_STATE_GC] = { "GC", "gc", NULL },
};

const char *profile_state_name(int state)
{
	return state >= 0 && state < PROFILE_STATES ? STATES[state].name : "?";
}

const char *profile_state_label(int state)
{
	return state >= 0 && state < PROFILE_STATES ? STATES[state].label : "unknown";
}

const char *profile_state_frame(int state)
{
	return state >= 0 && state < PROFILE_STATES ? STATES[state].frame : NULL;
}

/* The state frames n of a new stack show: read once, when it is interned. */
static uint32_t state_of(const struct profile *p, const uint32_t *f, uint32_t n)
{
	int64_t i = (int64_t)n - 1;
	const struct profile_frame *state = i >= 0 && p->frames[f[i]].kind == PROFILE_FRAME_STATE ? &p->frames[f[i--]] : NULL;
	while (i >= 0 && p->frames[f[i]].kind == PROFILE_FRAME_NATIVE)
		i--; /* --native: the frames a C method called, over it */
	const struct profile_frame *top = i >= 0 ? &p->frames[f[i]] : NULL;
	int waits = top && top->kind == PROFILE_FRAME_WAIT;
	if (!state)
		return top && top->kind == PROFILE_FRAME_GC ? PROFILE_STATE_GC : waits ? PROFILE_STATE_IDLE : PROFILE_STATE_RUNNING;
	const char *name = strtab_get(&p->strs, state->name);
	const char *blocked = STATES[PROFILE_STATE_BLOCKED].frame;
	if (!strncmp(name, blocked, strlen(blocked)))
		/* Blocked in a method that waits (IO.select, a lock): idle, not slow I/O. */
		return waits ? PROFILE_STATE_IDLE : PROFILE_STATE_BLOCKED;
	for (uint32_t k = 0; k < PROFILE_STATES; k++)
		if (STATES[k].frame && !strcmp(name, STATES[k].frame))
			return k;
	return PROFILE_STATE_RUNNING;
}

void profile_restate(struct profile *p)
{
	for (uint32_t i = 0; i < p->nstacks; i++)
		p->stacks[i].state = state_of(p, p->pool + p->stacks[i].start, p->stacks[i].len);
}

int profile_stack_state(const struct profile *p, uint32_t stack)
{
	return (int)p->stacks[stack].state;
}

int64_t profile_stack_syscall(const struct profile *p, uint32_t stack)
{
	const struct profile_stack *s = &p->stacks[stack];
	if (!s->len)
		return -1;
	/* the leaf's name first: most stacks are not blocked, and it is cheaper than their state */
	uint32_t leaf = p->pool[s->start + s->len - 1];
	const char *name = strtab_get(&p->strs, p->frames[leaf].name);
	if (p->frames[leaf].kind != PROFILE_FRAME_STATE ||
	    strncmp(name, STATES[PROFILE_STATE_BLOCKED].frame, strlen(STATES[PROFILE_STATE_BLOCKED].frame)) ||
	    strncmp(name + strlen(STATES[PROFILE_STATE_BLOCKED].frame), ": ", 2))
		return -1;
	return profile_stack_state(p, stack) == PROFILE_STATE_BLOCKED ? (int64_t)leaf : -1;
}


const char *profile_thread_name(const struct profile *p, int32_t tid)
{
	uint64_t *hit = map_get(&p->thread_index, (uint32_t)tid);
	return hit ? strtab_get(&p->strs, p->threads[*hit - 1].name) : "";
}

uint64_t profile_total(const struct profile *p)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < p->nstacks; i++)
		n += p->stacks[i].count;
	return n;
}

int profile_merge(struct profile *dst, const struct profile *src)
{
	return profile_merge_states(dst, src, PROFILE_ALL_STATES);
}

int profile_merge_states(struct profile *dst, const struct profile *src, unsigned states)
{
	uint32_t *ids = malloc((src->nframes + 1) * sizeof(*ids)), *buf = NULL;
	uint32_t cap = 0;
	int err = ids ? 0 : -ENOMEM;
	for (uint32_t i = 0; !err && i < src->nframes; i++) {
		const struct profile_frame *f = &src->frames[i];
		int64_t id = profile_frame(dst, strtab_get(&src->strs, f->name), strtab_get(&src->strs, f->path), f->line,
					   f->kind);
		if (id < 0)
			err = (int)id;
		else
			ids[i] = (uint32_t)id;
	}
	for (uint32_t i = 0; !err && i < src->nstacks; i++) {
		const struct profile_stack *s = &src->stacks[i];
		if (!s->count || (states != PROFILE_ALL_STATES && !(states & 1u << profile_stack_state(src, i))))
			continue;
		if (s->len > cap) {
			uint32_t *b = realloc(buf, s->len * sizeof(*b));
			if (!b) {
				err = -ENOMEM;
				break;
			}
			buf = b;
			cap = s->len;
		}
		for (uint32_t j = 0; j < s->len; j++)
			buf[j] = ids[src->pool[s->start + j]];
		int64_t st = profile_stack(dst, buf, s->len);
		if (st < 0)
			err = (int)st;
		else {
			dst->stacks[st].count += s->count;
			dst->stacks[st].bytes += s->bytes;
		}
	}
	for (uint32_t i = 0; !err && i < src->nthreads; i++) {
		int64_t t = profile_thread_index(dst, src->threads[i].tid);
		err = t < 0 ? (int)t : profile_thread(dst, src->threads[i].tid, strtab_get(&src->strs, src->threads[i].name));
		for (int k = 0; !err && k < PROFILE_STATES && src->thread_states; k++)
			dst->thread_states[t][k] += src->thread_states[i][k];
	}
	free(ids);
	free(buf);
	return err;
}

/* dst's id of src's stack, interned by its frames' text on first use (maps: src id -> dst id + 1). */
static int64_t copy_stack(struct profile *dst, const struct profile *src, uint32_t stack, struct map *frames,
			  struct map *stacks, uint32_t **buf, uint32_t *cap)
{
	uint64_t *hit = map_get(stacks, stack);
	if (hit)
		return (int64_t)*hit - 1;
	const struct profile_stack *s = &src->stacks[stack];
	if (s->len > *cap) {
		uint32_t *b = realloc(*buf, s->len * sizeof(*b));
		if (!b)
			return -ENOMEM;
		*buf = b;
		*cap = s->len;
	}
	for (uint32_t j = 0; j < s->len; j++) {
		uint32_t f = src->pool[s->start + j];
		uint64_t *fh = map_get(frames, f);
		if (fh) {
			(*buf)[j] = (uint32_t)(*fh - 1);
			continue;
		}
		const struct profile_frame *fr = &src->frames[f];
		int64_t id = profile_frame(dst, strtab_get(&src->strs, fr->name), strtab_get(&src->strs, fr->path),
					   fr->line, fr->kind);
		if (id < 0 || map_put(frames, f, (uint64_t)id + 1))
			return id < 0 ? id : -ENOMEM;
		(*buf)[j] = (uint32_t)id;
	}
	int64_t id = profile_stack(dst, *buf, s->len);
	if (id >= 0 && map_put(stacks, stack, (uint64_t)id + 1))
		return -ENOMEM;
	return id;
}

int profile_copy_samples(struct profile *dst, const struct profile *src, uint64_t from, uint64_t to,
			 int (*keep)(void *ctx, int32_t tid, int state), void *ctx)
{
	struct map frames, stacks, named;
	map_init(&frames);
	map_init(&stacks);
	map_init(&named);
	uint32_t *buf = NULL, cap = 0;
	int err = 0;
	for (uint64_t i = from; i < to && i < src->nsamples && !err; i++) {
		const struct profile_sample *s = &src->samples[i];
		if (keep && !keep(ctx, s->tid, profile_stack_state(src, s->stack)))
			continue;
		int64_t st = copy_stack(dst, src, s->stack, &frames, &stacks, &buf, &cap);
		if (st < 0) {
			err = (int)st;
			break;
		}
		if (!map_get(&named, (uint32_t)s->tid)) {
			err = map_put(&named, (uint32_t)s->tid, 1) ?: profile_thread(dst, s->tid, profile_thread_name(src, s->tid));
			if (err)
				break;
		}
		err = profile_add(dst, (uint32_t)st, s->t_ns, s->tid);
	}
	free(buf);
	map_free(&frames);
	map_free(&stacks);
	map_free(&named);
	return err;
}

/* Stable sort of v[0, n) by time, scratch holding n; a bottom-up merge sort. */
static void sort_samples(struct profile_sample *v, uint64_t n, struct profile_sample *scratch)
{
	struct profile_sample *a = v, *b = scratch;
	for (uint64_t width = 1; width < n; width *= 2) {
		for (uint64_t lo = 0; lo < n; lo += 2 * width) {
			uint64_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
			uint64_t i = lo, j = mid, k = lo;
			while (i < mid && j < hi)
				b[k++] = a[j].t_ns < a[i].t_ns ? a[j++] : a[i++];
			while (i < mid)
				b[k++] = a[i++];
			while (j < hi)
				b[k++] = a[j++];
		}
		struct profile_sample *t = a;
		a = b;
		b = t;
	}
	if (a != v)
		memcpy(v, a, n * sizeof(*v));
}

int profile_order_samples(struct profile *p, uint64_t from)
{
	struct profile_sample *v = p->samples;
	uint64_t n = p->nsamples, i = from;
	if (from >= n)
		return 0;
	/* In order already (the common case): nothing to do. */
	while (i + 1 < n && v[i].t_ns <= v[i + 1].t_ns)
		i++;
	if (i + 1 >= n && (!from || v[from - 1].t_ns <= v[from].t_ns))
		return 0;
	uint64_t tail = n - from;
	struct profile_sample *scratch = malloc(2 * tail * sizeof(*scratch));
	if (!scratch)
		return -ENOMEM;
	sort_samples(v + from, tail, scratch);
	/* Merge the sorted tail into the head from the back: a head sample goes after tail samples of its time. */
	memcpy(scratch, v + from, tail * sizeof(*scratch));
	uint64_t h = from, t = tail, k = n;
	while (t) {
		if (h && v[h - 1].t_ns > scratch[t - 1].t_ns)
			v[--k] = v[--h];
		else
			v[--k] = scratch[--t];
	}
	free(scratch);
	return 0;
}

uint64_t profile_sample_at(const struct profile *p, uint64_t t_ns)
{
	uint64_t lo = 0, hi = p->nsamples;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (p->samples[mid].t_ns < t_ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void profile_drop_samples(struct profile *p, uint64_t n)
{
	if (!n)
		return;
	if (n >= p->nsamples) {
		p->nsamples = 0;
		return;
	}
	memmove(p->samples, p->samples + n, (p->nsamples - n) * sizeof(*p->samples));
	p->nsamples -= n;
}

int64_t profile_stack_label(const struct profile *p, uint32_t stack)
{
	const struct profile_stack *s = &p->stacks[stack];
	for (uint32_t j = 0; j < s->len; j++) { /* (next to its roots: a few steps) */
		const struct profile_frame *f = &p->frames[p->pool[s->start + j]];
		if (f->kind == PROFILE_FRAME_LABEL && !*strtab_get(&p->strs, f->path))
			return p->pool[s->start + j];
	}
	return -1;
}

int profile_stack_user_labels(const struct profile *p, uint32_t stack, uint32_t *out, int max)
{
	const struct profile_stack *s = &p->stacks[stack];
	int n = 0;
	for (uint32_t j = 0; j < s->len && n < max; j++) {
		const struct profile_frame *f = &p->frames[p->pool[s->start + j]];
		if (f->kind == PROFILE_FRAME_LABEL && *strtab_get(&p->strs, f->path))
			out[n++] = p->pool[s->start + j];
		else if (f->kind != PROFILE_FRAME_LABEL && f->kind != PROFILE_FRAME_THREAD)
			break; /* (label frames sit over the roots, under the Ruby frames) */
	}
	return n;
}

int profile_has_labels(const struct profile *p)
{
	for (uint32_t i = 0; i < p->nframes; i++)
		if (p->frames[i].kind == PROFILE_FRAME_LABEL)
			return 1;
	return 0;
}

/* Copy src's stacks into dst without label frames: map[i] is stack i's id in dst. */
static int copy_unlabelled(struct profile *dst, const struct profile *src, uint32_t *map)
{
	uint32_t *ids = malloc((src->nframes + 1) * sizeof(*ids)), *buf = NULL;
	size_t cap = 0;
	int err = ids ? 0 : -ENOMEM;
	for (uint32_t i = 0; !err && i < src->nframes; i++) {
		const struct profile_frame *f = &src->frames[i];
		int64_t id = f->kind == PROFILE_FRAME_LABEL ? 0 :
			     profile_frame(dst, strtab_get(&src->strs, f->name), strtab_get(&src->strs, f->path), f->line,
					   f->kind);
		if (id < 0)
			err = (int)id;
		ids[i] = f->kind == PROFILE_FRAME_LABEL ? UINT32_MAX : (uint32_t)id;
	}
	for (uint32_t i = 0; !err && i < src->nstacks; i++) {
		const struct profile_stack *s = &src->stacks[i];
		uint32_t *b = vec_grow(buf, s->len + 1, &cap, sizeof(*b)), n = 0;
		if (!b) {
			err = -ENOMEM;
			break;
		}
		buf = b;
		for (uint32_t j = 0; j < s->len; j++)
			if (ids[src->pool[s->start + j]] != UINT32_MAX)
				buf[n++] = ids[src->pool[s->start + j]];
		int64_t st = profile_stack(dst, buf, n);
		if (st < 0) {
			err = (int)st;
			break;
		}
		map[i] = (uint32_t)st;
		dst->stacks[st].count += s->count;
		dst->stacks[st].bytes += s->bytes;
	}
	free(ids);
	free(buf);
	return err;
}

int profile_without_labels(struct profile *dst, const struct profile *src)
{
	int err = profile_init(dst);
	uint32_t *map = err ? NULL : malloc((src->nstacks + 1) * sizeof(*map));
	if (!err && !map)
		err = -ENOMEM;
	if (err)
		return err;
	dst->kind = src->kind;
	dst->alloc_interval = src->alloc_interval;
	dst->alloc_total = src->alloc_total;
	dst->by_bytes = src->by_bytes;
	dst->alloc_live = src->alloc_live;
	dst->pid = src->pid;
	dst->rate_hz = src->rate_hz;
	dst->duration_ns = src->duration_ns;
	dst->start_ns = src->start_ns;
	dst->errors = src->errors;
	dst->torn = src->torn;
	dst->dropped = src->dropped;
	dst->keep_samples = src->keep_samples;
	dst->keep_samples_all = src->keep_samples_all;
	dst->n_mn_threads = src->n_mn_threads;
	const char *rv = strtab_get(&src->strs, src->ruby_version), *cmd = strtab_get(&src->strs, src->command);
	int64_t a = strtab_intern(&dst->strs, rv, strlen(rv)), b = strtab_intern(&dst->strs, cmd, strlen(cmd));
	err = a < 0 ? (int)a : b < 0 ? (int)b : 0;
	dst->ruby_version = (uint32_t)a;
	dst->command = (uint32_t)b;
	err = err ?: copy_unlabelled(dst, src, map);
	for (uint32_t i = 0; !err && i < src->nthreads; i++) {
		int64_t t = profile_thread_index(dst, src->threads[i].tid);
		err = t < 0 ? (int)t : profile_thread(dst, src->threads[i].tid, strtab_get(&src->strs, src->threads[i].name));
		for (int k = 0; !err && k < PROFILE_STATES && src->thread_states; k++)
			dst->thread_states[t][k] = src->thread_states[i][k];
	}
	if (!err && src->nsamples) {
		dst->samples = malloc(src->nsamples * sizeof(*dst->samples));
		if (!dst->samples)
			err = -ENOMEM;
		for (uint64_t i = 0; !err && i < src->nsamples; i++)
			dst->samples[i] = (struct profile_sample){ src->samples[i].t_ns, src->samples[i].tid,
								   map[src->samples[i].stack] };
		dst->nsamples = dst->samples_cap = err ? 0 : src->nsamples;
	}
	free(map);
	return err;
}
