/* pprof_read.c: a pprof profile (profile.proto, gzip'd or not) read into a profile, for report --diff. */
#include "pprof_read.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "../lib/err.h"
#include "../lib/map.h"
#include "../lib/vec.h"

#define PPROF_FILE_MAX (1ull << 30)     /* a file read whole, compressed or not */
#define PPROF_DEPTH_MAX 4096            /* frames of one sample */

/* profile.proto's field numbers (Profile, Sample, Label, Location, Line, Function, ValueType). */
enum { P_SAMPLE_TYPE = 1, P_SAMPLE = 2, P_LOCATION = 4, P_FUNCTION = 5, P_STRING = 6, P_TIME = 9, P_DURATION = 10,
       P_PERIOD = 12 };
enum { S_LOCATION = 1, S_VALUE = 2, S_LABEL = 3 };
enum { L_KEY = 1, L_STR = 2 };
enum { LOC_ID = 1, LOC_MAPPING = 2, LOC_LINE = 4 };
enum { LINE_FUNCTION = 1, LINE_LINE = 2 };
enum { F_ID = 1, F_NAME = 2, F_FILENAME = 4 };
enum { VT_TYPE = 1 };

struct pb_in {
	const unsigned char *p, *end;
	int err;
};

static uint64_t varint(struct pb_in *in)
{
	uint64_t v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (in->p >= in->end)
			break;
		unsigned char c = *in->p++;
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return v;
	}
	in->err = ERR_BAD_FILE;
	in->p = in->end;
	return 0;
}

/* The next field: its number and wire type, its varint value or its bytes (sub); 0 at the end or on an error. */
static int next_field(struct pb_in *in, uint32_t *field, uint64_t *v, struct pb_in *sub)
{
	if (in->p >= in->end || in->err)
		return 0;
	uint64_t key = varint(in);
	*field = (uint32_t)(key >> 3);
	switch (key & 7) {
	case 0: *v = varint(in); break;
	case 1:
		if (in->end - in->p < 8)
			in->err = ERR_BAD_FILE;
		else
			memcpy(v, in->p, 8), in->p += 8;
		break;
	case 5:
		if (in->end - in->p < 4)
			in->err = ERR_BAD_FILE;
		else
			*v = 0, memcpy(v, in->p, 4), in->p += 4;
		break;
	case 2: {
		uint64_t len = varint(in);
		if (in->err || len > (uint64_t)(in->end - in->p)) {
			in->err = ERR_BAD_FILE;
			break;
		}
		*sub = (struct pb_in){ in->p, in->p + len, 0 };
		in->p += len;
		*v = len;
		break;
	}
	default: in->err = ERR_BAD_FILE;
	}
	if (in->err)
		return 0;
	if ((key & 7) != 2)
		sub->p = sub->end = NULL; /* (a number: in v; bytes: in sub) */
	return 1;
}

/* A repeated integer field: one varint (v) or a packed run (sub): each value into out, up to max. */
static size_t ints(uint64_t v, struct pb_in *sub, uint64_t *out, size_t n, size_t max, int *err)
{
	if (!sub->p) {
		if (n < max)
			out[n++] = v;
		return n;
	}
	while (sub->p < sub->end && !sub->err) {
		uint64_t x = varint(sub);
		if (n < max)
			out[n++] = x;
	}
	if (sub->err)
		*err = sub->err;
	return n;
}

struct line {
	uint64_t function;
	int64_t line;
};

struct reader {
	struct pb_in whole;
	const char **strs; /* the string table, pointers into a copy NUL-terminated */
	char *strbuf;
	size_t nstrs, strs_cap;
	struct map funcs;  /* function id -> index in fname/ffile + 1 */
	uint64_t *fname, *ffile;
	size_t nfuncs, funcs_cap;
	struct map locs;   /* location id -> index in loc_start/loc_n/loc_native + 1 */
	uint32_t *loc_start, *loc_n;
	int *loc_native;
	size_t nlocs, locs_cap;
	struct line *lines;
	size_t nlines, lines_cap;
	uint64_t first_type; /* the first sample type's name (string index) */
	uint64_t time_ns, duration_ns, period;
};

