/* retained.h: `heap retained`: what each object keeps alive (its dominator-tree subtree), by object, class or site. */
#ifndef RBSCOPE_HEAP_RETAINED_H
#define RBSCOPE_HEAP_RETAINED_H

#include <stdio.h>

#include "dump.h"

enum heap_retained_by { HEAP_RETAINED_OBJECTS, HEAP_RETAINED_CLASS, HEAP_RETAINED_LOCATION };

/*
 * Read the dump at path and print the objects that retain the most memory
 * (top N; all if top <= 0): an object's retained size is the memsize of
 * every object that no root reaches except through it, its own included.
 * By class or location, a group's retained size sums its members that have
 * no other member among their dominators, so nothing is counted twice.
 * Objects no root reaches are reported apart. 0, -errno or ERR_BAD_FILE.
 */
int heap_retained(const char *path, enum heap_retained_by by, int top, int json, FILE *out, struct heap_stats *st);

#endif
