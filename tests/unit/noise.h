/* noise.h: memory for the readers' tests to run over: noise, small numbers, zeros and pointers back into it. */
#ifndef RBSCOPE_TEST_NOISE_H
#define RBSCOPE_TEST_NOISE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Fill size bytes at m (mapped at base in the test's fake memory) from seed: pointers so the readers follow chains. */
static inline void noise_fill(unsigned char *m, size_t size, uint64_t base, unsigned seed)
{
	srand(seed);
	for (size_t i = 0; i + 8 <= size; i += 8) {
		uint64_t v;
		switch (rand() % 4) {
		case 0: v = base + ((uint64_t)rand() % size & ~7ULL); break;
		case 1: v = (uint64_t)rand() % 64; break;
		case 2: v = 0; break;
		default: v = ((uint64_t)rand() << 32) | (uint64_t)rand(); break;
		}
		memcpy(m + i, &v, 8);
	}
}

#endif
