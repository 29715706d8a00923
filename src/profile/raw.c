/* raw.c: the --raw recording format: written as the recording goes, read back whole by `rbscope report`. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/err.h"
#include "../ruby/waits.h"
#include "profile.h"

/*
 * Version 3, little-endian: "RBSCRAW3", u32 pid, u32 rate_hz, u64 start_ns,
 * then records { u8 tag, u64 length, length bytes } until the end record:
 *   'S' string arena bytes, appended (string ids are offsets into the arena)
 *   'F' frames {u32 name, u32 path, i32 line, u32 kind}, appended
 *   'P' stack pool, u32 frame ids (root first), appended
 *   'K' stacks {u32 start, u32 len}, appended (counts come from the samples)
 *   'T' a thread {i32 tid, u32 name}: new, or named since
 *   'M' {u32 ruby_version, u32 command} string ids
 *   'D' samples {u64 t_ns, i32 tid, u32 stack}, mostly in time order (the reader sorts them: a
 *       recording of several processes, or a file of an older rbscope, may hold some out of order)
 *   'A' an allocation profile's {u32 kind, u32 0, u64 alloc_interval, u64 alloc_total}: at the start, again
 *       when the interval changes (the agent's windows: the weight of a sample follows its counts), and at
 *       the end (the last one read stands)
 *   'B' an allocation profile's bytes {u32 stack, u32 0, u64 bytes}, added to the stacks' since the last 'B'
 *   'E' {u64 duration_ns, errors, torn, dropped}, then "RBSCEND3"
 * A file whose writer was killed ends before 'E' (perhaps inside a record): everything before the
 * end reads. Anything else malformed, wherever it is, makes the whole file unreadable.
 * Version 2 (one block of everything, "RBSCRAW2" ... "RBSCEND2") is still read.
 */
static const char MAGIC2[8] = "RBSCRAW2", TRAILER2[8] = "RBSCEND2";
static const char MAGIC3[8] = "RBSCRAW3", TRAILER3[8] = "RBSCEND3";
#define RAW_MAX_BYTES (1ULL << 34)

static int put(FILE *f, const void *p, size_t n)
{
	return n && fwrite(p, 1, n, f) != n ? -errno ?: -EIO : 0;
}

#define PUT(f, v) put(f, &(v), sizeof(v))

static int record(FILE *f, char tag, const void *data, uint64_t len)
{
	int err = put(f, &tag, 1);
	err = err ?: PUT(f, len);
	return err ?: put(f, data, len);
}

int raw_writer_start(struct raw_writer *w, FILE *f, const struct profile *p)
{
	memset(w, 0, sizeof(*w));
	w->f = f;
	uint32_t pid = (uint32_t)p->pid;
	int err = put(f, MAGIC3, 8);
	err = err ?: PUT(f, pid);
	err = err ?: PUT(f, p->rate_hz);
	err = err ?: PUT(f, p->start_ns);
	return err;
}

/* An allocation profile's 'A' (when meta) and its stacks' bytes added since the last 'B'. */
static int write_allocs(struct raw_writer *w, const struct profile *p, int meta)
{
	struct { uint32_t kind, zero; uint64_t interval, total; } a = { p->kind, 0, p->alloc_interval, p->alloc_total };
	int err = meta ? record(w->f, 'A', &a, sizeof(a)) : 0;
	w->alloc_meta |= meta && !err;
	if (meta && !err)
		w->alloc_interval = p->alloc_interval;
	if (!err && p->nstacks > w->bytes_cap) {
		uint64_t *v = realloc(w->bytes, p->nstacks * sizeof(*v));
		if (!v)
			return -ENOMEM;
		memset(v + w->bytes_cap, 0, (p->nstacks - w->bytes_cap) * sizeof(*v));
		w->bytes = v;
		w->bytes_cap = p->nstacks;
	}
	struct { uint32_t stack, zero; uint64_t bytes; } *b = NULL;
	uint32_t n = 0;
	for (uint32_t i = 0; !err && i < p->nstacks; i++) {
		if (p->stacks[i].bytes == w->bytes[i])
			continue;
		void *g = realloc(b, (n + 1) * sizeof(*b));
		if (!g) {
			err = -ENOMEM;
			break;
		}
		b = g;
		b[n].stack = i;
		b[n].zero = 0;
		b[n++].bytes = p->stacks[i].bytes - w->bytes[i];
	}
	if (!err && n)
		err = record(w->f, 'B', b, (uint64_t)n * sizeof(*b));
	for (uint32_t i = 0; !err && i < n; i++)
		w->bytes[b[i].stack] += b[i].bytes;
	free(b);
	return err;
}

