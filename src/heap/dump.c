/* dump.c: reading ObjectSpace.dump_all heap dumps (JSON lines) fast: one record at a time, no copies. */
#include "dump.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "../lib/err.h"
#include "../lib/vec.h"

#define CHUNK (1u << 20) /* read size */
#define PREFETCH 2048    /* how far ahead of the line being parsed its bytes are fetched */

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

void heap_class_label(char *out, size_t cap, uint64_t addr, const char *name, const char *attached, const char *singleton_real)
{
	if (name)
		snprintf(out, cap, "%s", name);
	else if (singleton_real && attached)
		snprintf(out, cap, "#<Class:%s>", attached);
	else if (singleton_real)
		snprintf(out, cap, "#<Class:#<%s>> (singleton class 0x%llx)", singleton_real, (unsigned long long)addr);
	else
		snprintf(out, cap, "#<Class:0x%016llx>", (unsigned long long)addr);
}

int heap_class_notes(const struct heap_rec *r, struct heap_class_note out[2])
{
	if (!r->address || !(span_eq(r->type, "CLASS") || span_eq(r->type, "MODULE")))
		return 0;
	if (r->name.n) {
		out[0] = (struct heap_class_note){ r->address, HEAP_CLASS_NAMED, r->name };
		out[1] = (struct heap_class_note){ HEAP_CLASS_ADDR(r), HEAP_CLASS_ATTACHED, r->name };
		return out[1].addr ? 2 : 1;
	}
	if (!r->real_class_name.n)
		return 0;
	out[0] = (struct heap_class_note){ r->address, HEAP_CLASS_SINGLETON, r->real_class_name };
	return 1;
}

void heap_class_names_init(struct heap_class_names *n)
{
	for (int k = 0; k < HEAP_CLASS_FACTS; k++)
		map_init(&n->by[k]);
}

void heap_class_names_free(struct heap_class_names *n)
{
	for (int k = 0; k < HEAP_CLASS_FACTS; k++)
		map_free(&n->by[k]);
}

int heap_class_names_put(struct heap_class_names *n, int fact, uint64_t addr, uint32_t id)
{
	return map_put(&n->by[fact], addr, (uint64_t)id + 1);
}

void heap_class_names_label(const struct heap_class_names *n, const struct strtab *strs, uint64_t addr, char *out,
			    size_t cap)
{
	const char *name[HEAP_CLASS_FACTS];
	for (int k = 0; k < HEAP_CLASS_FACTS; k++) {
		const uint64_t *hit = map_get(&n->by[k], addr);
		name[k] = hit ? strtab_get(strs, (uint32_t)(*hit - 1)) : NULL;
	}
	heap_class_label(out, cap, addr, name[HEAP_CLASS_NAMED], name[HEAP_CLASS_ATTACHED], name[HEAP_CLASS_SINGLETON]);
}

/*
 * The scanning below is where the time goes (a dump is mostly short strings), so the searches for
 * a string's end and for a container's structure look at 16 bytes at a time. They never read past
 * the end of the line, so a line may end anywhere, even at the end of a mapping.
 */
#ifdef __SSE2__
/* Bits for the bytes of the 16 at p that equal a or b. */
static inline unsigned match2(const char *p, char a, char b)
{
	__m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
	return (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(a)), _mm_cmpeq_epi8(v, _mm_set1_epi8(b))));
}

/* Bits for the bytes of the 16 at p that matter inside a container: quotes, backslashes, brackets and braces. */
static inline unsigned match_structure(const char *p)
{
	__m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
	__m128i open = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('[')), _mm_cmpeq_epi8(v, _mm_set1_epi8('{')));
	__m128i close = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(']')), _mm_cmpeq_epi8(v, _mm_set1_epi8('}')));
	__m128i text = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));
	return (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(open, close), text));
}
#endif

/* The first '"' or '\\' in [p, end), or end. */
static inline const char *quote_or_backslash(const char *p, const char *end)
{
#ifdef __SSE2__
	for (; end - p >= 16; p += 16) {
		unsigned m = match2(p, '"', '\\');
		if (m)
			return p + __builtin_ctz(m);
	}
#endif
	while (p < end && *p != '"' && *p != '\\')
		p++;
	return p;
}

/* The end of the JSON string starting after its opening quote at p, or NULL. */
static inline __attribute__((always_inline)) const char *string_end(const char *p, const char *end)
{
	for (;;) {
		p = quote_or_backslash(p, end);
		if (p >= end)
			return NULL;
		if (*p == '"')
			return p;
		p += 2; /* a backslash and what it escapes */
	}
}

/* Characters of the keys Ruby writes. */
static const unsigned char KEYCHAR[256] = {
	['a'] = 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	['A'] = 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	['_'] = 1,
};

enum { GOES_ON_NO, GOES_ON_KEY, GOES_ON_END };

