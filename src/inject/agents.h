/* agents.h: the agents rbscope carries for Rubies with no gem installed: bundled in the static binary, or installed beside the binary. */
#ifndef RBSCOPE_AGENTS_H
#define RBSCOPE_AGENTS_H

#include <stddef.h>
#include <stdint.h>

struct ruby_target;

/*
 * An agent is the gem's Ruby files and its extension built for one Ruby ABI
 * (MAJOR.MINOR): rbscope.rb, rbscope/NAME.rb and rbscope/rbscope.so. rbscope
 * carries them in two ways, looked for in this order: a bundle in the
 * binary (`make static`, scripts/agent-bundle's format), and a directory
 * `make install` fills, lib/rbscope/agents/API beside the binary's bin/.
 */

/* The APIs carried, space-separated and in order ("2.7 3.1 3.3"), in buf; "" when none. */
void agents_list(char *buf, size_t cap);

/*
 * Place the agent carried for Ruby api ("3.1") where process t can load it:
 * in a directory of t's own filesystem (its /tmp, /var/tmp or /dev/shm, the
 * first writable and not mounted noexec), named by the api and the agent's
 * contents, made by this user and writable by it alone; a copy already there
 * that reads the same is used as it is. dir gets the directory as t sees it.
 * When the agent needs a newer C library than t has (each agent is built with
 * an old Debian's; a glibc's versions are cumulative) or t has another C
 * library, nothing is placed.
 *
 * 0; -ENOENT when none is carried for api; ERR_INJECT with why in msg.
 */
int agents_place(const struct ruby_target *t, const char *api, char *dir, size_t cap, char *msg, size_t mcap);

/*
 * A bundle's files (for the tests and agents_place): calls fn with each
 * file's path ("3.1/rbscope.rb"), mode and bytes, inflated, until fn
 * returns non-zero (returned). 0, or ERR_CORRUPT when the bundle is cut
 * short or a file does not inflate to its size.
 */
int agents_bundle_each(const unsigned char *p, size_t n,
		       int (*fn)(const char *path, unsigned mode, const unsigned char *bytes, size_t len, void *arg),
		       void *arg);

/* Write the message into msg (cap bytes) and return err: `return inject_fail(msg, cap, ERR_INJECT, ...)`. */
int inject_fail(char *msg, size_t cap, int err, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
