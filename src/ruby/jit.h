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

struct iseq_info;
/*
 * The line of a frame running JIT code of iseq is at the code address ip
 * (its thread's, taken with the frame, when the JIT's register for the frame
 * it runs held this frame's address): from the JIT's own tables, the block of
 * is's code that holds ip, when every instruction of that block is on one
 * line. 0 with *line set; -ERANGE when the block spans lines; -ENOENT when ip
 * is in no block of is (code the JIT keeps apart: side exits, stubs);
 * -ENOTSUP when this Ruby's JIT tables are not known (only 3.1's YJIT's are).
 * is's blocks are kept with it, read again on a miss at most once a second.
 */
int ruby_jit_line(struct ruby_target *t, struct iseq_info *is, uint64_t ip, int32_t *line);

#endif
