/* locals.h: a frame's local variables and a thread's fiber-local and thread variables, read from outside (snapshot --locals). */
#ifndef RBSCOPE_LOCALS_H
#define RBSCOPE_LOCALS_H

#include <stdint.h>

#include "sample.h"
#include "target.h"
#include "value.h"

#define LOCALS_MAX 256 /* variables shown of one frame or thread (the rest counted in more) */

struct ruby_local {
	uint32_t name; /* strtab id: the variable's name, or a fiber-local's key */
	int arg;       /* a parameter of its method or block */
	struct ruby_shown value;
};

struct ruby_locals {
	int n, more;
	struct ruby_local *v;
};

/*
 * The local variables of a Ruby frame (at, from a sample taken with
 * WALK_LOCALS): its iseq's local table, parameters first, each read from the
 * frame's env as it is now. Variables Ruby does not name (anonymous `*`, `&`
 * and the like) are left out, as binding.local_variables leaves them out. A
 * C frame, or a frame without an iseq, has none. 0 or negative.
 */
int ruby_frame_locals(struct ruby_target *t, const struct ruby_frame_at *at, struct ruby_locals *out);
/* The fiber-local variables (Thread#[]) of the fiber the thread at th runs now. 0 or negative. */
int ruby_fiber_locals(struct ruby_target *t, uint64_t th, struct ruby_locals *out);
/* The fiber-local key (a Symbol's name) of the fiber th runs: 1 with its value, 0 when it has none, or negative. */
int ruby_fiber_local(struct ruby_target *t, uint64_t th, const char *key, uint64_t *value);
/*
 * The thread variables (Thread#thread_variable_get) of the thread at th: its
 * Thread's hidden instance variable "locals", a Hash of Symbol -> value, in
 * the VM's table of generic instance variables (ruby_generic_ivars). 0 or
 * negative (ERR_UNSUPPORTED where that table is not read).
 */
int ruby_thread_variables(struct ruby_target *t, uint64_t th, struct ruby_locals *out);
/* Does ruby_thread_variables read them on t's Ruby (its table found, its layout known)? */
int ruby_thread_variables_read(const struct ruby_target *t);
void ruby_locals_free(struct ruby_locals *l);

#endif
