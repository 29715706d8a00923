/* census.h: a count of a Ruby's objects, read from outside: every slot of every heap page, its type and class. */
#ifndef RBSCOPE_CENSUS_H
#define RBSCOPE_CENSUS_H

#include <stddef.h>
#include <stdint.h>

#include "../lib/map.h"
#include "target.h"

#define CENSUS_TYPES 32 /* a type is 5 bits of an object's flags (T_MASK) */

/* The objects of one class (klass 0: of none, internal objects) or one type. */
struct census_group {
	uint64_t key; /* class address, or type number */
	uint64_t count, bytes;
};

struct census {
	uint64_t pages;       /* heap pages read */
	uint64_t slots;       /* their slots: ObjectSpace.count_objects' :TOTAL */
	uint64_t free;        /* slots holding no object: :FREE */
	uint64_t objects;     /* the others */
	uint64_t bytes;       /* the objects' bytes: their slots, and what a String's or Array's own buffer takes */
	uint64_t torn;        /* slots whose type no object has (a write under the read), counted apart */
	uint64_t pages_gone;  /* pages freed while the census read them (left out) */
	struct census_group types[CENSUS_TYPES]; /* by type number, count 0 for a type not seen */
	struct census_group *classes;            /* by class, in order of first sight */
	uint64_t nclasses, cap;
	struct map class_index; /* class address -> index + 1 */
};

/*
 * Count the objects of t's heap into c (initialised here; census_free
 * after). The process goes on meanwhile: a slot being written as it is read
 * may give a type no object has, counted as torn; a page freed meanwhile is
 * left out and counted. 0, ERR_UNSUPPORTED (this Ruby's table has no heap
 * pages), ERR_GONE, or another negative code.
 */
int census_take(struct ruby_target *t, struct census *c);
void census_free(struct census *c);

/*
 * c's groups as rows for heap_summary_print (heap/summary.h): by type (its
 * name, as count_objects and dumps give it) or by class (its name, read from
 * t: "#<Class:Foo>" for Foo's singleton class, "#<Class:0x...>" for one with
 * no name, "(no class: internal objects)" for objects of none). *rows is
 * malloc'd, each label too (census_rows_free). 0 or -ENOMEM.
 */
struct heap_summary_row;
int census_rows(struct ruby_target *t, const struct census *c, int by_class, struct heap_summary_row **rows, size_t *n);
void census_rows_free(struct heap_summary_row *rows, size_t n);

/* The name Ruby's ObjectSpace.count_objects and heap dumps give type (T_STRING: "STRING"), or NULL. */
const char *census_type_name(const struct ruby_layout *L, int type);
/* Whether objects of type have a class that names them (not internal: IMEMO, NODE, ICLASS, ZOMBIE, MOVED). */
int census_type_has_class(const struct ruby_layout *L, int type);

#endif
