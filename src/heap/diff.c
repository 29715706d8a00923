/* diff.c: `heap diff`: what was allocated after one dump and is still alive in the next (and the one after). */
#include "diff.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/buf.h"
#include "../lib/err.h"
#include "../lib/map.h"
#include "../lib/strtab.h"
#include "parts.h"

#define ARRAY_MAX ((size_t)1 << 40) /* a part's arrays: far above any dump, below a corrupt size */

/*
 * An object is "the same" in two dumps only if its address, type and
 * allocation identity (generation, file, line) agree: a slot freed and
 * reused by a new object of the same type is a different object.
 */
static uint64_t identity(const struct heap_rec *r)
{
	uint64_t h = map_hash64(r->address) ^ map_hash_bytes(r->type.p, r->type.n, 1);
	if (r->has_generation)
		h ^= map_hash64((uint64_t)r->generation * 0x9e3779b97f4a7c15ULL + 7);
	if (r->has_file)
		h ^= map_hash_bytes(r->file.p, r->file.n, 2) ^ map_hash64((uint64_t)r->line + 11);
	return h == MAP_EMPTY ? h - 1 : h;
}

enum role { BEFORE, AFTER, LATER };

/* An object of AFTER not in BEFORE. */
struct fresh {
	uint64_t id;    /* identity() */
	uint32_t loc;   /* id of "file:line" in its part's strings, once collected in struct diff's */
	int live;       /* in LATER too */
	uint64_t klass; /* class address */
	uint64_t memsize;
};

/* What the dumps read so far gave: read-only while the parts of the next one are read. */
struct diff {
	struct map before; /* identity -> 1 */
	int64_t max_gen_before;
	struct map after;  /* identity -> index in v + 1 */
	struct fresh *v;   /* AFTER's objects not in BEFORE, in the order of the dump */
	size_t n;
	struct heap_class_names names; /* in strs, from the last dump that says */
	struct strtab strs; /* locations and class names */
	uint64_t traced, untraced, moved; /* AFTER's objects not in BEFORE: with allocation info, without, moved */
	uint64_t traced_before;           /* BEFORE's objects with allocation info */
	uint64_t agent;                   /* AFTER's new objects allocated by rbscope's agent, left out */
};

struct class_name {
	uint64_t addr;
	uint32_t name; /* id in its part's strings */
	uint32_t fact; /* enum heap_class_fact: what name says of addr */
};

/* What one part of one dump gave; parts are read on several threads, each into its own. */
struct diff_part {
	const struct diff *d;
	enum role role;
	struct buf ids;     /* BEFORE: uint64_t identities */
	struct buf classes; /* struct class_name, in the order of the dump */
	struct buf fresh;   /* AFTER: struct fresh, in the order of the dump */
	struct strtab strs;
	int64_t max_gen;
	uint64_t traced, untraced, moved; /* BEFORE: traced counts its objects with allocation info */
	uint64_t agent;
	int err;
};

/*
 * Allocated by rbscope's agent (lib/rbscope/agent.rb: the heap dump's own
 * pipe, IO and strings while `rbscope heapdump` made these dumps)? Those are
 * the tool's, not the program's, so a diff leaves them out.
 */
static int agent_file(struct span f)
{
	static const char tail[] = "/rbscope/agent.rb";
	size_t n = sizeof(tail) - 1;
	return f.n >= n && !memcmp(f.p + f.n - n, tail, n);
}

static uint32_t part_intern(struct diff_part *p, const char *s, size_t n)
{
	int64_t id = strtab_intern(&p->strs, s, n);
	if (id < 0)
		p->err = (int)id;
	return id < 0 ? 0 : (uint32_t)id;
}

