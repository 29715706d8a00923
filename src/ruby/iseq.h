/* iseq.h: what rbscope caches of an instruction sequence: names, path and its pc -> line table. */
#ifndef RBSCOPE_ISEQ_H
#define RBSCOPE_ISEQ_H

#include <stddef.h>
#include <stdint.h>

#include "target.h"

struct iseq_info {
	uint64_t addr;
	uint32_t label, path; /* strtab ids */
	uint32_t qualified;   /* "Foo#bar" for methods, once the owner is known; 0 before */
	int32_t first_lineno;
	int type;
	int c_trace;          /* a method in Ruby that backtraces show as a C method (3.4+'s Primitive.attr! :c_trace) */
	uint64_t parent;      /* the iseq it is defined in (parent_iseq): a block's, an eval's code */
	uint64_t encoded;     /* iseq_encoded */
	uint32_t iseq_size;
	uint32_t ninfo;
	int32_t *lines;       /* line of each insns_info entry */
	uint32_t *positions;  /* when the iseq still has them, else NULL */
	uint64_t *succ;       /* the succinct index table, copied whole, else NULL */
	size_t succ_words;
	int owner_tried; /* qualified is final (found, or known not to exist) */
	int no_owner;    /* trusted reads that found no owner, towards caching that */
	uint64_t body;   /* its constant body's address */
	/* its blocks of JIT code as jit.c last read them (3.1's YJIT), and when (CLOCK_MONOTONIC) */
	struct iseq_jit_block *jit;
	uint32_t njit;
	uint64_t jit_read_ns;
};

/* One block of an iseq's JIT code: where its code lies, and the line of every instruction it runs (0: several). */
struct iseq_jit_block {
	uint64_t start, end;
	int32_t line;
};

/* The cached info of the iseq at addr, reading it on first sight; NULL if it does not validate. */
struct iseq_info *iseq_get(struct ruby_target *t, uint64_t addr);
/*
 * The same for a frame executing at pc: an iseq whose code does not hold pc
 * was freed and its address reused, so it is read again (cache refreshed).
 * If the iseq read again does not hold pc either, the frame is torn (its iseq
 * and pc written by two calls, or half-written as it was read): NULL with
 * *torn set.
 */
struct iseq_info *iseq_get_at(struct ruby_target *t, uint64_t addr, uint64_t pc, int *torn);
/* The source line executing at pc (a frame's saved pc), or the iseq's first line. */
int32_t iseq_line(const struct iseq_info *is, uint64_t pc);
/*
 * Rank query on Ruby's succinct bit vector (iseq.c, since 2.6): 54 bits kept
 * 7-bit-rank-packed in 6 words, then blocks of 512 bits with their ranks.
 * Exposed for unit tests.
 */
int iseq_succ_rank(const uint64_t *succ, size_t words, uint32_t pos);
void iseq_info_free(struct iseq_info *is);

#endif
