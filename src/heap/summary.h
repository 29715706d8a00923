/* summary.h: `heap summary`: a dump's objects and memsize grouped by type, class, location, file, gem or generation. */
#ifndef RBSCOPE_HEAP_SUMMARY_H
#define RBSCOPE_HEAP_SUMMARY_H

#include <stdio.h>

#include "dump.h"

enum heap_by { HEAP_BY_TYPE, HEAP_BY_CLASS, HEAP_BY_LOCATION, HEAP_BY_FILE, HEAP_BY_GEM, HEAP_BY_GENERATION };

/* The names of enum heap_by's values, in its order ("type", "class", ...), and a NULL. */
extern const char *const heap_by_names[];
/*
 * Read the dump at path and print the groups by memsize (top N, all if
 * top <= 0), as a table or JSON. Objects with no allocation site are one
 * group of their own, "(no allocation info)". 0, -errno or ERR_BAD_FILE.
 */
int heap_summary(const char *path, enum heap_by by, int top, int json, FILE *out, struct heap_stats *st);

#endif