/* Whether q, after spaces, is at the '}' that ends the record and the line. */
static int ends_record(const char *q, const char *end)
{
	while (q < end && *q == ' ')
		q++;
	if (q >= end || *q != '}')
		return 0;
	for (q++; q < end && (*q == ' ' || *q == '\t' || *q == '\r'); q++)
		;
	return q == end;
}

/*
 * What follows a value at q: GOES_ON_KEY for ', "key":' (the key, of the letters Ruby's keys use, in
 * *key and where its value starts in *next), GOES_ON_END for the '}' that ends the line, else GOES_ON_NO.
 * This is also how a string Ruby wrote unescaped is told apart: it ends at the first quote the record
 * goes on after.
 */
static int goes_on(const char *q, const char *end, struct span *key, const char **next)
{
	while (q < end && *q == ' ')
		q++;
	if (q < end && *q == '}')
		return ends_record(q, end) ? GOES_ON_END : GOES_ON_NO;
	if (q >= end || *q != ',')
		return GOES_ON_NO;
	for (q++; q < end && *q == ' '; q++)
		;
	if (q >= end || *q != '"')
		return GOES_ON_NO;
	const char *k = ++q;
	while (q < end && KEYCHAR[(unsigned char)*q])
		q++;
	if (q == k || q + 1 >= end || q[0] != '"' || q[1] != ':')
		return GOES_ON_NO;
	*key = (struct span){ k, (size_t)(q - k) };
	for (q += 2; q < end && (*q == ' ' || *q == ':'); q++)
		;
	*next = q;
	return GOES_ON_KEY;
}

/* A string value from p (after its opening quote) that Ruby may have written unescaped; see goes_on. */
static const char *value_end(const char *p, const char *end, int *how, struct span *key, const char **next)
{
	const char *q = string_end(p, end);
	if (q && (*how = goes_on(q + 1, end, key, next)))
		return q;
	for (q = p; (q = memchr(q, '"', (size_t)(end - q))); q++)
		if ((*how = goes_on(q + 1, end, key, next)))
			return q;
	return NULL;
}

/* Past an array or object at p (arrays hold strings only in a dump, but any JSON is walked), or NULL. */
static const char *skip_container(const char *p, const char *end)
{
	int depth = 0;
	while (p < end) {
#ifdef __SSE2__
		if (end - p >= 16) {
			unsigned m = match_structure(p);
			if (!m) {
				p += 16;
				continue;
			}
			p += __builtin_ctz(m);
		}
#endif
		switch (*p) {
		case '"':
			if (!(p = string_end(p + 1, end)))
				return NULL;
			break;
		case '[':
		case '{':
			depth++;
			break;
		case ']':
		case '}':
			if (--depth == 0)
				return p + 1;
			break;
		}
		p++;
	}
	return NULL;
}

