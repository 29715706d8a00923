/* dump.c: reading ObjectSpace.dump_all heap dumps (JSON lines) fast: one record at a time, no copies. */
#include "dump.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../lib/err.h"

#define CHUNK (1u << 20) /* read size */

int span_eq(struct span s, const char *lit)
{
	size_t n = strlen(lit);
	return s.n == n && !memcmp(s.p, lit, n);
}

/* A hex digit's value + 1, 0 for anything else: one load per digit, no branch to mispredict. */
static const unsigned char HEX1[256] = {
	['0'] = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
	['A'] = 11, 12, 13, 14, 15, 16,
	['a'] = 11, 12, 13, 14, 15, 16,
};

uint64_t heap_hex(struct span s)
{
	if (s.n < 3 || s.n > 18 || s.p[0] != '0' || s.p[1] != 'x')
		return 0;
	uint64_t v = 0;
	int ok = 1;
	for (size_t i = 2; i < s.n; i++) {
		unsigned d = HEX1[(unsigned char)s.p[i]];
		ok &= d != 0;
		v = v << 4 | ((d - 1) & 15);
	}
	return ok ? v : 0;
}

int heap_location(const struct heap_rec *r, char *buf, size_t cap)
{
	if (!r->has_file)
		return 0;
	int n = snprintf(buf, cap, "%.*s:%lld", (int)(r->file.n < 1000 ? r->file.n : 1000), r->file.p, (long long)r->line);
	return n < 0 ? 0 : (size_t)n < cap ? n : (int)cap - 1;
}

void heap_report_bad(const char *path, const struct heap_stats *st)
{
	if (st->cut)
		fprintf(stderr, "rbscope: %s: the compressed data is corrupt or cut short after %llu bytes of dump; "
				"what came before was read\n", path, (unsigned long long)st->bytes);
	if (!st->bad)
		return;
	fprintf(stderr, "rbscope: %s: %llu of %llu lines are not heap records (first at line", path,
		(unsigned long long)st->bad, (unsigned long long)st->lines);
	for (int i = 0; i < 3 && st->first_bad_line[i]; i++)
		fprintf(stderr, "%s %llu", i ? "," : "", (unsigned long long)st->first_bad_line[i]);
	fprintf(stderr, "); they were skipped\n");
}

/* The end of the JSON string starting after its opening quote at p, or NULL. */
static const char *string_end(const char *p, const char *end)
{
	for (;;) {
		const char *q = memchr(p, '"', (size_t)(end - p));
		if (!q)
			return NULL;
		size_t bs = 0; /* an escaped quote has an odd run of backslashes before it */
		while (q - bs > p && q[-1 - (ptrdiff_t)bs] == '\\')
			bs++;
		if (!(bs & 1))
			return q;
		p = q + 1;
	}
}

/* Whether q (just after a string value) is where a record goes on: ", \"key\":", or "}" ending the line. */
static int continues(const char *q, const char *end)
{
	while (q < end && *q == ' ')
		q++;
	if (q < end && *q == '}') {
		for (q++; q < end && (*q == ' ' || *q == '\t' || *q == '\r'); q++)
			;
		return q == end;
	}
	if (q >= end || *q != ',')
		return 0;
	for (q++; q < end && *q == ' '; q++)
		;
	if (q >= end || *q != '"')
		return 0;
	const char *k = ++q;
	while (q < end && ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || *q == '_'))
		q++;
	return q > k && q + 1 < end && q[0] == '"' && q[1] == ':';
}

/* The end of a string value Ruby may have written unescaped: the first quote the record goes on after. */
static const char *value_end(const char *p, const char *end)
{
	const char *q = string_end(p, end);
	if (q && continues(q + 1, end))
		return q;
	for (q = p; (q = memchr(q, '"', (size_t)(end - q))); q++)
		if (continues(q + 1, end))
			return q;
	return NULL;
}

/* Skip a value that is not a string: number, literal, array or object (arrays hold strings only). */
static const char *skip_value(const char *p, const char *end)
{
	if (*p == '[' || *p == '{') {
		int depth = 0;
		for (; p < end; p++) {
			if (*p == '"') {
				if (!(p = string_end(p + 1, end)))
					return NULL;
			} else if (*p == '[' || *p == '{') {
				depth++;
			} else if ((*p == ']' || *p == '}') && --depth == 0) {
				return p + 1;
			}
		}
		return NULL;
	}
	while (p < end && *p != ',' && *p != '}')
		p++;
	return p;
}

