/* trace.c: `rbscope trace -p PID`: attach to the agent, trace method calls, slow calls and GC, and print them as they come. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "../agent/client.h"
#include "../agent/proto.h"
#include "../agent/ring.h"
#include "../agent/trace_print.h"
#include "../builtin.h"
#include "../lib/buf.h"
#include "../lib/clock.h"
#include "../lib/err.h"
#include "../lib/opt.h"
#include "agent_helpers.h"

struct trace_opts {
	int pid, firehose, gc, slow_cpu;
	double slow_ms, duration;
	unsigned buffer_mb;
	const char *output;
	struct buf settings;
	int nmethods;
};

/* Shipped tracer files: $RBSCOPE_TRACERS, then beside the executable (../share/rbscope/tracers or ../tracers). */
static FILE *open_tracer(const char *name)
{
	FILE *f = fopen(name, "r");
	if (f || strchr(name, '/'))
		return f;
	char exe[PATH_MAX], p[PATH_MAX + 64];
	const char *env = getenv("RBSCOPE_TRACERS");
	if (env) {
		snprintf(p, sizeof(p), "%s/%s.tracer", env, name);
		if ((f = fopen(p, "r")))
			return f;
	}
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = 0;
	char *slash = strrchr(exe, '/');
	if (slash)
		*slash = 0;
	static const char *const where[] = { "%s/../share/rbscope/tracers/%s.tracer", "%s/../tracers/%s.tracer" };
	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
		snprintf(p, sizeof(p), where[i], exe, name);
		if ((f = fopen(p, "r")))
			return f;
	}
	return NULL;
}

static int add_selector(struct trace_opts *o, const char *sel)
{
	if (!*sel || strchr(sel, '\n'))
		return error("'%s' is not a method selector", sel), EXIT_USAGE;
	buf_addf(&o->settings, "method %s\n", sel);
	o->nmethods++;
	return 0;
}

/* Where a tracer file line's comment starts: a line starting with #, or " #" after a selector (a selector's own # has
 * no space before it) outside its expressions' parentheses; NULL if none. */
static char *tracer_comment(char *s)
{
	if (*s == '#')
		return s;
	int depth = 0;
	for (char *p = s; *p; p++) {
		if (*p == '(')
			depth++;
		else if (*p == ')' && depth > 0)
			depth--;
		else if (!depth && p[0] == ' ' && p[1] == '#')
			return p;
	}
	return NULL;
}

static int read_tracer(struct trace_opts *o, const char *name)
{
	FILE *f = open_tracer(name);
	if (!f)
		return error("cannot read tracer file '%s'", name), EXIT_USAGE;
	char line[4096];
	int code = 0;
	while (!code && fgets(line, sizeof(line), f)) {
		char *s = line + strspn(line, " \t");
		s[strcspn(s, "\r\n")] = 0;
		char *c = tracer_comment(s);
		if (c)
			*c = 0;
		for (char *e = s + strlen(s); e > s && (e[-1] == ' ' || e[-1] == '\t');)
			*--e = 0;
		if (*s)
			code = add_selector(o, s);
	}
	fclose(f);
	return code;
}

static int methods_option(struct opt_parser *p, void *data, const char *arg)
{
	int code = add_selector(data, arg);
	/* rbtrace's -m takes several words: the ones up to the next option are selectors too */
	for (const char *w; !code && (w = opt_next_word(p));)
		code = add_selector(data, w);
	return code;
}

static int config_option(struct opt_parser *p, void *data, const char *arg)
{
	(void)p;
	return read_tracer(data, arg);
}

static int buffer_option(struct opt_parser *p, void *data, const char *arg)
{
	char *end;
	unsigned long mb = strtoul(arg, &end, 10);
	if (!*arg || *end || !mb || mb > 1024 || (mb & (mb - 1)))
		return opt_fail(p, "--buffer takes a power of two from 1 to 1024 (MB)");
	*(unsigned *)data = (unsigned)mb;
	return 0;
}