/* Past a value that is not a string: number, literal, array or object. */
static const char *skip_value(const char *p, const char *end)
{
	if (*p == '[' || *p == '{')
		return skip_container(p, end);
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

/* A key at p (its opening quote) and the ':' after it; where its value starts, or NULL. */
static const char *parse_key(const char *p, const char *end, struct span *key)
{
	const char *k = p + 1, *ke = string_end(k, end);
	if (!ke)
		return NULL;
	*key = (struct span){ k, (size_t)(ke - k) };
	for (p = ke + 1; p < end && (*p == ' ' || *p == ':'); p++)
		;
	return p;
}

static void take_string(struct heap_rec *r, struct span key, struct span s)
{
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
}

static void take_number(struct heap_rec *r, struct span key, int64_t v)
{
	switch (key.n) {
	case 4:
		if (span_eq(key, "line"))
			r->line = v, r->has_line = 1;
		break;
	case 7:
		if (span_eq(key, "memsize"))
			r->memsize = (uint64_t)v, r->has_memsize = 1;
		break;
	case 8:
		if (span_eq(key, "bytesize"))
			r->bytesize = v, r->has_bytesize = 1;
		break;
	case 10:
		if (span_eq(key, "generation"))
			r->generation = v, r->has_generation = 1;
		break;
	}
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
	struct span key;
	int have_key = 0; /* the key was read with the value before it */
	for (;;) {
		if (!have_key) {
			while (p < end && (*p == ' ' || *p == ','))
				p++;
			if (p < end && *p == '}')
				break;
			if (p >= end || *p != '"' || !(p = parse_key(p, end, &key)))
				return -1;
		}
		have_key = 0;
		if (p >= end)
			return -1;
		if (*p == '"') {
			int how;
			struct span next_key;
			const char *v = p + 1, *ve = value_end(v, end, &how, &next_key, &p);
			if (!ve)
				return -1;
			take_string(r, key, (struct span){ v, (size_t)(ve - v) });
			if (how == GOES_ON_END)
				break;
			key = next_key;
			have_key = 1;
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
		if (*p == '{' && span_eq(key, "flags")) {
			/*
			 * Ruby ends a record with its GC flags, an object of booleans: when the first '}' after it
			 * ends the line, it is skipped whole (every record has one; walking it cost a tenth).
			 */
			const char *q = memchr(p, '}', (size_t)(end - p));
			if (q && ends_record(q + 1, end))
				break;
		}
		if (*p == 't' && span_eq(key, "shared"))
			r->shared = 1;
		if ((*p >= '0' && *p <= '9') || *p == '-') {
			int ok;
			int64_t v = number(p, end, &ok);
			if (!ok)
				return -1;
			take_number(r, key, v);
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
	const char *p = buf, *end = buf + n, *ahead = buf;
	while (p < end) {
		if ((size_t)(p - buf) >= limit)
			return -2;
		/* Mapped pages are not in the cache as read()'s copy left them: ask for them ahead of the parser. */
		for (; ahead < end && ahead < p + PREFETCH; ahead += 64)
			__builtin_prefetch(ahead);
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
		if (have == cap) { /* a single line longer than the buffer: it doubles */
			char *b = vec_grow(buf, have, &cap, 1);
			if (!b) {
				err = -ENOMEM;
				break;
			}
			buf = b;
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

/* A dump is mapped a window at a time, so what it counts as ours stays small whatever the dump's size. */
#define WINDOW (1u << 20)

/*
 * A mapped file that shrinks under us faults with SIGBUS; there is nothing to read any more, and the
 * analysis cannot be left half done safely, so say so and exit.
 */
static void on_sigbus(int sig)
{
	static const char msg[] = "rbscope: a heap dump shrank while it was being read (is it still being written?)\n";
	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0) {
		/* nothing more to do */
	}
	_exit(EXIT_BAD_INPUT);
}

static void catch_sigbus(void)
{
	static int done;
	struct sigaction sa, old;
	if (__atomic_exchange_n(&done, 1, __ATOMIC_RELAXED) || sigaction(SIGBUS, NULL, &old) || old.sa_handler != SIG_DFL)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigbus;
	sigaction(SIGBUS, &sa, NULL);
}

/*
 * Read the lines of a plain file of the given size that start in [pos, end) through mapped windows
 * (no copy, unlike read). With skip, the line pos is in belongs to whoever reads before pos. Returns
 * 0, -errno, or 1 when the file cannot be mapped (read it instead; nothing was read yet).
 */
static int map_stream(int fd, uint64_t size, uint64_t pos, uint64_t end, int skip, heap_fn fn, void *arg,
		      struct heap_stats *st)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	size_t window = WINDOW;
	int mapped = 0;
	if (end > size)
		end = size;
	catch_sigbus();
	while (pos < size && pos < end) { /* past end, no line is ours, even while skipping */
		uint64_t off = pos & ~(page - 1);
		size_t len = size - off < window ? (size_t)(size - off) : window;
		char *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, (off_t)off);
		if (map == MAP_FAILED)
			return mapped ? -errno : 1;
		mapped = 1;
		const char *buf = map + (pos - off);
		size_t n = len - (size_t)(pos - off), used = 0;
		int last = off + len == size;
		if (skip) {
			const char *nl = memchr(buf, '\n', n);
			used = nl ? (size_t)(nl + 1 - buf) : n;
			skip = !nl && !last; /* still inside the line before ours */
		}
		ssize_t fed = 0;
		if (!skip) {
			uint64_t at = pos + used;
			fed = feed(buf + used, n - used, end > at ? (size_t)(end - at) : 0, last, fn, arg, st);
		}
		munmap(map, len);
		size_t done = used + (fed > 0 ? (size_t)fed : 0);
		st->bytes += done;
		if (fed < 0 || last)
			break;
		if (!done && len == window) { /* one line longer than the window */
			window *= 2;
			continue;
		}
		pos += done;
	}
	return 0;
}

int heap_read_part(int fd, uint64_t start, uint64_t end, heap_fn fn, void *arg, struct heap_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (start >= end)
		return 0;
	uint64_t from = start ? start - 1 : 0; /* the byte before, to tell whether a line starts at start */
	struct stat sb;
	int err = fstat(fd, &sb) ? -errno : map_stream(fd, (uint64_t)sb.st_size, from, end, start > 0, fn, arg, st);
	if (err <= 0)
		return err;
	struct source s = { .fd = fd, .positioned = 1, .pos = from, .end = end };
	return read_stream(&s, (size_t)(end - from), start > 0, fn, arg, st);
}

int heap_read_fd(int fd, int plain, uint64_t size, heap_fn fn, void *arg, struct heap_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!plain) {
		struct source s = { .gz = gzdopen(fd, "rb"), .fd = -1 }; /* reads plain data too */
		if (!s.gz) {
			close(fd);
			return -ENOMEM;
		}
		gzbuffer(s.gz, 1u << 20);
		int err = read_stream(&s, 0, 0, fn, arg, st);
		gzclose(s.gz);
		return err;
	}
	int err = map_stream(fd, size, 0, size, 0, fn, arg, st);
	if (err == 1) { /* cannot be mapped: read it through the buffer */
		posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
		struct source s = { .fd = fd };
		err = read_stream(&s, (size_t)size, 0, fn, arg, st);
	}
	close(fd);
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
