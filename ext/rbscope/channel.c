/* channel.c: the agent's control socket: a private directory, a listening Unix socket, and the native thread that accepts on it. */
#include "agent.h"
#include "proto.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_PENDING 16

static struct {
	int listen_fd;
	int stop_fd;   /* eventfd: wakes the native thread to exit */
	int notify_fd; /* eventfd: wakes the serving thread: a connection is queued */
	pthread_t thread;
	int running;
	pid_t pid;
	int wake_sig;
	char dir[108], path[108];
	char error[256];
	pthread_mutex_t lock;
	int pending[MAX_PENDING];
	int npending;
	int serving;
} ch = { .listen_fd = -1, .stop_fd = -1, .notify_fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER };

static int fail(const char *what, int err)
{
	snprintf(ch.error, sizeof(ch.error), "%s: %s", what, strerror(err));
	return -err;
}

/* Make dir or accept it only if it is a real directory of ours that nobody else can enter. */
static int private_dir(const char *dir)
{
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return fail(dir, errno);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return fail(dir, errno == ELOOP || errno == ENOTDIR ? EPERM : errno);
	struct stat st;
	int r = fstat(fd, &st);
	close(fd);
	if (r < 0)
		return fail(dir, errno);
	if (st.st_uid != geteuid() || (st.st_mode & 077)) {
		snprintf(ch.error, sizeof(ch.error), "%s: not a private directory of uid %u (owner %u, mode %03o)",
			 dir, (unsigned)geteuid(), (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777));
		return -EPERM;
	}
	return 0;
}

/* Sockets of processes that no longer exist. */
static void remove_stale(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		const char *end;
		uint64_t pid = agent_decimal(e->d_name, &end);
		if (!pid || pid > INT32_MAX || strcmp(end, ".sock"))
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		char p[160];
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		unlink(p);
	}
	closedir(d);
}

static int peer_allowed(int fd, uid_t *uid)
{
	struct ucred cr;
	socklen_t n = sizeof(cr);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &n) < 0)
		return 0;
	*uid = cr.uid;
	return cr.uid == geteuid() || cr.uid == 0;
}

/* Our trap is still the signal's handler (nobody reset it to the default, which would kill the process). */
static int wake_sig_handled(void)
{
	struct sigaction sa;
	if (sigaction(ch.wake_sig, NULL, &sa) < 0)
		return 0;
	return sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN;
}

static void queue_connection(int fd)
{
	int poke = 0, wake = 0;
	pthread_mutex_lock(&ch.lock);
	if (ch.npending == MAX_PENDING) {
		pthread_mutex_unlock(&ch.lock);
		agent_send(fd, AGENT_ERROR, "busy: too many connections waiting", 34, -1);
		close(fd);
		return;
	}
	ch.pending[ch.npending++] = fd;
	if (ch.serving)
		poke = 1;
	else
		wake = 1;
	pthread_mutex_unlock(&ch.lock);
	if (poke) {
		event_post(ch.notify_fd);
	}
	if (wake && wake_sig_handled())
		kill(ch.pid, ch.wake_sig);
}

static void *listen_main(void *arg)
{
	(void)arg;
	struct pollfd p[2] = { { .fd = ch.listen_fd, .events = POLLIN }, { .fd = ch.stop_fd, .events = POLLIN } };
	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		int fd = accept4(ch.listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		uid_t uid = 0;
		if (!peer_allowed(fd, &uid)) {
			char msg[128];
			int n = snprintf(msg, sizeof(msg), "permission denied: uid %u may not attach to a process of uid %u",
					 (unsigned)uid, (unsigned)geteuid());
			agent_send(fd, AGENT_ERROR, msg, (size_t)n, -1);
			close(fd);
			continue;
		}
		/* A client that stops mid-frame or stops reading must not hold the serving thread for long. */
		struct timeval tv = { .tv_sec = 5 };
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		queue_connection(fd);
	}
	return NULL;
}