int raw_writer_flush(struct raw_writer *w, struct profile *p, int keep_samples)
{
	FILE *f = w->f;
	int err = 0;
	if (p->strs.arena.len > w->arena)
		err = record(f, 'S', p->strs.arena.data + w->arena, p->strs.arena.len - w->arena);
	w->arena = err ? w->arena : p->strs.arena.len;
	if (!err && (p->ruby_version != w->ruby_version || p->command != w->command || !w->meta)) {
		uint32_t m[2] = { p->ruby_version, p->command };
		err = record(f, 'M', m, sizeof(m));
		w->ruby_version = p->ruby_version;
		w->command = p->command;
		w->meta = 1;
	}
	if (!err && p->nframes > w->frames)
		err = record(f, 'F', p->frames + w->frames, (p->nframes - w->frames) * sizeof(*p->frames));
	w->frames = err ? w->frames : p->nframes;
	if (!err && p->pool_len > w->pool)
		err = record(f, 'P', p->pool + w->pool, (p->pool_len - w->pool) * sizeof(*p->pool));
	w->pool = err ? w->pool : p->pool_len;
	if (!err && p->nstacks > w->stacks) {
		uint32_t n = p->nstacks - w->stacks, *k = malloc((size_t)n * 2 * sizeof(*k));
		if (!k)
			return -ENOMEM;
		for (uint32_t i = 0; i < n; i++) {
			k[2 * i] = p->stacks[w->stacks + i].start;
			k[2 * i + 1] = p->stacks[w->stacks + i].len;
		}
		err = record(f, 'K', k, (uint64_t)n * 2 * sizeof(*k));
		free(k);
		w->stacks = err ? w->stacks : p->nstacks;
	}
	/* Threads: new ones, and ones named since (a name is given once, see profile_thread). */
	if (!err && p->nthreads > w->threads_cap) {
		uint32_t *names = realloc(w->thread_names, p->nthreads * sizeof(*names));
		if (!names)
			return -ENOMEM;
		memset(names + w->threads_cap, 0xff, (p->nthreads - w->threads_cap) * sizeof(*names));
		w->thread_names = names;
		w->threads_cap = p->nthreads;
	}
	for (uint32_t i = 0; !err && i < p->nthreads; i++) {
		if (w->thread_names[i] == p->threads[i].name)
			continue;
		err = record(f, 'T', &p->threads[i], sizeof(p->threads[i]));
		w->thread_names[i] = err ? w->thread_names[i] : p->threads[i].name;
	}
	if (!err && p->nsamples > w->samples)
		err = record(f, 'D', p->samples + w->samples, (p->nsamples - w->samples) * sizeof(*p->samples));
	if (!err)
		w->samples = p->nsamples;
	if (!err && p->kind == PROFILE_ALLOCS)
		err = write_allocs(w, p, !w->alloc_meta || w->alloc_interval != p->alloc_interval);
	if (!err && fflush(f))
		err = -errno;
	if (!err && !keep_samples) {
		/* Written: no need to hold them (an hour at 999 Hz would be hundreds of MB). */
		w->samples_dropped += p->nsamples;
		p->nsamples = w->samples = 0;
	}
	return err;
}

int raw_writer_finish(struct raw_writer *w, struct profile *p, int keep_samples)
{
	int err = raw_writer_flush(w, p, keep_samples);
	if (!err && p->kind == PROFILE_ALLOCS)
		err = write_allocs(w, p, 1); /* (the VM's count of allocations, known now) */
	uint64_t e[4] = { p->duration_ns, p->errors, p->torn, p->dropped };
	err = err ?: record(w->f, 'E', e, sizeof(e));
	err = err ?: put(w->f, TRAILER3, 8);
	if (!err && fflush(w->f))
		err = -errno;
	free(w->thread_names);
	w->thread_names = NULL;
	return err;
}

void raw_writer_free(struct raw_writer *w)
{
	free(w->thread_names);
	w->thread_names = NULL;
	free(w->bytes);
	w->bytes = NULL;
}

static int get(FILE *f, void *p, size_t n)
{
	return n && fread(p, 1, n, f) != n ? ERR_BAD_FILE : 0;
}

#define GET(f, v) get(f, &(v), sizeof(v))

