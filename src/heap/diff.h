/* diff.h: `heap diff`: what was allocated after one dump and is still alive in the next (and the one after). */
#ifndef RBSCOPE_HEAP_DIFF_H
#define RBSCOPE_HEAP_DIFF_H

#include <stdio.h>

#include "dump.h"

/*
 * paths: BEFORE AFTER [LATER]. Prints the objects new in AFTER (not in
 * BEFORE by address, type and allocation identity) and, with LATER, still
 * in LATER: the three-dump technique, grouped by allocation site and class.
 * 0, -errno or ERR_BAD_FILE.
 */
int heap_diff(const char *const *paths, int npaths, int top, FILE *out);

#endif
