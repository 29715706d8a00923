/* graph.c: a heap dump's object graph in compact form: dense node numbers, each node's references as u32 runs. */
#include "graph.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/err.h"

#define MAX_NODES (HEAP_NONE - 2)

static int grow(void *pp, size_t size, size_t cap)
{
	void **p = pp, *q = realloc(*p, size * cap);
	if (!q)
		return -ENOMEM;
	*p = q;
	return 0;
}

static int grow_nodes(struct heap_graph *g)
{
	size_t cap = g->cap ? (size_t)g->cap * 2 : 1024;
	if (cap > MAX_NODES)
		cap = MAX_NODES;
	if (cap <= g->n)
		return -E2BIG;
	if (grow(&g->addr, 8, cap) || grow(&g->memsize, 8, cap) || grow(&g->eoff, 4, cap) || grow(&g->ecnt, 4, cap) ||
	    grow(&g->cls, 4, cap) || grow(&g->loc, 4, cap) || grow(&g->type, 1, cap))
		return -ENOMEM;
	g->cap = (uint32_t)cap;
	return 0;
}

static size_t slot_of(const struct heap_graph *g, uint64_t addr)
{
	size_t mask = g->scap - 1, i = map_hash64(addr) & mask;
	while (g->slots[i] && g->addr[g->slots[i] - 1] != addr)
		i = (i + 1) & mask;
	return i;
}

/* Keep the address hash at most 3/4 full. */
static int grow_slots(struct heap_graph *g)
{
	size_t cap = g->scap ? g->scap * 2 : 2048;
	uint32_t *old = g->slots;
	size_t oldcap = g->scap;
	if (!(g->slots = calloc(cap, sizeof(*g->slots)))) {
		g->slots = old;
		return -ENOMEM;
	}
	g->scap = cap;
	for (size_t i = 0; i < oldcap; i++)
		if (old[i])
			g->slots[slot_of(g, g->addr[old[i] - 1])] = old[i];
	free(old);
	return 0;
}

uint32_t heap_graph_find(const struct heap_graph *g, uint64_t addr)
{
	if (!g->scap)
		return HEAP_NONE;
	uint32_t s = g->slots[slot_of(g, addr)];
	return s ? s - 1 : HEAP_NONE;
}

/* The node of addr, made if new; HEAP_NONE (and g->err) when out of memory or nodes. */
static uint32_t node_of(struct heap_graph *g, uint64_t addr)
{
	if ((size_t)(g->n + 1) * 4 > g->scap * 3 && (g->err = grow_slots(g)))
		return HEAP_NONE;
	size_t i = slot_of(g, addr);
	if (g->slots[i])
		return g->slots[i] - 1;
	if (g->n == g->cap && (g->err = grow_nodes(g)))
		return HEAP_NONE;
	uint32_t v = g->n++;
	g->addr[v] = addr;
	g->memsize[v] = 0;
	g->eoff[v] = g->ecnt[v] = 0;
	g->cls[v] = HEAP_NONE;
	g->loc[v] = 0;
	g->type[v] = 0;
	g->slots[i] = v + 1;
	return v;
}

/* The index of name in tab (interned in g->strs), added if new; 0 when the table is full or out of memory. */
static int name_index(struct heap_graph *g, uint32_t *tab, int *n, struct span name)
{
	for (int i = 1; i < *n; i++)
		if (span_eq(name, strtab_get(&g->strs, tab[i])))
			return i;
	if (*n == 0)
		*n = 1; /* 0 means none */
	if (*n >= 255) /* the 255th and later names share a slot: no dump has that many types */
		name = (struct span){ "(other)", 7 };
	int64_t id = strtab_intern(&g->strs, name.p, name.n);
	if (id < 0) {
		g->err = (int)id;
		return 0;
	}
	if (*n == 256)
		return 255;
	tab[*n] = (uint32_t)id;
	return (*n)++;
}

