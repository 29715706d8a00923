/* graph.h: a heap dump's object graph in compact form: dense node numbers, each node's references as u32 runs. */
#ifndef RBSCOPE_HEAP_GRAPH_H
#define RBSCOPE_HEAP_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "../lib/map.h"
#include "../lib/strtab.h"
#include "dump.h"

#define HEAP_NONE UINT32_MAX

/*
 * Every address seen in the dump, as an object or only as a reference, is a
 * node numbered 0..n-1 in the order first seen. Per node the graph keeps 33
 * bytes in parallel arrays, plus 4 bytes per reference and a u32 hash slot
 * per node, whatever the lines looked like: the dump's text is never kept.
 * SHAPE records (Ruby >= 3.2's object shapes) and free slots ("NONE", in a
 * full dump) are not objects: they are counted in `skipped` and not nodes.
 */
struct heap_graph {
	uint32_t n, cap;
	uint64_t *addr, *memsize;
	uint32_t *eoff, *ecnt; /* a node's references: edges[eoff .. eoff + ecnt) */
	uint32_t *cls;         /* the node of the object's class, or HEAP_NONE */
	uint32_t *loc;         /* strtab id of "file:line", 0 when the dump has none */
	uint8_t *type;         /* index in types[]; 0: referenced but not in the dump */
	uint32_t *edges;
	size_t nedges, ecap;
	uint32_t *roots;       /* the nodes ROOT records name, in the dump's order */
	uint8_t *root_kind;    /* index in kinds[] of each */
	size_t nroots, rcap;
	uint32_t *slots;       /* address hash: node + 1, 0 when empty */
	size_t scap;
	struct strtab strs;
	uint32_t types[256], kinds[256]; /* strtab ids of type and root names */
	int ntypes, nkinds;
	struct map names;      /* class node -> strtab id of its name + 1 */
	struct map singletons; /* singleton class node -> strtab id of its real class's name + 1 (heap_class_label) */
	struct map attached;   /* singleton class node -> strtab id of the named class or module it belongs to + 1 */
	uint64_t objects, skipped, skipped_memsize, duplicates;
	int err;
};

/*
 * Read the dump at path (as heap_read) into g. 0, -errno, -E2BIG past 2^32
 * nodes or references, or ERR_BAD_FILE when no line was a record.
 */
int heap_graph_load(struct heap_graph *g, const char *path, struct heap_stats *st);
void heap_graph_free(struct heap_graph *g);
/* The node of an address, or HEAP_NONE. */
uint32_t heap_graph_find(const struct heap_graph *g, uint64_t addr);
/* The object's type name ("" for a node with no record). */
const char *heap_graph_type(const struct heap_graph *g, uint32_t v);
/*
 * What to call a node in a report: a class or module its own name, anything
 * else the name of its class, worded as `heap summary --by class` does.
 */
void heap_graph_label(const struct heap_graph *g, uint32_t v, char *buf, size_t cap);
/* The name of a class node (an object's cls), worded as `heap summary --by class` does; cls may be HEAP_NONE. */
void heap_graph_class_label(const struct heap_graph *g, uint32_t cls, char *buf, size_t cap);
/* "file:line" or "" */
const char *heap_graph_location(const struct heap_graph *g, uint32_t v);

/*
 * The shortest chain of references from any root to node `to`, breadth
 * first over the roots in dump order: fills out[0..len) with nodes from the
 * root's first reference to `to` (out needs room for g->n) and *root_kind
 * with the root's name. Returns len, 0 if no root reaches it, or -ENOMEM.
 */
long heap_graph_path(const struct heap_graph *g, uint32_t to, uint32_t *out, const char **root_kind);

#endif