int event_new(void)
{
	return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

void event_post(int fd)
{
	uint64_t one = 1;
	if (write(fd, &one, sizeof(one)) < 0) {
		/* the count is at its maximum: the reader has plenty to wake it */
	}
}

void event_clear(int fd)
{
	uint64_t n;
	if (read(fd, &n, sizeof(n)) < 0) {
		/* nothing was posted */
	}
}

int channel_start(int wake_sig)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	struct stat st;
	/* Use the runtime directory only when it is a real one of ours; else /tmp. */
	if (xdg && (stat(xdg, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()))
		xdg = NULL;
	ch.error[0] = 0;
	ch.pid = getpid();
	ch.wake_sig = wake_sig;
	if (agent_dir(ch.dir, sizeof(ch.dir), xdg, geteuid()) < 0 ||
	    agent_socket_path(ch.path, sizeof(ch.path), ch.dir, ch.pid) < 0)
		return fail("socket path", ENAMETOOLONG);
	int r = private_dir(ch.dir);
	if (r)
		return r;
	remove_stale(ch.dir);
	/* Whatever is at our path (a socket of a dead process with our pid, a planted link) goes; unlink never follows. */
	if (unlink(ch.path) < 0 && errno != ENOENT)
		return fail(ch.path, errno);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return fail("socket", errno);
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	memcpy(sun.sun_path, ch.path, strlen(ch.path) + 1);
	mode_t old = umask(077);
	r = bind(fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (r < 0 || listen(fd, 16) < 0) {
		r = fail(ch.path, errno);
		close(fd);
		return r;
	}
	ch.listen_fd = fd;
	if ((ch.stop_fd = event_new()) < 0 || (ch.notify_fd = event_new()) < 0) {
		r = fail("eventfd", errno);
		channel_stop();
		return r;
	}
	/* The thread takes no signals: they belong to Ruby's threads. */
	sigset_t all, old_mask;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old_mask);
	r = pthread_create(&ch.thread, NULL, listen_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
	if (r) {
		channel_stop();
		return fail("pthread_create", r);
	}
	ch.running = 1;
	return 0;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void channel_stop(void)
{
	if (ch.running && ch.pid == getpid()) {
		uint64_t one = 1;
		if (write(ch.stop_fd, &one, sizeof(one)) == sizeof(one))
			pthread_join(ch.thread, NULL);
		ch.running = 0;
	}
	if (ch.listen_fd >= 0 && ch.pid == getpid())
		unlink(ch.path);
	close_fd(&ch.listen_fd);
	close_fd(&ch.stop_fd);
	close_fd(&ch.notify_fd);
}

void channel_forked(void)
{
	/* The listening thread did not come along; the parent's socket and queue are the parent's. */
	ch.running = 0;
	close_fd(&ch.listen_fd);
	close_fd(&ch.stop_fd);
	close_fd(&ch.notify_fd);
	for (int i = 0; i < ch.npending; i++)
		close(ch.pending[i]);
	ch.npending = 0;
	ch.serving = 0;
	pthread_mutex_init(&ch.lock, NULL);
}

const char *channel_path(void)
{
	return ch.listen_fd >= 0 ? ch.path : NULL;
}

const char *channel_error(void)
{
	return ch.error;
}

int channel_take(void)
{
	int fd = -1;
	event_clear(ch.notify_fd);
	pthread_mutex_lock(&ch.lock);
	if (ch.npending) {
		fd = ch.pending[0];
		memmove(ch.pending, ch.pending + 1, sizeof(int) * (size_t)--ch.npending);
	}
	pthread_mutex_unlock(&ch.lock);
	return fd;
}

int channel_serving_done(void)
{
	int r = 0;
	pthread_mutex_lock(&ch.lock);
	if (ch.npending)
		r = -1;
	else
		ch.serving = 0;
	pthread_mutex_unlock(&ch.lock);
	return r;
}

int channel_claim_serving(void)
{
	int r = 0;
	pthread_mutex_lock(&ch.lock);
	if (!ch.serving && ch.npending) {
		ch.serving = 1;
		r = 1;
	}
	pthread_mutex_unlock(&ch.lock);
	return r;
}

int channel_notify_fd(void)
{
	return ch.notify_fd;
}

int channel_free_signal(void)
{
	for (int s = SIGRTMAX - 1; s > SIGRTMIN + 2; s--) {
		struct sigaction sa;
		if (sigaction(s, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL && !(sa.sa_flags & SA_SIGINFO))
			return s;
	}
	return -1;
}
