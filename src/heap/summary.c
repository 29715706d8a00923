/* summary.c: `heap summary`: a dump's objects and memsize grouped by type, class, location, file, gem or generation. */
#include "summary.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/err.h"
#include "../lib/map.h"
#include "../lib/strtab.h"
#include "../lib/json.h"
#include "parts.h"
#include "../lib/vec.h"

struct group {
	uint64_t key; /* string id, class address or generation */
	uint64_t count, memsize;
};

struct summary {
	enum heap_by by;
	struct strtab strs;
	struct map index;   /* key -> group index + 1 */
	struct group *g;
	size_t n, cap;
	struct heap_class_names names; /* in strs */
	uint64_t count, memsize;
	int err;
};

static uint32_t intern(struct summary *s, const char *p, size_t n)
{
	int64_t id = strtab_intern(&s->strs, p, n);
	if (id < 0)
		s->err = (int)id;
	return id < 0 ? 0 : (uint32_t)id;
}

/* The gem a path belongs to: ".../gems/NAME-1.2.3/..." -> NAME; Ruby's own library; else the app. */
static void gem_of(struct span f, char *out, size_t cap)
{
	const char *p = f.p, *end = f.p + f.n, *best = NULL;
	for (const char *q = p; q + 6 <= end; q++)
		if (!memcmp(q, "/gems/", 6))
			best = q + 6;
	if (best) {
		const char *slash = memchr(best, '/', (size_t)(end - best)), *e = slash ? slash : end, *dash = NULL;
		for (const char *q = best; q < e; q++)
			if (*q == '-' && q + 1 < e && q[1] >= '0' && q[1] <= '9')
				dash = q; /* the version starts after the last "-<digit>" */
		snprintf(out, cap, "%.*s", (int)((dash ? dash : e) - best), best);
		return;
	}
	if (f.n >= 10 && (!memcmp(p, "/usr/lib/ruby/", 14 < f.n ? 14 : f.n) || memmem(p, f.n, "/lib/ruby/", 10)))
		snprintf(out, cap, "(ruby's library)");
	else if (f.n && *p == '<')
		snprintf(out, cap, "(ruby's core)");
	else
		snprintf(out, cap, "(application)");
}

static int add(struct summary *s, uint64_t key, uint64_t count, uint64_t memsize)
{
	uint64_t *hit = map_get(&s->index, key);
	size_t i;
	if (hit) {
		i = (size_t)*hit - 1;
	} else {
		struct group *g = vec_grow(s->g, s->n, &s->cap, sizeof(*g));
		if (!g)
			return -ENOMEM;
		s->g = g;
		i = s->n++;
		s->g[i] = (struct group){ key, 0, 0 };
		if (map_put(&s->index, key, i + 1))
			return -ENOMEM;
	}
	s->g[i].count += count;
	s->g[i].memsize += memsize;
	return 0;
}

static int on_record(const struct heap_rec *r, void *arg)
{
	struct summary *s = arg;
	char buf[1200];
	if (span_eq(r->type, "ROOT"))
		return 0;
	struct heap_class_note notes[2];
	for (int i = heap_class_notes(r, notes); i-- > 0;)
		heap_class_names_put(&s->names, notes[i].fact, notes[i].addr, intern(s, notes[i].name.p, notes[i].name.n));
	uint64_t key = 0;
	int n;
	switch (s->by) {
	case HEAP_BY_TYPE: key = intern(s, r->type.p, r->type.n); break;
	case HEAP_BY_CLASS: key = HEAP_CLASS_ADDR(r); break;
	case HEAP_BY_GENERATION: key = r->has_generation ? (uint64_t)r->generation + 1 : 0; break;
	case HEAP_BY_LOCATION:
		if ((n = heap_location(r, buf, sizeof(buf))))
			key = (uint64_t)intern(s, buf, (size_t)n) + 1;
		break;
	case HEAP_BY_FILE:
		if (r->has_file)
			key = (uint64_t)intern(s, r->file.p, r->file.n) + 1;
		break;
	case HEAP_BY_GEM:
		if (r->has_file) {
			gem_of(r->file, buf, sizeof(buf));
			key = (uint64_t)intern(s, buf, strlen(buf)) + 1;
		}
		break;
	}
	s->count++;
	s->memsize += r->memsize;
	if (add(s, key, 1, r->memsize))
		s->err = -ENOMEM;
	return s->err;
}

