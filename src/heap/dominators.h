/* dominators.h: the dominator tree of a heap graph (Lengauer-Tarjan, iterative: no recursion however deep the heap). */
#ifndef RBSCOPE_HEAP_DOMINATORS_H
#define RBSCOPE_HEAP_DOMINATORS_H

#include <stddef.h>
#include <stdint.h>

/*
 * Nodes reachable from a virtual root are numbered 1..count in depth-first
 * preorder, 1 being the virtual root itself; an object's immediate dominator
 * is the last object every path from a root to it goes through (the virtual
 * root when two roots reach it apart). A dominator is always numbered below
 * what it dominates, so a pass from count down to 2 visits children first.
 */
struct heap_dom {
	uint32_t count;
	uint32_t *num;   /* [node] its number, 0 when no root reaches it */
	uint32_t *order; /* [number] its node; order[1] is UINT32_MAX (the virtual root) */
	uint32_t *idom;  /* [number] the number of its immediate dominator; idom[1] = 0 */
};

/*
 * The graph: n nodes, node v's successors edges[eoff[v] .. eoff[v] + ecnt[v]),
 * the virtual root's successors roots[0..nroots). Memory: 40 bytes a
 * reachable node and 4 a reachable reference while it runs; 12 a node after.
 * 0, -ENOMEM or -E2BIG (more than 2^31 nodes or 2^32 references).
 */
int heap_dom_build(struct heap_dom *d, uint32_t n, const uint32_t *eoff, const uint32_t *ecnt, const uint32_t *edges,
		   const uint32_t *roots, size_t nroots);
void heap_dom_free(struct heap_dom *d);

#endif
