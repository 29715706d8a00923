/* serve.c: the "rbscope" Ruby thread that answers requests while anyone is connected, and the sessions it holds. */
#include "agent.h"
#include "proto.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <ruby/thread.h>

struct session {
	int fd;
	struct tracer *tracer;
	struct usdt_sub *latency;
	struct allocs *allocs;
};

static struct session sessions[AGENT_MAX_SESSIONS];
static int nsessions;
static int serve_stop_fd = -1; /* eventfd: the unblocking function's way to end a poll */

struct wait_args {
	struct pollfd p[AGENT_MAX_SESSIONS + 2];
	int n;
	int r;
};

static void *wait_nogvl(void *arg)
{
	struct wait_args *w = arg;
	w->r = poll(w->p, (nfds_t)w->n, 1000);
	return NULL;
}

static void wait_ubf(void *arg)
{
	(void)arg;
	event_post(serve_stop_fd);
}

struct io_args {
	int fd;
	unsigned type;
	const char *body;
	size_t len;
	int fd_pass;
	char *in;
	int fd_got;
	int r;
};

static void *recv_nogvl(void *arg)
{
	struct io_args *a = arg;
	size_t len;
	a->r = agent_recv(a->fd, &a->type, &a->in, &len, AGENT_MAX_REQUEST, &a->fd_got);
	a->len = len;
	return NULL;
}

static void *send_nogvl(void *arg)
{
	struct io_args *a = arg;
	a->r = agent_send(a->fd, a->type, a->body, a->len, a->fd_pass);
	return NULL;
}

/* Replies go out without the GVL: a slow reader holds only this thread, for at most the socket's timeout. */
static int reply(struct session *s, unsigned type, const char *body, size_t len, int fd_pass)
{
	struct io_args a = { .fd = s->fd, .type = type, .body = body, .len = len, .fd_pass = fd_pass };
	rb_thread_call_without_gvl(send_nogvl, &a, RUBY_UBF_IO, NULL);
	return a.r;
}

static int reply_str(struct session *s, unsigned type, VALUE str)
{
	int r = reply(s, type, RSTRING_PTR(str), (size_t)RSTRING_LEN(str), -1);
	RB_GC_GUARD(str); /* alive while its bytes are sent without the GVL */
	return r;
}

static void end_session(int i)
{
	if (sessions[i].tracer)
		tracer_stop(sessions[i].tracer);
	if (sessions[i].latency)
		usdt_unsubscribe(sessions[i].latency);
	if (sessions[i].allocs)
		allocs_stop(sessions[i].allocs);
	close(sessions[i].fd);
	sessions[i] = sessions[--nsessions];
}

/* A request that Ruby code answers (lib/rbscope/agent.rb): the reply is [ok, text]. */
static int ruby_request(struct session *s, const char *meth, const char *body, size_t len, int fd_got)
{
	VALUE args[2] = { rb_str_new(body, (long)len), fd_got >= 0 ? INT2NUM(fd_got) : Qnil };
	int ok;
	VALUE res = agent_call(&ok, meth, 2, args);
	if (fd_got >= 0)
		close(fd_got);
	if (!ok || !RB_TYPE_P(res, T_ARRAY) || RARRAY_LEN(res) != 2)
		return reply_str(s, AGENT_ERROR, rb_str_new_cstr("internal error in the agent"));
	VALUE text = rb_obj_as_string(rb_ary_entry(res, 1));
	return reply_str(s, RTEST(rb_ary_entry(res, 0)) ? AGENT_OK : AGENT_ERROR, text);
}

static int start_trace(struct session *s, const char *body)
{
	if (s->tracer)
		return reply_str(s, AGENT_ERROR, rb_str_new_cstr("this connection is already tracing"));
	int ring_fd = -1;
	VALUE err = Qnil;
	s->tracer = tracer_start(body, &ring_fd, &err);
	if (!s->tracer)
		return reply_str(s, AGENT_ERROR, err);
	int r = reply(s, AGENT_OK, RSTRING_PTR(err), (size_t)RSTRING_LEN(err), ring_fd);
	close(ring_fd);
	return r;
}

static int start_latency(struct session *s, const char *body)
{
	if (s->latency)
		return reply_str(s, AGENT_ERROR, rb_str_new_cstr("this connection already shows a latency"));
	int fd = -1;
	VALUE msg = Qnil;
	s->latency = usdt_subscribe(body, &fd, &msg);
	if (!s->latency)
		return reply_str(s, AGENT_ERROR, msg);
	int r = reply(s, AGENT_OK, RSTRING_PTR(msg), (size_t)RSTRING_LEN(msg), fd);
	close(fd);
	return r;
}

static int start_allocs(struct session *s, const char *body)
{
	if (s->allocs)
		return reply_str(s, AGENT_ERROR, rb_str_new_cstr("this connection is already recording allocations"));
	int fd = -1;
	VALUE msg = Qnil;
	s->allocs = allocs_start(body, &fd, &msg);
	if (!s->allocs)
		return reply_str(s, AGENT_ERROR, msg);
	int r = reply(s, AGENT_OK, RSTRING_PTR(msg), (size_t)RSTRING_LEN(msg), fd);
	close(fd);
	return r;
}

