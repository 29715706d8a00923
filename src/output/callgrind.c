/* callgrind.c: the callgrind format, for KCachegrind, QCachegrind and callgrind_annotate. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/map.h"
#include "output.h"
#include "../lib/vec.h"

/* A source line of a function: the samples that stopped there, and the calls made from it. */
struct cg_site {
	uint32_t func;
	int32_t line;
	uint64_t self;
};

/* Samples spent in callee when called from a site. */
struct cg_edge {
	uint32_t site, callee;
	uint64_t cost;
};

struct cg {
	const struct profile *p;
	uint32_t *func_of;    /* frame -> function (one per name and path) */
	uint32_t *func_frame; /* function -> a frame of it */
	uint32_t *file_of;    /* function -> file id, 1-based, for name compression */
	uint32_t nfuncs, nfiles;
	struct cg_site *sites;
	size_t nsites, sites_cap;
	struct cg_edge *edges;
	size_t nedges, edges_cap;
	struct map site_index; /* (function, line) -> site as first added (cg_sort reorders sites) */
	struct map edge_index; /* (site, callee) -> edge */
	uint64_t total;
};

/* Functions by name and path, and files by path (frames with no path share one unknown file). */
static int cg_index(struct cg *c)
{
	const struct profile *p = c->p;
	struct map funcs, files;
	int err = 0;
	map_init(&funcs);
	map_init(&files);
	for (uint32_t i = 0; i < p->nframes && !err; i++) {
		const struct profile_frame *fr = &p->frames[i];
		uint64_t key = (uint64_t)fr->name << 32 | fr->path;
		uint64_t *hit = map_get(&funcs, key);
		if (hit) {
			c->func_of[i] = (uint32_t)*hit;
			continue;
		}
		uint32_t id = c->func_of[i] = c->nfuncs++;
		c->func_frame[id] = i;
		err = map_put(&funcs, key, id);
		hit = map_get(&files, fr->path);
		if (hit) {
			c->file_of[id] = (uint32_t)*hit;
		} else {
			c->file_of[id] = ++c->nfiles;
			err = err ?: map_put(&files, fr->path, c->nfiles);
		}
	}
	map_free(&funcs);
	map_free(&files);
	return err;
}

static int64_t site_of(struct cg *c, uint32_t func, int32_t line)
{
	uint64_t key = (uint64_t)func << 32 | (uint32_t)line;
	uint64_t *hit = map_get(&c->site_index, key);
	if (hit)
		return (int64_t)*hit;
	struct cg_site *sites = vec_grow(c->sites, c->nsites, &c->sites_cap, sizeof(*sites));
	if (!sites)
		return -ENOMEM;
	c->sites = sites;
	if (map_put(&c->site_index, key, c->nsites))
		return -ENOMEM;
	c->sites[c->nsites] = (struct cg_site){ func, line, 0 };
	return (int64_t)c->nsites++;
}

static int add_call(struct cg *c, uint32_t site, uint32_t callee, uint64_t count)
{
	uint64_t key = (uint64_t)site << 32 | callee;
	uint64_t *hit = map_get(&c->edge_index, key);
	if (hit) {
		c->edges[*hit].cost += count;
		return 0;
	}
	struct cg_edge *edges = vec_grow(c->edges, c->nedges, &c->edges_cap, sizeof(*edges));
	if (!edges)
		return -ENOMEM;
	c->edges = edges;
	if (map_put(&c->edge_index, key, c->nedges))
		return -ENOMEM;
	c->edges[c->nedges++] = (struct cg_edge){ site, callee, count };
	return 0;
}

/*
 * Viewers take a called function's inclusive cost from the calls into it
 * (callgrind_annotate --inclusive=yes sums them; KCachegrind prefers them
 * too), so a sample may enter each function once: only the call into the
 * outermost occurrence of a function in a stack carries it, and recursion
 * is not counted twice. The leaf's line always gets the self cost.
 */