/* 0, or the exit code the command ends with (--help: -1), having printed why. */
static int parse(int argc, char **argv, struct trace_opts *o)
{
	o->buffer_mb = 8;
	const struct opt opts[] = {
		OPT_PID(&o->pid, "the Ruby process"), AGENT_CLI_OPT_INJECT,
		OPT_CALL('m', "methods", o, "SEL",
			 "trace methods: Klass#meth, Klass.meth, Klass# (all instance methods),\n"
			 "Klass. (all singleton methods), or meth (in every class); repeatable,\n"
			 "and the words after -m up to the next option are selectors too;\n"
			 "'SEL(expr, ...)' shows values at each call: self, @ivar, __source__ (the\n"
			 "caller's file:line), argN or a parameter's name, or Ruby code run with\n"
			 "self the receiver (only where the process allows eval)", methods_option),
		OPT_CALL('c', "config", o, "FILE",
			 "selectors from a tracer file (one per line, # comments); shipped ones:\n"
			 "nethttp, io, sql", config_option),
		OPT_FLAG('f', "firehose", &o->firehose, "every method call, nested and indented (slows every call down)"),
		{ .kind = OPT_DOUBLE, .long_name = "slow", .value = &o->slow_ms, .arg = "MS",
		  .help = "only calls that took MS milliseconds or more, with their callers\n"
			  "(of the selected methods, or of every method without -m)",
		  .flags = OPT_POSITIVE, .what = "a positive number of milliseconds" },
		OPT_FLAG(0, "slow-cpu", &o->slow_cpu, "--slow measures the thread's CPU time instead of wall time"),
		OPT_FLAG(0, "gc", &o->gc, "each garbage collection: major or minor, pause, marking, sweeping"),
		OPT_STRING('o', "output", &o->output, "FILE", "write there instead of standard output"),
		OPT_SECONDS('d', "duration", &o->duration, "detach after SECS seconds"),
		OPT_CALL(0, "buffer", &o->buffer_mb, "MB", "the event ring's size (default 8, a power of two)", buffer_option),
		OPT_END(),
	};
	const struct opt_cmd cmd = {
		.usage = "rbscope trace -p PID [--inject [--agent DIRS]] [-m SELECTOR...] [-f] [--slow MS] [--gc] [options]",
		.about = "Trace method calls in PID, which runs the rbscope gem, with their durations, until Ctrl-C,\n"
			 "-d, or the process exits. Ruby methods get a hook of their own (nothing else slows down);\n"
			 "C methods are picked out of C-call events. Events the terminal cannot keep up with are\n"
			 "dropped, never waited for, and counted at the end. Detaching leaves the process as it was.",
		.opts = opts,
	};
	int first, code;
	if (builtin_parse(&cmd, argc, argv, &first, &code))
		return code == EXIT_OK ? -1 : code;
	if ((code = builtin_no_args(argc, argv, first)) || (code = builtin_need_pid(o->pid)))
		return code;
	if (!o->nmethods && !o->firehose && !o->gc && !o->slow_ms)
		return error("what to trace? give -m SELECTOR, -c FILE, --firehose, --slow MS or --gc"), EXIT_USAGE;
	if (o->slow_cpu && !o->slow_ms)
		return error("--slow-cpu goes with --slow MS"), EXIT_USAGE;
	if (o->firehose)
		buf_addf(&o->settings, "firehose\n");
	if (o->gc)
		buf_addf(&o->settings, "gc\n");
	if (o->slow_ms)
		buf_addf(&o->settings, "slow %llu\n", (unsigned long long)(o->slow_ms * 1e6));
	if (o->slow_cpu)
		buf_addf(&o->settings, "slow_cpu\n");
	buf_addf(&o->settings, "buffer %llu\n", (unsigned long long)o->buffer_mb << 20);
	return 0;
}

/* agent_stop's reader: what the trace ring holds now; -1 if it is corrupt. */
static int drain_trace(void *ctx)
{
	void **a = ctx;
	return trace_drain(a[0], a[1]) < 0 ? -1 : 0;
}

