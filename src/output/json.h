/* json.h: writing JSON strings. */
#ifndef RBSCOPE_JSON_H
#define RBSCOPE_JSON_H

#include <stdio.h>

/* Write s as a JSON string literal, quotes included. */
void json_write_string(FILE *f, const char *s);

#endif