static int cg_add_stack(struct cg *c, uint32_t stack, uint32_t stamp, uint32_t *seen)
{
	const struct profile *p = c->p;
	const struct profile_stack *s = &p->stacks[stack];
	uint64_t w = profile_stack_weight(p, stack);
	const uint32_t *frames = &p->pool[s->start];
	for (uint32_t j = 0; j < s->len; j++) {
		uint32_t func = c->func_of[frames[j]];
		if (seen[func] == stamp)
			continue;
		seen[func] = stamp;
		if (!j)
			continue;
		const struct profile_frame *caller = &p->frames[frames[j - 1]];
		int64_t site = site_of(c, c->func_of[frames[j - 1]], caller->line > 0 ? caller->line : 0);
		if (site < 0 || add_call(c, (uint32_t)site, func, w))
			return -ENOMEM;
	}
	const struct profile_frame *leaf = &p->frames[frames[s->len - 1]];
	int64_t site = site_of(c, c->func_of[frames[s->len - 1]], leaf->line > 0 ? leaf->line : 0);
	if (site < 0)
		return (int)site;
	c->sites[site].self += w;
	c->total += w;
	return 0;
}

static int cg_build(struct cg *c)
{
	const struct profile *p = c->p;
	uint32_t *seen = calloc(p->nframes + 1, sizeof(*seen));
	int err = seen ? cg_index(c) : -ENOMEM;
	for (uint32_t i = 0; i < p->nstacks && !err; i++)
		if (p->stacks[i].count && p->stacks[i].len)
			err = cg_add_stack(c, i, i + 1, seen);
	free(seen);
	return err;
}

static int site_cmp(const void *a, const void *b)
{
	const struct cg_site *x = a, *y = b;
	if (x->func != y->func)
		return x->func < y->func ? -1 : 1;
	return (x->line > y->line) - (x->line < y->line);
}

static int edge_cmp(const void *a, const void *b)
{
	const struct cg_edge *x = a, *y = b;
	if (x->site != y->site)
		return x->site < y->site ? -1 : 1;
	return (x->callee > y->callee) - (x->callee < y->callee);
}

/* Sites by function and line, and edges in the order of their sites (renumbered to match). */
static int cg_sort(struct cg *c)
{
	uint32_t *rank = malloc((c->nsites + 1) * sizeof(*rank));
	if (!rank)
		return -ENOMEM;
	qsort(c->sites, c->nsites, sizeof(*c->sites), site_cmp);
	for (size_t i = 0; i < c->nsites; i++) {
		uint64_t key = (uint64_t)c->sites[i].func << 32 | (uint32_t)c->sites[i].line;
		rank[*map_get(&c->site_index, key)] = (uint32_t)i;
	}
	for (size_t i = 0; i < c->nedges; i++)
		c->edges[i].site = rank[c->edges[i].site];
	qsort(c->edges, c->nedges, sizeof(*c->edges), edge_cmp);
	free(rank);
	return 0;
}

/* A name on one line: the format has no quoting. */
static void put_name(FILE *f, const char *s)
{
	if (!*s)
		s = "???";
	for (; *s; s++)
		fputc(*s == '\n' || *s == '\r' ? ' ' : *s, f);
}

/* "key=(id)", with the name the first time the id is used (name compression). */
static void put_ref(FILE *f, const char *key, uint32_t id, uint8_t *named, const char *name)
{
	fprintf(f, "%s=(%u)", key, id);
	if (!named[id]) {
		named[id] = 1;
		fputc(' ', f);
		put_name(f, name);
	}
	fputc('\n', f);
}

static void put_header(const struct cg *c, FILE *f)
{
	const struct profile *p = c->p;
	fprintf(f, "# callgrind format\nversion: 1\ncreator: rbscope\npid: %d\ncmd: ", p->pid);
	put_name(f, strtab_get(&p->strs, p->command));
	fprintf(f, "\ndesc: Trigger: sampling at %u Hz for %.2f s\ndesc: Ruby: ", p->rate_hz,
		(double)p->duration_ns / 1e9);
	put_name(f, strtab_get(&p->strs, p->ruby_version));
	const char *event = c->p->kind != PROFILE_ALLOCS ? "Samples" : c->p->by_bytes ? "Bytes" : "Objects";
	fprintf(f, "\npositions: line\nevents: %s\nsummary: %llu\n", event, (unsigned long long)c->total);
}