static const char *str(const struct reader *r, uint64_t i)
{
	return i < r->nstrs ? r->strs[i] : "";
}

/* The string table, functions and locations: every sample refers to them, wherever they are in the file. */
static int read_tables(struct reader *r)
{
	struct pb_in in = r->whole, sub, s2;
	uint32_t field;
	uint64_t v;
	size_t total = 0;
	/* strings: copied once, NUL-terminated */
	for (struct pb_in t = in; next_field(&t, &field, &v, &sub);)
		if (field == P_STRING && sub.p)
			total += (size_t)(sub.end - sub.p) + 1;
	if (!(r->strbuf = malloc(total + 1)))
		return -ENOMEM;
	char *w = r->strbuf;
	int seen_type = 0;
	while (next_field(&in, &field, &v, &sub)) {
		if (!sub.p && field == P_TIME)
			r->time_ns = v;
		else if (!sub.p && field == P_DURATION)
			r->duration_ns = v;
		else if (!sub.p && field == P_PERIOD)
			r->period = v;
		if (field == P_STRING && sub.p) {
			const char **s = vec_grow(r->strs, r->nstrs, &r->strs_cap, sizeof(*s));
			if (!s)
				return -ENOMEM;
			r->strs = s;
			size_t len = (size_t)(sub.end - sub.p);
			memcpy(w, sub.p, len);
			w[len] = '\0';
			r->strs[r->nstrs++] = w;
			w += len + 1;
		} else if (field == P_SAMPLE_TYPE && sub.p && !seen_type++) {
			while (next_field(&sub, &field, &v, &s2))
				if (field == VT_TYPE)
					r->first_type = v;
		} else if (field == P_FUNCTION && sub.p) {
			uint64_t id = 0, name = 0, file = 0;
			while (next_field(&sub, &field, &v, &s2)) {
				if (field == F_ID)
					id = v;
				else if (field == F_NAME)
					name = v;
				else if (field == F_FILENAME)
					file = v;
			}
			size_t cap = r->funcs_cap;
			uint64_t *a = vec_grow(r->fname, r->nfuncs, &r->funcs_cap, sizeof(*a));
			if (!a)
				return -ENOMEM;
			r->fname = a;
			if (cap != r->funcs_cap) {
				uint64_t *fa = realloc(r->ffile, r->funcs_cap * sizeof(*fa));
				if (!fa)
					return -ENOMEM;
				r->ffile = fa;
			}
			r->fname[r->nfuncs] = name;
			r->ffile[r->nfuncs] = file;
			if (map_put(&r->funcs, id, ++r->nfuncs))
				return -ENOMEM;
		} else if (field == P_LOCATION && sub.p) {
			uint64_t id = 0, mapping = 0;
			uint32_t start = (uint32_t)r->nlines;
			while (next_field(&sub, &field, &v, &s2)) {
				if (field == LOC_ID)
					id = v;
				else if (field == LOC_MAPPING)
					mapping = v;
				else if (field == LOC_LINE && s2.p) {
					struct line l = { 0, 0 };
					uint32_t f2;
					uint64_t v2;
					struct pb_in s3;
					while (next_field(&s2, &f2, &v2, &s3)) {
						if (f2 == LINE_FUNCTION)
							l.function = v2;
						else if (f2 == LINE_LINE)
							l.line = (int64_t)v2;
					}
					struct line *ls = vec_grow(r->lines, r->nlines, &r->lines_cap, sizeof(*ls));
					if (!ls)
						return -ENOMEM;
					r->lines = ls;
					r->lines[r->nlines++] = l;
				}
			}
			if (sub.err)
				return ERR_BAD_FILE;
			size_t cap = r->locs_cap;
			uint32_t *a = vec_grow(r->loc_start, r->nlocs, &r->locs_cap, sizeof(*a));
			if (!a)
				return -ENOMEM;
			r->loc_start = a;
			if (cap != r->locs_cap) {
				uint32_t *b = realloc(r->loc_n, r->locs_cap * sizeof(*b));
				int *c = b ? realloc(r->loc_native, r->locs_cap * sizeof(*c)) : NULL;
				if (b)
					r->loc_n = b;
				if (!c)
					return -ENOMEM;
				r->loc_native = c;
			}
			r->loc_start[r->nlocs] = start;
			r->loc_n[r->nlocs] = (uint32_t)(r->nlines - start);
			r->loc_native[r->nlocs] = mapping != 0;
			if (map_put(&r->locs, id, ++r->nlocs))
				return -ENOMEM;
		}
		if (sub.err)
			return ERR_BAD_FILE;
	}
	return in.err;
}

