/* json.h: writing JSON strings. */
#ifndef RBSCOPE_JSON_H
#define RBSCOPE_JSON_H

#include <stdio.h>

#include "buf.h"

/* Write s as a JSON string literal, quotes included; bytes that are not UTF-8 become U+FFFD. */
void json_write_string(FILE *f, const char *s);
/* Format into b (reset first), then write it as a JSON string; 0 or -ENOMEM. */
int json_write_stringf(FILE *f, struct buf *b, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
