/* serve.c: `rbscope serve`, keep sampling Ruby processes and answer pprof and Prometheus scrapes over HTTP. */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../builtin.h"
#include "../lib/err.h"
#include "../lib/http.h"
#include "../lib/vec.h"
#include "../proc/task.h"
#include "../ruby/target.h"
#include "../serve/serve.h"

#define DEFAULT_LISTEN "127.0.0.1:6061"
#define MAX_PIDS 4096

struct serve_args {
	const char *listen, *token_file, *push, *service;
	pid_t pids[MAX_PIDS];
	int npids, all;
	double rate, push_seconds, duration, census_seconds;
	struct builtin_labels labels;
};

static int parse_pid(struct opt_parser *p, void *data, const char *arg)
{
	struct serve_args *a = data;
	char *end;
	long v = strtol(arg, &end, 10);
	if (!*arg || *end || v <= 0 || v > 0x7fffffff)
		return opt_fail(p, "'%s' is not a process id", arg);
	if (a->npids == MAX_PIDS)
		return opt_fail(p, "at most %d processes with -p (--all takes every one)", MAX_PIDS);
	a->pids[a->npids++] = (pid_t)v;
	return 0;
}

static int parse_args(int argc, char **argv, struct serve_args *a)
{
	memset(a, 0, sizeof(*a));
	a->listen = DEFAULT_LISTEN;
	a->rate = 19;
	a->push_seconds = 10;
	const struct opt opts[] = {
		OPT_CALL('p', "pid", a, "PID", "sample this Ruby process (repeat for more)", parse_pid),
		OPT_FLAG('a', "all", &a->all,
			 "sample every Ruby process this user may read (root: all, containers\n"
			 "included), new ones as they start"),
		OPT_STRING('l', "listen", &a->listen, "ADDR:PORT",
			   "where to answer (default " DEFAULT_LISTEN "; another address only when given)"),
		OPT_DOUBLE('r', "rate", &a->rate, "HZ", "samples per second of each process (default 19: always on, many processes;\n"
			   "at most 1000)", 1,
			   1000, "a number of samples per second from 1 to 1000"),
		OPT_STRING(0, "token-file", &a->token_file, "FILE",
			   "requests must carry \"Authorization: Bearer TOKEN\", TOKEN the file's first line"),
		OPT_STRING(0, "push", &a->push, "URL",
			   "also send each process's CPU profile to Grafana Pyroscope at URL (its /ingest)"),
		OPT_SECONDS(0, "push-interval", &a->push_seconds, "push every SECS seconds (default 10)"),
		OPT_SECONDS(0, "census", &a->census_seconds,
			    "count each process's heap objects from outside every SECS seconds, for\n"
			    "/metrics (rbscope_ruby_heap_objects by type; default: never: a census of a\n"
			    "1 GB heap takes about a second, the process's threads slowed meanwhile)"),
		BUILTIN_OPT_LABEL(&a->labels),
		OPT_STRING(0, "service", &a->service, "NAME",
			   "the service name profiles carry (default: each process's OTEL_SERVICE_NAME\n"
			   "or PYROSCOPE_APPLICATION_NAME, else its command)"),
		OPT_SECONDS('d', "duration", &a->duration, "stop after SECS seconds (default: SIGINT or SIGTERM)"),
		BUILTIN_OPT_RUBY_VERSION,
		OPT_END(),
	};
	const struct opt_cmd cmd = {
		.usage = "rbscope serve (-p PID ... | --all) [-l ADDR:PORT] [options]",
		.about = "Keep sampling Ruby processes, never stopping them, and answer over HTTP: pprof profiles\n"
			 "(/debug/pprof/profile, /debug/pprof/wall) for Pyroscope, Parca, Grafana Alloy and\n"
			 "go tool pprof; Prometheus metrics (/metrics): threads by state, GC.",
		.opts = opts,
	};
	int first, code;
	if (builtin_parse(&cmd, argc, argv, &first, &code))
		return code == EXIT_OK ? -1 : code;
	if ((code = builtin_no_args(argc, argv, first)))
		return code;
	if (!a->npids == !a->all)
		return error("give -p PID (one or more) or --all"), EXIT_USAGE;
	if (a->push_seconds < 1)
		return error("--push-interval must be at least 1 second"), EXIT_USAGE;
	if (a->census_seconds && a->census_seconds < 10)
		return error("--census must be at least 10 seconds (each census reads the whole heap)"), EXIT_USAGE;
	return 0;
}

