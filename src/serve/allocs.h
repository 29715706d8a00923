/* allocs.h: serve's /debug/pprof/allocs and /debug/pprof/heap: a process's agent sampling its allocations for a request's seconds. */
#ifndef RBSCOPE_SERVE_ALLOCS_H
#define RBSCOPE_SERVE_ALLOCS_H

#include <stddef.h>
#include <sys/types.h>

#include "../lib/buf.h"

struct serve_allocs;

/*
 * Ask pid's agent to sample allocations (following each object until it is freed, with live) and map its
 * ring: 0 with *out, else an HTTP status (503: no agent, or it refused; 500) with the reason in msg. It
 * waits for the agent's answers (a few ms; up to Ruby's time slice, 100 ms, when the process is busy).
 */
int serve_allocs_start(struct serve_allocs **out, pid_t pid, int live, char *msg, size_t cap);
/* Read what the ring holds: 0, or -1 when the process went away or the ring is corrupt. */
int serve_allocs_drain(struct serve_allocs *a);
/*
 * Stop the agent's sampling (waiting at most 300 ms for it, reading the ring meanwhile) and write the pprof
 * (alloc_objects/alloc_space; inuse_objects/inuse_space with live: what is alive of what was allocated since
 * the start) to out. 0 or a negative code.
 */
int serve_allocs_finish(struct serve_allocs *a, struct buf *out);
void serve_allocs_free(struct serve_allocs *a);

#endif
