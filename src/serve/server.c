/* server.c: `rbscope serve`'s loop: sampling ticks, HTTP connections and pushes, on one thread, never blocking. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "../lib/buf.h"
#include "../lib/clock.h"
#include "../lib/err.h"
#include "../lib/http.h"
#include "../output/output.h"
#include "../ruby/census.h"
#include "allocs.h"
#include "push.h"
#include "serve.h"

#define MAX_CONNS 64
#define HEAD_TIMEOUT_NS 10000000000ULL  /* a request head must arrive within 10 s (slowloris) */
#define WRITE_TIMEOUT_NS 30000000000ULL /* and its answer be taken within 30 s */
#define OUT_MAX (256u << 20)            /* the largest answer (a profile) */
#define DEFAULT_SECONDS 30              /* Go's default for /debug/pprof/profile */

enum conn_phase { CONN_FREE, CONN_READ, CONN_WAIT, CONN_WRITE, CONN_ALLOCS };

struct conn {
	int fd, phase; /* enum conn_phase */
	char in[HTTP_MAX_HEAD + 1];
	size_t in_len;
	struct http_request req;
	struct buf out;
	size_t out_off;
	uint64_t deadline;
	/* CONN_WAIT: a profile of [from, to) being sampled */
	uint64_t from, to;
	pid_t pid;
	int cpu;
	/* CONN_ALLOCS: the process's agent sampling its allocations until to */
	struct serve_allocs *allocs;
};

struct server {
	const struct serve_options *o;
	int lfd;
	struct conn conns[MAX_CONNS];
	struct sampling sm;
	struct serve_counters c;
	int64_t wall_offset; /* CLOCK_REALTIME - the sampling loop's time, ns */
	struct pusher push;
	uint64_t next_push, last_push;
	struct serve_census *census; /* --census: one per process, the last taken */
	int ncensus, census_cap;
	uint64_t next_census;
};

int serve_listen(const struct serve_options *o)
{
	int fd = socket(o->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)&o->addr, o->addr_len) || listen(fd, 64)) {
		int e = -errno;
		close(fd);
		return e;
	}
	return fd;
}

static void conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	serve_allocs_free(c->allocs);
	buf_free(&c->out);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

static void count_status(struct server *s, int status)
{
	int k = status < 300 ? 0 : status == 400 ? 1 : status == 401 ? 2 : status == 404 ? 3 : status == 503 ? 4 : 5;
	s->c.requests[k]++;
}

/* Answer with status and body; extra header lines as http_response_head() takes them. */
static void respond(struct server *s, struct conn *c, int status, const char *type, const void *body, size_t len,
		    const char *extra)
{
	count_status(s, status);
	buf_reset(&c->out);
	int err = http_response_head(&c->out, status, type, len, extra);
	if (!err && !c->req.head_only)
		err = buf_add(&c->out, body, len);
	if (err) { /* larger than any answer should be */
		buf_reset(&c->out);
		http_response_head(&c->out, 500, "text/plain", 0, NULL);
	}
	c->phase = CONN_WRITE;
	c->out_off = 0;
	c->deadline = clock_now_ns() + WRITE_TIMEOUT_NS;
}

