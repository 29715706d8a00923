/* diff.c: `heap diff`: what was allocated after one dump and is still alive in the next (and the one after). */
#include "diff.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/err.h"
#include "../lib/map.h"
#include "../lib/strtab.h"

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

struct fresh {
	uint32_t loc;   /* string id of "file:line" or 0 */
	uint64_t klass; /* class address */
	uint64_t memsize;
	int live;       /* seen in the third dump */
};

struct diff {
	int phase; /* 0: before, 1: after, 2: later */
	struct map before;  /* identity -> 1 */
	struct map after;   /* identity -> index in v + 1 (objects new in after) */
	struct fresh *v;
	size_t n, cap;
	struct map classes; /* class address -> name id + 1 (from the last dump read) */
	struct strtab strs;
	int64_t max_gen_before;
	uint64_t traced, untraced, moved, old_in_after;
	int err;
};

static int on_rec(const struct heap_rec *r, void *arg)
{
	struct diff *d = arg;
	if (!r->address || span_eq(r->type, "ROOT"))
		return 0;
	if ((span_eq(r->type, "CLASS") || span_eq(r->type, "MODULE")) && r->name.n) {
		int64_t id = strtab_intern(&d->strs, r->name.p, r->name.n);
		if (id >= 0)
			map_put(&d->classes, r->address, (uint64_t)id + 1);
	}
	uint64_t id = identity(r);
	if (d->phase == 0) {
		if (r->has_generation && r->generation > d->max_gen_before)
			d->max_gen_before = r->generation;
		if (map_put(&d->before, id, 1))
			d->err = -ENOMEM;
		return d->err;
	}
	if (d->phase == 2) {
		uint64_t *hit = map_get(&d->after, id);
		if (hit)
			d->v[*hit - 1].live = 1;
		return 0;
	}
	if (map_get(&d->before, id))
		return 0;
	r->has_file ? d->traced++ : d->untraced++;
	/* Allocated before the first dump, yet not in it: it moved (GC.compact) or the dump was partial. */
	if (r->has_generation && r->generation < d->max_gen_before) {
		d->moved++;
		return 0;
	}
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 4096;
		struct fresh *v = realloc(d->v, cap * sizeof(*v));
		if (!v)
			return d->err = -ENOMEM;
		d->v = v;
		d->cap = cap;
	}
	struct fresh *f = &d->v[d->n];
	f->loc = 0;
	char buf[1100];
	int len = heap_location(r, buf, sizeof(buf));
	if (len) {
		int64_t s = strtab_intern(&d->strs, buf, (size_t)len);
		f->loc = s < 0 ? 0 : (uint32_t)s;
	}
	f->klass = r->class_addr;
	f->memsize = r->memsize;
	f->live = 0;
	if (map_put(&d->after, id, ++d->n))
		d->err = -ENOMEM;
	return d->err;
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

int heap_diff(const char *const *paths, int npaths, int top, FILE *out)
{
	struct diff d = { .max_gen_before = -1 };
	map_init(&d.before);
	map_init(&d.after);
	map_init(&d.classes);
	strtab_init(&d.strs);
	int err = 0;
	for (int i = 0; i < npaths && !err; i++) {
		struct heap_stats st;
		d.phase = i;
		err = heap_read(paths[i], on_rec, &d, &st);
		if (!err)
			err = d.err;
		heap_report_bad(paths[i], &st);
		if (err == ERR_BAD_FILE)
			fprintf(stderr, "rbscope: %s: no heap records in it\n", paths[i]);
	}
	if (err)
		goto out;
	/* Group the survivors by allocation site and class. */
	struct map groups;
	map_init(&groups);
	struct row *rows = calloc(d.n + 1, sizeof(*rows));
	size_t nrows = 0;
	uint64_t total = 0, bytes = 0;
	for (size_t i = 0; rows && i < d.n; i++) {
		const struct fresh *f = &d.v[i];
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
	if (!rows) {
		map_free(&groups);
		err = -ENOMEM;
		goto out;
	}
	qsort(rows, nrows, sizeof(*rows), by_count);
	if (npaths == 3)
		fprintf(out, "%llu objects (%llu bytes) allocated after %s, alive in %s and still alive in %s\n",
			(unsigned long long)total, (unsigned long long)bytes, paths[0], paths[1], paths[2]);
	else
		fprintf(out, "%llu objects (%llu bytes) allocated after %s and alive in %s\n", (unsigned long long)total,
			(unsigned long long)bytes, paths[0], paths[1]);
	if (d.untraced && !d.traced)
		fprintf(out, "note: no allocation info in the dumps (ObjectSpace.trace_object_allocations_start): objects "
			     "are matched by address and type only, so a reused slot can look like a leak\n");
	if (d.moved * 20 > d.moved + d.n && d.moved > 100)
		fprintf(out, "warning: %llu objects allocated before %s are at new addresses: the heap looks compacted "
			     "(GC.compact) between the dumps\n", (unsigned long long)d.moved, paths[0]);
	fprintf(out, "\n%10s %14s  %-50s %s\n", "objects", "bytes", "location", "class");
	for (size_t i = 0; i < nrows && (top <= 0 || i < (size_t)top); i++) {
		uint64_t *cn = rows[i].klass ? map_get(&d.classes, rows[i].klass) : NULL;
		char cls[64];
		if (!cn)
			snprintf(cls, sizeof(cls), rows[i].klass ? "(class 0x%llx)" : "(no class)", (unsigned long long)rows[i].klass);
		fprintf(out, "%10llu %14llu  %-50s %s\n", (unsigned long long)rows[i].count,
			(unsigned long long)rows[i].memsize,
			rows[i].loc ? strtab_get(&d.strs, rows[i].loc) : "(no allocation info)",
			cn ? strtab_get(&d.strs, (uint32_t)(*cn - 1)) : cls);
	}
	if (top > 0 && nrows > (size_t)top)
		fprintf(out, "(%zu more; --top 0 lists all)\n", nrows - (size_t)top);
	free(rows);
	map_free(&groups);
	if (fflush(out) || ferror(out))
		err = -(errno ?: EIO);
out:
	free(d.v);
	map_free(&d.before);
	map_free(&d.after);
	map_free(&d.classes);
	strtab_free(&d.strs);
	return err;
}