static int64_t number(const char *p, const char *end, int *ok)
{
	int neg = p < end && *p == '-';
	int64_t v = 0;
	const char *s = p + neg;
	for (p = s; p < end && *p >= '0' && *p <= '9'; p++) /* past INT64_MAX stays there: a corrupt number */
		v = v > (INT64_MAX - 9) / 10 ? INT64_MAX : v * 10 + (*p - '0');
	*ok = p > s;
	return neg ? -v : v;
}

int heap_parse_line(const char *p, size_t n, struct heap_rec *r)
{
	const char *end = p + n;
	memset(r, 0, sizeof(*r));
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
		p++;
	if (p == end || *p != '{')
		return -1;
	p++;
	for (;;) {
		while (p < end && (*p == ' ' || *p == ','))
			p++;
		if (p < end && *p == '}')
			break;
		if (p >= end || *p != '"')
			return -1;
		const char *k = p + 1, *ke = string_end(k, end);
		if (!ke)
			return -1;
		struct span key = { k, (size_t)(ke - k) };
		p = ke + 1;
		while (p < end && (*p == ' ' || *p == ':'))
			p++;
		if (p >= end)
			return -1;
		if (*p == '"') {
			const char *v = p + 1, *ve = value_end(v, end);
			if (!ve)
				return -1;
			struct span s = { v, (size_t)(ve - v) };
			p = ve + 1;
			switch (key.n) {
			case 4:
				if (span_eq(key, "type"))
					r->type = s;
				else if (span_eq(key, "file"))
					r->file = s, r->has_file = 1;
				else if (span_eq(key, "name"))
					r->name = s;
				else if (span_eq(key, "root"))
					r->root = s;
				break;
			case 5:
				if (span_eq(key, "class"))
					r->class_addr = heap_hex(s);
				else if (span_eq(key, "value"))
					r->value = s, r->has_value = 1;
				break;
			case 7:
				if (span_eq(key, "address"))
					r->address = heap_hex(s);
				break;
			case 15:
				if (span_eq(key, "real_class_name"))
					r->real_class_name = s;
				break;
			}
			continue;
		}
		if (*p == '[' && span_eq(key, "references")) {
			const char *q = memchr(p, ']', (size_t)(end - p));
			if (!q)
				return -1;
			r->refs = (struct span){ p + 1, (size_t)(q - p - 1) };
			p = q + 1;
			continue;
		}
		if (*p == 't' && span_eq(key, "shared"))
			r->shared = 1;
		if ((*p >= '0' && *p <= '9') || *p == '-') {
			int ok;
			int64_t v = number(p, end, &ok);
			if (!ok)
				return -1;
			if (span_eq(key, "line"))
				r->line = v, r->has_line = 1;
			else if (span_eq(key, "generation"))
				r->generation = v, r->has_generation = 1;
			else if (span_eq(key, "memsize"))
				r->memsize = (uint64_t)v, r->has_memsize = 1;
			else if (span_eq(key, "bytesize"))
				r->bytesize = v, r->has_bytesize = 1;
		}
		if (!(p = skip_value(p, end)))
			return -1;
	}
	return r->type.n ? 0 : -1;
}

static void count_bad(struct heap_stats *st)
{
	for (int i = 0; i < 3; i++)
		if (!st->first_bad_line[i]) {
			st->first_bad_line[i] = st->lines;
			break;
		}
	st->bad++;
}

/*
 * Feed every complete line of buf that starts before limit (bytes from buf's start); returns bytes
 * consumed, -1 when fn asked to stop, or -2 when the next line starts at or past limit.
 */
static ssize_t feed(const char *buf, size_t n, size_t limit, int last, heap_fn fn, void *arg, struct heap_stats *st)
{
	const char *p = buf, *end = buf + n;
	while (p < end) {
		if ((size_t)(p - buf) >= limit)
			return -2;
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl && !last)
			break;
		const char *le = nl ? nl : end;
		st->lines++;
		struct heap_rec r;
		if (le > p) {
			if (heap_parse_line(p, (size_t)(le - p), &r)) {
				count_bad(st);
			} else {
				st->records++;
				if (fn(&r, arg))
					return -1;
			}
		} else {
			st->lines--; /* an empty line is not a line of the dump */
		}
		p = nl ? nl + 1 : end;
	}
	return p - buf;
}

/* Where read_stream takes its bytes from: a gzip stream, a descriptor read as it comes, or a file at an offset. */
struct source {
	gzFile gz;
	int fd;
	int positioned;      /* pread from pos, and no line may start at or past end */
	uint64_t pos, end;
};

/* Read up to n bytes; bytes read, 0 at the end, or -1. */
static ssize_t pull(struct source *s, char *buf, size_t n)
{
	if (s->gz)
		return gzread(s->gz, buf, (unsigned)n);
	for (;;) {
		ssize_t r = s->positioned ? pread(s->fd, buf, n, (off_t)s->pos) : read(s->fd, buf, n);
		if (r > 0)
			s->pos += (uint64_t)r;
		if (r >= 0 || errno != EINTR)
			return r;
	}
}

