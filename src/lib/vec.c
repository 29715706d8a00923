/* vec.c: growing an array by doubling (see vec.h). */
#include "vec.h"

#include <stdint.h>
#include <stdlib.h>

void *vec_grow(void *items, size_t n, size_t *cap, size_t size)
{
	if (n < *cap)
		return items;
	size_t c = *cap ? *cap : 16;
	while (c <= n) {
		if (c > SIZE_MAX / 2)
			return NULL;
		c *= 2;
	}
	if (*cap && c < 2 * *cap)
		c = 2 * *cap;
	if (!size || c > SIZE_MAX / size)
		return NULL;
	void *v = realloc(items, c * size);
	if (v)
		*cap = c;
	return v;
}
