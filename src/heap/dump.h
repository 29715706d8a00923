/* dump.h: reading ObjectSpace.dump_all heap dumps (JSON lines) fast: one record at a time, no copies. */
#ifndef RBSCOPE_DUMP_H
#define RBSCOPE_DUMP_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../lib/map.h"
#include "../lib/strtab.h"

/* A slice of the dump's text (not NUL-terminated, still JSON-escaped for strings). */
struct span {
	const char *p;
	size_t n;
};

/* The fields of one record the analyses use; a field absent from the line is empty / has_* = 0. */
struct heap_rec {
	uint64_t address;   /* 0 for ROOT records */
	struct span type;   /* "STRING", "CLASS", "ROOT", ... */
	uint64_t class_addr;
	struct span name;   /* CLASS/MODULE: the class path */
	struct span real_class_name; /* CLASS: a singleton class's class ("Class", "Module") */
	struct span file;   /* allocation site, when allocation tracing was on */
	int64_t line, generation;
	uint64_t memsize;
	struct span refs;   /* the text inside "references":[ ... ] */
	struct span value;  /* STRING: the (possibly truncated) value */
	int64_t bytesize;
	struct span root;   /* ROOT: which root */
	unsigned has_file : 1, has_line : 1, has_generation : 1, has_memsize : 1, has_bytesize : 1, has_value : 1;
	unsigned shared : 1; /* STRING: "shared":true, its bytes belong to another string (and it has no value) */
};

struct heap_stats {
	uint64_t lines, records, bad, bytes;
	uint64_t first_bad_line[3]; /* line numbers of the first bad lines, 0 if fewer */
	int cut; /* gzip data corrupt or cut short: read up to there (bytes: how far, uncompressed) */
};

/* Called per record; return non-zero to stop. */
typedef int (*heap_fn)(const struct heap_rec *r, void *arg);

/*
 * Read path ("-" for standard input; gzip-compressed files are read
 * transparently) and call fn for every record. Lines that are not a JSON
 * object with the expected shape are counted in stats->bad and skipped.
 * Returns 0, -errno, or ERR_BAD_FILE when no line at all was a record.
 */
int heap_read(const char *path, heap_fn fn, void *arg, struct heap_stats *stats);

/*
 * heap_read in steps, for readers that split a file. heap_open opens path
 * ("-": a dup of standard input); *plain says it is a regular file that is
 * not gzip-compressed (so it can be read in parts), *size its size (0 if
 * not regular). The descriptor, or -errno.
 */
int heap_open(const char *path, int *plain, uint64_t *size);
/* Read all of fd as heap_read does, and close it. 0 or -errno; no record is not an error here. */
int heap_read_fd(int fd, int plain, uint64_t size, heap_fn fn, void *arg, struct heap_stats *stats);
/*
 * Read the lines of a plain file that start at offsets in [start, end): the
 * line that start cuts belongs to the part before, the one end cuts is read
 * whole. Parts that meet (one's end, the next's start) read every line once.
 * Uses pread, so threads can read parts of one descriptor at once; stats'
 * line numbers count from the part's first line. 0 or -errno.
 */
int heap_read_part(int fd, uint64_t start, uint64_t end, heap_fn fn, void *arg, struct heap_stats *stats);

/* "file:line" of an object's allocation site into buf; its length, or 0 when the dump has none. */
int heap_location(const struct heap_rec *r, char *buf, size_t cap);
/*
 * How reports name the class at addr, as Ruby would: its name; a singleton
 * class (a dump names none) after whose it is, "#<Class:Foo>" when a named
 * class's or module's own class (attached: that name), else after its real
 * class ("#<Class:#<Object>> (singleton class 0x...)"); an anonymous class
 * (Class.new) as Ruby inspects it, "#<Class:0x00007f...>". Each NULL if the
 * dump did not say.
 */
void heap_class_label(char *out, size_t cap, uint64_t addr, const char *name, const char *attached, const char *singleton_real);
/*
 * What a dump says that names classes (a dump names no singleton class, nor
 * says whose it is): a class's or module's name (NAMED), that name for its
 * own class (ATTACHED: "#<Class:Name>" if that is a singleton class), a
 * singleton class's real class's name (SINGLETON: "Class", "Object").
 */
enum heap_class_fact { HEAP_CLASS_NAMED, HEAP_CLASS_ATTACHED, HEAP_CLASS_SINGLETON, HEAP_CLASS_FACTS };
struct heap_class_note {
	uint64_t addr;
	int fact;         /* enum heap_class_fact */
	struct span name;
};
/* The notes a record gives (a CLASS or MODULE record: one or two, else none): their number. */
int heap_class_notes(const struct heap_rec *r, struct heap_class_note out[2]);
/* Class names by address and fact, each a string id + 1 in a strtab of the user's; the last put of one stands. */
struct heap_class_names {
	struct map by[HEAP_CLASS_FACTS];
};
void heap_class_names_init(struct heap_class_names *n);
void heap_class_names_free(struct heap_class_names *n);
int heap_class_names_put(struct heap_class_names *n, int fact, uint64_t addr, uint32_t id);
/* heap_class_label of the class at addr from what n knows, its strings in strs. */
void heap_class_names_label(const struct heap_class_names *n, const struct strtab *strs, uint64_t addr, char *out,
			    size_t cap);
/* A record's class address, 0 for none: IMEMOs give nil's (0x8), not a heap address. */
#define HEAP_CLASS_ADDR(r) ((r)->class_addr >= 0x1000 ? (r)->class_addr : 0)

/*
 * Parse one line (without its newline); 0 if it is a record. Exposed for the
 * fuzz target and tests. Ruby writes some strings unescaped ("file" in every
 * version; class names before 3.2; "struct"): a string whose closing quote is
 * not followed by the next key or the end of the record is read up to the
 * first quote that is, so a path holding '"' or ending in '\' still parses.
 */
int heap_parse_line(const char *p, size_t n, struct heap_rec *r);

/* "0x7f0a..." -> number; 0 if not hex. */
uint64_t heap_hex(struct span s);
/* Whether s is lit (inline, so a literal's length is known when compiled). */
static inline int span_eq(struct span s, const char *lit)
{
	size_t n = strlen(lit);
	return s.n == n && !memcmp(s.p, lit, n);
}

#endif
