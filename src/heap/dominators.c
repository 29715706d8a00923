/* dominators.c: the dominator tree of a heap graph (Lengauer-Tarjan, iterative: no recursion however deep the heap). */
#include "dominators.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct graph {
	const uint32_t *eoff, *ecnt, *edges, *roots;
	size_t nroots;
};

/* The successors of number a's node (the virtual root's are the roots). */
static const uint32_t *succ(const struct graph *g, const struct heap_dom *d, uint32_t a, size_t *cnt)
{
	if (a == 1) {
		*cnt = g->nroots;
		return g->roots;
	}
	uint32_t v = d->order[a];
	*cnt = g->ecnt[v];
	return *cnt ? g->edges + g->eoff[v] : NULL;
}

/* Number the reachable nodes in depth-first preorder, with parent[] the tree; cursor[] and stack[] are scratch. */
static void number(const struct graph *g, struct heap_dom *d, uint32_t *parent, size_t *cursor, uint32_t *stack)
{
	uint32_t count = 1, sp = 0;
	d->order[1] = UINT32_MAX;
	parent[1] = 0;
	cursor[1] = 0;
	stack[sp++] = 1;
	while (sp) {
		uint32_t a = stack[sp - 1];
		size_t cnt;
		const uint32_t *s = succ(g, d, a, &cnt);
		if (cursor[a] == cnt) {
			sp--;
			continue;
		}
		uint32_t w = s[cursor[a]++];
		if (d->num[w])
			continue;
		d->num[w] = ++count;
		d->order[count] = w;
		parent[count] = a;
		cursor[count] = 0;
		stack[sp++] = count;
	}
	d->count = count;
}

/* Each number's predecessors by number: pred[poff[a] .. poff[a + 1]). */
static int predecessors(const struct graph *g, const struct heap_dom *d, uint32_t **poffp, uint32_t **predp)
{
	uint32_t *poff = calloc((size_t)d->count + 2, sizeof(*poff)), *pred;
	if (!poff)
		return -ENOMEM;
	size_t total = 0, cnt;
	for (uint32_t a = 1; a <= d->count; a++) {
		const uint32_t *s = succ(g, d, a, &cnt);
		for (size_t i = 0; i < cnt; i++)
			poff[d->num[s[i]] + 1]++;
		total += cnt;
	}
	if (total > UINT32_MAX) {
		free(poff);
		return -E2BIG;
	}
	for (uint32_t a = 1; a <= d->count + 1; a++)
		poff[a] += poff[a - 1];
	if (!(pred = malloc((total ? total : 1) * sizeof(*pred)))) {
		free(poff);
		return -ENOMEM;
	}
	for (uint32_t a = 1; a <= d->count; a++) { /* fill from each start, then shift the starts back */
		const uint32_t *s = succ(g, d, a, &cnt);
		for (size_t i = 0; i < cnt; i++)
			pred[poff[d->num[s[i]]]++] = a;
	}
	for (uint32_t a = d->count + 1; a > 0; a--)
		poff[a] = poff[a - 1];
	poff[0] = 0;
	*poffp = poff;
	*predp = pred;
	return 0;
}

struct forest {
	uint32_t *ancestor, *label, *semi, *stack;
};

/* The number of least semidominator on the forest path to v (v itself if v is a tree root), compressing it. */
static uint32_t eval(struct forest *f, uint32_t v)
{
	if (!f->ancestor[v])
		return v;
	uint32_t sp = 0, x = v;
	while (f->ancestor[f->ancestor[x]]) {
		f->stack[sp++] = x;
		x = f->ancestor[x];
	}
	while (sp) {
		x = f->stack[--sp];
		uint32_t a = f->ancestor[x];
		if (f->semi[f->label[a]] < f->semi[f->label[x]])
			f->label[x] = f->label[a];
		f->ancestor[x] = f->ancestor[a];
	}
	return f->label[v];
}

/* Semidominators from the predecessors, then immediate dominators (Lengauer and Tarjan, 1979, simple linking). */
static void dominate(struct heap_dom *d, const uint32_t *parent, const uint32_t *poff, const uint32_t *pred,
		     struct forest *f, uint32_t *bhead, uint32_t *bnext)
{
	uint32_t n = d->count, *idom = d->idom;
	for (uint32_t a = 1; a <= n; a++) {
		f->semi[a] = f->label[a] = a;
		f->ancestor[a] = bhead[a] = 0;
	}
	for (uint32_t w = n; w >= 2; w--) {
		uint32_t p = parent[w];
		for (uint32_t i = poff[w]; i < poff[w + 1]; i++) {
			uint32_t u = eval(f, pred[i]);
			if (f->semi[u] < f->semi[w])
				f->semi[w] = f->semi[u];
		}
		bnext[w] = bhead[f->semi[w]];
		bhead[f->semi[w]] = w;
		f->ancestor[w] = p;
		for (uint32_t v = bhead[p]; v; v = bnext[v]) {
			uint32_t u = eval(f, v);
			idom[v] = f->semi[u] < f->semi[v] ? u : p;
		}
		bhead[p] = 0;
	}
	idom[1] = 0;
	for (uint32_t w = 2; w <= n; w++)
		if (idom[w] != f->semi[w])
			idom[w] = idom[idom[w]];
}

int heap_dom_build(struct heap_dom *d, uint32_t n, const uint32_t *eoff, const uint32_t *ecnt, const uint32_t *edges,
		   const uint32_t *roots, size_t nroots)
{
	struct graph g = { eoff, ecnt, edges, roots, nroots };
	memset(d, 0, sizeof(*d));
	if (n >= INT32_MAX)
		return -E2BIG;
	size_t cap = (size_t)n + 2;
	uint32_t *parent = malloc(cap * sizeof(uint32_t)), *stack = malloc(cap * sizeof(uint32_t));
	uint32_t *poff = NULL, *pred = NULL, *bhead = NULL, *bnext = NULL;
	struct forest f = { NULL, NULL, NULL, stack };
	size_t *cursor = malloc(cap * sizeof(size_t));
	d->num = calloc(n ? n : 1, sizeof(uint32_t));
	d->order = malloc(cap * sizeof(uint32_t));
	int err = parent && stack && cursor && d->num && d->order ? 0 : -ENOMEM;
	if (!err) {
		number(&g, d, parent, cursor, stack);
		free(cursor);
		cursor = NULL;
		err = predecessors(&g, d, &poff, &pred);
	}
	cap = (size_t)d->count + 1;
	if (!err) {
		d->idom = malloc(cap * sizeof(uint32_t));
		f.ancestor = malloc(cap * sizeof(uint32_t));
		f.label = malloc(cap * sizeof(uint32_t));
		f.semi = malloc(cap * sizeof(uint32_t));
		bhead = malloc(cap * sizeof(uint32_t));
		bnext = malloc(cap * sizeof(uint32_t));
		err = d->idom && f.ancestor && f.label && f.semi && bhead && bnext ? 0 : -ENOMEM;
	}
	if (!err)
		dominate(d, parent, poff, pred, &f, bhead, bnext);
	free(cursor);
	free(parent);
	free(stack);
	free(poff);
	free(pred);
	free(f.ancestor);
	free(f.label);
	free(f.semi);
	free(bhead);
	free(bnext);
	if (err)
		heap_dom_free(d);
	return err;
}

void heap_dom_free(struct heap_dom *d)
{
	free(d->num);
	free(d->order);
	free(d->idom);
	memset(d, 0, sizeof(*d));
}
