/* proto.c: framing of the CLI<->agent protocol over a Unix socket, with descriptor passing. */
#include "proto.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

int agent_send(int fd, unsigned type, const void *body, size_t len, int fd_pass)
{
	struct agent_hdr h = { .len = (uint32_t)len, .type = (uint16_t)type };
	if (len > UINT32_MAX)
		return -EMSGSIZE;
	if (fd_pass < 0) {
		int r = write_all(fd, &h, sizeof(h));
		return r ? r : write_all(fd, body, len);
	}
	/* The descriptor goes with the header's bytes. */
	struct iovec iov = { .iov_base = &h, .iov_len = sizeof(h) };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd_pass, sizeof(int));
	ssize_t w;
	do
		w = sendmsg(fd, &m, MSG_NOSIGNAL);
	while (w < 0 && errno == EINTR);
	if (w < 0)
		return -errno;
	if ((size_t)w < sizeof(h)) {
		int r = write_all(fd, (char *)&h + w, sizeof(h) - (size_t)w);
		if (r)
			return r;
	}
	return write_all(fd, body, len);
}

/* Read exactly n bytes (into p, or thrown away when p is NULL); the first read may pick up a descriptor. */
static int read_all(int fd, void *p, size_t n, int *fd_got)
{
	char junk[4096];
	size_t done = 0;
	while (done < n) {
		size_t want = n - done;
		char *dst = p ? (char *)p + done : junk;
		if (!p && want > sizeof(junk))
			want = sizeof(junk);
		union {
			char buf[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} u;
		struct iovec iov = { .iov_base = dst, .iov_len = want };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
		if (fd_got) {
			m.msg_control = u.buf;
			m.msg_controllen = sizeof(u.buf);
		}
		ssize_t r = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return -ECONNRESET;
		if (fd_got) {
			for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
				if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
					continue;
				int got;
				memcpy(&got, CMSG_DATA(c), sizeof(int));
				if (*fd_got >= 0)
					close(got); /* one per frame; more is a protocol error we ignore */
				else
					*fd_got = got;
			}
		}
		done += (size_t)r;
	}
	return 0;
}

int agent_recv(int fd, unsigned *type, char **body, size_t *len, size_t max, int *fd_got)
{
	struct agent_hdr h;
	*body = NULL;
	*len = 0;
	if (fd_got)
		*fd_got = -1;
	int r = read_all(fd, &h, sizeof(h), fd_got);
	if (r)
		return r;
	*type = h.type;
	if (h.len > max) {
		r = read_all(fd, NULL, h.len, NULL);
		return r ? r : -EMSGSIZE;
	}
	char *b = malloc((size_t)h.len + 1);
	if (!b)
		return -ENOMEM;
	r = read_all(fd, b, h.len, NULL);
	if (r) {
		free(b);
		return r;
	}
	b[h.len] = 0;
	*body = b;
	*len = h.len;
	return 0;
}

int agent_dir(char *buf, size_t cap, const char *runtime_dir, uid_t uid)
{
	int n = runtime_dir && *runtime_dir ? snprintf(buf, cap, "%s/rbscope", runtime_dir)
					     : snprintf(buf, cap, "/tmp/rbscope-%u", (unsigned)uid);
	return n < 0 || (size_t)n >= cap ? -1 : n;
}

int agent_socket_path(char *buf, size_t cap, const char *dir, pid_t pid)
{
	struct sockaddr_un sun;
	if (cap > sizeof(sun.sun_path))
		cap = sizeof(sun.sun_path);
	int n = snprintf(buf, cap, "%s/%d.sock", dir, (int)pid);
	return n < 0 || (size_t)n >= cap ? -1 : n;
}

uint64_t agent_decimal(const char *s, const char **end)
{
	uint64_t v = 0;
	for (; *s >= '0' && *s <= '9'; s++) {
		unsigned d = (unsigned)(*s - '0');
		v = v > (UINT64_MAX - d) / 10 ? UINT64_MAX : v * 10 + d;
	}
	if (end)
		*end = s;
	return v;
}
