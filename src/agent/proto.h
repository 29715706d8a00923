/* proto.h: the wire protocol between the rbscope CLI and the agent in a Ruby process (framing, message types, socket paths). */
#ifndef RBSCOPE_PROTO_H
#define RBSCOPE_PROTO_H

/*
 * This file and proto.c are compiled into both the CLI and the gem's
 * extension, so they use nothing but libc.
 *
 * A connection is a Unix stream socket. Every message is a frame: an
 * 8-byte header (u32 body length, u16 type, u16 flags, little-endian as
 * the machine) followed by the body. A request gets exactly one reply
 * frame (AGENT_OK or AGENT_ERROR), except the events of a trace, which
 * travel through the shared ring (ring.h) and not the socket. A file
 * descriptor may ride along a frame (SCM_RIGHTS): the output file of a
 * heap dump, the ring of a trace.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define AGENT_PROTO_VERSION 1
/* Requests above this size get an AGENT_ERROR and are skipped; replies have no limit. */
#define AGENT_MAX_REQUEST (4u << 20)

enum agent_msg {
	AGENT_HELLO = 1,      /* body: "rbscope <proto>"; reply: "pid <pid> ruby <version> ..." lines */
	AGENT_BACKTRACES = 2, /* reply: every thread's backtrace, as text */
	AGENT_GCSTAT = 3,     /* body: "json" or empty; reply: GC.stat and object counts */
	AGENT_EVAL = 4,       /* body: Ruby code; reply: inspect of the result, or the exception */
	AGENT_HEAPDUMP = 5,   /* fd: where to write; reply: bytes written */
	AGENT_TRACE = 6,      /* body: trace settings (ext/rbscope/trace.c); reply carries the ring's fd (ring.h) */
	AGENT_STOP = 7,       /* end the trace (latency, allocations) of this connection */
	AGENT_LATENCY = 8,    /* body: "PROVIDER:PROBE"; reply carries a histogram's fd (hist.h) */
	AGENT_ALLOCS = 9,     /* body: "interval=N buffer=BYTES"; reply carries the ring's fd (ring.h: RING_ALLOC...) */
	AGENT_OK = 64,
	AGENT_ERROR = 65,
};

struct agent_hdr {
	uint32_t len;
	uint16_t type;
	uint16_t flags;
};

/*
 * Write one whole frame to fd (blocking, EINTR retried), passing fd_pass
 * along unless it is -1. 0 or -errno.
 */
int agent_send(int fd, unsigned type, const void *body, size_t len, int fd_pass);

/*
 * Read one whole frame: *body is malloc'ed (NUL-terminated, len excluded)
 * and *fd_got is a passed descriptor or -1. A body longer than max is read
 * and thrown away: the call returns -EMSGSIZE with *type set, so the
 * caller can answer and go on. 0, -ECONNRESET at a clean end, or -errno.
 */
int agent_recv(int fd, unsigned *type, char **body, size_t *len, size_t max, int *fd_got);

/*
 * The directory where a process of this uid keeps its socket: $XDG_RUNTIME_DIR/rbscope
 * when runtime_dir is given, else /tmp/rbscope-UID. The length written, or -1 if too long.
 */
int agent_dir(char *buf, size_t cap, const char *runtime_dir, uid_t uid);
/* dir/PID.sock. The length, or -1 if too long for a Unix socket. */
int agent_socket_path(char *buf, size_t cap, const char *dir, pid_t pid);

/*
 * The decimal number s starts with (0 when it starts with no digit; UINT64_MAX
 * past it), *end (when not NULL) just after its digits. The agent's own strtoull:
 * a C library's strtoul family is versioned anew by C23 (glibc 2.38), which would
 * keep an agent built there out of every Ruby on an older one.
 */
uint64_t agent_decimal(const char *s, const char **end);

#endif
