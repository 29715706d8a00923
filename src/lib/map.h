/* map.h: an open-addressing hash map from 64-bit keys to 64-bit values. */
#ifndef RBSCOPE_MAP_H
#define RBSCOPE_MAP_H

#include <stddef.h>
#include <stdint.h>

/*
 * Keys are any uint64_t. MAP_EMPTY (all ones) marks a free slot, so that key
 * is kept apart, beside the slots (dumps and hashes do produce it). The map
 * grows by doubling at 70% load; there is no removal (caches are cleared
 * whole).
 */
#define MAP_EMPTY UINT64_MAX

struct map_slot {
	uint64_t key;
	uint64_t val;
};

struct map {
	struct map_slot *slots;
	size_t cap; /* a power of two, or 0 */
	size_t len;           /* keys held, MAP_EMPTY's included */
	int has_empty_key;    /* MAP_EMPTY is a key, with value empty_key_val */
	uint64_t empty_key_val;
};

void map_init(struct map *m);
void map_free(struct map *m);
void map_clear(struct map *m);
/* The value slot for key, or NULL. */
uint64_t *map_get(const struct map *m, uint64_t key);
/* Insert or overwrite; 0 or -ENOMEM. */
int map_put(struct map *m, uint64_t key, uint64_t val);
/*
 * Every key and value, in no order: start with *i = 0; 1 with *key and *val
 * set while there is one more, then 0.
 */
int map_next(const struct map *m, size_t *i, uint64_t *key, uint64_t *val);
/* A well-mixed 64-bit hash of a key (also used to hash byte strings). */
uint64_t map_hash64(uint64_t x);
uint64_t map_hash_bytes(const void *p, size_t n, uint64_t seed);

#endif
