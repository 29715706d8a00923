/* iseq.c: reading and caching instruction sequences, and mapping a pc to its line. */
#include "iseq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/err.h"
#include "object.h"
#include "../lib/vec.h"

/* Ruby's succinct index table, as laid out in iseq.c (unchanged from 2.6 to 3.4). */
#define SUCC_IMM_BITS 54
#define SUCC_IMM_WORDS 6                  /* SUCC_IMM_BITS / 9, 9 ranks of 7 bits per word */
#define SUCC_BLOCK_BITS 512
#define SUCC_BLOCK_WORDS (1 + 1 + 512 / 64) /* rank (padded), small ranks, bits */
#define MAX_INSNS_INFO (1u << 20)

int iseq_succ_rank(const uint64_t *succ, size_t words, uint32_t x)
{
	if (x < SUCC_IMM_BITS) {
		uint32_t i = x / 9, j = x % 9;
		if (i >= words)
			return -1;
		return (int)((succ[i] >> (j * 7)) & 0x7f);
	}
	uint32_t bi = (x - SUCC_IMM_BITS) / SUCC_BLOCK_BITS, bit = (x - SUCC_IMM_BITS) % SUCC_BLOCK_BITS;
	size_t at = SUCC_IMM_WORDS + (size_t)bi * SUCC_BLOCK_WORDS;
	if (at + SUCC_BLOCK_WORDS > words)
		return -1;
	const uint64_t *blk = succ + at;
	uint32_t rank = (uint32_t)blk[0]; /* unsigned int, then padding */
	uint32_t small = bit / 64;
	uint32_t small_rank = small ? (uint32_t)((blk[1] >> ((small - 1) * 9)) & 0x1ff) : 0;
	uint32_t pop = (uint32_t)__builtin_popcountll(blk[2 + small] << (63 - bit % 64));
	return (int)(rank + small_rank + pop);
}

void iseq_info_free(struct iseq_info *is)
{
	free(is->lines);
	free(is->positions);
	free(is->succ);
	free(is->jit);
}

int32_t iseq_line(const struct iseq_info *is, uint64_t pc)
{
	if (!is->ninfo || !pc || pc < is->encoded)
		return is->first_lineno;
	uint64_t pos = (pc - is->encoded) / 8;
	if (pos > is->iseq_size)
		return is->first_lineno;
	if (pos)
		pos--; /* a saved pc points at the next instruction */
	if (is->ninfo == 1)
		return is->lines[0];
	int idx = -1;
	if (is->positions) {
		/* the last entry whose position is <= pos */
		uint32_t lo = 0, hi = is->ninfo;
		while (hi - lo > 1) {
			uint32_t mid = (lo + hi) / 2;
			if (is->positions[mid] <= pos)
				lo = mid;
			else
				hi = mid;
		}
		idx = (int)lo;
	} else if (is->succ) {
		idx = iseq_succ_rank(is->succ, is->succ_words, (uint32_t)pos) - 1;
	}
	if (idx < 0 || (uint32_t)idx >= is->ninfo)
		return is->first_lineno;
	return is->lines[idx];
}

static uint32_t intern_string(struct ruby_target *t, uint64_t v)
{
	char s[RUBY_STR_MAX];
	if (ruby_read_string(t, v, s, sizeof(s)))
		return 0;
	int64_t id = strtab_intern(&t->strs, s, strlen(s));
	return id < 0 ? 0 : (uint32_t)id;
}

static uint64_t get64(const unsigned char *p, int64_t off)
{
	uint64_t v;
	memcpy(&v, p + off, 8);
	return v;
}

static uint32_t get32(const unsigned char *p, int64_t off)
{
	uint32_t v;
	memcpy(&v, p + off, 4);
	return v;
}

static int read_lines(struct ruby_target *t, struct iseq_info *is, const unsigned char *body)
{
	const struct ruby_layout *L = t->L;
	uint64_t info = get64(body, L->body_insns_info_body), pos = get64(body, L->body_insns_info_positions),
		 succ = get64(body, L->body_succ_index_table);
	is->ninfo = get32(body, L->body_insns_info_size);
	if (!is->ninfo)
		return 0;
	if (is->ninfo > MAX_INSNS_INFO || !info)
		return ERR_CORRUPT;
	size_t esz = (size_t)L->insn_info_size, n = is->ninfo;
	unsigned char *raw = malloc(esz * n);
	is->lines = malloc(n * sizeof(int32_t));
	if (!raw || !is->lines) {
		free(raw);
		return -ENOMEM;
	}
	int err = mem_read(&t->mem, info, raw, esz * n);
	for (size_t i = 0; !err && i < n; i++)
		is->lines[i] = (int32_t)get32(raw + i * esz, L->insn_info_line_no);
	free(raw);
	if (err || n == 1)
		return err;
	if (pos) {
		is->positions = malloc(n * sizeof(uint32_t));
		if (!is->positions)
			return -ENOMEM;
		return mem_read(&t->mem, pos, is->positions, n * sizeof(uint32_t));
	}
	if (!succ)
		return ERR_CORRUPT;
	/* Sized as iseq.c allocates it: fewer immediate words for short iseqs, and then no blocks. */
	size_t imm = is->iseq_size < SUCC_IMM_BITS ? (is->iseq_size + 8) / 9 : SUCC_IMM_WORDS;
	size_t blocks = is->iseq_size < SUCC_IMM_BITS ? 0 : (is->iseq_size - SUCC_IMM_BITS + 511) / SUCC_BLOCK_BITS;
	is->succ_words = SUCC_IMM_WORDS + blocks * SUCC_BLOCK_WORDS;
	is->succ = calloc(is->succ_words, 8);
	if (!is->succ)
		return -ENOMEM;
	if (blocks)
		return mem_read(&t->mem, succ, is->succ, is->succ_words * 8);
	return mem_read(&t->mem, succ, is->succ, imm * 8);
}

