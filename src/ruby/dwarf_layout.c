/* dwarf_layout.c: a Ruby layout read from the DWARF of a libruby (or of any object built with Ruby's headers). */
#include "dwarf_layout.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/err.h"
#include "layout_paths.h"

#define MAX_TYPES 64 /* distinct type names in layout_paths */

struct type_cache {
	const char *name[MAX_TYPES];
	Dwarf_Die die[MAX_TYPES];
	int found[MAX_TYPES];
	int n;
};

/* Strip typedefs and qualifiers off a type (0), or fail (-1). */
static int strip(Dwarf_Die *die)
{
	for (int guard = 0; guard < 16; guard++) {
		int tag = dwarf_tag(die);
		if (tag != DW_TAG_typedef && tag != DW_TAG_const_type && tag != DW_TAG_volatile_type)
			return 0;
		Dwarf_Attribute a;
		if (!dwarf_attr(die, DW_AT_type, &a) || !dwarf_formref_die(&a, die))
			return -1;
	}
	return -1;
}

/* Strip typedefs and qualifiers down to the struct or union (0) or fail (-1). */
static int peel(Dwarf_Die *die)
{
	if (strip(die))
		return -1;
	int tag = dwarf_tag(die);
	if (tag != DW_TAG_structure_type && tag != DW_TAG_union_type)
		return -1;
	return dwarf_hasattr(die, DW_AT_declaration) ? -1 : 0;
}

/* Does die name the type "struct X", "union X" or typedef "X"? */
static int names(Dwarf_Die *die, const char *want)
{
	const char *n = dwarf_diename(die);
	int tag = dwarf_tag(die);
	if (!n)
		return 0;
	if (!strncmp(want, "struct ", 7))
		return tag == DW_TAG_structure_type && !strcmp(n, want + 7);
	if (!strncmp(want, "union ", 6))
		return tag == DW_TAG_union_type && !strcmp(n, want + 6);
	return tag == DW_TAG_typedef && !strcmp(n, want);
}

/* Find every wanted type that is complete somewhere, in one pass over the compile units. */
static void find_types(Dwarf *dw, struct type_cache *tc)
{
	int left = tc->n;
	Dwarf_Off off = 0, next;
	size_t hsize;
	while (left && dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu, child;
		if (dwarf_offdie(dw, off + hsize, &cu) && dwarf_child(&cu, &child) == 0) {
			do {
				int tag = dwarf_tag(&child);
				if (tag != DW_TAG_typedef && tag != DW_TAG_structure_type && tag != DW_TAG_union_type)
					continue;
				for (int i = 0; i < tc->n; i++) {
					if (tc->found[i] || !names(&child, tc->name[i]))
						continue;
					Dwarf_Die t = child;
					if (peel(&t))
						continue; /* only declared in this unit */
					tc->die[i] = t;
					tc->found[i] = 1;
					left--;
				}
			} while (dwarf_siblingof(&child, &child) == 0);
		}
		off = next;
	}
}

static int member_offset(Dwarf_Die *m, int64_t *off)
{
	Dwarf_Attribute a;
	Dwarf_Word w;
	if (!dwarf_attr(m, DW_AT_data_member_location, &a)) {
		*off = 0; /* union members */
		return 0;
	}
	if (dwarf_formudata(&a, &w))
		return -1;
	*off = (int64_t)w;
	return 0;
}

/*
 * Find the member called name in the struct or union st, looking through
 * anonymous members too; its DIE and byte offset. 0 or -1.
 */
static int find_member(Dwarf_Die *st, const char *name, size_t len, Dwarf_Die *out, int64_t *off, int depth)
{
	Dwarf_Die m;
	if (depth > 4 || dwarf_child(st, &m))
		return -1;
	do {
		if (dwarf_tag(&m) != DW_TAG_member)
			continue;
		const char *n = dwarf_diename(&m);
		int64_t here;
		if (member_offset(&m, &here))
			continue;
		if (n && strlen(n) == len && !strncmp(n, name, len)) {
			*out = m;
			*off = here;
			return 0;
		}
		if (!n) { /* an anonymous struct or union: its members are ours */
			Dwarf_Attribute a;
			Dwarf_Die t;
			int64_t inner;
			if (dwarf_attr(&m, DW_AT_type, &a) && dwarf_formref_die(&a, &t) && !peel(&t) &&
			    !find_member(&t, name, len, out, &inner, depth + 1)) {
				*off = here + inner;
				return 0;
			}
		}
	} while (dwarf_siblingof(&m, &m) == 0);
	return -1;
}

/*
 * Resolve "a.b.c" from type die: the byte offset; for a bit-field (what 0-2) its
 * byte, shift or width; for an array (LAYOUT_ELEM_*) its element's size or its length.
 */
