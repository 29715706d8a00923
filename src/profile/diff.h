/* diff.h: two profiles compared, BASE's stacks and NEW's in one set of frames (report --diff). */
#ifndef RBSCOPE_DIFF_H
#define RBSCOPE_DIFF_H

#include <stdint.h>

#include "profile.h"

/*
 * p holds every stack of NEW and of BASE, frames matched by name, path, line
 * and kind; each stack's weight (count; an allocation profile's bytes too,
 * its interval 1) is NEW's, and base[stack] BASE's in the same unit. Shares
 * of each total are what compare: two recordings differ in length.
 */
struct profile_diff {
	struct profile p;
	uint64_t *base;
	uint64_t (*base_vals)[2]; /* per stack of p: BASE's samples (an allocation profile's objects) and bytes */
	uint64_t base_total, new_total; /* profile_stack_weight summed over each */
};

/* Build d from two profiles of one kind (time, or allocations weighed alike). 0 or negative. */
int profile_diff_build(struct profile_diff *d, const struct profile *base, const struct profile *newer);
void profile_diff_free(struct profile_diff *d);
/* A weight's share of NEW's total minus another's of BASE's, in percentage points. */
double profile_diff_pp(const struct profile_diff *d, uint64_t newer, uint64_t base);

#endif