static int iseq_read(struct ruby_target *t, uint64_t addr, struct iseq_info *is)
{
	const struct ruby_layout *L = t->L;
	uint64_t flags, bodyp;
	memset(is, 0, sizeof(*is));
	is->addr = addr;
	int type = ruby_type_of(t, addr, &flags);
	if (type < 0)
		return type;
	if (type != L->t_imemo || ((flags >> L->fl_ushift) & (uint64_t)L->imemo_mask) != (uint64_t)L->imemo_iseq)
		return ERR_CORRUPT;
	int err = mem_read_u64(&t->mem, addr + (uint64_t)L->iseq_body, &bodyp);
	if (err)
		return err;
	unsigned char body[512];
	const int64_t offs[] = { L->body_type, L->body_iseq_encoded, L->body_iseq_size, L->body_first_lineno,
				 L->body_label, L->body_pathobj, L->body_insns_info_body, L->body_insns_info_positions,
				 L->body_insns_info_size, L->body_succ_index_table, L->body_parent_iseq,
				 L->body_builtin_attrs };
	size_t need = layout_span(offs, sizeof(offs) / sizeof(offs[0]));
	if (need > sizeof(body))
		return ERR_UNSUPPORTED;
	if ((err = mem_read(&t->mem, bodyp, body, need)))
		return err;
	is->body = bodyp;
	is->type = (int)get32(body, L->body_type);
	is->encoded = get64(body, L->body_iseq_encoded);
	is->iseq_size = get32(body, L->body_iseq_size);
	is->first_lineno = L->body_first_lineno_size == 8 ? (int32_t)((int64_t)get64(body, L->body_first_lineno) >> 1)
							 : (int32_t)get32(body, L->body_first_lineno);
	is->label = intern_string(t, get64(body, L->body_label));
	is->parent = L->body_parent_iseq >= 0 ? get64(body, L->body_parent_iseq) : 0;
	is->c_trace = L->body_builtin_attrs >= 0 && L->builtin_attr_c_trace > 0 &&
		      (get32(body, L->body_builtin_attrs) & (uint32_t)L->builtin_attr_c_trace);
	/* The main script's label is a literal in libruby's read-only data, which a core may leave out. */
	if (!is->label && is->type == L->iseq_type_main) {
		int64_t id = strtab_intern(&t->strs, "<main>", 6);
		is->label = id < 0 ? 0 : (uint32_t)id;
	}
	uint64_t pathobj = get64(body, L->body_pathobj), path = pathobj;
	if (ruby_type_of(t, pathobj, NULL) == L->t_array)
		ruby_read_array_elt(t, pathobj, 0, &path); /* [path, realpath] */
	is->path = intern_string(t, path);
	err = read_lines(t, is, body);
	if (err)
		iseq_info_free(is);
	return err;
}

/* Empty the target's cache of instruction sequences (ruby_target_flush). */
static void iseq_flush(struct ruby_target *t)
{
	for (size_t i = 0; i < t->iseq_n; i++)
		iseq_info_free(&t->iseq_v[i]);
	t->iseq_n = 0;
	map_clear(&t->iseqs);
}

struct iseq_info *iseq_get(struct ruby_target *t, uint64_t addr)
{
	uint64_t *hit = map_get(&t->iseqs, addr);
	if (hit)
		return *hit ? &t->iseq_v[*hit - 1] : NULL;
	struct iseq_info is;
	if (iseq_read(t, addr, &is))
		return NULL; /* not cached: the read may have been torn */
	struct iseq_info *v = ruby_target_add_cache(t, iseq_flush) ? NULL : vec_grow(t->iseq_v, t->iseq_n, &t->iseq_cap, sizeof(*v));
	if (!v) {
		iseq_info_free(&is);
		return NULL;
	}
	t->iseq_v = v;
	t->iseq_v[t->iseq_n++] = is;
	map_put(&t->iseqs, addr, t->iseq_n);
	return &t->iseq_v[t->iseq_n - 1];
}

struct iseq_info *iseq_get_at(struct ruby_target *t, uint64_t addr, uint64_t pc, int *torn)
{
	struct iseq_info *is = iseq_get(t, addr);
	*torn = 0;
	if (!is || !pc || (pc >= is->encoded && pc <= is->encoded + (uint64_t)is->iseq_size * 8))
		return is;
	/*
	 * The frame's pc is not inside this iseq's code: the iseq we cached was
	 * freed and another one now lives at its address. Read it again.
	 */
	struct iseq_info fresh;
	if (iseq_read(t, addr, &fresh))
		return NULL;
	if (pc < fresh.encoded || pc > fresh.encoded + (uint64_t)fresh.iseq_size * 8) {
		iseq_info_free(&fresh); /* a torn frame (iseq and pc of two calls), not a new iseq: keep what we had */
		*torn = 1;
		return NULL;
	}
	iseq_info_free(is);
	*is = fresh;
	return is;
}