/* Allocate and read count items of size bytes, refusing absurd counts. */
static int get_array(FILE *f, void **out, uint64_t count, size_t size)
{
	if (count > RAW_MAX_BYTES / (size ? size : 1))
		return ERR_BAD_FILE;
	*out = malloc(count * size + 1);
	if (!*out)
		return -ENOMEM;
	return get(f, *out, count * size);
}

static int valid_string(const struct profile *p, uint32_t id)
{
	return id < p->strs.arena.len && (id == 0 || p->strs.arena.data[id - 1] == '\0');
}

static int validate(const struct profile *p)
{
	const struct buf *a = &p->strs.arena;
	if (!a->len || a->data[a->len - 1] != '\0')
		return ERR_BAD_FILE;
	if (!valid_string(p, p->ruby_version) || !valid_string(p, p->command))
		return ERR_BAD_FILE;
	for (uint32_t i = 0; i < p->nframes; i++)
		if (!valid_string(p, p->frames[i].name) || !valid_string(p, p->frames[i].path))
			return ERR_BAD_FILE;
	for (uint64_t i = 0; i < p->pool_len; i++)
		if (p->pool[i] >= p->nframes)
			return ERR_BAD_FILE;
	for (uint32_t i = 0; i < p->nstacks; i++)
		if ((uint64_t)p->stacks[i].start + p->stacks[i].len > p->pool_len)
			return ERR_BAD_FILE;
	for (uint64_t i = 0; i < p->nsamples; i++)
		if (p->samples[i].stack >= p->nstacks)
			return ERR_BAD_FILE;
	for (uint32_t i = 0; i < p->nthreads; i++)
		if (!valid_string(p, p->threads[i].name))
			return ERR_BAD_FILE;
	return 0;
}

static void set_caps(struct profile *p)
{
	p->frames_cap = p->nframes;
	p->pool_cap = p->pool_len;
	p->stacks_cap = p->nstacks;
	p->samples_cap = p->nsamples;
	p->keep_samples = 1;
}

static int read_v2(struct profile *p, FILE *f)
{
	uint32_t pid;
	uint64_t arena;
	char magic[8];
	int err = GET(f, pid);
	err = err ?: GET(f, p->rate_hz);
	err = err ?: GET(f, p->duration_ns);
	err = err ?: GET(f, p->start_ns);
	err = err ?: GET(f, p->errors);
	err = err ?: GET(f, p->torn);
	err = err ?: GET(f, p->dropped);
	err = err ?: GET(f, p->ruby_version);
	err = err ?: GET(f, p->command);
	err = err ?: GET(f, arena);
	if (!err) {
		buf_free(&p->strs.arena);
		void *data = NULL;
		err = get_array(f, &data, arena, 1);
		p->strs.arena.data = data;
		p->strs.arena.len = p->strs.arena.alloc = arena;
	}
	err = err ?: GET(f, p->nframes);
	err = err ?: get_array(f, (void **)&p->frames, p->nframes, sizeof(*p->frames));
	err = err ?: GET(f, p->pool_len);
	err = err ?: get_array(f, (void **)&p->pool, p->pool_len, sizeof(*p->pool));
	err = err ?: GET(f, p->nstacks);
	err = err ?: get_array(f, (void **)&p->stacks, p->nstacks, sizeof(*p->stacks));
	err = err ?: GET(f, p->nsamples);
	err = err ?: get_array(f, (void **)&p->samples, p->nsamples, sizeof(*p->samples));
	uint32_t nthreads = 0;
	struct profile_thread *threads = NULL;
	err = err ?: GET(f, nthreads);
	err = err ?: get_array(f, (void **)&threads, nthreads, sizeof(*threads));
	for (uint32_t i = 0; !err && i < nthreads; i++) {
		int64_t t = profile_thread_index(p, threads[i].tid);
		if (t < 0)
			err = (int)t;
		else
			p->threads[t].name = threads[i].name;
	}
	free(threads);
	err = err ?: get(f, magic, 8);
	if (!err && memcmp(magic, TRAILER2, 8))
		err = ERR_BAD_FILE;
	p->pid = (int)pid;
	set_caps(p);
	/* Version 2 knew no waits: the methods that wait were plain C methods then. */
	for (uint32_t i = 0; !err && i < p->nframes; i++)
		if (p->frames[i].kind == PROFILE_FRAME_CFUNC && p->frames[i].name < p->strs.arena.len &&
		    memchr(p->strs.arena.data + p->frames[i].name, '\0', p->strs.arena.len - p->frames[i].name) &&
		    ruby_wait_method(p->strs.arena.data + p->frames[i].name))
			p->frames[i].kind = PROFILE_FRAME_WAIT;
	return err;
}

