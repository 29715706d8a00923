/* map.c: an open-addressing hash map from 64-bit keys to 64-bit values. */
#include "map.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

uint64_t map_hash64(uint64_t x)
{
	/* splitmix64's finaliser */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

uint64_t map_hash_bytes(const void *p, size_t n, uint64_t seed)
{
	const unsigned char *s = p;
	uint64_t h = seed ^ 0xcbf29ce484222325ULL;
	while (n >= 8) {
		uint64_t w;
		memcpy(&w, s, 8);
		h = map_hash64(h ^ w);
		s += 8;
		n -= 8;
	}
	uint64_t w = 0;
	memcpy(&w, s, n);
	return map_hash64(h ^ w ^ ((uint64_t)n << 56));
}

void map_init(struct map *m)
{
	m->slots = NULL;
	m->cap = m->len = 0;
	m->has_empty_key = 0;
	m->empty_key_val = 0;
}

void map_free(struct map *m)
{
	free(m->slots);
	map_init(m);
}

void map_clear(struct map *m)
{
	if (m->slots)
		memset(m->slots, 0xff, m->cap * sizeof(*m->slots));
	m->len = 0;
	m->has_empty_key = 0;
}

static struct map_slot *find(const struct map *m, uint64_t key)
{
	size_t mask = m->cap - 1, i = map_hash64(key) & mask;
	while (m->slots[i].key != key && m->slots[i].key != MAP_EMPTY)
		i = (i + 1) & mask;
	return &m->slots[i];
}

uint64_t *map_get(const struct map *m, uint64_t key)
{
	if (key == MAP_EMPTY)
		return m->has_empty_key ? (uint64_t *)&m->empty_key_val : NULL;
	if (!m->cap)
		return NULL;
	struct map_slot *s = find(m, key);
	return s->key == key ? &s->val : NULL;
}

static int resize(struct map *m, size_t cap)
{
	struct map old = *m;
	m->slots = malloc(cap * sizeof(*m->slots));
	if (!m->slots) {
		*m = old;
		return -ENOMEM;
	}
	m->cap = cap;
	map_clear(m);
	m->has_empty_key = old.has_empty_key;
	m->len = (size_t)old.has_empty_key;
	for (size_t i = 0; i < old.cap; i++) {
		if (old.slots[i].key != MAP_EMPTY) {
			*find(m, old.slots[i].key) = old.slots[i];
			m->len++;
		}
	}
	free(old.slots);
	return 0;
}

int map_put(struct map *m, uint64_t key, uint64_t val)
{
	if (key == MAP_EMPTY) {
		m->len += !m->has_empty_key;
		m->has_empty_key = 1;
		m->empty_key_val = val;
		return 0;
	}
	if ((m->len + 1) * 10 > m->cap * 7) {
		int err = resize(m, m->cap ? m->cap * 2 : 64);
		if (err)
			return err;
	}
	struct map_slot *s = find(m, key);
	if (s->key == MAP_EMPTY) {
		s->key = key;
		m->len++;
	}
	s->val = val;
	return 0;
}

int map_next(const struct map *m, size_t *i, uint64_t *key, uint64_t *val)
{
	for (; *i < m->cap; (*i)++) {
		if (m->slots[*i].key != MAP_EMPTY) {
			*key = m->slots[*i].key;
			*val = m->slots[*i].val;
			(*i)++;
			return 1;
		}
	}
	if (*i == m->cap && m->has_empty_key) {
		*key = MAP_EMPTY;
		*val = m->empty_key_val;
		(*i)++;
		return 1;
	}
	return 0;
}
