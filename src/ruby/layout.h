/* layout.h: one Ruby version's VM struct offsets and constants, as data. */
#ifndef RBSCOPE_LAYOUT_H
#define RBSCOPE_LAYOUT_H

#include <stdint.h>

#include "layout_fields.h"

/*
 * Generated per version by tools/gen-layouts into layouts/ruby_X_Y.c. The
 * walker reads only these fields: it never tests a Ruby version itself.
 */
struct ruby_layout {
	const char *version; /* the release the table was generated from */
#define RUBY_LAYOUT_MEMBER(name) int64_t name;
	RUBY_LAYOUT_FIELDS(RUBY_LAYOUT_MEMBER)
#undef RUBY_LAYOUT_MEMBER
};

/* All generated layouts, NULL-terminated. */
extern const struct ruby_layout *const ruby_layouts[];

/*
 * The layout for a "X.Y.Z" version string: the one generated for the same
 * X.Y (struct layouts do not change within a minor series). NULL if none.
 */
const struct ruby_layout *ruby_layout_find(const char *version);
/* The table of the newest series; the newest series not after version (else the newest). */
const struct ruby_layout *ruby_layout_newest(void);
const struct ruby_layout *ruby_layout_nearest(const char *version);

#endif