static int on_rec(const struct heap_rec *r, void *arg)
{
	struct diff_part *p = arg;
	if (!r->address || span_eq(r->type, "ROOT"))
		return 0;
	struct heap_class_note notes[2];
	for (int i = 0, n = heap_class_notes(r, notes); i < n; i++) {
		struct class_name c = { notes[i].addr, part_intern(p, notes[i].name.p, notes[i].name.n), (uint32_t)notes[i].fact };
		if (buf_add(&p->classes, &c, sizeof(c)))
			p->err = -ENOMEM;
	}
	uint64_t id = identity(r);
	if (p->role == BEFORE) {
		p->traced += r->has_file;
		if (r->has_generation && r->generation > p->max_gen)
			p->max_gen = r->generation;
		if (buf_add(&p->ids, &id, sizeof(id)))
			p->err = -ENOMEM;
		return p->err;
	}
	if (p->role == LATER) {
		uint64_t *hit = map_get(&p->d->after, id);
		if (hit) /* another part may mark the same one: a duplicated line */
			__atomic_store_n(&p->d->v[*hit - 1].live, 1, __ATOMIC_RELAXED);
		return 0;
	}
	if (map_get(&p->d->before, id))
		return 0;
	if (r->has_file && agent_file(r->file)) {
		p->agent++;
		return 0;
	}
	r->has_file ? p->traced++ : p->untraced++;
	/* Allocated before the first dump, yet not in it: it moved (GC.compact) or the dump was partial. */
	if (r->has_generation && r->generation < p->d->max_gen_before) {
		p->moved++;
		return 0;
	}
	struct fresh f = { .id = id, .klass = HEAP_CLASS_ADDR(r), .memsize = r->memsize };
	char buf[1100];
	int len = heap_location(r, buf, sizeof(buf));
	if (len)
		f.loc = part_intern(p, buf, (size_t)len);
	if (buf_add(&p->fresh, &f, sizeof(f)))
		p->err = -ENOMEM;
	return p->err;
}

/* BEFORE's identities into one set; the parts' lists are freed as they go. */
static int collect_before(struct heap_parts *ps, struct diff_part *parts, struct diff *d)
{
	for (int i = 0; i < ps->n; i++) {
		struct diff_part *p = &parts[i];
		if (ps->v[i].file != BEFORE)
			continue;
		const uint64_t *id = (const uint64_t *)p->ids.data;
		for (size_t k = 0; k < p->ids.len / sizeof(*id); k++)
			if (map_put(&d->before, id[k], 1))
				return -ENOMEM;
		if (p->max_gen > d->max_gen_before)
			d->max_gen_before = p->max_gen;
		d->traced_before += p->traced;
		buf_free(&p->ids);
	}
	return 0;
}

/* AFTER's new objects, part after part, into one list with locations in one table (and a set, for LATER). */
static int collect_fresh(struct heap_parts *ps, struct diff_part *parts, struct diff *d)
{
	size_t total = 0;
	for (int i = 0; i < ps->n; i++)
		total += parts[i].fresh.len / sizeof(struct fresh);
	if (!(d->v = malloc((total ? total : 1) * sizeof(*d->v))))
		return -ENOMEM;
	for (int i = 0; i < ps->n; i++) {
		struct diff_part *p = &parts[i];
		if (ps->v[i].file != AFTER)
			continue;
		struct map locs; /* the part's location ids -> ours */
		map_init(&locs);
		const struct fresh *fr = (const struct fresh *)p->fresh.data;
		int err = 0;
		for (size_t k = 0; !err && k < p->fresh.len / sizeof(*fr); k++) {
			struct fresh x = fr[k];
			uint64_t *hit = x.loc ? map_get(&locs, x.loc) : NULL;
			if (hit) {
				x.loc = (uint32_t)*hit;
			} else if (x.loc) {
				const char *s = strtab_get(&p->strs, x.loc);
				int64_t id = strtab_intern(&d->strs, s, strlen(s));
				err = id < 0 || map_put(&locs, x.loc, (uint64_t)id) ? -ENOMEM : 0;
				x.loc = (uint32_t)id;
			}
			d->v[d->n++] = x;
			if (!err && ps->npaths == 3 && map_put(&d->after, x.id, d->n))
				err = -ENOMEM;
		}
		map_free(&locs);
		buf_free(&p->fresh);
		if (err)
			return err;
		d->traced += p->traced;
		d->untraced += p->untraced;
		d->agent += p->agent;
		d->moved += p->moved;
	}
	return 0;
}

