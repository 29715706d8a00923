/* rbscope.c: the rbscope command: global options, the table of subcommands, and dispatch. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtin.h"
#include "lib/err.h"

#ifndef RBSCOPE_VERSION
#define RBSCOPE_VERSION "0.1.0"
#endif

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{ "snapshot", cmd_snapshot, "print every Ruby thread's stack, now" },
	{ "record", cmd_record, "sample stacks (or allocations) into a profile" },
	{ "top", cmd_top, "live view of the functions using the most time" },
	{ "report", cmd_report, "turn a --raw recording into any format" },
	{ "trace", cmd_trace, "trace method calls, slow calls and GC (needs the rbscope gem)" },
	{ "backtraces", cmd_backtraces, "every thread's backtrace, from the agent" },
	{ "gcstat", cmd_gcstat, "GC.stat and object counts, from the agent" },
	{ "heapdump", cmd_heapdump, "dump the heap of a running process, from the agent" },
	{ "eval", cmd_eval, "run Ruby code in a process that allows it" },
	{ "probes", cmd_probes, "list a process's USDT probes and which are enabled" },
	{ "latency", cmd_latency, "live histogram of a probe's first argument, from the agent" },
	{ "serve", cmd_serve, "keep sampling Ruby processes; answer pprof and Prometheus over HTTP" },
	{ "heap", cmd_heap, "heap dumps analysed, a live heap counted or followed" },
	{ "layout", cmd_layout, "print the VM struct layout used for a process or read from DWARF" },
	{ "version", cmd_version, "print rbscope's version and supported Rubies" },
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: rbscope [--version] [--help] <command> [<args>]\n\n"
		   "See what a running Ruby process is doing, from outside.\n\ncommands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "   %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n'rbscope help <command>' shows a command's options; 'rbscope help formats' the output formats.\n");
}

static const struct command *find(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

int main(int argc, char **argv)
{
	/* A closed pipe must be an error we report, not a silent death. */
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	const char *name = argv[1];
	if (!strcmp(name, "--help") || !strcmp(name, "-h")) {
		usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(name, "--version"))
		return cmd_version(0, NULL);
	if (!strcmp(name, "help")) {
		if (argc > 2 && !strcmp(argv[2], "formats")) {
			builtin_list_formats(stdout);
			return EXIT_OK;
		}
		const struct command *c = argc > 2 ? find(argv[2]) : NULL;
		if (argc > 2 && !c) {
			error("'%s' is not an rbscope command", argv[2]);
			return EXIT_USAGE;
		}
		if (!c) {
			usage(stdout);
			return EXIT_OK;
		}
		char *args[] = { (char *)c->name, "--help", NULL };
		return c->fn(2, args);
	}
	const struct command *c = find(name);
	if (!c) {
		error("'%s' is not an rbscope command; see 'rbscope --help'", name);
		return EXIT_USAGE;
	}
	return c->fn(argc - 1, argv + 1);
}
