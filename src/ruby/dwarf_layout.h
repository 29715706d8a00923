/* dwarf_layout.h: a Ruby layout read from the DWARF of a libruby (or of any object built with Ruby's headers). */
#ifndef RBSCOPE_DWARF_LAYOUT_H
#define RBSCOPE_DWARF_LAYOUT_H

#include "layout.h"

/*
 * Read every field of layout_paths (the struct offsets and bit-fields) from
 * path's DWARF, and the frame and table-entry sizes; the constants (type
 * tags, flags, frame magics) come from base, the nearest generated table.
 * A field no path resolves is -1, never base's value. Returns 0 and the
 * number of fields resolved, -ENOENT when path has no usable DWARF, or -errno.
 */
int dwarf_layout_read(const char *path, const struct ruby_layout *base, struct ruby_layout *out, int *resolved);

#endif
