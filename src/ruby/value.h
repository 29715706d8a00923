/* value.h: a Ruby value read out of a target's memory and shown as Ruby's inspect shows it (snapshot --locals). */
#ifndef RBSCOPE_VALUE_H
#define RBSCOPE_VALUE_H

#include <stdint.h>

#include "target.h"

#define VALUE_STR_BYTES 64 /* a String's first bytes shown (then `...` and its length) */
#define VALUE_ELEMENTS 3   /* an Array's or Hash's first elements shown (then `...` and its size) */

/*
 * A value as shown. nil, true, false, Integers that fit a Fixnum, Floats,
 * Symbols and Strings (up to VALUE_STR_BYTES) read as Ruby's inspect writes
 * them (a Hash as 3.4 writes it from 3.4 on); an Array or Hash as its first
 * elements and its size; a class or module as its name; anything else as
 * #<Class>. A value that did not read as what its header says it is (written
 * over as it was read, freed, moved by GC.compact) is marked torn and its
 * text says so; it is never followed further.
 */
struct ruby_shown {
	char *text;           /* malloc'd; never NULL after ruby_value_show */
	uint32_t cls;         /* strtab id of its class's name; 0: unknown (an anonymous class) */
	const char *encoding; /* a String's encoding name; NULL for other values */
	int simple;           /* text is the value itself (see above), not a summary */
	int torn;
};

/* Show the value v (a VALUE of the target). 0, or -ENOMEM (out is then empty but valid). */
int ruby_value_show(struct ruby_target *t, uint64_t v, struct ruby_shown *out);
void ruby_shown_free(struct ruby_shown *s);
/* The name of the Symbol v (static or dynamic) into name: 1, or 0 when it does not read as one. */
int ruby_symbol_name(struct ruby_target *t, uint64_t v, char *name, size_t cap);
/*
 * A value as a label's text (--label): nil, true, false, an Integer, a
 * Float and a Symbol's name as inspect writes them, a String's own bytes (up
 * to cap - 1, cut on a character's boundary, control bytes as '?'), anything
 * else #<Class>: never more than three small reads. 0, or ERR_TORN when the
 * value does not read as what its header says (text then says so).
 */
int ruby_value_label(struct ruby_target *t, uint64_t v, char *text, size_t cap);
/* The name of the encoding with index i in a String's flags ("UTF-8"; NULL if it is not one every Ruby has). */
const char *ruby_encoding_name(const struct ruby_target *t, unsigned i);

#endif
