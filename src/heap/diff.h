/* diff.h: `heap diff`: what was allocated after one dump and is still alive in the next (and the one after). */
#ifndef RBSCOPE_HEAP_DIFF_H
#define RBSCOPE_HEAP_DIFF_H

#include <stdio.h>

#include "dump.h"

/*
 * paths: BEFORE AFTER [LATER]. Prints the objects new in AFTER (not in
 * BEFORE by address, type and allocation identity) and, with LATER, still
 * in LATER: the three-dump technique, grouped by allocation site and class.
 * The dumps are read on every core, BEFORE and LATER first, then AFTER.
 * st[i] gets dump i's stats; when a dump cannot be read or holds no record,
 * *failed is its index (the dumps before it were read), else -1.
 * 0, -errno (a write to out too) or ERR_BAD_FILE.
 */
int heap_diff(const char *const *paths, int npaths, int top, FILE *out, struct heap_stats *st, int *failed);
/* heap_diff with the plain dumps cut into parts of part_size bytes (0: heap_diff's choice), for tests. */
int heap_diff_parts(const char *const *paths, int npaths, int top, FILE *out, struct heap_stats *st, int *failed,
		    uint64_t part_size);

#endif