/* ADDR:PORT into o->addr; 0 or EXIT_USAGE. */
static int resolve_listen(const char *listen, struct serve_options *o)
{
	char host[256];
	int port;
	if (http_split_hostport(listen, host, sizeof(host), &port))
		return error("--listen takes ADDR:PORT, not '%s'", listen), EXIT_USAGE;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV }, *ai = NULL;
	char portbuf[16];
	snprintf(portbuf, sizeof(portbuf), "%d", port);
	int rc = getaddrinfo(*host ? host : NULL, portbuf, &hints, &ai);
	if (rc || !ai)
		return error("cannot use '%s' to listen on: %s", listen, gai_strerror(rc)), EXIT_USAGE;
	memcpy(&o->addr, ai->ai_addr, ai->ai_addrlen);
	o->addr_len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

/* The token's first line into buf; 0 or an exit code. */
static int read_token(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return err_report(-errno, "cannot read '%s'", path);
	int ok = fgets(buf, (int)cap, f) != NULL;
	fclose(f);
	buf[ok ? strcspn(buf, "\r\n") : 0] = 0;
	if (strlen(buf) < 16)
		return error("'%s': the token must be at least 16 characters", path), EXIT_USAGE;
	return 0;
}

int cmd_serve(int argc, char **argv)
{
	static struct serve_args a;
	int rc = parse_args(argc, argv, &a);
	if (rc)
		return rc < 0 ? EXIT_OK : rc;
	struct serve_options o = { 0 };
	static char token[512];
	if ((rc = resolve_listen(a.listen, &o)) || (a.token_file && (rc = read_token(a.token_file, token, sizeof(token)))))
		return rc;
	/* Every process named must be a Ruby we can read: say so now, not in a scrape's error. */
	for (int i = 0; i < a.npids; i++) {
		struct ruby_target t;
		if ((rc = builtin_attach(&t, a.pids[i])))
			return rc;
		ruby_target_detach(&t);
	}
	o.pids = a.pids;
	o.npids = a.npids;
	o.all = a.all;
	o.rate = a.rate;
	o.token = a.token_file ? token : NULL;
	o.push_url = a.push;
	o.push_seconds = a.push_seconds;
	o.census_seconds = a.census_seconds;
	o.service = a.service;
	o.duration = a.duration;
	o.labels = a.labels.v;
	o.nlabels = a.labels.n;
	o.attach = &builtin_attach_opts;
	o.stop = &builtin_stop;
	if (a.push && !strncmp(a.push, "https://", 8))
		return error("--push: https is not built in; push to a local Grafana Alloy or proxy over http"), EXIT_USAGE;
	int fd = serve_listen(&o);
	if (fd < 0)
		return error("cannot listen on %s: %s", a.listen, strerror(-fd)), EXIT_LISTEN;
	builtin_catch_stop();
	fprintf(stderr, "rbscope: serving on http://%s/ (%s at %g Hz)\n", a.listen,
		a.all ? "every Ruby process" : a.npids == 1 ? "1 process" : "the processes given", a.rate);
	int err = serve_run(&o, fd);
	close(fd);
	if (err == ERR_USAGE)
		return error("--push: cannot push to '%s' (give http://HOST[:PORT][/PATH])", a.push), EXIT_USAGE;
	return err ? err_report(err, "serve") : EXIT_OK;
}
