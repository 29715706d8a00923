/* client.c: finding and talking to the agent in a Ruby process, from the CLI. */
#include "client.h"
#include "proto.h"
#include "../lib/err.h"
#include "../proc/root.h"
#include "../proc/task.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* The effective uid and the pid as the process itself sees it (its pid namespace's, the last of NSpid). */
static int proc_ids(pid_t pid, uid_t *euid, pid_t *nspid)
{
	char p[64], line[256];
	snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
	FILE *f = fopen(p, "r");
	if (!f)
		return errno == ENOENT ? ERR_NO_PROCESS : -errno;
	*nspid = pid;
	int have_uid = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned r, e;
		if (sscanf(line, "Uid:\t%u\t%u", &r, &e) == 2) {
			*euid = e;
			have_uid = 1;
		} else if (!strncmp(line, "NSpid:", 6)) {
			char *last = strrchr(line, '\t');
			if (last)
				*nspid = (pid_t)atoi(last + 1);
		}
	}
	fclose(f);
	return have_uid ? 0 : ERR_NO_PROCESS;
}

/* XDG_RUNTIME_DIR from the process's environment at its start, if any (and not empty). */
static int proc_runtime_dir(pid_t pid, char *buf, size_t cap)
{
	return task_environ(pid, "XDG_RUNTIME_DIR", buf, cap) == 0 && buf[0] ? 0 : -1;
}

/*
 * The directory dir as the process sees it (resolved inside root: a
 * container's /tmp may be a link to its /run/tmp), when it is uid's and
 * closed to others: an fd, -EACCES when it may not be looked into, or
 * another -errno (ERR_NO_AGENT: it is not trusted).
 */
static int dir_trusted(const char *root, const char *dir, uid_t uid)
{
	struct stat st;
	int fd = root_open_dir(root, dir);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != uid || (st.st_mode & 077)) {
		close(fd);
		return ERR_NO_AGENT;
	}
	return fd;
}

static int wait_readable(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	for (;;) {
		int r = poll(&p, 1, timeout_ms);
		if (r < 0 && errno == EINTR)
			return -EINTR;
		if (r < 0)
			return -errno;
		return r ? 0 : -ETIMEDOUT;
	}
}

int agent_request(struct agent_conn *c, unsigned type, const char *body, size_t len, int fd_pass, int timeout_ms,
		  char **reply, size_t *reply_len, int *fd_got)
{
	size_t n;
	unsigned rtype;
	*reply = NULL;
	int r = agent_send(c->fd, type, body, len, fd_pass);
	/* A peer that refuses us writes why and closes: read that rather than the broken pipe. */
	if (r && r != -EPIPE && r != -ECONNRESET)
		return r;
	r = wait_readable(c->fd, r ? 1000 : timeout_ms);
	if (r == -ETIMEDOUT)
		return ERR_AGENT_SILENT;
	if (r)
		return r;
	r = agent_recv(c->fd, &rtype, reply, &n, (size_t)1 << 40, fd_got);
	if (r)
		return r;
	if (reply_len)
		*reply_len = n;
	return rtype == AGENT_OK ? 0 : ERR_AGENT;
}

static int try_connect(struct agent_conn *c, const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	strcpy(sun.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	c->fd = fd;
	snprintf(c->path, sizeof(c->path), "%s", path);
	return 0;
}

int agent_connect(struct agent_conn *c, pid_t pid, int timeout_ms)
{
	uid_t uid = 0;
	pid_t nspid = pid;
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->pid = pid;
	int r = proc_ids(pid, &uid, &nspid);
	if (r)
		return r;
	char root[32], xdg[120], dirs[2][160], path[256];
	snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	int ndirs = 0;
	if (proc_runtime_dir(pid, xdg, sizeof(xdg)) == 0 && agent_dir(dirs[ndirs], sizeof(dirs[0]), xdg, uid) > 0)
		ndirs++;
	if (agent_dir(dirs[ndirs], sizeof(dirs[0]), NULL, uid) > 0)
		ndirs++;
	/* Without the right to look into the process's root (not its uid, no CAP_SYS_PTRACE), try our own view. */
	if (access(root, X_OK) < 0)
		root[0] = 0;
	r = ERR_NO_AGENT;
	for (int i = 0; i < ndirs && r; i++) {
		int dfd = dir_trusted(root, dirs[i], uid);
		if (dfd < 0) {
			if (dfd == -EACCES)
				r = -EACCES;
			continue;
		}
		/* the socket through the directory's fd (its path resolved as the process resolves it) */
		snprintf(path, sizeof(path), "/proc/self/fd/%d/%d.sock", dfd, (int)nspid);
		int e = try_connect(c, path);
		close(dfd);
		if (e == -EACCES || e == -EPERM)
			r = -EACCES;
		else if (!e) {
			r = 0;
			snprintf(c->path, sizeof(c->path), "%s%s/%d.sock", root, dirs[i], (int)nspid);
		}
	}
	if (r)
		return r;
	char hello[32];
	int n = snprintf(hello, sizeof(hello), "rbscope %d", AGENT_PROTO_VERSION);
	char *reply;
	size_t len;
	r = agent_request(c, AGENT_HELLO, hello, (size_t)n, -1, timeout_ms, &reply, &len, NULL);
	if (r == ERR_AGENT && reply && strstr(reply, "permission denied"))
		r = -EACCES;
	if (r == -ECONNRESET && !reply)
		r = ERR_NO_AGENT; /* a socket nobody serves (a process that died without cleaning up) */
	if (reply)
		snprintf(c->hello, sizeof(c->hello), "%s", reply); /* the greeting, or why we were refused */
	free(reply);
	if (r) {
		close(c->fd);
		c->fd = -1;
	}
	return r;
}

void agent_close(struct agent_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

int agent_stop(struct agent_conn *c, int timeout_ms, int (*drain)(void *ctx), void *ctx, int *gone)
{
	int r = agent_send(c->fd, AGENT_STOP, "", 0, -1);
	if (r) {
		*gone = r == -EPIPE || r == -ECONNRESET;
		return 0;
	}
	for (int waited = 0; waited < timeout_ms; waited += 2) {
		if (drain && drain(ctx) < 0)
			return -1;
		struct pollfd pf = { .fd = c->fd, .events = POLLIN };
		if (poll(&pf, 1, 2) > 0) {
			unsigned type;
			char *bye = NULL;
			size_t n;
			if (agent_recv(c->fd, &type, &bye, &n, 1 << 20, NULL) == -ECONNRESET)
				*gone = 1;
			free(bye);
			break;
		}
	}
	return 0;
}