/* What a frame read back is, from its name and place (our writers' state and GC frames are in parentheses). */
static uint32_t kind_of(const char *name, int native)
{
	if (native)
		return PROFILE_FRAME_NATIVE;
	if (!strncmp(name, "(garbage collection", 19))
		return PROFILE_FRAME_GC;
	if (name[0] == '(')
		return PROFILE_FRAME_STATE;
	return PROFILE_FRAME_RUBY;
}

static int read_samples(struct reader *r, struct profile *p)
{
	struct pb_in in = r->whole, sub, s2, s3;
	uint32_t field, f2;
	uint64_t v, v2;
	uint64_t *ids = malloc(PPROF_DEPTH_MAX * sizeof(*ids)), vals[2];
	uint32_t *frames = malloc(PPROF_DEPTH_MAX * sizeof(*frames));
	int err = ids && frames ? 0 : -ENOMEM;
	while (!err && next_field(&in, &field, &v, &sub)) {
		if (field != P_SAMPLE || !sub.p)
			continue;
		size_t nids = 0, nvals = 0;
		uint64_t class_name = 0;
		while (!err && next_field(&sub, &f2, &v2, &s2)) {
			if (f2 == S_LOCATION)
				nids = ints(v2, &s2, ids, nids, PPROF_DEPTH_MAX, &err);
			else if (f2 == S_VALUE)
				nvals = ints(v2, &s2, vals, nvals, 2, &err);
			else if (f2 == S_LABEL && s2.p) {
				uint64_t key = 0, sv = 0;
				uint32_t f3;
				uint64_t v3;
				while (next_field(&s2, &f3, &v3, &s3)) {
					if (f3 == L_KEY)
						key = v3;
					else if (f3 == L_STR)
						sv = v3;
				}
				if (!strcmp(str(r, key), "object class"))
					class_name = sv;
			}
		}
		if (err || sub.err || !nvals) {
			err = err ? err : ERR_BAD_FILE;
			break;
		}
		if ((int64_t)vals[0] < 0 || (nvals > 1 && (int64_t)vals[1] < 0)) {
			err = ERR_BAD_FILE; /* a difference of two profiles already */
			break;
		}
		if (!vals[0])
			continue;
		/* root first: the last location's last line first */
		uint32_t n = 0;
		for (size_t i = nids; i-- > 0 && !err;) {
			uint64_t *hit = map_get(&r->locs, ids[i]);
			if (!hit) {
				err = ERR_BAD_FILE;
				break;
			}
			size_t li = *hit - 1;
			for (uint32_t k = r->loc_n[li]; k-- > 0 && n < PPROF_DEPTH_MAX;) {
				const struct line *l = &r->lines[r->loc_start[li] + k];
				uint64_t *fh = map_get(&r->funcs, l->function);
				const char *name = fh ? str(r, r->fname[*fh - 1]) : "?", *file = fh ? str(r, r->ffile[*fh - 1]) : "";
				uint32_t kind = kind_of(name, r->loc_native[li]);
				if (p->kind == PROFILE_ALLOCS && i == 0 && k == 0 && class_name && !strcmp(name, str(r, class_name)))
					kind = PROFILE_FRAME_CLASS;
				int64_t id = profile_frame(p, name, file, l->line > 0 ? (int32_t)l->line : -1, kind);
				if (id < 0) {
					err = (int)id;
					break;
				}
				frames[n++] = (uint32_t)id;
			}
		}
		if (err)
			break;
		int64_t st = profile_stack(p, frames, n);
		if (st < 0) {
			err = (int)st;
			break;
		}
		p->stacks[st].count += vals[0];
		if (p->kind == PROFILE_ALLOCS && nvals > 1)
			p->stacks[st].bytes += vals[1];
	}
	free(ids);
	free(frames);
	return err ? err : in.err;
}