/* A one-line text answer; pprof paths add X-Go-Pprof so `go tool pprof` prints it. */
static void respond_text(struct server *s, struct conn *c, int status, int pprof, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void respond_text(struct server *s, struct conn *c, int status, int pprof, const char *fmt, ...)
{
	char text[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(text, sizeof(text) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n > sizeof(text) - 2)
		n = (int)sizeof(text) - 2;
	text[n++] = '\n';
	text[n] = 0;
	const char *extra = status == 401 ? "WWW-Authenticate: Bearer\r\n" : pprof ? "X-Go-Pprof: 1\r\n" : NULL;
	respond(s, c, status, "text/plain; charset=utf-8", text, (size_t)n, extra);
}

/* A profile made (err 0) as the answer, or why it could not be; body freed. */
static void respond_profile(struct server *s, struct conn *c, int err, struct buf *body)
{
	if (err)
		respond_text(s, c, 500, 1, "cannot make the profile: %s", err_message(err));
	else
		respond(s, c, 200, "application/octet-stream", body->data, body->len,
			"Content-Disposition: attachment; filename=\"profile\"\r\n");
	buf_free(body);
}

static int pprof_labels_of(void *ctx, int32_t tid, struct pprof_labels *out)
{
	const struct server *s = ctx;
	const struct proc_entry *e = procs_owner(&s->sm.procs, tid);
	if (!e)
		return -1;
	out->pid = e->pid;
	out->command = e->command;
	out->container = e->container;
	out->service = s->o->service ? s->o->service : e->service;
	return 0;
}

struct window_filter {
	const struct procs *ps;
	pid_t pid;
	unsigned mask;
};

static int keep_sample(void *ctx, int32_t tid, int state)
{
	const struct window_filter *w = ctx;
	if (!(w->mask & 1u << state))
		return 0;
	if (!w->pid)
		return 1;
	const struct proc_entry *e = procs_owner(w->ps, tid);
	return e && e->pid == w->pid;
}

/* The pprof of [from, to) for pid (0: every process), on-CPU samples only with cpu, into *out. */
static int serve_profile(struct server *s, uint64_t from, uint64_t to, pid_t pid, int cpu, struct buf *out)
{
	struct profile p;
	int err = profile_init(&p);
	if (err)
		return err;
	p.keep_samples = 1;
	p.rate_hz = (uint32_t)s->o->rate;
	p.start_ns = (uint64_t)((int64_t)from + s->wall_offset);
	p.duration_ns = to - from;
	unsigned mask = cpu ? 1u << PROFILE_STATE_RUNNING | 1u << PROFILE_STATE_GC : ~0u;
	struct window_filter w = { &s->sm.procs, pid, mask };
	err = window_copy(&s->sm.window, &p, from, to, keep_sample, &w);
	char comment[128];
	snprintf(comment, sizeof(comment), "rbscope serve: %s clock, %s", cpu ? "CPU" : "wall",
		 pid ? "one process" : "every process it samples");
	struct pprof_options po = { .cpu = cpu, .labels = pprof_labels_of, .ctx = s, .comment = comment };
	char *mem = NULL;
	size_t len = 0;
	FILE *f = err ? NULL : open_memstream(&mem, &len);
	if (!err && !f)
		err = -errno;
	if (!err) {
		err = output_pprof_with(&p, f, &po);
		if (fclose(f) && !err)
			err = -EIO;
		if (!err)
			err = buf_add(out, mem, len);
	}
	free(mem);
	profile_free(&p);
	return err;
}

/* The value of ?name= as a number in [lo, hi]: 1, 0 when absent, -1 when not a number in range. */
static int query_number(const char *query, const char *name, long lo, long hi, long *v)
{
	char text[32], *end;
	int r = http_query(query, name, text, sizeof(text));
	if (r <= 0)
		return r;
	errno = 0;
	double d = strtod(text, &end);
	if (!*text || *end || errno || d < (double)lo || d > (double)hi)
		return -1;
	*v = (long)d;
	return 1;
}

static int authorized(const struct server *s, const struct conn *c)
{
	if (!s->o->token)
		return 1;
	char v[512];
	if (http_header(&c->req, "Authorization", v, sizeof(v)) != 1 || strncmp(v, "Bearer ", 7))
		return 0;
	const char *t = v + 7, *want = s->o->token;
	size_t n = strlen(want), m = strlen(t);
	unsigned diff = (unsigned)(n ^ m);
	for (size_t i = 0; i < n; i++) /* the same time whatever matches */
		diff |= (unsigned)(want[i] ^ (i < m ? t[i] : 0));
	return !diff;
}

static void index_page(struct server *s, struct conn *c)
{
	static const char text[] =
		"rbscope serve: profiles of the Ruby processes it samples, from outside them\n\n"
		"/debug/pprof/profile?seconds=N[&pid=P]  on-CPU profile (pprof, gzip), like Go's CPU profile\n"
		"/debug/pprof/wall?seconds=N[&pid=P]     every thread's samples, whatever it was doing\n"
		"/debug/pprof/allocs?seconds=N&pid=P     allocations sampled by the process's rbscope agent\n"
		"/debug/pprof/heap?seconds=N&pid=P       what is alive of the objects allocated in those seconds\n"
		"/metrics                                Prometheus: threads by state, GC, rbscope's own counters\n"
		"/targets                                the processes sampled (text: pid, state, command)\n";
	respond(s, c, 200, "text/plain; charset=utf-8", text, sizeof(text) - 1, NULL);
}

static void targets_page(struct server *s, struct conn *c)
{
	struct buf b = BUF_INIT(OUT_MAX);
	static const char *const names[] = { "live", "gone", "failed" };
	for (int i = 0; i < s->sm.procs.n; i++) {
		const struct proc_entry *e = s->sm.procs.v[i];
		buf_addf(&b, "%d\t%s\t%s\t%s\t%s\n", (int)e->pid, names[e->state],
			 e->state == PROC_FAILED ? err_message(e->failure) : e->t.version,
			 e->container, e->command);
	}
	respond(s, c, 200, "text/plain; charset=utf-8", buf_str(&b), b.len, NULL);
	buf_free(&b);
}

static void metrics_page(struct server *s, struct conn *c)
{
	struct buf b = BUF_INIT(OUT_MAX);
	struct rusage ru;
	if (!getrusage(RUSAGE_SELF, &ru))
		s->c.cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
			     ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
	FILE *f = fopen("/proc/self/statm", "re");
	unsigned long long size, rss;
	if (f && fscanf(f, "%llu %llu", &size, &rss) == 2)
		s->c.rss_bytes = rss * (unsigned long long)sysconf(_SC_PAGESIZE);
	if (f)
		fclose(f);
	serve_metrics(&b, &s->sm, &s->c);
	s->sm.lag_max_ns = 0;
	s->c.build_max_s = 0;
	respond(s, c, 200, "text/plain; version=0.0.4; charset=utf-8", buf_str(&b), b.len, NULL);
	buf_free(&b);
}

/* A profile request: checked now, answered when its seconds have passed (finish_waits). */
static void profile_request(struct server *s, struct conn *c, int cpu)
{
	long seconds = DEFAULT_SECONDS, pid = 0;
	if (query_number(c->req.query, "seconds", 1, SERVE_MAX_SECONDS, &seconds) < 0)
		return respond_text(s, c, 400, 1, "seconds must be a number from 1 to %d", SERVE_MAX_SECONDS);
	if (query_number(c->req.query, "pid", 1, 0x7fffffff, &pid) < 0)
		return respond_text(s, c, 400, 1, "pid must be a process id");
	if (pid) {
		const struct proc_entry *e = procs_find(&s->sm.procs, (pid_t)pid);
		if (!e)
			return respond_text(s, c, 503, 1, "process %ld is not one rbscope serve samples", pid);
		if (e->state == PROC_GONE)
			return respond_text(s, c, 503, 1, "process %ld has exited", pid);
		if (e->state == PROC_FAILED)
			return respond_text(s, c, 503, 1, "process %ld cannot be read: %s", pid, err_message(e->failure));
	}
	c->phase = CONN_WAIT;
	c->from = sampling_now(&s->sm);
	c->to = c->from + (uint64_t)seconds * 1000000000ULL;
	c->pid = (pid_t)pid;
	c->cpu = cpu;
	c->deadline = UINT64_MAX;
}

/* An allocation request: the process's agent samples for seconds (finish_allocs answers). */
static void allocs_request(struct server *s, struct conn *c, int live)
{
	long seconds = DEFAULT_SECONDS, pid = 0;
	if (query_number(c->req.query, "seconds", 1, SERVE_MAX_SECONDS, &seconds) < 0)
		return respond_text(s, c, 400, 1, "seconds must be a number from 1 to %d", SERVE_MAX_SECONDS);
	if (query_number(c->req.query, "pid", 1, 0x7fffffff, &pid) <= 0)
		return respond_text(s, c, 400, 1, "pid=P is needed: the process whose agent samples its allocations");
	const struct proc_entry *e = procs_find(&s->sm.procs, (pid_t)pid);
	if (!e || e->state != PROC_LIVE)
		return respond_text(s, c, 503, 1, "process %ld is not one rbscope serve samples now", pid);
	char msg[400];
	int status = serve_allocs_start(&c->allocs, (pid_t)pid, live, msg, sizeof(msg));
	if (status)
		return respond_text(s, c, status, 1, "%s", msg);
	c->phase = CONN_ALLOCS;
	c->to = clock_now_ns() + (uint64_t)seconds * 1000000000ULL;
	c->pid = (pid_t)pid;
	c->deadline = UINT64_MAX;
}

/* Read the allocation requests' rings; answer those whose time is up (or whose process went away). */
static void finish_allocs(struct server *s, uint64_t now)
{
	for (int i = 0; i < MAX_CONNS; i++) {
		struct conn *c = &s->conns[i];
		if (c->phase != CONN_ALLOCS)
			continue;
		if (serve_allocs_drain(c->allocs) < 0) {
			respond_text(s, c, 503, 1, "process %d went away (or its agent's ring broke)", (int)c->pid);
			continue;
		}
		if (c->to > now)
			continue;
		struct buf body = BUF_INIT(OUT_MAX);
		int err = serve_allocs_finish(c->allocs, &body);
		respond_profile(s, c, err, &body);
		serve_allocs_free(c->allocs);
		c->allocs = NULL;
	}
}

static void route(struct server *s, struct conn *c)
{
	const char *path = c->req.path;
	if (!authorized(s, c))
		return respond_text(s, c, 401, !strncmp(path, "/debug/pprof/", 13), "a bearer token is needed");
	if (!strcmp(path, "/"))
		return index_page(s, c);
	if (!strcmp(path, "/metrics"))
		return metrics_page(s, c);
	if (!strcmp(path, "/targets"))
		return targets_page(s, c);
	if (!strcmp(path, "/debug/pprof/profile"))
		return profile_request(s, c, 1);
	if (!strcmp(path, "/debug/pprof/wall"))
		return profile_request(s, c, 0);
	if (!strcmp(path, "/debug/pprof/allocs"))
		return allocs_request(s, c, 0);
	if (!strcmp(path, "/debug/pprof/heap"))
		return allocs_request(s, c, 1);
	/* Go's other profiles (block, goroutine, mutex, threadcreate...) have no Ruby meaning here. */
	respond_text(s, c, 404, !strncmp(path, "/debug/pprof/", 13), "no such path: %s (see /)", path);
}

static void conn_read(struct server *s, struct conn *c)
{
	ssize_t n = recv(c->fd, c->in + c->in_len, HTTP_MAX_HEAD - c->in_len, 0);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		conn_close(c);
		return;
	}
	if (n < 0)
		return;
	c->in_len += (size_t)n;
	int r = http_parse_request(c->in, c->in_len, &c->req); /* a full buffer is never 0: 431 */
	if (r < 0)
		respond_text(s, c, -r, 0, "%s", http_reason(-r));
	else if (r > 0)
		route(s, c);
}

static void conn_write(struct conn *c)
{
	while (c->out_off < c->out.len) {
		ssize_t n = send(c->fd, c->out.data + c->out_off, c->out.len - c->out_off, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			break;
		}
		c->out_off += (size_t)n;
	}
	shutdown(c->fd, SHUT_WR);
	conn_close(c);
}

static void accept_all(struct server *s)
{
	for (;;) {
		int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		struct conn *c = NULL;
		for (int i = 0; i < MAX_CONNS && !c; i++)
			if (s->conns[i].phase == CONN_FREE)
				c = &s->conns[i];
		if (!c) { /* full: the newest is turned away at once */
			static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
			if (send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL) < 0) {
				/* nothing more to do for it */
			}
			s->c.requests[4]++;
			close(fd);
			continue;
		}
		c->fd = fd;
		c->phase = CONN_READ;
		c->in_len = 0;
		buf_init(&c->out, OUT_MAX);
		c->deadline = clock_now_ns() + HEAD_TIMEOUT_NS;
	}
}

