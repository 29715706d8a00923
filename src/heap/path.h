/* path.h: `heap path`: the shortest chain of references from a root to one object of a dump. */
#ifndef RBSCOPE_HEAP_PATH_H
#define RBSCOPE_HEAP_PATH_H

#include <stdint.h>
#include <stdio.h>

#include "dump.h"

/*
 * Read the dump at path and print how the object at addr is reached: the
 * root, then each object from the root's reference to addr with its type,
 * class (a class or module: its own name) and allocation site. 0,
 * ERR_NOT_FOUND when no record has that address, ERR_UNREACHABLE when no
 * root reaches it, -errno or ERR_BAD_FILE.
 */
int heap_path(const char *path, uint64_t addr, FILE *out, struct heap_stats *st);

#endif