/* The class names of every dump, in file order, so the last dump that names a class has its say. */
static int collect_classes(struct heap_parts *ps, struct diff_part *parts, struct diff *d)
{
	for (int f = 0; f < ps->npaths; f++) {
		for (int i = 0; i < ps->n; i++) {
			struct diff_part *p = &parts[i];
			if (ps->v[i].file != f)
				continue;
			const struct class_name *c = (const struct class_name *)p->classes.data;
			for (size_t k = 0; k < p->classes.len / sizeof(*c); k++) {
				const char *name = strtab_get(&p->strs, c[k].name);
				int64_t id = strtab_intern(&d->strs, name, strlen(name));
				if (id < 0 || heap_class_names_put(&d->names, (int)c[k].fact, c[k].addr, (uint32_t)id))
					return -ENOMEM;
			}
		}
	}
	return 0;
}

struct row {
	uint32_t loc;
	uint64_t klass, count, memsize;
};

static int by_count(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return x->memsize < y->memsize ? 1 : x->memsize > y->memsize ? -1 : 0;
}

/* Group the survivors by allocation site and class, largest count first, and print them. */
static int report(const struct diff *d, const char *const *paths, int npaths, int top, FILE *out)
{
	struct map groups;
	map_init(&groups);
	struct row *rows = calloc(d->n + 1, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	size_t nrows = 0;
	uint64_t total = 0, bytes = 0;
	for (size_t i = 0; i < d->n; i++) {
		const struct fresh *f = &d->v[i];
		if (npaths == 3 && !f->live)
			continue;
		uint64_t key = map_hash64((uint64_t)f->loc << 1 | 1) ^ map_hash64(f->klass);
		uint64_t *hit = map_get(&groups, key);
		struct row *r;
		if (hit) {
			r = &rows[*hit - 1];
		} else {
			r = &rows[nrows++];
			*r = (struct row){ f->loc, f->klass, 0, 0 };
			map_put(&groups, key, nrows);
		}
		r->count++;
		r->memsize += f->memsize;
		total++;
		bytes += f->memsize;
	}
	qsort(rows, nrows, sizeof(*rows), by_count);
	if (npaths == 3)
		fprintf(out, "%llu objects (%llu bytes) allocated after %s, alive in %s and still alive in %s\n",
			(unsigned long long)total, (unsigned long long)bytes, paths[0], paths[1], paths[2]);
	else
		fprintf(out, "%llu objects (%llu bytes) allocated after %s and alive in %s\n", (unsigned long long)total,
			(unsigned long long)bytes, paths[0], paths[1]);
	if (d->agent)
		fprintf(out, "note: %llu objects allocated by rbscope's agent (lib/rbscope/agent.rb) are left out\n",
			(unsigned long long)d->agent);
	if (d->untraced && !d->traced)
		fprintf(out, "note: no allocation info in the dumps (ObjectSpace.trace_object_allocations_start): objects "
			     "are matched by address and type only, so a reused slot can look like a leak\n");
	if (d->moved * 20 > d->moved + d->n && d->moved > 100)
		fprintf(out, "warning: %llu objects allocated before %s are at new addresses: the heap looks compacted "
			     "(GC.compact) between the dumps\n", (unsigned long long)d->moved, paths[0]);
	/*
	 * With tracing on, whatever is allocated after BEFORE has a site, but GC.compact drops the
	 * site of each object it moves (Ruby 2.7, 3.1, 3.3): many new objects without one mean compaction,
	 * and objects that moved cannot be matched by address. Say so.
	 */
	if (d->traced_before && d->untraced * 20 > d->n && d->untraced > 100)
		fprintf(out, "warning: %llu objects new in %s have no allocation info though %s's objects have it: the "
			     "heap looks compacted (GC.compact moves objects and drops their allocation info) between the "
			     "dumps; moved objects show as new, under (no allocation info)\n",
			(unsigned long long)d->untraced, paths[1], paths[0]);
	fprintf(out, "\n%10s %14s  %-50s %s\n", "objects", "bytes", "location", "class");
	for (size_t i = 0; i < nrows && (top <= 0 || i < (size_t)top); i++) {
		char cls[1200] = "(no class)";
		if (rows[i].klass)
			heap_class_names_label(&d->names, &d->strs, rows[i].klass, cls, sizeof(cls));
		fprintf(out, "%10llu %14llu  %-50s %s\n", (unsigned long long)rows[i].count,
			(unsigned long long)rows[i].memsize,
			rows[i].loc ? strtab_get(&d->strs, rows[i].loc) : "(no allocation info)", cls);
	}
	if (top > 0 && nrows > (size_t)top)
		fprintf(out, "(%zu more; --top 0 lists all)\n", nrows - (size_t)top);
	free(rows);
	map_free(&groups);
	return fflush(out) || ferror(out) ? -(errno ?: EIO) : 0;
}

/* The first of the files read (in order) that failed, and how; else a part's own error (memory); else 0. */
static int first_failure(const struct heap_parts *ps, const struct diff_part *parts, int nread, struct heap_stats *st,
			 int *failed)
{
	for (int f = 0; f < nread; f++) {
		int err = heap_parts_result(ps, f, &st[f]);
		if (err) {
			*failed = f;
			return err;
		}
	}
	for (int i = 0; i < ps->n; i++)
		if (parts[i].err)
			return parts[i].err;
	return 0;
}

int heap_diff_parts(const char *const *paths, int npaths, int top, FILE *out, struct heap_stats *st, int *failed,
		    uint64_t part_size)
{
	struct diff d = { .max_gen_before = -1 };
	struct heap_parts ps;
	struct diff_part *parts = NULL;
	map_init(&d.before);
	map_init(&d.after);
	heap_class_names_init(&d.names);
	strtab_init(&d.strs);
	memset(st, 0, (size_t)npaths * sizeof(*st));
	*failed = -1;
	int err = heap_parts_open(&ps, paths, npaths, part_size);
	if (!err && !(parts = calloc((size_t)ps.n + 1, sizeof(*parts))))
		err = -ENOMEM;
	for (int i = 0; !err && i < ps.n; i++) {
		struct diff_part *p = &parts[i];
		p->d = &d;
		p->role = (enum role)ps.v[i].file;
		p->max_gen = -1;
		buf_init(&p->ids, ARRAY_MAX);
		buf_init(&p->classes, ARRAY_MAX);
		buf_init(&p->fresh, ARRAY_MAX);
		strtab_init(&p->strs);
		ps.v[i].arg = p;
	}
	/* One dump after the other, each on every core: each needs what the one before gave. */
	for (int f = 0; !err && f < npaths; f++) {
		heap_parts_read(&ps, 1u << f, on_rec);
		if ((err = first_failure(&ps, parts, f + 1, st, failed)))
			break;
		if (f == BEFORE)
			err = collect_before(&ps, parts, &d);
		else if (f == AFTER)
			err = collect_fresh(&ps, parts, &d);
	}
	if (!err && !(err = collect_classes(&ps, parts, &d)))
		err = report(&d, paths, npaths, top, out);
	for (int i = 0; parts && i < ps.n; i++) {
		buf_free(&parts[i].ids);
		buf_free(&parts[i].classes);
		buf_free(&parts[i].fresh);
		strtab_free(&parts[i].strs);
	}
	free(parts);
	heap_parts_close(&ps);
	free(d.v);
	map_free(&d.before);
	map_free(&d.after);
	heap_class_names_free(&d.names);
	strtab_free(&d.strs);
	return err;
}

int heap_diff(const char *const *paths, int npaths, int top, FILE *out, struct heap_stats *st, int *failed)
{
	return heap_diff_parts(paths, npaths, top, out, st, failed, 0);
}