/*
 * Append len bytes read from f to the array *v holding *have items of size
 * bytes. With partial, a record the file ends inside keeps its whole items
 * (the samples of a recorder killed while writing them) and says it was cut.
 */
static int append(FILE *f, void **v, uint64_t *have, uint64_t len, size_t size, int partial)
{
	if (len % size || len > RAW_MAX_BYTES || *have + len / size > RAW_MAX_BYTES / size)
		return ERR_BAD_FILE;
	void *grown = realloc(*v, (*have + len / size) * size + 1);
	if (!grown)
		return -ENOMEM;
	*v = grown;
	size_t got = fread((char *)grown + *have * size, size, (size_t)(len / size), f);
	if (got == len / size || partial)
		*have += got;
	return got == len / size ? 0 : ERR_BAD_FILE;
}

/*
 * A 'D' record of len bytes, samples not kept: each counted for its stack,
 * and in by_thread (tid << 32 | stack -> samples), checked as validate()
 * would (a known stack); *last_t the latest time seen. With a file
 * cut inside the record, the whole samples before the cut count.
 */
static int count_samples(struct profile *p, FILE *f, uint64_t len, uint64_t nstacks, uint64_t *seen, uint64_t *last_t,
			 struct map *by_thread)
{
	struct profile_sample chunk[4096];
	if (len % sizeof(chunk[0]))
		return ERR_BAD_FILE;
	for (uint64_t left = len / sizeof(chunk[0]); left;) {
		size_t want = left < 4096 ? (size_t)left : 4096, got = fread(chunk, sizeof(chunk[0]), want, f);
		for (size_t i = 0; i < got; i++) {
			if (chunk[i].stack >= nstacks)
				return ERR_BAD_FILE;
			p->stacks[chunk[i].stack].count++;
			uint64_t key = (uint64_t)(uint32_t)chunk[i].tid << 32 | chunk[i].stack, *n = map_get(by_thread, key);
			int err = n ? (++*n, 0) : map_put(by_thread, key, 1);
			if (err)
				return err;
			if (chunk[i].t_ns > *last_t)
				*last_t = chunk[i].t_ns;
			++*seen;
		}
		if (got < want)
			return ERR_BAD_FILE;
		left -= got;
	}
	return 0;
}

