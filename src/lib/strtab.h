/* strtab.h: an arena of interned strings, each named by a stable 32-bit id. */
#ifndef RBSCOPE_STRTAB_H
#define RBSCOPE_STRTAB_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "map.h"

/*
 * Equal strings get the same id. Ids are offsets into one arena, so the
 * table is cheap to write out whole (see profile/raw.c). Id 0 is "".
 */
struct strtab {
	struct buf arena;
	struct map index; /* hash (re-seeded on collision) -> offset */
	uint32_t count;
};

int strtab_init(struct strtab *t);
void strtab_free(struct strtab *t);
/* The id of s[0..len); negative on error. */
int64_t strtab_intern(struct strtab *t, const char *s, size_t len);
const char *strtab_get(const struct strtab *t, uint32_t id);

#endif