static int run(struct trace_opts *o, struct agent_conn *c, FILE *out)
{
	char *reply;
	int ring_fd = -1;
	int code = agent_cli_ask(c, o->pid, AGENT_TRACE, o->settings.data, o->settings.len, -1, AGENT_CLI_TIMEOUT_MS,
				 &reply, NULL, &ring_fd);
	if (code)
		return code;
	size_t map_len;
	struct ring_hdr *h = ring_fd >= 0 ? trace_map_ring(ring_fd, &map_len) : NULL;
	if (ring_fd >= 0)
		close(ring_fd);
	if (!h) {
		free(reply);
		return error("process %d: the agent's event ring is not usable", o->pid), EXIT_AGENT;
	}
	fprintf(stderr, "rbscope: process %d: %s%s(Ctrl-C to stop)\n", o->pid, reply && *reply ? reply : "",
		reply && *reply ? " " : "");
	free(reply);

	struct trace_printer p;
	trace_printer_init(&p, out, o->slow_cpu);
	struct ring_cons rc;
	ring_cons_init(&rc, h);
	uint64_t deadline = o->duration > 0 ? clock_now_ns() + (uint64_t)(o->duration * 1e9) : UINT64_MAX;
	int idle_ms = 1, gone = 0;
	code = EXIT_OK;
	while (!builtin_stop && clock_now_ns() < deadline) {
		long n = trace_drain(&rc, &p);
		if (n < 0) {
			error("process %d: the event ring is corrupt", o->pid);
			code = EXIT_AGENT;
			break;
		}
		if (n) {
			idle_ms = 1;
			fflush(out);
			if (n == TRACE_DRAIN_BATCH)
				continue;
		} else {
			/* idle: show calls that have run long (200 ms), keep short ones in flight whole */
			trace_printer_flush_older(&p, clock_now_ns() - 200000000ull);
			if (fflush(out) || ferror(out)) {
				code = err_report(errno == EPIPE ? -EPIPE : -EIO, "cannot write the trace");
				break;
			}
		}
		/*
		 * Read up: wait a little, and notice the process going away (its end of the socket
		 * closes). Also after a batch, so that the ring is read in batches a millisecond apart
		 * rather than record by record on the writer's heels (on a quiet machine, bench/trace
		 * shows no difference either way).
		 */
		struct pollfd pf = { .fd = c->fd, .events = POLLIN };
		if (poll(&pf, 1, idle_ms) > 0) {
			gone = 1;
			break;
		}
		if (!n && idle_ms < 16)
			idle_ms *= 2;
	}
	void *drain_ctx[2] = { &rc, &p };
	if (!gone && agent_stop(c, AGENT_CLI_STOP_MS, code == EXIT_OK ? drain_trace : NULL, drain_ctx, &gone) < 0) {
		error("process %d: the event ring is corrupt", o->pid);
		code = EXIT_AGENT;
	}
	if (code == EXIT_OK && trace_drain(&rc, &p) < 0) {
		error("process %d: the event ring is corrupt", o->pid);
		code = EXIT_AGENT;
	}
	trace_printer_flush(&p);
	if ((fflush(out) || ferror(out)) && code == EXIT_OK)
		code = err_report(errno == EPIPE ? -EPIPE : -EIO, "cannot write the trace");
	fprintf(stderr, "rbscope: %s%llu events, %llu dropped (the ring was full)\n", gone ? "the process exited; " : "",
		(unsigned long long)p.events, (unsigned long long)__atomic_load_n(&h->dropped, __ATOMIC_ACQUIRE));
	trace_printer_free(&p);
	munmap(h, map_len);
	return code;
}

int cmd_trace(int argc, char **argv)
{
	struct trace_opts o = { 0 };
	buf_init(&o.settings, 1 << 20);
	int code = parse(argc, argv, &o);
	if (code) {
		buf_free(&o.settings);
		return code < 0 ? EXIT_OK : code;
	}
	FILE *out = stdout;
	if (o.output && !(out = fopen(o.output, "w"))) {
		code = err_report(-errno, "cannot open '%s'", o.output);
		buf_free(&o.settings);
		return code;
	}
	struct agent_conn c;
	code = agent_cli_connect(&c, o.pid);
	if (!code) {
		builtin_catch_stop();
		code = run(&o, &c, out);
		agent_close(&c);
	}
	if (out != stdout && fclose(out) && !code)
		code = err_report(-errno, "cannot write '%s'", o.output);
	buf_free(&o.settings);
	return code;
}