static int read_v3(struct profile *p, FILE *f, int keep_samples, int *cut_short, struct map *by_thread)
{
	uint32_t pid;
	int err = GET(f, pid);
	err = err ?: GET(f, p->rate_hz);
	err = err ?: GET(f, p->start_ns);
	if (err)
		return err;
	p->pid = (int)pid;
	buf_free(&p->strs.arena);
	uint64_t arena = 0, nframes = 0, nstacks = 0, counted = 0, last_t = 0;
	void *adata = NULL;
	*cut_short = 1;
	for (;;) {
		char tag;
		uint64_t len;
		if (get(f, &tag, 1) || GET(f, len))
			break; /* no end record: the writer was stopped (or the file cut) */
		if (tag == 'S') {
			err = append(f, &adata, &arena, len, 1, 0);
		} else if (tag == 'F') {
			err = append(f, (void **)&p->frames, &nframes, len, sizeof(*p->frames), 0);
		} else if (tag == 'P') {
			err = append(f, (void **)&p->pool, &p->pool_len, len, sizeof(*p->pool), 0);
		} else if (tag == 'K') {
			uint32_t *k = NULL;
			uint64_t nk = 0;
			err = append(f, (void **)&k, &nk, len, 2 * sizeof(*k), 0);
			if (!err && nstacks + nk > UINT32_MAX)
				err = ERR_BAD_FILE;
			struct profile_stack *st = err ? NULL : realloc(p->stacks, (nstacks + nk + 1) * sizeof(*st));
			if (!err && !st)
				err = -ENOMEM;
			for (uint64_t i = 0; !err && i < nk; i++)
				st[nstacks + i] = (struct profile_stack){ k[2 * i], k[2 * i + 1], 0, 0, 0 };
			if (!err) {
				p->stacks = st;
				nstacks += nk;
			}
			free(k);
		} else if (tag == 'T') {
			struct profile_thread th;
			int64_t i;
			if (len != sizeof(th) || (err = get(f, &th, sizeof(th))))
				err = err ?: ERR_BAD_FILE;
			else if ((i = profile_thread_index(p, th.tid)) < 0)
				err = (int)i;
			else
				p->threads[i].name = th.name;
		} else if (tag == 'M') {
			uint32_t m[2];
			if (len != sizeof(m) || (err = get(f, m, sizeof(m))))
				err = err ?: ERR_BAD_FILE;
			p->ruby_version = m[0];
			p->command = m[1];
		} else if (tag == 'A') {
			struct { uint32_t kind, zero; uint64_t interval, total; } a;
			if (len != sizeof(a) || (err = get(f, &a, sizeof(a))) || a.kind > PROFILE_ALLOCS)
				err = err ?: ERR_BAD_FILE;
			p->kind = a.kind;
			p->alloc_interval = a.interval;
			p->alloc_total = a.total;
		} else if (tag == 'B') {
			struct { uint32_t stack, zero; uint64_t bytes; } b;
			if (len % sizeof(b))
				err = ERR_BAD_FILE;
			for (uint64_t i = 0; !err && i < len / sizeof(b); i++) {
				if ((err = get(f, &b, sizeof(b))) || b.stack >= nstacks)
					err = err ?: ERR_BAD_FILE;
				else
					p->stacks[b.stack].bytes += b.bytes;
			}
		} else if (tag == 'D' && !keep_samples) {
			err = count_samples(p, f, len, nstacks, &counted, &last_t, by_thread);
		} else if (tag == 'D') {
			err = append(f, (void **)&p->samples, &p->nsamples, len, sizeof(*p->samples), 1);
		} else if (tag == 'E') {
			uint64_t e[4];
			char magic[8];
			if (len != sizeof(e) || (err = get(f, e, sizeof(e))) || (err = get(f, magic, 8)) || memcmp(magic, TRAILER3, 8)) {
				err = err ?: ERR_BAD_FILE;
			} else {
				p->duration_ns = e[0];
				p->errors = e[1];
				p->torn = e[2];
				p->dropped = e[3];
				*cut_short = 0;
			}
			break;
		} else {
			err = ERR_BAD_FILE;
		}
		if (err)
			break;
	}
	p->strs.arena.data = adata;
	p->strs.arena.len = p->strs.arena.alloc = arena;
	p->nframes = (uint32_t)nframes;
	p->nstacks = (uint32_t)nstacks;
	for (uint64_t i = 0; i < p->nsamples; i++)
		if (p->samples[i].t_ns > last_t)
			last_t = p->samples[i].t_ns;
	counted += p->nsamples;
	/* A record the file ends inside (its writer killed while writing it): what came before it stands.
	   Malformed bytes with more of the file after them are not an end: the file does not read. */
	if (err == ERR_BAD_FILE && *cut_short && counted && feof(f) && !ferror(f))
		err = 0;
	if (!err && *cut_short && !counted)
		err = ERR_BAD_FILE; /* cut before its first sample: nothing to show */
	set_caps(p);
	p->keep_samples = keep_samples;
	if (!err && counted && *cut_short)
		p->duration_ns = last_t;
	return err;
}

int profile_read_raw(struct profile *p, FILE *f, int keep_samples, int *cut_short)
{
	char magic[8];
	*cut_short = 0;
	int err = profile_init(p);
	err = err ?: get(f, magic, 8);
	struct map by_thread;
	map_init(&by_thread);
	if (!err)
		err = !memcmp(magic, MAGIC2, 8)	  ? read_v2(p, f)
		      : !memcmp(magic, MAGIC3, 8) ? read_v3(p, f, keep_samples, cut_short, &by_thread)
						  : ERR_BAD_FILE;
	if (!err)
		err = validate(p);
	if (!err)
		profile_restate(p);
	if (!err && keep_samples)
		err = profile_order_samples(p, 0);
	/* Counts per stack, from the samples kept (version 3 does not write them), and each thread's states. */
	if (!err && !memcmp(magic, MAGIC3, 8) && keep_samples)
		for (uint64_t i = 0; i < p->nsamples; i++)
			p->stacks[p->samples[i].stack].count++;
	for (uint64_t i = 0; !err && i < p->nsamples; i++)
		err = profile_count_states(p, p->samples[i].tid, p->samples[i].stack, 1);
	uint64_t key, n;
	for (size_t i = 0; !err && map_next(&by_thread, &i, &key, &n);)
		err = profile_count_states(p, (int32_t)(key >> 32), (uint32_t)key, n);
	map_free(&by_thread);
	return err;
}