/* The whole file, gunzipped when it is gzip. */
static int slurp(FILE *f, unsigned char **out, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	unsigned char *b = malloc(cap);
	while (b) {
		n += fread(b + n, 1, cap - n, f);
		if (n < cap)
			break;
		if (cap >= PPROF_FILE_MAX) {
			free(b);
			return ERR_BAD_FILE;
		}
		unsigned char *nb = realloc(b, cap *= 2);
		if (!nb)
			free(b);
		b = nb;
	}
	if (!b)
		return -ENOMEM;
	if (ferror(f)) {
		free(b);
		return -EIO;
	}
	if (n < 2 || b[0] != 0x1f || b[1] != 0x8b) {
		*out = b;
		*len = n;
		return 0;
	}
	z_stream z = { 0 };
	size_t ocap = n * 4 + 4096, on = 0;
	unsigned char *o = malloc(ocap);
	int zr = o && inflateInit2(&z, 16 + MAX_WBITS) == Z_OK ? Z_OK : Z_MEM_ERROR;
	z.next_in = b;
	z.avail_in = (uInt)n;
	while (zr == Z_OK) {
		if (on == ocap) {
			unsigned char *no = ocap < PPROF_FILE_MAX ? realloc(o, ocap *= 2) : NULL;
			if (!no) {
				zr = Z_MEM_ERROR;
				break;
			}
			o = no;
		}
		z.next_out = o + on;
		z.avail_out = (uInt)(ocap - on);
		zr = inflate(&z, Z_NO_FLUSH);
		on = ocap - z.avail_out;
		if (zr == Z_BUF_ERROR && z.avail_out)
			zr = Z_DATA_ERROR; /* (input ended before the stream did: cut short) */
		else if (zr == Z_BUF_ERROR)
			zr = Z_OK;
	}
	inflateEnd(&z);
	free(b);
	if (zr != Z_STREAM_END) {
		free(o);
		return zr == Z_MEM_ERROR ? -ENOMEM : ERR_BAD_FILE;
	}
	*out = o;
	*len = on;
	return 0;
}

int profile_read_pprof(struct profile *p, FILE *f)
{
	unsigned char *data = NULL;
	size_t len = 0;
	struct reader r;
	memset(&r, 0, sizeof(r));
	map_init(&r.funcs);
	map_init(&r.locs);
	int err = profile_init(p);
	err = err ?: slurp(f, &data, &len);
	if (!err) {
		r.whole = (struct pb_in){ data, data + len, 0 };
		err = read_tables(&r);
	}
	if (!err) {
		const char *type = str(&r, r.first_type);
		if (!strcmp(type, "alloc_objects") || !strcmp(type, "inuse_objects")) {
			p->kind = PROFILE_ALLOCS;
			p->alloc_interval = 1; /* (the values are the estimates already) */
			p->alloc_live = type[0] == 'i';
		}
		if (!r.nstrs)
			err = ERR_BAD_FILE; /* (every profile has "" first) */
		p->start_ns = r.time_ns;
		p->duration_ns = r.duration_ns;
		if (p->kind != PROFILE_ALLOCS && r.period && r.period <= 1000000000ull)
			p->rate_hz = (uint32_t)(1000000000ull / r.period); /* (a period of nanoseconds between samples) */
	}
	if (!err)
		err = read_samples(&r, p);
	if (!err)
		profile_restate(p);
	free(data);
	free(r.strs);
	free(r.strbuf);
	free(r.fname);
	free(r.ffile);
	free(r.loc_start);
	free(r.loc_n);
	free(r.loc_native);
	free(r.lines);
	map_free(&r.funcs);
	map_free(&r.locs);
	return err;
}
