/* raw.c: the --raw recording format: every sample with its time and thread, written once, read by report. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/err.h"
#include "profile.h"

/*
 * Layout, little-endian, all counts before their arrays:
 *   "RBSCRAW2"
 *   u32 pid, u32 rate_hz, u64 duration_ns, u64 start_ns, u64 errors, u64 torn, u64 dropped
 *   u32 ruby_version, u32 command           (string ids)
 *   u64 n, n bytes                          (the string arena; ids are offsets into it)
 *   u32 n, n x {u32 name, u32 path, i32 line, u32 kind}
 *   u64 n, n x u32                          (stack pool: frame ids, root first)
 *   u32 n, n x {u32 start, u32 len, u64 count}
 *   u64 n, n x {u64 t_ns, i32 tid, u32 stack}
 *   u32 n, n x {i32 tid, u32 name}
 *   "RBSCEND2"
 */
static const char MAGIC[8] = "RBSCRAW2", TRAILER[8] = "RBSCEND2";
#define RAW_MAX_BYTES (1ULL << 34)

static int put(FILE *f, const void *p, size_t n)
{
	return n && fwrite(p, 1, n, f) != n ? -errno ?: -EIO : 0;
}

#define PUT(f, v) put(f, &(v), sizeof(v))

int profile_write_raw(const struct profile *p, FILE *f)
{
	uint32_t pid = (uint32_t)p->pid;
	uint64_t arena = p->strs.arena.len;
	int err = put(f, MAGIC, 8);
	err = err ?: PUT(f, pid);
	err = err ?: PUT(f, p->rate_hz);
	err = err ?: PUT(f, p->duration_ns);
	err = err ?: PUT(f, p->start_ns);
	err = err ?: PUT(f, p->errors);
	err = err ?: PUT(f, p->torn);
	err = err ?: PUT(f, p->dropped);
	err = err ?: PUT(f, p->ruby_version);
	err = err ?: PUT(f, p->command);
	err = err ?: PUT(f, arena);
	err = err ?: put(f, p->strs.arena.data, arena);
	err = err ?: PUT(f, p->nframes);
	err = err ?: put(f, p->frames, p->nframes * sizeof(*p->frames));
	err = err ?: PUT(f, p->pool_len);
	err = err ?: put(f, p->pool, p->pool_len * sizeof(*p->pool));
	err = err ?: PUT(f, p->nstacks);
	err = err ?: put(f, p->stacks, p->nstacks * sizeof(*p->stacks));
	err = err ?: PUT(f, p->nsamples);
	err = err ?: put(f, p->samples, p->nsamples * sizeof(*p->samples));
	err = err ?: PUT(f, p->nthreads);
	err = err ?: put(f, p->threads, p->nthreads * sizeof(*p->threads));
	err = err ?: put(f, TRAILER, 8);
	if (!err && fflush(f))
		err = -errno;
	return err;
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
		if (p->samples[i].stack >= p->nstacks || (i && p->samples[i].t_ns < p->samples[i - 1].t_ns))
			return ERR_BAD_FILE;
	for (uint32_t i = 0; i < p->nthreads; i++)
		if (!valid_string(p, p->threads[i].name))
			return ERR_BAD_FILE;
	return 0;
}

int profile_read_raw(struct profile *p, FILE *f)
{
	char magic[8];
	uint32_t pid;
	uint64_t arena;
	int err = profile_init(p);
	err = err ?: get(f, magic, 8);
	if (!err && memcmp(magic, MAGIC, 8))
		err = ERR_BAD_FILE;
	err = err ?: GET(f, pid);
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
	err = err ?: GET(f, p->nthreads);
	err = err ?: get_array(f, (void **)&p->threads, p->nthreads, sizeof(*p->threads));
	err = err ?: get(f, magic, 8);
	if (!err && memcmp(magic, TRAILER, 8))
		err = ERR_BAD_FILE;
	if (!err)
		err = validate(p);
	p->pid = (int)pid;
	p->frames_cap = p->nframes;
	p->pool_cap = p->pool_len;
	p->stacks_cap = p->nstacks;
	p->samples_cap = p->nsamples;
	p->threads_cap = p->nthreads;
	p->keep_samples = 1;
	return err;
}