/* Read and answer one request; non-zero ends the session. */
static int handle(struct session *s)
{
	struct io_args a = { .fd = s->fd, .fd_got = -1 };
	rb_thread_call_without_gvl(recv_nogvl, &a, RUBY_UBF_IO, NULL);
	if (a.r == -EMSGSIZE) {
		char msg[96];
		snprintf(msg, sizeof(msg), "request too large: over %u bytes", AGENT_MAX_REQUEST);
		return reply(s, AGENT_ERROR, msg, strlen(msg), -1);
	}
	if (a.r)
		return a.r;
	int r;
	switch (a.type) {
	case AGENT_HELLO:
		r = ruby_request(s, "hello", a.in, a.len, a.fd_got);
		break;
	case AGENT_BACKTRACES:
		r = ruby_request(s, "backtraces", a.in, a.len, a.fd_got);
		break;
	case AGENT_GCSTAT:
		r = ruby_request(s, "gcstat", a.in, a.len, a.fd_got);
		break;
	case AGENT_EVAL:
		r = ruby_request(s, "eval_request", a.in, a.len, a.fd_got);
		break;
	case AGENT_HEAPDUMP:
		r = ruby_request(s, "heapdump", a.in, a.len, a.fd_got);
		break;
	case AGENT_TRACE:
		if (a.fd_got >= 0)
			close(a.fd_got);
		r = start_trace(s, a.in);
		break;
	case AGENT_LATENCY:
		if (a.fd_got >= 0)
			close(a.fd_got);
		r = start_latency(s, a.in);
		break;
	case AGENT_ALLOCS:
		if (a.fd_got >= 0)
			close(a.fd_got);
		r = start_allocs(s, a.in);
		break;
	case AGENT_STOP:
		if (a.fd_got >= 0)
			close(a.fd_got);
		if (s->allocs)
			allocs_stop(s->allocs);
		s->allocs = NULL;
		if (s->tracer)
			tracer_stop(s->tracer);
		s->tracer = NULL;
		if (s->latency)
			usdt_unsubscribe(s->latency);
		s->latency = NULL;
		r = reply(s, AGENT_OK, "stopped", 7, -1);
		break;
	default: {
		if (a.fd_got >= 0)
			close(a.fd_got);
		char msg[64];
		snprintf(msg, sizeof(msg), "unknown request type %u", a.type);
		r = reply(s, AGENT_ERROR, msg, strlen(msg), -1);
	}
	}
	free(a.in);
	return r;
}

static void take_new(void)
{
	int fd;
	while ((fd = channel_take()) >= 0) {
		if (nsessions == AGENT_MAX_SESSIONS) {
			agent_send(fd, AGENT_ERROR, "busy: too many connections", 26, -1);
			close(fd);
			continue;
		}
		sessions[nsessions++] = (struct session){ .fd = fd };
	}
}

static VALUE serve_loop(VALUE arg)
{
	(void)arg;
	for (;;) {
		take_new();
		if (!nsessions && channel_serving_done() == 0)
			return Qnil;
		struct wait_args w = { .n = 0 };
		w.p[w.n++] = (struct pollfd){ .fd = channel_notify_fd(), .events = POLLIN };
		w.p[w.n++] = (struct pollfd){ .fd = serve_stop_fd, .events = POLLIN };
		for (int i = 0; i < nsessions; i++)
			w.p[w.n++] = (struct pollfd){ .fd = sessions[i].fd, .events = POLLIN };
		rb_thread_call_without_gvl(wait_nogvl, &w, wait_ubf, NULL);
		event_clear(serve_stop_fd);
		rb_thread_check_ints();
		if (w.r <= 0)
			continue;
		/* Backwards, so that ending session i does not skip the one moved into its place. */
		for (int i = nsessions - 1; i >= 0; i--) {
			short ev = w.p[i + 2].revents;
			if (!ev || sessions[i].fd != w.p[i + 2].fd)
				continue;
			if ((ev & POLLIN) ? handle(&sessions[i]) : 1)
				end_session(i);
		}
	}
}

static VALUE serve_cleanup(VALUE arg)
{
	(void)arg;
	while (nsessions)
		end_session(nsessions - 1);
	channel_serving_done();
	return Qnil;
}

VALUE serve_run(VALUE self)
{
	(void)self;
	if (serve_stop_fd < 0 && (serve_stop_fd = event_new()) < 0)
		rb_sys_fail("eventfd");
	/* Whatever ends this thread (the process exiting, Thread#kill), hooks come off and sockets close. */
	return rb_ensure(serve_loop, Qnil, serve_cleanup, Qnil);
}

void serve_forked(void)
{
	/*
	 * The child has none of the parent's connections: they stay the parent's.
	 * Their hooks (already silent since the fork) come off, so the child does
	 * not pay for them.
	 */
	for (int i = 0; i < nsessions; i++) {
		if (sessions[i].tracer)
			tracer_stop(sessions[i].tracer);
		if (sessions[i].allocs)
			allocs_stop(sessions[i].allocs);
		close(sessions[i].fd);
	}
	nsessions = 0;
	/* the parent's: a wake-up posted here would end the parent's poll */
	if (serve_stop_fd >= 0)
		close(serve_stop_fd);
	serve_stop_fd = -1;
}
