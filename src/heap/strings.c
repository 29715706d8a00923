/* strings.c: `heap strings`: String objects that hold the same value, and the bytes the copies waste. */
#include "strings.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/buf.h"
#include "../lib/err.h"
#include "../lib/map.h"
#include "../lib/strtab.h"
#include "../lib/vec.h"

#define PREVIEW 48          /* characters of a value shown */
#define TRUNCATED (1u << 31) /* in value.preview: the value is longer than shown */

struct value {
	uint64_t h2, bytesize;
	uint32_t count;
	uint32_t preview; /* strtab id, once seen twice */
};

struct strings {
	struct map index; /* first hash (re-mixed on collision) -> index in v + 1 */
	struct value *v;
	size_t n, cap;
	struct strtab strs;
	struct buf tmp;
	uint64_t strings, shared, no_value;
	int err;
};

static int hexdigits4(const char *p, const char *end)
{
	for (int i = 0; i < 4; i++)
		if (p + i >= end || !((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f') || (p[i] >= 'A' && p[i] <= 'F')))
			return 0;
	return 1;
}

/*
 * The start of a dumped value as printable JSON string content: valid escapes
 * kept, a stray quote or backslash escaped, other bytes outside ' '..'~' as
 * \u00XX (Ruby leaves some control bytes raw). Cut between escapes.
 */
static int preview(struct strings *s, struct span v, int *truncated)
{
	const char *p = v.p, *end = v.p + v.n;
	int shown = 0;
	buf_reset(&s->tmp);
	for (; p < end && shown < PREVIEW; shown++) {
		unsigned char c = (unsigned char)*p;
		int err;
		if (c == '\\' && p + 1 < end && p[1] && strchr("\"\\/bfnrt", p[1])) {
			err = buf_add(&s->tmp, p, 2);
			p += 2;
		} else if (c == '\\' && p + 1 < end && p[1] == 'u' && hexdigits4(p + 2, end)) {
			err = buf_add(&s->tmp, p, 6);
			p += 6;
		} else if (c == '\\' || c == '"') {
			err = buf_addch(&s->tmp, '\\');
			if (!err)
				err = buf_addch(&s->tmp, (char)c);
			p++;
		} else if (c < ' ' || c > '~') {
			err = buf_addf(&s->tmp, "\\u%04x", c);
			p++;
		} else {
			err = buf_addch(&s->tmp, (char)c);
			p++;
		}
		if (err)
			return err;
	}
	*truncated = p < end;
	return 0;
}

static int add_value(struct strings *s, struct span v, uint64_t bytesize)
{
	uint64_t key = map_hash_bytes(v.p, v.n, 0x5eed), h2 = map_hash_bytes(v.p, v.n, 0xcafe) ^ map_hash64(bytesize);
	uint64_t *hit;
	for (uint64_t seed = 1;; seed++) { /* a first hash shared by two values: try another slot */
		if (key == MAP_EMPTY)
			key--;
		hit = map_get(&s->index, key);
		if (!hit || (s->v[*hit - 1].h2 == h2 && s->v[*hit - 1].bytesize == bytesize))
			break;
		key = map_hash64(key + seed);
	}
	if (!hit) {
		struct value *nv = vec_grow(s->v, s->n, &s->cap, sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		s->v = nv;
		s->v[s->n] = (struct value){ h2, bytesize, 1, 0 };
		return map_put(&s->index, key, ++s->n);
	}
	struct value *val = &s->v[*hit - 1];
	if (++val->count == 2) {
		int truncated = 0, err = preview(s, v, &truncated);
		int64_t id = err ? err : strtab_intern(&s->strs, buf_str(&s->tmp), s->tmp.len);
		if (id < 0)
			return (int)id;
		val->preview = (uint32_t)id | (truncated ? TRUNCATED : 0);
	}
	return 0;
}

static int on_record(const struct heap_rec *r, void *arg)
{
	struct strings *s = arg;
	if (!span_eq(r->type, "STRING"))
		return 0;
	s->strings++;
	if (r->shared)
		s->shared++;
	else if (!r->has_value)
		s->no_value++;
	else
		s->err = add_value(s, r->value, r->has_bytesize && r->bytesize >= 0 ? (uint64_t)r->bytesize : r->value.n);
	return s->err;
}

static uint64_t wasted(const struct value *v)
{
	return (v->count - 1) * v->bytesize;
}

static int by_waste(const void *a, const void *b)
{
	const struct value *x = a, *y = b;
	if (wasted(x) != wasted(y))
		return wasted(x) < wasted(y) ? 1 : -1;
	return x->count < y->count ? 1 : x->count > y->count ? -1 : 0;
}

static void print(struct strings *s, size_t ndup, uint64_t copies, uint64_t waste, int top, int json, FILE *out)
{
	size_t n = top > 0 && (size_t)top < ndup ? (size_t)top : ndup;
	if (json)
		fprintf(out, "{\"strings\":%llu,\"shared\":%llu,\"no_value\":%llu,\"distinct_values\":%zu,\"duplicated_values\":%zu,"
			     "\"copies\":%llu,\"wasted\":%llu,\"values\":[",
			(unsigned long long)s->strings, (unsigned long long)s->shared, (unsigned long long)s->no_value, s->n, ndup,
			(unsigned long long)copies, (unsigned long long)waste);
	else
		fprintf(out, "%llu Strings: %zu values held by more than one (%llu Strings), %llu bytes wasted in copies\n"
			     "(%llu shared Strings are not copies; %llu with no value in the dump, not 7-bit ASCII, not compared)\n\n"
			     "%10s %14s %14s %10s  %s\n",
			(unsigned long long)s->strings, ndup, (unsigned long long)copies, (unsigned long long)waste,
			(unsigned long long)s->shared, (unsigned long long)s->no_value, "copies", "wasted", "total", "bytesize",
			"value");
	for (size_t i = 0; i < n; i++) {
		const struct value *v = &s->v[i];
		const char *text = strtab_get(&s->strs, v->preview & ~TRUNCATED);
		int cut = !!(v->preview & TRUNCATED);
		if (json)
			fprintf(out, "%s{\"value\":\"%s\",\"truncated\":%s,\"count\":%u,\"bytesize\":%llu,\"wasted\":%llu,\"total\":%llu}",
				i ? "," : "", text, cut ? "true" : "false", v->count, (unsigned long long)v->bytesize,
				(unsigned long long)wasted(v), (unsigned long long)(v->count * v->bytesize));
		else
			fprintf(out, "%10u %14llu %14llu %10llu  \"%s\"%s\n", v->count, (unsigned long long)wasted(v),
				(unsigned long long)(v->count * v->bytesize), (unsigned long long)v->bytesize, text, cut ? "..." : "");
	}
	if (json)
		fputs("]}\n", out);
	else if (n < ndup)
		fprintf(out, "(%zu more; --top 0 lists all)\n", ndup - n);
}

int heap_strings(const char *path, int top, int json, FILE *out, struct heap_stats *st)
{
	struct strings s = { 0 };
	map_init(&s.index);
	buf_init(&s.tmp, 1024);
	int err = strtab_init(&s.strs);
	if (!err)
		err = heap_read(path, on_record, &s, st);
	if (!err)
		err = s.err;
	if (!err) {
		map_free(&s.index); /* before sorting: the indexes are stale */
		size_t ndup = 0;
		uint64_t copies = 0, waste = 0;
		for (size_t i = 0; i < s.n; i++)
			if (s.v[i].count > 1) {
				copies += s.v[i].count;
				waste += wasted(&s.v[i]);
				s.v[ndup++] = s.v[i];
			}
		if (ndup)
			qsort(s.v, ndup, sizeof(*s.v), by_waste);
		print(&s, ndup, copies, waste, top, json, out);
		if (fflush(out) || ferror(out))
			err = -(errno ?: EIO);
	}
	map_free(&s.index);
	free(s.v);
	buf_free(&s.tmp);
	strtab_free(&s.strs);
	return err;
}