/* The string key has in map m, or NULL. */
static void label(struct summary *s, const struct group *g, char *out, size_t cap)
{
	switch (s->by) {
	case HEAP_BY_TYPE: snprintf(out, cap, "%s", strtab_get(&s->strs, (uint32_t)g->key)); break;
	case HEAP_BY_CLASS:
		if (!g->key)
			snprintf(out, cap, "(no class: internal objects)");
		else
			heap_class_names_label(&s->names, &s->strs, g->key, out, cap);
		break;
	case HEAP_BY_GENERATION:
		if (g->key)
			snprintf(out, cap, "%lld", (long long)g->key - 1);
		else
			snprintf(out, cap, "(no allocation info)");
		break;
	default:
		snprintf(out, cap, "%s", g->key ? strtab_get(&s->strs, (uint32_t)(g->key - 1)) : "(no allocation info)");
	}
}

const char *const heap_by_names[] = { "type", "class", "location", "file", "gem", "generation", NULL };

static void summary_init(struct summary *s, enum heap_by by)
{
	*s = (struct summary){ .by = by };
	strtab_init(&s->strs);
	map_init(&s->index);
	heap_class_names_init(&s->names);
}

static void summary_free(struct summary *s)
{
	free(s->g);
	map_free(&s->index);
	heap_class_names_free(&s->names);
	strtab_free(&s->strs);
}

/* The id in s of string id of from's strings. */
static uint64_t reintern(struct summary *s, const struct summary *from, uint64_t id)
{
	const char *str = strtab_get(&from->strs, (uint32_t)id);
	return intern(s, str, strlen(str));
}

/*
 * Add a part's groups and class names to s. Parts merged in file order give
 * what one reader gives: groups in order of first appearance (so sorting
 * ties fall alike) and each class named by its last record.
 */
static int merge(struct summary *s, const struct summary *part)
{
	for (size_t i = 0; i < part->n && !s->err; i++) {
		uint64_t key = part->g[i].key;
		if (s->by == HEAP_BY_TYPE)
			key = reintern(s, part, key);
		else if (key && s->by != HEAP_BY_CLASS && s->by != HEAP_BY_GENERATION)
			key = reintern(s, part, key - 1) + 1;
		if (add(s, key, part->g[i].count, part->g[i].memsize))
			return -ENOMEM;
	}
	uint64_t key, val;
	for (int k = 0; k < HEAP_CLASS_FACTS; k++)
		for (size_t i = 0; !s->err && map_next(&part->names.by[k], &i, &key, &val);)
			if (heap_class_names_put(&s->names, k, key, reintern(s, part, val - 1)))
				return -ENOMEM;
	s->count += part->count;
	s->memsize += part->memsize;
	return s->err;
}

/* Read the dump into s, its plain file cut into parts read on every core. */
static int read_summary(const char *path, struct summary *s, struct heap_stats *st)
{
	struct heap_parts ps;
	struct summary *parts = NULL;
	int err = heap_parts_open(&ps, &path, 1, 0);
	if (!err && !(parts = calloc((size_t)ps.n, sizeof(*parts))))
		err = -ENOMEM;
	for (int i = 0; !err && i < ps.n; i++) {
		summary_init(&parts[i], s->by);
		ps.v[i].arg = &parts[i];
	}
	if (!err) {
		heap_parts_read(&ps, 1, on_record);
		err = heap_parts_result(&ps, 0, st);
	}
	for (int i = 0; !err && i < ps.n; i++)
		if (!(err = parts[i].err))
			err = merge(s, &parts[i]);
	for (int i = 0; parts && i < ps.n; i++)
		summary_free(&parts[i]);
	free(parts);
	heap_parts_close(&ps);
	return err;
}

