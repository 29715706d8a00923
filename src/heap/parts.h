/* parts.h: reading several dumps at once on every core: each plain file cut into parts at line starts. */
#ifndef RBSCOPE_HEAP_PARTS_H
#define RBSCOPE_HEAP_PARTS_H

#include <stdint.h>

#include "dump.h"

#define HEAP_PARTS_MAX_FILES 8

/* One piece of reading: the lines of one file that start in [start, end). */
struct heap_part {
	int file;             /* index into the paths given to heap_parts_open */
	uint64_t start, end;  /* a gzip file, a pipe or standard input is one part, read as a stream */
	void *arg;            /* the caller's state for this part: what fn is given */
	struct heap_stats st; /* line numbers count from the part's first line */
	int err;              /* 0 or -errno (fn keeps its own reason to stop in its state) */
};

struct heap_parts {
	int npaths, threads;
	int fd[HEAP_PARTS_MAX_FILES];   /* -1 once read as a stream, or when it could not be opened */
	int plain[HEAP_PARTS_MAX_FILES];
	int split[HEAP_PARTS_MAX_FILES];  /* read in parts with pread (else as one stream) */
	uint64_t size[HEAP_PARTS_MAX_FILES];
	int open_err[HEAP_PARTS_MAX_FILES];
	struct heap_part *v; /* in file order, and in order within a file */
	int n;
	size_t cap;
};

/*
 * Open npaths (<= HEAP_PARTS_MAX_FILES) dumps and cut each plain file into
 * parts of about part_size bytes (0: a few per core the process may run on,
 * none under 1 MB; a given size also splits with one core, for tests).
 * A file that cannot be opened is one part that reads nothing; its error
 * comes back from heap_parts_result. 0 or -ENOMEM; heap_parts_close in
 * any case.
 */
int heap_parts_open(struct heap_parts *ps, const char *const *paths, int npaths, uint64_t part_size);
/*
 * Read every part of the files whose bit is set in files (1u << i: paths[i]),
 * on up to ps->threads threads, fn getting each part's arg; fn must only
 * touch its part's state (and what no thread writes). Returns when all are read.
 */
void heap_parts_read(struct heap_parts *ps, unsigned files, heap_fn fn);
/*
 * File i's stats, its parts' put together (line numbers counted across the
 * file), and its result: the first part's error, or ERR_BAD_FILE when no line
 * was a record.
 */
int heap_parts_result(const struct heap_parts *ps, int file, struct heap_stats *st);
void heap_parts_close(struct heap_parts *ps);

#endif
