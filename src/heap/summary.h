/* summary.h: `heap summary`: a dump's objects and memsize grouped by type, class, location, file, gem or generation. */
#ifndef RBSCOPE_HEAP_SUMMARY_H
#define RBSCOPE_HEAP_SUMMARY_H

#include <stdint.h>
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

/* One group of a summary: its label, objects and bytes. */
struct heap_summary_row {
	char *label;
	uint64_t count, memsize;
};
/* What a summary's parts are called: its grouping ("class"), its bytes' JSON key, column and total's words. */
struct heap_summary_names {
	const char *by, *json_key, *column, *total; /* ("memsize", "memsize", "bytes of memsize") */
};
/*
 * Print rows (sorted here, by bytes then objects) as heap summary prints a
 * dump's groups, named as nm says; json_extra, when not "", goes into the
 * JSON object's top level ("\"torn\":0"). 0, or -errno when out could not
 * be written.
 */
int heap_summary_print(FILE *out, const struct heap_summary_names *nm, struct heap_summary_row *rows, size_t n,
		       uint64_t count, uint64_t memsize, int top, int json, const char *json_extra);

#endif
