/* layout.h: one Ruby version's VM struct offsets and constants, as data, and which releases each table serves. */
#ifndef RBSCOPE_LAYOUT_H
#define RBSCOPE_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "layout_fields.h"

/*
 * Generated per release by tools/gen-layouts into layouts/ruby_*.c. The
 * walker reads only these fields: it never tests a Ruby version itself.
 */
struct ruby_layout {
	const char *version; /* the release the table was generated from */
#define RUBY_LAYOUT_MEMBER(name) int64_t name;
	RUBY_LAYOUT_FIELDS(RUBY_LAYOUT_MEMBER)
#undef RUBY_LAYOUT_MEMBER
};

/*
 * Which releases a table serves: X.Y.first to X.Y.last. Within a series the
 * ranges do not overlap, and together they cover every release known when
 * the table was written (last is the newest known; a newer patch release is
 * served by the series' newest table, and said so).
 */
struct ruby_layout_range {
	const struct ruby_layout *layout;
	int major, minor, first, last;
	const char *source; /* how it was made and checked: "Debian source", "headers only", ... */
};

/*
 * The bytes from a struct's start that hold each of its n word fields at
 * offs (-1: absent, left out): the most a read of them needs, and no more
 * (the struct may end where the mapping does). 0 if none is present.
 */
size_t layout_span(const int64_t *offs, size_t n);

/* All ranges, oldest first, ending with a NULL layout. */
extern const struct ruby_layout_range ruby_layout_ranges[];

enum layout_match {
	LAYOUT_NONE,      /* no table for that X.Y series */
	LAYOUT_EXACT,     /* a known release of the series */
	LAYOUT_NEWER,     /* a patch release newer than the series' newest known one: its newest table */
};

/*
 * The table for an "X.Y.Z" version string (anything after Z is ignored; "X.Y"
 * names the series, served by its newest table),
 * and how it matched (may be NULL). NULL when the series has no table.
 */
const struct ruby_layout *ruby_layout_find(const char *version, enum layout_match *how);
/* The table of the newest series; the newest table of a series not after version (else the newest). */
const struct ruby_layout *ruby_layout_newest(void);
const struct ruby_layout *ruby_layout_nearest(const char *version);
/* "2.6, 2.7, 3.0, ... 4.0": the series with a table, for messages. */
const char *ruby_layout_series(void);

#endif