static int resolve(Dwarf_Die type, const char *path, int what, int64_t *value)
{
	int64_t total = 0;
	Dwarf_Die m;
	for (const char *p = path;;) {
		const char *dot = strchr(p, '.');
		size_t len = dot ? (size_t)(dot - p) : strlen(p);
		int64_t off;
		if (find_member(&type, p, len, &m, &off, 0))
			return -1;
		total += off;
		if (!dot)
			break;
		Dwarf_Attribute a;
		if (!dwarf_attr(&m, DW_AT_type, &a) || !dwarf_formref_die(&a, &type) || peel(&type))
			return -1;
		p = dot + 1;
	}
	if (what < 0) {
		*value = total;
		return 0;
	}
	if (what == LAYOUT_ELEM_SIZE || what == LAYOUT_ELEM_COUNT) { /* an array member: its element's size, or length */
		Dwarf_Attribute a;
		Dwarf_Die arr, elem;
		Dwarf_Word whole, one;
		if (!dwarf_attr(&m, DW_AT_type, &a) || !dwarf_formref_die(&a, &arr) || strip(&arr))
			return -1;
		if (dwarf_tag(&arr) != DW_TAG_array_type || !dwarf_attr(&arr, DW_AT_type, &a) ||
		    !dwarf_formref_die(&a, &elem) || dwarf_aggregate_size(&arr, &whole) ||
		    dwarf_aggregate_size(&elem, &one) || !one)
			return -1;
		*value = what == LAYOUT_ELEM_SIZE ? (int64_t)one : (int64_t)(whole / one);
		return 0;
	}
	/* A bit-field: DWARF 4's data_bit_offset counts from the start of the struct that holds it. */
	Dwarf_Attribute a;
	Dwarf_Word bits, bitoff;
	if (!dwarf_attr(&m, DW_AT_bit_size, &a) || dwarf_formudata(&a, &bits))
		return -1;
	if (!dwarf_attr(&m, DW_AT_data_bit_offset, &a) || dwarf_formudata(&a, &bitoff))
		return -1; /* DWARF 2/3's bit_offset: not what the compilers Rubies are built with emit */
	bitoff += 8 * (Dwarf_Word)total; /* x86-64 is little-endian: bit n of the struct is bit n%8 of byte n/8 */
	*value = what == 0 ? (int64_t)(bitoff / 8) : what == 1 ? (int64_t)(bitoff % 8) : (int64_t)bits;
	return 0;
}

int dwarf_layout_read(const char *path, const struct ruby_layout *base, struct ruby_layout *out, int *resolved)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	Dwarf *dw = dwarf_begin(fd, DWARF_C_READ);
	if (!dw) {
		close(fd);
		return -ENOENT; /* no debug information */
	}
	struct type_cache tc = { .n = 0 };
	for (const struct layout_path *lp = layout_paths; lp->name; lp++) {
		int seen = 0;
		for (int i = 0; i < tc.n && !seen; i++)
			seen = !strcmp(tc.name[i], lp->type);
		if (!seen && tc.n < MAX_TYPES)
			tc.name[tc.n++] = lp->type;
	}
	find_types(dw, &tc);
	*out = *base;
	/* Every measured field is DWARF's answer or -1: never a value from another version's table. */
	for (const struct layout_path *lp = layout_paths; lp->name; lp++)
		*(int64_t *)((char *)out + lp->field) = -1;
	int n = 0;
	for (const struct layout_path *lp = layout_paths; lp->name; lp++) {
		int64_t *f = (int64_t *)((char *)out + lp->field), v;
		if (*f != -1)
			continue; /* an earlier (newer) path resolved it */
		for (int i = 0; i < tc.n; i++)
			if (tc.found[i] && !strcmp(tc.name[i], lp->type) && !resolve(tc.die[i], lp->path, lp->what, &v)) {
				*f = v;
				n++;
				break;
			}
	}
	/* The sizes that are not offsets. */
	for (int i = 0; i < tc.n; i++) {
		if (!tc.found[i])
			continue;
		Dwarf_Word size;
		Dwarf_Attribute a;
		if (!dwarf_attr(&tc.die[i], DW_AT_byte_size, &a) || dwarf_formudata(&a, &size))
			continue;
		if (!strcmp(tc.name[i], "rb_control_frame_t"))
			out->cfp_size = (int64_t)size;
		else if (!strcmp(tc.name[i], "st_table_entry"))
			out->st_entry_size = (int64_t)size;
		else if (!strcmp(tc.name[i], "struct iseq_insn_info_entry"))
			out->insn_info_size = (int64_t)size;
		else if (!strcmp(tc.name[i], "struct RClass")) {
			out->rclass_size = (int64_t)size;
			if (base->classext_inline >= 0) /* 3.3: the extension follows the RClass */
				out->classext_inline = (int64_t)size;
		}
	}
	dwarf_end(dw);
	close(fd);
	*resolved = n;
	return n ? 0 : -ENOENT;
}
