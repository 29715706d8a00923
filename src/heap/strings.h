/* strings.h: `heap strings`: String objects that hold the same value, and the bytes the copies waste. */
#ifndef RBSCOPE_HEAP_STRINGS_H
#define RBSCOPE_HEAP_STRINGS_H

#include <stdio.h>

#include "dump.h"

/*
 * Read the dump at path and print the values held by more than one String,
 * the most bytes wasted first (top N; all if top <= 0): how many copies,
 * bytesize x (copies - 1) wasted, the total, and the start of the value.
 * Values are told apart by two independent 64-bit hashes of the dumped text
 * and the bytesize, so no string is copied; a shared string (one that points
 * into another's bytes) is not a copy, and a String Ruby dumped with no
 * value (not 7-bit ASCII) cannot be compared: both are counted apart.
 * 0, -errno or ERR_BAD_FILE.
 */
int heap_strings(const char *path, int top, int json, FILE *out, struct heap_stats *st);

#endif
