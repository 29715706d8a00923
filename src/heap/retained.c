/* retained.c: `heap retained`: what each object keeps alive (its dominator-tree subtree), by object, class or site. */
#include "retained.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/err.h"
#include "../lib/map.h"
#include "../lib/json.h"
#include "dominators.h"
#include "graph.h"
#include "../lib/vec.h"

struct tally {
	uint64_t objects, memsize;
};

struct group {
	uint64_t key; /* class node (HEAP_NONE: none) or location id */
	uint64_t retained, objects; /* of the members no other member dominates */
	uint64_t instances, self;
};

struct retained {
	enum heap_retained_by by;
	struct heap_graph g;
	struct heap_dom d;
	uint64_t *size;  /* [number] retained memsize */
	uint32_t *objs;  /* [number] retained objects, itself included */
	struct tally reach, unreach, absent;
	struct group *groups;
	size_t ngroups;
};

static void tally(struct retained *r)
{
	const struct heap_graph *g = &r->g;
	for (uint32_t v = 0; v < g->n; v++) {
		struct tally *t = !g->type[v] ? &r->absent : r->d.num[v] ? &r->reach : &r->unreach;
		t->objects++;
		t->memsize += g->memsize[v];
	}
}

/* Sum each object's retained size into its immediate dominator's, from the leaves up. */
static int retain(struct retained *r)
{
	const struct heap_dom *d = &r->d;
	r->size = malloc(((size_t)d->count + 1) * sizeof(*r->size));
	r->objs = malloc(((size_t)d->count + 1) * sizeof(*r->objs));
	if (!r->size || !r->objs)
		return -ENOMEM;
	r->size[1] = r->objs[1] = 0;
	for (uint32_t a = 2; a <= d->count; a++) {
		uint32_t v = d->order[a];
		r->size[a] = r->g.memsize[v];
		r->objs[a] = r->g.type[v] ? 1 : 0;
	}
	for (uint32_t a = d->count; a >= 2; a--) {
		r->size[d->idom[a]] += r->size[a];
		r->objs[d->idom[a]] += r->objs[a];
	}
	return 0;
}

static int bigger(const struct retained *r, uint32_t a, uint32_t b)
{
	if (r->size[a] != r->size[b])
		return r->size[a] > r->size[b];
	if (r->objs[a] != r->objs[b])
		return r->objs[a] > r->objs[b];
	return a < b;
}

/* The top objects by retained size, largest first, into out (room for top); how many. */
static size_t top_objects(const struct retained *r, uint32_t *out, size_t top)
{
	size_t n = 0; /* out[0..n) is a min-heap until the end */
	for (uint32_t a = 2; a <= r->d.count; a++) {
		if (!r->g.type[r->d.order[a]])
			continue;
		size_t i;
		if (n < top) {
			i = n++;
			while (i && bigger(r, out[(i - 1) / 2], a)) { /* sift up */
				out[i] = out[(i - 1) / 2];
				i = (i - 1) / 2;
			}
			out[i] = a;
			continue;
		}
		if (!bigger(r, a, out[0]))
			continue;
		for (i = 0;;) { /* replace the smallest, sift down */
			size_t c = 2 * i + 1;
			if (c >= n)
				break;
			if (c + 1 < n && bigger(r, out[c], out[c + 1]))
				c++;
			if (!bigger(r, a, out[c]))
				break;
			out[i] = out[c];
			i = c;
		}
		out[i] = a;
	}
	for (size_t end = n; end > 1; end--) { /* heap sort: smallest to the end */
		uint32_t x = out[end - 1];
		out[end - 1] = out[0];
		size_t i = 0;
		for (;;) {
			size_t c = 2 * i + 1;
			if (c >= end - 1)
				break;
			if (c + 1 < end - 1 && bigger(r, out[c], out[c + 1]))
				c++;
			if (!bigger(r, x, out[c]))
				break;
			out[i] = out[c];
			i = c;
		}
		out[i] = x;
	}
	return n;
}

/* Each number's group (UINT32_MAX: none), the groups made as met. */
static int assign_groups(struct retained *r, uint32_t *gid)
{
	struct map index;
	size_t cap = 0;
	int err = 0;
	map_init(&index);
	gid[1] = UINT32_MAX;
	for (uint32_t a = 2; a <= r->d.count && !err; a++) {
		uint32_t v = r->d.order[a];
		gid[a] = UINT32_MAX;
		if (!r->g.type[v])
			continue;
		uint64_t key = r->by == HEAP_RETAINED_CLASS ? r->g.cls[v] : r->g.loc[v], *hit = map_get(&index, key);
		size_t i = hit ? (size_t)*hit - 1 : r->ngroups;
		if (!hit) {
			struct group *gr = vec_grow(r->groups, r->ngroups, &cap, sizeof(*gr));
			if (!gr) {
				err = -ENOMEM;
				break;
			}
			r->groups = gr;
			r->groups[r->ngroups++] = (struct group){ .key = key };
			err = map_put(&index, key, i + 1);
		}
		gid[a] = (uint32_t)i;
		r->groups[i].instances++;
		r->groups[i].self += r->g.memsize[v];
	}
	map_free(&index);
	return err;
}