/*
 * Scan through a bounded buffer, so memory stays small whatever the dump's size. With skip, drop
 * the bytes up to and including the first newline (a part of a file starts after the line it cuts).
 */
static int read_stream(struct source *s, size_t size, int skip, heap_fn fn, void *arg, struct heap_stats *st)
{
	size_t cap = size && size < CHUNK ? size + 4096 : CHUNK * 2, have = 0; /* a small file: a small buffer */
	uint64_t base = s->pos; /* the file offset of buf[0] */
	char *buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	int err = 0;
	for (;;) {
		if (have == cap) { /* a single line longer than the buffer */
			char *b = realloc(buf, cap * 2);
			if (!b) {
				err = -ENOMEM;
				break;
			}
			buf = b;
			cap *= 2;
		}
		ssize_t n = pull(s, buf + have, cap - have < CHUNK ? cap - have : CHUNK);
		if (n < 0 && !s->gz) {
			err = -errno;
			break;
		}
		int zerr = Z_OK;
		if (n <= 0 && s->gz)
			gzerror(s->gz, &zerr);
		if (n < 0 || zerr == Z_BUF_ERROR) { /* corrupt or cut short: what came before is still a dump to read */
			st->cut = 1;
			n = 0;
		}
		have += (size_t)n;
		st->bytes += (uint64_t)n;
		size_t used = 0;
		if (skip) {
			const char *nl = memchr(buf, '\n', have);
			if (!nl && n) {
				have = 0; /* still inside the line before ours */
				base = s->pos;
				continue;
			}
			used = nl ? (size_t)(nl + 1 - buf) : have;
			skip = 0;
		}
		size_t limit = SIZE_MAX; /* how far into what is left a line may still start */
		if (s->positioned)
			limit = s->end > base + used ? (size_t)(s->end - base - used) : 0;
		ssize_t fed = feed(buf + used, have - used, limit, n == 0, fn, arg, st);
		if (fed < 0 || n == 0)
			break;
		used += (size_t)fed;
		memmove(buf, buf + used, have - used);
		have -= used;
		base += used;
	}
	free(buf);
	return err;
}

int heap_open(const char *path, int *plain, uint64_t *size)
{
	int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : dup(0);
	if (fd < 0)
		return -errno;
	struct stat sb;
	unsigned char magic[2] = { 0, 0 };
	int known = !fstat(fd, &sb), regular = known && S_ISREG(sb.st_mode);
	if (known && S_ISDIR(sb.st_mode)) {
		close(fd);
		return -EISDIR;
	}
	if (regular && sb.st_size >= 2 && pread(fd, magic, 2, 0) != 2)
		regular = 0;
	*plain = regular && !(magic[0] == 0x1f && magic[1] == 0x8b);
	*size = regular ? (uint64_t)sb.st_size : 0;
	return fd;
}

int heap_read_part(int fd, uint64_t start, uint64_t end, heap_fn fn, void *arg, struct heap_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (start >= end)
		return 0;
	struct source s = { .fd = fd, .positioned = 1, .pos = start ? start - 1 : 0, .end = end };
	return read_stream(&s, (size_t)(end - s.pos), start > 0, fn, arg, st);
}

int heap_read_fd(int fd, int plain, uint64_t size, heap_fn fn, void *arg, struct heap_stats *st)
{
	memset(st, 0, sizeof(*st));
	int err;
	if (plain) {
		/* A plain file: read it through the buffer (mapping it would count the whole dump as ours). */
		posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
		struct source s = { .fd = fd };
		err = read_stream(&s, (size_t)size, 0, fn, arg, st);
		close(fd);
	} else {
		struct source s = { .gz = gzdopen(fd, "rb"), .fd = -1 }; /* reads plain data too */
		if (!s.gz) {
			close(fd);
			return -ENOMEM;
		}
		gzbuffer(s.gz, 1u << 20);
		err = read_stream(&s, 0, 0, fn, arg, st);
		gzclose(s.gz);
	}
	return err;
}

int heap_read(const char *path, heap_fn fn, void *arg, struct heap_stats *st)
{
	memset(st, 0, sizeof(*st));
	int plain;
	uint64_t size;
	int fd = heap_open(path, &plain, &size);
	if (fd < 0)
		return fd;
	int err = heap_read_fd(fd, plain, size, fn, arg, st);
	if (!err && !st->records)
		err = ERR_BAD_FILE;
	return err;
}