/*
 * With --native frames, every function also names its object (ob=, cob=):
 * a native function the library it is in (its file id, the library being
 * its file), the others "(ruby)", id nfiles + 1. Without, none does.
 */
static void put_object(const struct cg *c, FILE *f, const char *key, uint32_t func, uint8_t *named_obj)
{
	const struct profile *p = c->p;
	const struct profile_frame *fr = &p->frames[c->func_frame[func]];
	if (!named_obj)
		return;
	if (fr->kind == PROFILE_FRAME_NATIVE)
		put_ref(f, key, c->file_of[func], named_obj, strtab_get(&p->strs, fr->path));
	else
		put_ref(f, key, c->nfiles + 1, named_obj, "(ruby)");
}

/* One fn= block per function: its self cost by line, then its calls with their inclusive costs. */
static void put_functions(const struct cg *c, FILE *f, uint8_t *named_file, uint8_t *named_func, uint8_t *named_obj)
{
	const struct profile *p = c->p;
	size_t e = 0;
	for (size_t i = 0, end; i < c->nsites; i = end) {
		uint32_t func = c->sites[i].func;
		const struct profile_frame *fr = &p->frames[c->func_frame[func]];
		fputc('\n', f);
		put_object(c, f, "ob", func, named_obj);
		put_ref(f, "fl", c->file_of[func], named_file, strtab_get(&p->strs, fr->path));
		put_ref(f, "fn", func + 1, named_func, strtab_get(&p->strs, fr->name));
		for (end = i; end < c->nsites && c->sites[end].func == func; end++)
			if (c->sites[end].self)
				fprintf(f, "%d %llu\n", c->sites[end].line, (unsigned long long)c->sites[end].self);
		for (; e < c->nedges && c->edges[e].site < end; e++) {
			const struct cg_edge *ed = &c->edges[e];
			const struct profile_frame *to = &p->frames[c->func_frame[ed->callee]];
			put_object(c, f, "cob", ed->callee, named_obj);
			put_ref(f, "cfl", c->file_of[ed->callee], named_file, strtab_get(&p->strs, to->path));
			put_ref(f, "cfn", ed->callee + 1, named_func, strtab_get(&p->strs, to->name));
			/* The call count is unknown to a sampler: the samples stand in for it. */
			fprintf(f, "calls=%llu 0\n%d %llu\n", (unsigned long long)ed->cost, c->sites[ed->site].line,
				(unsigned long long)ed->cost);
		}
	}
	fprintf(f, "\ntotals: %llu\n", (unsigned long long)c->total);
}

static void cg_free(struct cg *c)
{
	free(c->func_of);
	free(c->func_frame);
	free(c->file_of);
	free(c->sites);
	free(c->edges);
	map_free(&c->site_index);
	map_free(&c->edge_index);
}

int output_callgrind(const struct profile *p, FILE *f)
{
	struct cg c = { .p = p };
	map_init(&c.site_index);
	map_init(&c.edge_index);
	c.func_of = calloc(p->nframes + 1, sizeof(*c.func_of));
	c.func_frame = calloc(p->nframes + 1, sizeof(*c.func_frame));
	c.file_of = calloc(p->nframes + 1, sizeof(*c.file_of));
	uint8_t *named_file = calloc(p->nframes + 2, 1), *named_func = calloc(p->nframes + 2, 1), *named_obj = NULL;
	int native = 0;
	for (uint32_t i = 0; i < p->nframes && !native; i++)
		native = p->frames[i].kind == PROFILE_FRAME_NATIVE;
	int err = -ENOMEM;
	if (native && !(named_obj = calloc(p->nframes + 2, 1)))
		native = -1;
	if (c.func_of && c.func_frame && c.file_of && named_file && named_func && native >= 0)
		err = cg_build(&c) ?: cg_sort(&c);
	if (!err) {
		put_header(&c, f);
		put_functions(&c, f, named_file, named_func, named_obj);
	}
	free(named_file);
	free(named_func);
	free(named_obj);
	cg_free(&c);
	return err;
}
