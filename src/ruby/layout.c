/* layout.c: the generated Ruby layouts, the releases each one serves, and the lookup by version. */
#include "layout.h"

#include <stdio.h>
#include <string.h>

extern const struct ruby_layout ruby_layout_2_6, ruby_layout_2_7, ruby_layout_3_0, ruby_layout_3_1, ruby_layout_3_1_7,
	ruby_layout_3_2, ruby_layout_3_3, ruby_layout_3_4, ruby_layout_4_0_0, ruby_layout_4_0;

/*
 * Newest releases known (2026-11): 2.6.10, 2.7.8, 3.0.7, 3.1.7, 3.2.11,
 * 3.3.14, 3.4.11, 4.0.6. Within a series the fields rbscope reads do not
 * move from one patch release to the next but in three places, found by
 * comparing rust-bindgen's output of every release's headers (rbspy's
 * ruby-structs, 2.6.0 to 4.0.6, read by hand): rb_vm_t's objspace moved 8
 * bytes in 3.1.5, in 3.2.3 and in 3.2.4 (3.2's table reads no GC state, so it
 * serves them all), and 4.0.6's rb_thread_t grew before Thread#name. Where a
 * field moved, each side has a table. How each was made and tested: source.
 */
const struct ruby_layout_range ruby_layout_ranges[] = {
	{ &ruby_layout_2_6, 2, 6, 0, 10, "headers (2.6.0 internal, 2.7 public)" },
	{ &ruby_layout_2_7, 2, 7, 0, 8, "Debian source, live and core tests" },
	{ &ruby_layout_3_0, 3, 0, 0, 7, "headers (3.0.0 internal, 3.1 public), a 3.0.0 core" },
	{ &ruby_layout_3_1, 3, 1, 0, 4, "Debian source (3.1.2)" },
	{ &ruby_layout_3_1_7, 3, 1, 5, 7, "3.1.7's MJIT header, the rest from 3.1.2; live and core tests" },
	{ &ruby_layout_3_2, 3, 2, 0, 11, "headers (3.2.0 internal, 3.3 public)" },
	{ &ruby_layout_3_3, 3, 3, 0, 14, "Debian source, live and core tests" },
	{ &ruby_layout_3_4, 3, 4, 0, 11, "Debian source, live and core tests" },
	{ &ruby_layout_4_0_0, 4, 0, 0, 5, "headers (4.0.0 internal, 3.4 public), a 4.0.0 core" },
	{ &ruby_layout_4_0, 4, 0, 6, 6, "headers (4.0.6 internal, 3.4 public)" },
	{ NULL, 0, 0, 0, 0, NULL },
};

/* "X.Y.Z..." -> 0 and the numbers; a missing Z reads as -1. */
static int parse(const char *version, int *major, int *minor, int *teeny)
{
	*teeny = -1;
	return version && sscanf(version, "%d.%d.%d", major, minor, teeny) >= 2 ? 0 : -1;
}

const struct ruby_layout *ruby_layout_find(const char *version, enum layout_match *how)
{
	int major, minor, teeny;
	const struct ruby_layout_range *newest = NULL;
	if (how)
		*how = LAYOUT_NONE;
	if (parse(version, &major, &minor, &teeny))
		return NULL;
	for (const struct ruby_layout_range *r = ruby_layout_ranges; r->layout; r++) {
		if (r->major != major || r->minor != minor)
			continue;
		if (teeny >= r->first && teeny <= r->last) {
			if (how)
				*how = LAYOUT_EXACT;
			return r->layout;
		}
		if (!newest || r->last > newest->last)
			newest = r;
	}
	if (!newest || (teeny >= 0 && teeny < newest->last))
		return NULL; /* no table for the series, or not a version string */
	if (how)
		*how = teeny < 0 ? LAYOUT_EXACT : LAYOUT_NEWER; /* "X.Y": the series, by its newest table */
	return newest->layout;
}

static int key(const struct ruby_layout_range *r)
{
	return (r->major * 100 + r->minor) * 1000 + r->last;
}

const struct ruby_layout *ruby_layout_newest(void)
{
	const struct ruby_layout_range *best = NULL;
	for (const struct ruby_layout_range *r = ruby_layout_ranges; r->layout; r++)
		if (!best || key(r) > key(best))
			best = r;
	return best ? best->layout : NULL;
}

const struct ruby_layout *ruby_layout_nearest(const char *version)
{
	int major, minor, teeny;
	if (parse(version, &major, &minor, &teeny))
		return ruby_layout_newest();
	const struct ruby_layout_range *best = NULL;
	for (const struct ruby_layout_range *r = ruby_layout_ranges; r->layout; r++)
		if (r->major * 100 + r->minor <= major * 100 + minor && (!best || key(r) > key(best)))
			best = r;
	return best ? best->layout : ruby_layout_newest();
}

const char *ruby_layout_series(void)
{
	static char buf[128];
	size_t n = 0;
	buf[0] = '\0';
	for (const struct ruby_layout_range *r = ruby_layout_ranges; r->layout; r++) {
		if (r != ruby_layout_ranges && r[-1].major == r->major && r[-1].minor == r->minor)
			continue;
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%d.%d", n ? ", " : "", r->major, r->minor);
		if (n >= sizeof(buf))
			break;
	}
	return buf;
}

size_t layout_span(const int64_t *offs, size_t n)
{
	size_t span = 0;
	for (size_t i = 0; i < n; i++)
		if (offs[i] >= 0 && (size_t)offs[i] + 8 > span)
			span = (size_t)offs[i] + 8;
	return span;
}
