/* client.h: the CLI's side of the agent channel: find a process's agent socket safely, connect, ask. */
#ifndef RBSCOPE_CLIENT_H
#define RBSCOPE_CLIENT_H

#include <stddef.h>
#include <sys/types.h>

struct agent_conn {
	int fd;
	pid_t pid;
	char path[512];
	char hello[512]; /* the agent's HELLO answer */
};

/*
 * Connect to the agent of pid and say hello (waiting up to timeout_ms for
 * the answer). The socket is looked for through /proc/PID/root (so chroots
 * and private /tmp work), in $XDG_RUNTIME_DIR/rbscope of the process's
 * environment and in /tmp/rbscope-UID; its directory must belong to the
 * process's uid and be closed to others. 0, or ERR_NO_PROCESS,
 * ERR_NO_AGENT, ERR_AGENT_SILENT, -EACCES (the agent refused us), -errno.
 */
int agent_connect(struct agent_conn *c, pid_t pid, int timeout_ms);
void agent_close(struct agent_conn *c);

/*
 * Send a request and wait (up to timeout_ms, -1 forever) for its answer.
 * On 0, *reply (malloc'ed, NUL-terminated) is the AGENT_OK text; on
 * ERR_AGENT it is the agent's error text; *fd_got a passed descriptor or
 * -1 (fd_got may be NULL).
 */
int agent_request(struct agent_conn *c, unsigned type, const char *body, size_t len, int fd_pass, int timeout_ms,
		  char **reply, size_t *reply_len, int *fd_got);

/*
 * End this connection's trace (latency, allocations): hooks off, then whatever was written before that. The
 * agent acts once its thread has the GVL, which a busy app holds for up to Ruby's 100 ms time slice, and goes
 * on writing meanwhile: the ring is read (drain(ctx), unless NULL: the recording has already failed) while
 * the answer is awaited (timeout_ms at most), or those records would be dropped. 0, or -1 if drain() said
 * the ring is corrupt; *gone set if the process went away.
 */
int agent_stop(struct agent_conn *c, int timeout_ms, int (*drain)(void *ctx), void *ctx, int *gone);

#endif