/*
 * Walk the dominator tree depth first, counting for each group how many of
 * its members are on the way down: a member met while none is counts whole.
 */
static int group_tops(struct retained *r, const uint32_t *gid)
{
	uint32_t n = r->d.count, *coff = calloc((size_t)n + 2, sizeof(*coff)), *kids = malloc(((size_t)n + 1) * sizeof(*kids));
	uint32_t *stack = malloc(((size_t)n + 1) * sizeof(*stack)), *active = calloc(r->ngroups + 1, sizeof(*active));
	int err = coff && kids && stack && active ? 0 : -ENOMEM;
	if (!err) {
		for (uint32_t a = 2; a <= n; a++)
			coff[r->d.idom[a] + 1]++;
		for (uint32_t a = 1; a <= n + 1; a++)
			coff[a] += coff[a - 1];
		for (uint32_t a = 2; a <= n; a++)
			kids[coff[r->d.idom[a]]++] = a;
		for (uint32_t a = n + 1; a > 0; a--)
			coff[a] = coff[a - 1];
		coff[0] = 0;
		const uint32_t LEAVE = 1u << 31;
		size_t sp = 0;
		stack[sp++] = 1;
		while (sp) {
			uint32_t a = stack[--sp], g;
			if (a & LEAVE) {
				active[gid[a & ~LEAVE]]--;
				continue;
			}
			if ((g = gid[a]) != UINT32_MAX) {
				if (!active[g]) {
					r->groups[g].retained += r->size[a];
					r->groups[g].objects += r->objs[a];
				}
				active[g]++;
				stack[sp++] = a | LEAVE; /* in place of a: the stack never holds more than n entries */
			}
			for (uint32_t i = coff[a]; i < coff[a + 1]; i++)
				stack[sp++] = kids[i];
		}
	}
	free(coff);
	free(kids);
	free(stack);
	free(active);
	return err;
}

static int by_retained(const void *a, const void *b)
{
	const struct group *x = a, *y = b;
	if (x->retained != y->retained)
		return x->retained < y->retained ? 1 : -1;
	return x->instances < y->instances ? 1 : x->instances > y->instances ? -1 : 0;
}

static void group_label(const struct retained *r, const struct group *gr, char *buf, size_t cap)
{
	if (r->by == HEAP_RETAINED_CLASS)
		heap_graph_class_label(&r->g, (uint32_t)gr->key, buf, cap);
	else
		snprintf(buf, cap, "%s", gr->key ? strtab_get(&r->g.strs, (uint32_t)gr->key) : "(no allocation info)");
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0;
}

static void print_header(const struct retained *r, int json, FILE *out)
{
	const struct heap_graph *g = &r->g;
	if (json) {
		fprintf(out, "{\"reachable\":{\"objects\":%llu,\"memsize\":%llu},\"unreachable\":{\"objects\":%llu,\"memsize\":%llu},"
			     "\"not_objects\":{\"records\":%llu,\"memsize\":%llu},\"root_references\":%zu",
			(unsigned long long)r->reach.objects, (unsigned long long)r->reach.memsize,
			(unsigned long long)r->unreach.objects, (unsigned long long)r->unreach.memsize,
			(unsigned long long)g->skipped, (unsigned long long)g->skipped_memsize, g->nroots);
		return;
	}
	fprintf(out, "%llu objects reachable from %zu root references, %llu bytes of memsize\n",
		(unsigned long long)r->reach.objects, g->nroots, (unsigned long long)r->reach.memsize);
	fprintf(out, "%llu objects no root reaches through the dump's references (garbage not yet swept, or kept by "
		     "links the dump leaves out), %llu bytes: in no retained size\n",
		(unsigned long long)r->unreach.objects, (unsigned long long)r->unreach.memsize);
	if (g->skipped)
		fprintf(out, "%llu SHAPE or free-slot records, %llu bytes: not objects, not in the graph\n",
			(unsigned long long)g->skipped, (unsigned long long)g->skipped_memsize);
	if (r->absent.objects)
		fprintf(out, "%llu addresses referenced but not in the dump\n", (unsigned long long)r->absent.objects);
	fputc('\n', out);
}

