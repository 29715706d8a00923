/* object.h: reading Ruby objects (strings, arrays, IDs, class names) out of a target's memory. */
#ifndef RBSCOPE_OBJECT_H
#define RBSCOPE_OBJECT_H

#include <stddef.h>
#include <stdint.h>

#include "target.h"

/* Longest string rbscope reads for a label, path or name. */
#define RUBY_STR_MAX 4096

/* Read the String at v into out (NUL-terminated, truncated to cap-1); 0 or negative. */
int ruby_read_string(struct ruby_target *t, uint64_t v, char *out, size_t cap);
/*
 * The first bytes of the String at v into out (NUL-terminated, at most cap-1
 * of them; the bytes may hold NULs): their count, or negative. *len gets the
 * String's length, *flags (unless NULL) its flags (its encoding's index).
 */
int ruby_string_peek(struct ruby_target *t, uint64_t v, char *out, size_t cap, uint64_t *len, uint64_t *flags);
/* The bytes of a String's header ruby_string_peek reads (short Strings' bytes come with them). */
#define RUBY_STRING_HEAD 48
/* ruby_string_peek of the String at v whose first RUBY_STRING_HEAD bytes were read into hdr. */
int ruby_string_from_head(struct ruby_target *t, uint64_t v, const unsigned char *hdr, char *out, size_t cap,
			  uint64_t *len, uint64_t *flags);
/* The record of key in the st_table at tbl, looked through whole: 1 and *rec, 0 when it has none, or negative. */
int ruby_st_find(struct ruby_target *t, uint64_t tbl, uint64_t key, uint64_t *rec);
/* st_table entries ruby_st_pairs looks at. */
#define RUBY_ST_SCAN 64
/* The live entries of the st_table at tbl (deleted ones skipped), the first RUBY_ST_SCAN: their count, or negative. */
int ruby_st_pairs(struct ruby_target *t, uint64_t tbl, uint64_t *keys, uint64_t *vals);
/*
 * The first max live pairs (at most RUBY_ST_SCAN looked at) of the Hash at v
 * whose flags are given: their count, or negative (ERR_UNSUPPORTED: this
 * Ruby's hashes are not read). *size gets how many pairs it has.
 */
int ruby_hash_pairs(struct ruby_target *t, uint64_t v, uint64_t flags, uint64_t *keys, uint64_t *vals, int max,
		    uint64_t *size);
/* ruby_hash_pairs of a Hash whose table (the RHash's pointer, or where it is inline) is known. */
int ruby_hash_table_pairs(struct ruby_target *t, uint64_t flags, uint64_t table, uint64_t *keys, uint64_t *vals,
			  int max, uint64_t *size);
/* Element i of the Array at v; 0 or negative. */
int ruby_read_array_elt(struct ruby_target *t, uint64_t v, uint64_t i, uint64_t *out);
/* Is v a heap object (not an immediate, not nil/false/true/undef)? */
int ruby_is_heap(const struct ruby_target *t, uint64_t v);
/* The type (T_xxx) of the heap object at v; negative on error. */
int ruby_type_of(struct ruby_target *t, uint64_t v, uint64_t *flags);
/* The interned name of an ID (strtab id, 0 = unknown). */
uint32_t ruby_id_name(struct ruby_target *t, uint64_t id);
/* The interned path of a class or module ("Foo::Bar", 0 = anonymous); *singleton set for "Foo." */
uint32_t ruby_class_name(struct ruby_target *t, uint64_t klass, int *singleton);
struct ruby_ivar {
	uint64_t id, value; /* the variable's ID (a Struct member's: its name as a Symbol VALUE) and its value */
};
/*
 * The instance variables of the T_OBJECT at v whose flags and klass words
 * are given, in the order they were first set: up to max into out. Their
 * count, or negative (ERR_UNSUPPORTED: this Ruby's objects are not read, or
 * the object keeps its ivars in a table of their own, "too complex"). *total
 * gets how many it has.
 */
int ruby_object_ivars(struct ruby_target *t, uint64_t v, uint64_t flags, uint64_t klass, struct ruby_ivar *out, int max,
		      int *total);
/*
 * The same of an object other than a plain one (a Thread, a String): those
 * kept in the VM's table of generic instance variables (Debian's Rubies
 * 2.7-3.4; ERR_UNSUPPORTED elsewhere, or when a 3.3+ object keeps them in a
 * table of its own). 0 when it has none.
 */
int ruby_generic_ivars(struct ruby_target *t, uint64_t v, uint64_t flags, uint64_t klass, struct ruby_ivar *out,
		       int max, int *total);
/* The members of the T_STRUCT at v, the same way: each one's name (a Symbol, from its class's __members__). */
int ruby_struct_members(struct ruby_target *t, uint64_t v, uint64_t flags, uint64_t klass, struct ruby_ivar *out,
			int max, int *total);
/* Does the symbol table at addr validate (used by the scan)? */
int ruby_symbols_valid(struct ruby_target *t, uint64_t addr);

#endif