static int by_bytes(const void *a, const void *b)
{
	const struct heap_summary_row *x = a, *y = b;
	if (x->memsize != y->memsize)
		return x->memsize < y->memsize ? 1 : -1;
	return x->count < y->count ? 1 : x->count > y->count ? -1 : 0;
}

int heap_summary_print(FILE *out, const struct heap_summary_names *nm, struct heap_summary_row *rows, size_t n,
		       uint64_t count, uint64_t memsize, int top, int json, const char *json_extra)
{
	const char *by = nm->by;
	if (n)
		qsort(rows, n, sizeof(*rows), by_bytes);
	if (json) {
		fprintf(out, "{\"objects\":%llu,\"%s\":%llu%s%s,\"by\":\"%s\",\"groups\":[", (unsigned long long)count,
			nm->json_key, (unsigned long long)memsize, *json_extra ? "," : "", json_extra, by);
		for (size_t i = 0; i < n && (top <= 0 || i < (size_t)top); i++) {
			fprintf(out, "%s{\"key\":", i ? "," : "");
			json_write_string(out, rows[i].label);
			fprintf(out, ",\"objects\":%llu,\"%s\":%llu}", (unsigned long long)rows[i].count, nm->json_key,
				(unsigned long long)rows[i].memsize);
		}
		fputs("]}\n", out);
	} else {
		fprintf(out, "%llu objects, %llu %s, by %s (%zu groups)\n\n", (unsigned long long)count,
			(unsigned long long)memsize, nm->total, by, n);
		fprintf(out, "%10s %7s %14s %7s  %s\n", "objects", "%", nm->column, "%", by);
		for (size_t i = 0; i < n && (top <= 0 || i < (size_t)top); i++)
			fprintf(out, "%10llu %6.2f%% %14llu %6.2f%%  %s\n", (unsigned long long)rows[i].count,
				count ? 100.0 * (double)rows[i].count / (double)count : 0, (unsigned long long)rows[i].memsize,
				memsize ? 100.0 * (double)rows[i].memsize / (double)memsize : 0, rows[i].label);
		if (top > 0 && n > (size_t)top)
			fprintf(out, "(%zu more; --top 0 lists all)\n", n - (size_t)top);
	}
	return fflush(out) || ferror(out) ? -(errno ?: EIO) : 0;
}

int heap_summary(const char *path, enum heap_by by, int top, int json, FILE *out, struct heap_stats *st)
{
	struct summary s;
	summary_init(&s, by);
	memset(st, 0, sizeof(*st));
	int err = read_summary(path, &s, st);
	struct heap_summary_row *rows = NULL;
	if (!err && s.n && !(rows = calloc(s.n, sizeof(*rows))))
		err = -ENOMEM;
	for (size_t i = 0; !err && i < s.n; i++) {
		char l[1200];
		label(&s, &s.g[i], l, sizeof(l));
		rows[i] = (struct heap_summary_row){ strdup(l), s.g[i].count, s.g[i].memsize };
		if (!rows[i].label)
			err = -ENOMEM;
	}
	if (!err) {
		char extra[64];
		snprintf(extra, sizeof(extra), "\"bad_lines\":%llu", (unsigned long long)st->bad);
		const struct heap_summary_names nm = { heap_by_names[by], "memsize", "memsize", "bytes of memsize" };
		err = heap_summary_print(out, &nm, rows, s.n, s.count, s.memsize, top, json, extra);
	}
	for (size_t i = 0; rows && i < s.n; i++)
		free(rows[i].label);
	free(rows);
	summary_free(&s);
	return err;
}
