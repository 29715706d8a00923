/* rbscope.c: the rbscope command: global options, the table of subcommands, and dispatch. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtin.h"
#include "lib/err.h"
#include "proc/task.h"
#include "ruby/target.h"

#ifndef RBSCOPE_VERSION
#define RBSCOPE_VERSION "0.1.0"
#endif

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *usage;
	const char *summary;
};

static const struct command commands[] = {
	{ "snapshot", cmd_snapshot, usage_snapshot, "print every Ruby thread's stack, now" },
	{ "record", cmd_record, usage_record, "sample stacks into a profile" },
	{ "top", cmd_top, usage_top, "live view of the functions using the most time" },
	{ "report", cmd_report, usage_report, "turn a --raw recording into any format" },
	{ "trace", cmd_trace, usage_trace, "trace method calls, slow calls and GC (needs the rbscope gem)" },
	{ "backtraces", cmd_backtraces, usage_backtraces, "every thread's backtrace, from the agent" },
	{ "gcstat", cmd_gcstat, usage_gcstat, "GC.stat and object counts, from the agent" },
	{ "heapdump", cmd_heapdump, usage_heapdump, "dump the heap of a running process, from the agent" },
	{ "eval", cmd_eval, usage_eval, "run Ruby code in a process that allows it" },
	{ "probes", cmd_probes, usage_probes, "list a process's USDT probes and which are enabled" },
	{ "latency", cmd_latency, usage_latency, "live histogram of a probe's first argument, from the agent" },
	{ "heap", cmd_heap, usage_heap, "analyse heap dumps (ObjectSpace.dump_all)" },
	{ "layout", cmd_layout, usage_layout, "print the VM struct layout used for a process or read from DWARF" },
	{ "version", cmd_version, usage_version, "print rbscope's version and supported Rubies" },
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

const char usage_version[] = "usage: rbscope version\n";

int cmd_version(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	printf("rbscope %s\nRubies (a table each; others through their DWARF):\n", RBSCOPE_VERSION);
	for (const struct ruby_layout_range *r = ruby_layout_ranges; r->layout; r++) {
		char range[32];
		snprintf(range, sizeof(range), "%d.%d.%d-%d.%d.%d", r->major, r->minor, r->first, r->major, r->minor, r->last);
		if (r->first == r->last)
			snprintf(range, sizeof(range), "%d.%d.%d", r->major, r->minor, r->first);
		printf("  %-15s table from %-6s %s\n", range, r->layout->version, r->source);
	}
	return EXIT_OK;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: rbscope [--version] [--help] <command> [<args>]\n\n"
		   "See what a running Ruby process is doing, from outside.\n\ncommands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "   %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n'rbscope help <command>' shows a command's options; 'rbscope help formats' the output formats.\n");
}

int parse_pid(const char *s, int *pid)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (!*s || *end || v <= 0 || v > 0x3fffffff) {
		error("'%s' is not a process id", s);
		return EXIT_USAGE;
	}
	*pid = (int)v;
	return 0;
}

struct ruby_attach_opts builtin_attach;

int attach_or_report(struct ruby_target *t, int pid)
{
	int err = ruby_target_attach(t, pid, &builtin_attach);
	if (!err) {
		if (t->layout_match == LAYOUT_NEWER)
			fprintf(stderr, "rbscope: note: process %d runs Ruby %s, newer than any %lld.%lld release known here: "
				"read with the table of %s\n", pid, builtin_attach.version ? builtin_attach.version : t->version,
				(long long)t->L->api_major, (long long)t->L->api_minor, t->L->version);
		return 0;
	}
	if (err == ERR_USAGE && builtin_attach.version) {
		error("no layout table for Ruby '%s' (--ruby-version): tables exist for %s", builtin_attach.version,
		      ruby_layout_series());
	} else if (err == ERR_UNSUPPORTED) {
		err_report(err, "process %d runs Ruby %s", pid, t->version);
		fprintf(stderr, "hint: rbscope has tables for Ruby %s and reads any Ruby whose libruby has DWARF; "
			"--ruby-version X.Y.Z reads it with another release's table\n", ruby_layout_series());
	} else {
		err_report(err, "cannot attach to process %d", pid);
	}
	ruby_target_detach(t);
	return err_exit_code(err);
}

void hint_children(int pid, const char *remedy)
{
	pid_t kids[256];
	int n = task_descendants(pid, kids, 256), shown = 0, total = 0;
	char list[512] = "";
	for (int i = 0; i < n; i++) {
		if (!ruby_process_likely(kids[i]))
			continue;
		if (++total > 6)
			continue;
		char cmd[64] = "";
		task_cmdline(kids[i], cmd, sizeof(cmd));
		size_t len = strlen(list);
		snprintf(list + len, sizeof(list) - len, "%s%d %s", shown++ ? ", " : "", (int)kids[i], cmd);
	}
	if (total)
		fprintf(stderr, "hint: process %d has %d Ruby child process%s (%s%s), not read: %s\n", pid, total,
			total == 1 ? "" : "es", list, total > shown ? ", ..." : "", remedy);
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
			list_formats(stdout);
			return EXIT_OK;
		}
		const struct command *c = argc > 2 ? find(argv[2]) : NULL;
		if (argc > 2 && !c) {
			error("'%s' is not an rbscope command", argv[2]);
			return EXIT_USAGE;
		}
		if (c)
			fputs(c->usage, stdout);
		else
			usage(stdout);
		return EXIT_OK;
	}
	const struct command *c = find(name);
	if (!c) {
		error("'%s' is not an rbscope command; see 'rbscope --help'", name);
		return EXIT_USAGE;
	}
	return c->fn(argc - 1, argv + 1);
}