static int hexdigit(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Call add(g, node, arg) for every "0x..." address in a references list; stops at g->err. */
static void each_ref(struct heap_graph *g, struct span refs, void (*add)(struct heap_graph *, uint32_t, int), int arg)
{
	if (!refs.n)
		return;
	const char *p = refs.p, *e = refs.p + refs.n;
	while (p < e && !g->err) {
		const char *x = memchr(p, 'x', (size_t)(e - p));
		if (!x)
			break;
		uint64_t a = 0;
		int d, digits = 0;
		for (p = x + 1; p < e && (d = hexdigit(*p)) >= 0; p++, digits++)
			a = a << 4 | (uint64_t)d;
		if (digits && digits <= 16 && a) {
			uint32_t v = node_of(g, a);
			if (v != HEAP_NONE)
				add(g, v, arg);
		}
	}
}

static void add_edge(struct heap_graph *g, uint32_t v, int unused)
{
	(void)unused;
	if (g->nedges == g->ecap) {
		size_t cap = g->ecap ? g->ecap * 2 : 4096;
		if (cap > UINT32_MAX)
			cap = UINT32_MAX;
		if (cap <= g->nedges) {
			g->err = -E2BIG;
			return;
		}
		if ((g->err = grow(&g->edges, 4, cap)))
			return;
		g->ecap = cap;
	}
	g->edges[g->nedges++] = v;
}

static void add_root(struct heap_graph *g, uint32_t v, int kind)
{
	if (g->nroots == g->rcap) {
		size_t cap = g->rcap ? g->rcap * 2 : 1024;
		if ((g->err = grow(&g->roots, 4, cap)) || (g->err = grow(&g->root_kind, 1, cap)))
			return;
		g->rcap = cap;
	}
	g->roots[g->nroots] = v;
	g->root_kind[g->nroots++] = (uint8_t)kind;
}

/* A class's or module's name, or for a singleton class its real class's (heap_class_label words them). */
static void add_name(struct heap_graph *g, uint32_t v, const struct heap_rec *r)
{
	int64_t id;
	struct map *m = &g->names;
	if (r->name.n)
		id = strtab_intern(&g->strs, r->name.p, r->name.n);
	else if (r->real_class_name.n)
		id = strtab_intern(&g->strs, r->real_class_name.p, r->real_class_name.n), m = &g->singletons;
	else
		return;
	if (id < 0 || map_put(m, v, (uint64_t)id + 1))
		g->err = id < 0 ? (int)id : -ENOMEM;
}

/* Each singleton class whose named class or module is in the dump: that name ("#<Class:Foo>"). */
static int attach_singletons(struct heap_graph *g)
{
	uint64_t v, name;
	for (size_t i = 0; map_next(&g->names, &i, &v, &name);)
		if (g->cls[v] != HEAP_NONE && map_get(&g->singletons, g->cls[v]) && map_put(&g->attached, g->cls[v], name))
			return -ENOMEM;
	return 0;
}

static int on_record(const struct heap_rec *r, void *arg)
{
	struct heap_graph *g = arg;
	if (span_eq(r->type, "ROOT")) {
		int kind = name_index(g, g->kinds, &g->nkinds, r->root.n ? r->root : (struct span){ "?", 1 });
		each_ref(g, r->refs, add_root, kind);
		return g->err;
	}
	if (!r->address)
		return 0;
	if (span_eq(r->type, "SHAPE") || span_eq(r->type, "NONE")) {
		g->skipped++;
		g->skipped_memsize += r->memsize;
		return 0;
	}
	uint32_t v = node_of(g, r->address);
	if (v == HEAP_NONE)
		return g->err;
	if (g->type[v]) {
		g->duplicates++; /* the first record of an address wins */
		return 0;
	}
	int t = name_index(g, g->types, &g->ntypes, r->type);
	uint32_t cls = HEAP_CLASS_ADDR(r) ? node_of(g, r->class_addr) : HEAP_NONE;
	char buf[1200];
	int n = heap_location(r, buf, sizeof(buf));
	int64_t loc = n ? strtab_intern(&g->strs, buf, (size_t)n) : 0;
	if (loc < 0)
		g->err = (int)loc;
	if (g->err)
		return g->err;
	g->type[v] = (uint8_t)t;
	g->memsize[v] = r->memsize;
	g->cls[v] = cls;
	g->loc[v] = (uint32_t)loc;
	g->eoff[v] = (uint32_t)g->nedges;
	each_ref(g, r->refs, add_edge, 0);
	g->ecnt[v] = (uint32_t)(g->nedges - g->eoff[v]);
	if (span_eq(r->type, "CLASS") || span_eq(r->type, "MODULE"))
		add_name(g, v, r);
	g->objects++;
	return g->err;
}

int heap_graph_load(struct heap_graph *g, const char *path, struct heap_stats *st)
{
	memset(g, 0, sizeof(*g));
	map_init(&g->names);
	map_init(&g->singletons);
	map_init(&g->attached);
	int err = strtab_init(&g->strs);
	if (!err)
		err = heap_read(path, on_record, g, st);
	if (g->err)
		err = g->err;
	return err ?: attach_singletons(g);
}

void heap_graph_free(struct heap_graph *g)
{
	free(g->addr);
	free(g->memsize);
	free(g->eoff);
	free(g->ecnt);
	free(g->cls);
	free(g->loc);
	free(g->type);
	free(g->edges);
	free(g->roots);
	free(g->root_kind);
	free(g->slots);
	strtab_free(&g->strs);
	map_free(&g->names);
	map_free(&g->singletons);
	map_free(&g->attached);
	memset(g, 0, sizeof(*g));
}

const char *heap_graph_type(const struct heap_graph *g, uint32_t v)
{
	return g->type[v] ? strtab_get(&g->strs, g->types[g->type[v]]) : "";
}

const char *heap_graph_location(const struct heap_graph *g, uint32_t v)
{
	return strtab_get(&g->strs, g->loc[v]);
}

/* The string v has in map m, or NULL. */
static const char *name_in(const struct heap_graph *g, const struct map *m, uint32_t v)
{
	const uint64_t *hit = map_get(m, v);
	return hit ? strtab_get(&g->strs, (uint32_t)(*hit - 1)) : NULL;
}

void heap_graph_class_label(const struct heap_graph *g, uint32_t cls, char *buf, size_t cap)
{
	if (cls == HEAP_NONE || g->addr[cls] < 0x1000) /* (IMEMOs: nil, 0x8) */
		snprintf(buf, cap, "(no class: internal objects)");
	else
		heap_class_label(buf, cap, g->addr[cls], name_in(g, &g->names, cls), name_in(g, &g->attached, cls),
				 name_in(g, &g->singletons, cls));
}

void heap_graph_label(const struct heap_graph *g, uint32_t v, char *buf, size_t cap)
{
	const char *t = heap_graph_type(g, v);
	if ((map_get(&g->names, v) || map_get(&g->singletons, v)) && (!strcmp(t, "CLASS") || !strcmp(t, "MODULE")))
		heap_graph_class_label(g, v, buf, cap);
	else if (!g->type[v])
		snprintf(buf, cap, "(not in the dump)");
	else
		heap_graph_class_label(g, g->cls[v], buf, cap);
}

/* The first index in queue[0..n) of a node at depth d or more (depths along the queue only grow). */
static size_t level_start(const uint32_t *queue, size_t n, const uint32_t *depth, uint32_t d)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (depth[queue[mid]] < d)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

long heap_graph_path(const struct heap_graph *g, uint32_t to, uint32_t *out, const char **root_kind)
{
	uint32_t *depth = malloc((size_t)g->n * sizeof(*depth)), *queue = malloc((size_t)g->n * sizeof(*queue));
	long len = 0;
	if (!depth || !queue) {
		free(depth);
		free(queue);
		return -ENOMEM;
	}
	memset(depth, 0xff, (size_t)g->n * sizeof(*depth));
	size_t head = 0, tail = 0;
	for (size_t i = 0; i < g->nroots; i++)
		if (depth[g->roots[i]] == HEAP_NONE) {
			depth[g->roots[i]] = 0;
			queue[tail++] = g->roots[i];
		}
	/* Breadth first, to the end of the level where `to` is found: every shortest path is then known. */
	while (head < tail && (depth[to] == HEAP_NONE || depth[queue[head]] < depth[to])) {
		uint32_t v = queue[head++];
		for (uint32_t i = 0; i < g->ecnt[v]; i++) {
			uint32_t w = g->edges[g->eoff[v] + i];
			if (depth[w] == HEAP_NONE) {
				depth[w] = depth[v] + 1;
				queue[tail++] = w;
			}
		}
	}
	if (depth[to] != HEAP_NONE) {
		/*
		 * Back from `to`, one level at a time. Of the objects one level up that reference it,
		 * take the first that is not Ruby's internal bookkeeping (IMEMO: inline caches, method
		 * entries, environments) when there is one: the path then reads through the constants,
		 * instance variables and collections a user knows, among paths of the same length.
		 */
		len = (long)depth[to] + 1;
		uint32_t v = to;
		for (long i = len - 1;; i--) {
			out[i] = v;
			if (!i)
				break;
			uint32_t d = depth[v] - 1, pick = HEAP_NONE;
			for (size_t q = level_start(queue, tail, depth, d); q < tail && depth[queue[q]] == d; q++) {
				uint32_t u = queue[q];
				int refers = 0;
				for (uint32_t k = 0; k < g->ecnt[u] && !refers; k++)
					refers = g->edges[g->eoff[u] + k] == v;
				if (!refers)
					continue;
				if (pick == HEAP_NONE)
					pick = u;
				if (strcmp(heap_graph_type(g, u), "IMEMO")) {
					pick = u;
					break;
				}
			}
			v = pick;
		}
		for (size_t i = 0; i < g->nroots; i++)
			if (g->roots[i] == out[0]) {
				*root_kind = strtab_get(&g->strs, g->kinds[g->root_kind[i]]);
				break;
			}
	}
	free(depth);
	free(queue);
	return len;
}