/* Answer the profile requests whose time is up; the earliest start still waited on, or now. */
static uint64_t finish_waits(struct server *s, uint64_t now)
{
	uint64_t keep_from = now;
	for (int i = 0; i < MAX_CONNS; i++) {
		struct conn *c = &s->conns[i];
		if (c->phase != CONN_WAIT)
			continue;
		if (c->to > now) {
			if (c->from < keep_from)
				keep_from = c->from;
			continue;
		}
		struct buf body = BUF_INIT(OUT_MAX);
		uint64_t t0 = clock_now_ns();
		int err = serve_profile(s, c->from, c->to, c->pid, c->cpu, &body);
		s->c.build_s = (double)(clock_now_ns() - t0) / 1e9;
		if (s->c.build_s > s->c.build_max_s)
			s->c.build_max_s = s->c.build_s;
		respond_profile(s, c, err, &body);
	}
	if (s->o->push_url && s->last_push < keep_from)
		keep_from = s->last_push;
	return keep_from;
}

/*
 * A connection waiting for its profile became readable: its client closed it
 * (then it is dropped), or sent more (read and thrown away, or poll would
 * report it again at once, all the while the profile is being sampled).
 */
static void check_waiting(struct conn *c)
{
	char scrap[4096];
	ssize_t n = recv(c->fd, scrap, sizeof(scrap), MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
		conn_close(c);
}

static void expire(struct server *s, uint64_t now)
{
	for (int i = 0; i < MAX_CONNS; i++) {
		struct conn *c = &s->conns[i];
		if (c->phase == CONN_READ && now > c->deadline) {
			respond_text(s, c, 408, 0, "the request took too long to arrive");
			conn_write(c); /* one try: a client this slow gets what fits, then the door */
		} else if (c->phase == CONN_WRITE && now > c->deadline) {
			conn_close(c);
		}
	}
}

/* Wait for sockets until deadline (monotonic ns), handling what is ready. */
static void poll_until(struct server *s, uint64_t deadline)
{
	struct pollfd fds[MAX_CONNS + 1];
	int idx[MAX_CONNS + 1], n = 0;
	fds[n] = (struct pollfd){ s->lfd, POLLIN, 0 };
	idx[n++] = -1;
	for (int i = 0; i < MAX_CONNS; i++) {
		struct conn *c = &s->conns[i];
		if (c->phase == CONN_FREE)
			continue;
		fds[n] = (struct pollfd){ c->fd, c->phase == CONN_WRITE ? POLLOUT : POLLIN, 0 };
		idx[n++] = i;
	}
	uint64_t now = clock_now_ns();
	int timeout = deadline > now ? (int)((deadline - now + 999999) / 1000000) : 0;
	if (poll(fds, (nfds_t)n, timeout) <= 0)
		return;
	for (int k = 0; k < n; k++) {
		if (!fds[k].revents)
			continue;
		if (idx[k] < 0) {
			accept_all(s);
			continue;
		}
		struct conn *c = &s->conns[idx[k]];
		if (c->phase == CONN_READ)
			conn_read(s, c);
		else if (c->phase == CONN_WAIT || c->phase == CONN_ALLOCS)
			check_waiting(c);
		if (c->phase == CONN_WRITE)
			conn_write(c);
	}
}

static void push_due(struct server *s, uint64_t now)
{
	if (!s->o->push_url || now < s->next_push)
		return;
	uint64_t from = s->last_push, to = now;
	for (int i = 0; i < s->sm.procs.n; i++) {
		const struct proc_entry *e = s->sm.procs.v[i];
		if (e->state == PROC_FAILED || (e->state == PROC_GONE && e->gone_ns <= from))
			continue; /* a process gone before this period has nothing to push (it is kept 10 min to be listed) */
		struct buf body = BUF_INIT(OUT_MAX);
		if (!serve_profile(s, from, to, e->pid, 1, &body) && body.len)
			pusher_add(&s->push, e, s->o->service, (uint64_t)((int64_t)from + s->wall_offset) / 1000000000ULL,
				   (uint64_t)((int64_t)to + s->wall_offset) / 1000000000ULL, &body);
		buf_free(&body);
	}
	s->last_push = to;
	s->next_push = now + (uint64_t)(s->o->push_seconds * 1e9);
	pusher_counts(&s->push, &s->c.pushes, &s->c.push_failures);
}

/* --census: each live process's heap counted from outside, when due (the sampling waits meanwhile). */
static void census_due(struct server *s, uint64_t now)
{
	if (s->o->census_seconds <= 0 || now < s->next_census)
		return;
	s->next_census = now + (uint64_t)(s->o->census_seconds * 1e9);
	for (int i = 0; i < s->sm.procs.n; i++) {
		struct proc_entry *e = s->sm.procs.v[i];
		if (e->state != PROC_LIVE)
			continue;
		struct serve_census *z = NULL;
		for (int j = 0; j < s->ncensus && !z; j++)
			if (s->census[j].pid == e->pid)
				z = &s->census[j];
		if (!z) {
			if (s->ncensus == s->census_cap) {
				int cap = s->census_cap ? s->census_cap * 2 : 8;
				struct serve_census *v = realloc(s->census, (size_t)cap * sizeof(*v));
				if (!v)
					return;
				s->census = v;
				s->census_cap = cap;
			}
			z = &s->census[s->ncensus++];
			memset(z, 0, sizeof(*z));
			z->pid = e->pid;
		}
		struct census c;
		uint64_t t0 = clock_now_ns();
		if (census_take(&e->t, &c)) {
			census_free(&c);
			continue; /* (a Ruby whose layout has no heap pages, or gone: its last census stands, if any) */
		}
		struct timespec wall;
		clock_gettime(CLOCK_REALTIME, &wall);
		z->at_ns = (uint64_t)wall.tv_sec * 1000000000ULL + (uint64_t)wall.tv_nsec;
		z->seconds = (double)(clock_now_ns() - t0) / 1e9;
		z->slots = c.slots;
		z->free = c.free;
		z->objects = c.objects;
		z->bytes = c.bytes;
		for (int t = 0; t < SERVE_CENSUS_TYPES && t < CENSUS_TYPES; t++) {
			z->count[t] = c.types[t].count;
			z->type_bytes[t] = c.types[t].bytes;
			z->type_name[t] = census_type_name(e->t.L, t);
		}
		census_free(&c);
	}
	s->c.census = s->census;
	s->c.ncensus = s->ncensus;
}

/* After each tick: requests whose time is up answered, pushes due made, samples no longer wanted dropped. */
static int serve_ticked(void *ctx, struct sampling *sm, uint64_t now)
{
	struct server *s = ctx;
	if (sm->ticks == 1) { /* the loop's time starts now */
		struct timespec wall;
		clock_gettime(CLOCK_REALTIME, &wall);
		s->wall_offset = (int64_t)((uint64_t)wall.tv_sec * 1000000000ULL + (uint64_t)wall.tv_nsec) -
				 (int64_t)sampling_now(sm);
	}
	expire(s, clock_now_ns());
	finish_allocs(s, clock_now_ns());
	uint64_t keep_from = finish_waits(s, now);
	push_due(s, now);
	census_due(s, now);
	sampling_keep(sm, keep_from, now); /* (out of memory: kept until the next tick) */
	return 0;
}

static int serve_wait(void *ctx, struct sampling *sm, uint64_t deadline)
{
	(void)sm;
	poll_until(ctx, deadline);
	return 0;
}

int serve_run(const struct serve_options *o, int listen_fd)
{
	struct server *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->o = o;
	s->lfd = listen_fd;
	for (int i = 0; i < MAX_CONNS; i++)
		s->conns[i].fd = -1;
	/* Every process as it is (no capture on its CPU), parked ones every other tick, their samples kept a while. */
	const struct sampling_options so = {
		.rate = o->rate,
		.duration = o->duration,
		.stop = o->stop,
		.no_capture = 1,
		.procs = {
			.scope = o->all ? PROCS_ALL : PROCS_GIVEN,
			.pids = o->pids,
			.npids = o->npids,
			.attach = o->attach,
			.skip_quiet = 1,
			.tally = 1,
			.sampler = { .labels = o->labels, .nlabels = o->nlabels },
		},
	};
	int err = sampling_init(&s->sm, &so, NULL);
	if (err) {
		sampling_free(&s->sm);
		free(s);
		return err;
	}
	if (o->push_url && (err = pusher_start(&s->push, o->push_url))) {
		sampling_free(&s->sm);
		free(s);
		return err;
	}
	s->last_push = 0;
	s->next_push = (uint64_t)(o->push_seconds * 1e9);
	const struct sampling_consumer c = { serve_ticked, serve_wait };
	sampling_run(&s->sm, &c, s);
	for (int i = 0; i < MAX_CONNS; i++)
		if (s->conns[i].phase != CONN_FREE)
			conn_close(&s->conns[i]);
	if (o->push_url)
		pusher_stop(&s->push);
	sampling_free(&s->sm);
	free(s->census);
	free(s);
	return 0;
}
