/* strtab.c: an arena of interned strings, each named by a stable 32-bit id. */
#include "strtab.h"

#include <errno.h>
#include <string.h>

#define STRTAB_MAX (1u << 31)

int strtab_init(struct strtab *t)
{
	buf_init(&t->arena, STRTAB_MAX);
	map_init(&t->index);
	t->count = 0;
	return buf_addch(&t->arena, '\0'); /* id 0 is the empty string */
}

void strtab_free(struct strtab *t)
{
	buf_free(&t->arena);
	map_free(&t->index);
}

int64_t strtab_intern(struct strtab *t, const char *s, size_t len)
{
	if (!len)
		return 0;
	for (uint64_t seed = 0;; seed++) {
		uint64_t h = map_hash_bytes(s, len, seed);
		if (h == MAP_EMPTY)
			continue;
		uint64_t *off = map_get(&t->index, h);
		if (!off) {
			uint64_t at = t->arena.len;
			int err = buf_add(&t->arena, s, len);
			if (!err)
				err = buf_addch(&t->arena, '\0');
			if (!err)
				err = map_put(&t->index, h, at);
			if (err)
				return err;
			t->count++;
			return (int64_t)at;
		}
		const char *have = t->arena.data + *off;
		if (strlen(have) == len && !memcmp(have, s, len))
			return (int64_t)*off;
	}
}

const char *strtab_get(const struct strtab *t, uint32_t id)
{
	return id < t->arena.len ? t->arena.data + id : "";
}
