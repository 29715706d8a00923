/* jit.h: whether a JIT compiles the target's Ruby code (YJIT, ZJIT), read from outside. */
#ifndef RBSCOPE_JIT_H
#define RBSCOPE_JIT_H

#include "target.h"

/*
 * The JIT on in the target now ("YJIT", "ZJIT"), or NULL when none is: its
 * enabled flag where the Ruby's symbols name it (3.2+ builds with a JIT:
 * rb_yjit_enabled_p, rb_zjit_enabled_p), else JIT code mapped (anonymous
 * executable memory, which an interpreter never maps: 3.1's YJIT, a
 * stripped Ruby). Read again at each call (RubyVM::YJIT.enable turns YJIT on
 * in a running process); a core says what it held.
 */
const char *ruby_jit_on(struct ruby_target *t);
/* The JIT a frame that ran JIT code (its jit_return set) most likely ran: YJIT for 3.x, "JIT" after. */
const char *ruby_jit_name(const struct ruby_target *t);

#endif
