/* jit.c: is a JIT on in the target (its enabled flag, else its code's mapping), and a JIT frame's line from its tables. */
#include "jit.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/clock.h"
#include "../proc/maps.h"
#include "../proc/mem.h"
#include "iseq.h"

const char *ruby_jit_name(const struct ruby_target *t)
{
	return t->L && t->L->api_major >= 4 ? "JIT" : "YJIT";
}

/*
 * Is some mapping anonymous and executable (JIT code)? A core names no
 * mapping the kernel made: the vDSO (an ELF image) and the vsyscall page
 * (in the kernel's half) are anonymous there, and are not JIT code.
 */
static int jit_code_mapped(struct ruby_target *t, const struct maps *m)
{
	for (int i = 0; i < m->n; i++) {
		const struct map_entry *e = &m->v[i];
		char magic[4];
		if (e->path[0] || e->perms[2] != 'x')
			continue;
		if (t->core && (e->start >> 47 || (!mem_read(&t->mem, e->start, magic, 4) && !memcmp(magic, "\177ELF", 4))))
			continue;
		return 1;
	}
	return 0;
}

const char *ruby_jit_on(struct ruby_target *t)
{
	static const char *const names[] = { "YJIT", "ZJIT" };
	int flags = 0;
	for (int i = 0; i < 2; i++) {
		uint8_t on;
		if (!t->jit_flags[i])
			continue;
		flags++;
		if (!mem_read(&t->mem, t->jit_flags[i], &on, 1) && on)
			return names[i];
	}
	if (flags)
		return NULL; /* the flags say: none is on */
	if (t->core)
		return jit_code_mapped(t, &t->maps) ? ruby_jit_name(t) : NULL;
	struct maps now;
	if (maps_read(t->pid, &now))
		return NULL;
	int on = jit_code_mapped(t, &now);
	maps_free(&now);
	return on ? ruby_jit_name(t) : NULL;
}

/*
 * 3.1's YJIT: body->yjit_blocks is a darray with, for each instruction
 * where blocks start, a darray of its versions (block_t *). Read without
 * stopping the JIT: a list torn by a concurrent append reads as pointers
 * that fail the block's checks (its iseq is is, its first instruction the
 * one it is listed under, its code a sane range), and is left out.
 */
#define JIT_MAX_VERSIONS 64
#define JIT_REREAD_NS 1000000000ULL

static int32_t block_line(const struct iseq_info *is, uint32_t idx, uint32_t end)
{
	int32_t line = iseq_line(is, is->encoded + (uint64_t)(idx + 1) * 8);
	for (uint32_t p = idx + 1; p < end; p++)
		if (iseq_line(is, is->encoded + (uint64_t)(p + 1) * 8) != line)
			return 0;
	return line;
}

static void read_blocks(struct ruby_target *t, struct iseq_info *is)
{
	const struct ruby_layout *L = t->L;
	uint64_t arr, vers[JIT_MAX_VERSIONS];
	int32_t size, nv;
	unsigned char b[256];
	const int64_t offs[] = { L->yjit_block_iseq, L->yjit_block_idx, L->yjit_block_end_idx, L->yjit_block_start,
				 L->yjit_block_end };
	size_t need = layout_span(offs, sizeof(offs) / sizeof(offs[0]));
	is->njit = 0;
	if (need > sizeof(b) || mem_read_u64(&t->mem, is->body + (uint64_t)L->body_yjit_blocks, &arr) || !arr ||
	    mem_read(&t->mem, arr + (uint64_t)L->darray_size, &size, 4) || size <= 0 || (uint32_t)size > is->iseq_size)
		return;
	uint64_t *lists = malloc((size_t)size * 8);
	if (!lists || mem_read(&t->mem, arr + (uint64_t)L->darray_data, lists, (size_t)size * 8)) {
		free(lists);
		return;
	}
	uint32_t cap = 0;
	for (int32_t i = 0; i < size; i++) {
		if (!lists[i] || mem_read(&t->mem, lists[i] + (uint64_t)L->darray_size, &nv, 4) || nv <= 0 ||
		    nv > JIT_MAX_VERSIONS || mem_read(&t->mem, lists[i] + (uint64_t)L->darray_data, vers, (size_t)nv * 8))
			continue;
		for (int32_t v = 0; v < nv; v++) {
			uint64_t iseq, start, end;
			uint32_t idx, end_idx;
			if (!vers[v] || mem_read(&t->mem, vers[v], b, need))
				continue;
			memcpy(&iseq, b + L->yjit_block_iseq, 8);
			memcpy(&idx, b + L->yjit_block_idx, 4);
			memcpy(&end_idx, b + L->yjit_block_end_idx, 4);
			memcpy(&start, b + L->yjit_block_start, 8);
			memcpy(&end, b + L->yjit_block_end, 8);
			if (iseq != is->addr || idx != (uint32_t)i || end_idx <= idx || end_idx > is->iseq_size ||
			    start >= end || end - start > (1u << 20))
				continue;
			if (is->njit == cap) {
				uint32_t ncap = cap ? cap * 2 : 16;
				struct iseq_jit_block *nb = realloc(is->jit, ncap * sizeof(*nb));
				if (!nb)
					break;
				is->jit = nb;
				cap = ncap;
			}
			is->jit[is->njit++] = (struct iseq_jit_block){ start, end, block_line(is, idx, end_idx) };
		}
	}
	free(lists);
}

int ruby_jit_line(struct ruby_target *t, struct iseq_info *is, uint64_t ip, int32_t *line)
{
	if (t->L->body_yjit_blocks < 0)
		return -ENOTSUP;
	if (!ip || !is->body)
		return -ENOENT;
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t i = 0; i < is->njit; i++) {
			const struct iseq_jit_block *b = &is->jit[i];
			if (ip < b->start || ip >= b->end)
				continue;
			if (!b->line)
				return -ERANGE;
			*line = b->line;
			return 0;
		}
		uint64_t now = clock_now_ns();
		if (pass || (is->jit_read_ns && now - is->jit_read_ns < JIT_REREAD_NS))
			break;
		is->jit_read_ns = now;
		read_blocks(t, is);
	}
	return -ENOENT;
}
