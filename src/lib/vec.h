/* vec.h: growing an array by doubling: the one helper the growable arrays use. */
#ifndef RBSCOPE_VEC_H
#define RBSCOPE_VEC_H

#include <stddef.h>

/*
 * items (an array of *cap elements of size bytes) with room for index n:
 * unchanged when n < *cap, else reallocated to at least twice *cap (16 at
 * the least, and more if n needs it) with *cap updated. NULL when out of
 * memory or the size would overflow: items is then still valid and *cap as
 * it was. Use: v = vec_grow(a->v, a->n, &a->cap, sizeof(*v)); if (!v) ...;
 * a->v = v;
 */
void *vec_grow(void *items, size_t n, size_t *cap, size_t size);

#endif