static void print_objects(const struct retained *r, const uint32_t *top, size_t n, int json, FILE *out)
{
	char label[512];
	if (!json)
		fprintf(out, "%14s %7s %10s %12s  %-16s %-8s %-30s %s\n", "retained", "%", "objects", "self", "address", "type",
			"class (of a class: its name)", "allocated at");
	for (size_t i = 0; i < n; i++) {
		uint32_t a = top[i], v = r->d.order[a];
		const char *loc = heap_graph_location(&r->g, v);
		heap_graph_label(&r->g, v, label, sizeof(label));
		if (!json) {
			fprintf(out, "%14llu %6.2f%% %10u %12llu  0x%-14llx %-8s %-30s %s\n", (unsigned long long)r->size[a],
				pct(r->size[a], r->reach.memsize), r->objs[a], (unsigned long long)r->g.memsize[v],
				(unsigned long long)r->g.addr[v], heap_graph_type(&r->g, v), label, *loc ? loc : "-");
			continue;
		}
		fprintf(out, "%s{\"address\":\"0x%llx\",\"type\":", i ? "," : "", (unsigned long long)r->g.addr[v]);
		json_write_string(out, heap_graph_type(&r->g, v));
		fputs(",\"class\":", out);
		json_write_string(out, label);
		fputs(",\"location\":", out);
		if (*loc)
			json_write_string(out, loc);
		else
			fputs("null", out);
		fprintf(out, ",\"memsize\":%llu,\"retained\":%llu,\"retained_objects\":%u}", (unsigned long long)r->g.memsize[v],
			(unsigned long long)r->size[a], r->objs[a]);
	}
}

static void print_groups(const struct retained *r, size_t n, int json, FILE *out)
{
	char label[1200];
	const char *by = r->by == HEAP_RETAINED_CLASS ? "class" : "location";
	if (!json)
		fprintf(out, "%14s %7s %10s %10s %14s  %s\n", "retained", "%", "objects", "instances", "self", by);
	for (size_t i = 0; i < n; i++) {
		const struct group *gr = &r->groups[i];
		group_label(r, gr, label, sizeof(label));
		if (!json) {
			fprintf(out, "%14llu %6.2f%% %10llu %10llu %14llu  %s\n", (unsigned long long)gr->retained,
				pct(gr->retained, r->reach.memsize), (unsigned long long)gr->objects,
				(unsigned long long)gr->instances, (unsigned long long)gr->self, label);
			continue;
		}
		fprintf(out, "%s{\"key\":", i ? "," : "");
		json_write_string(out, label);
		fprintf(out, ",\"retained\":%llu,\"retained_objects\":%llu,\"instances\":%llu,\"memsize\":%llu}",
			(unsigned long long)gr->retained, (unsigned long long)gr->objects, (unsigned long long)gr->instances,
			(unsigned long long)gr->self);
	}
}

static int report(struct retained *r, int top, int json, FILE *out)
{
	size_t want = top > 0 ? (size_t)top : r->d.count, n;
	print_header(r, json, out);
	if (r->by == HEAP_RETAINED_OBJECTS) {
		uint32_t *best = malloc((want ? want : 1) * sizeof(*best));
		if (!best)
			return -ENOMEM;
		n = top_objects(r, best, want);
		if (json)
			fputs(",\"objects\":[", out);
		print_objects(r, best, n, json, out);
		free(best);
	} else {
		uint32_t *gid = malloc(((size_t)r->d.count + 1) * sizeof(*gid));
		int err = gid ? assign_groups(r, gid) : -ENOMEM;
		if (!err)
			err = group_tops(r, gid);
		free(gid);
		if (err)
			return err;
		if (r->ngroups)
			qsort(r->groups, r->ngroups, sizeof(*r->groups), by_retained);
		n = r->ngroups < want ? r->ngroups : want;
		if (json)
			fprintf(out, ",\"by\":\"%s\",\"groups\":[", r->by == HEAP_RETAINED_CLASS ? "class" : "location");
		print_groups(r, n, json, out);
		if (!json && n < r->ngroups)
			fprintf(out, "(%zu more; --top 0 lists all)\n", r->ngroups - n);
	}
	if (json)
		fputs("]}\n", out);
	return fflush(out) || ferror(out) ? -(errno ?: EIO) : 0;
}

int heap_retained(const char *path, enum heap_retained_by by, int top, int json, FILE *out, struct heap_stats *st)
{
	struct retained r = { .by = by };
	int err = heap_graph_load(&r.g, path, st);
	if (!err) {
		free(r.g.slots); /* no more lookups by address: room for the dominator tree */
		r.g.slots = NULL;
		r.g.scap = 0;
		err = heap_dom_build(&r.d, r.g.n, r.g.eoff, r.g.ecnt, r.g.edges, r.g.roots, r.g.nroots);
	}
	if (!err) {
		tally(&r);
		err = retain(&r);
	}
	if (!err)
		err = report(&r, top, json, out);
	free(r.size);
	free(r.objs);
	free(r.groups);
	heap_dom_free(&r.d);
	heap_graph_free(&r.g);
	return err;
}
