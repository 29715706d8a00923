/* heap.c: `rbscope heap`, analyse ObjectSpace.dump_all heap dumps. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../builtin.h"
#include "../heap/diff.h"
#include "../heap/path.h"
#include "../heap/retained.h"
#include "../heap/strings.h"
#include "../heap/summary.h"
#include "../lib/err.h"
#include "../lib/opt.h"
#include "../proc/core.h"
#include "../ruby/census.h"
#include "../ruby/target.h"
#include "heap_live.h"

static const struct opt_cmd heap_cmd = {
	.usage = "rbscope heap summary DUMP [--by type|class|location|file|gem|generation] [--top N] [--json]\n"
		 "   or: rbscope heap diff BEFORE AFTER [LATER] [--top N]\n"
		 "   or: rbscope heap path DUMP ADDRESS\n"
		 "   or: rbscope heap retained DUMP [--by class|location] [--top N] [--json]\n"
		 "   or: rbscope heap strings DUMP [--top N] [--json]\n"
		 "   or: rbscope heap live -p PID [--inject] [-d SECS] [--every SECS] [--top N]",
	.about = "Analyse a heap dump written by ObjectSpace.dump_all (JSON lines; .gz read as is; - for stdin).\n"
		 "\n"
		 "  summary   object counts and memsize per group, largest first (default --by type, --top 20)\n"
		 "  diff      objects allocated after BEFORE and alive in AFTER (and in LATER: the three-dump way to\n"
		 "            find leaks), by allocation site and class; the same object means the same address,\n"
		 "            type and allocation (generation, file, line), so reused slots are not leaks\n"
		 "  path      the shortest chain of references from a root to the object at ADDRESS; exit 8 when\n"
		 "            the dump has no such object, 10 when no root reaches it\n"
		 "  retained  the objects that keep the most memory alive: an object's retained size is the memsize\n"
		 "            of all that no root reaches except through it (dominator tree); by class or location,\n"
		 "            a group sums its members that no other member dominates, so nothing counts twice\n"
		 "  strings   values held by more than one String: copies, bytes wasted (bytesize x (copies - 1))\n"
		 "  live      (a live process, through its agent) the allocation sites whose sampled objects are\n"
		 "            alive, looked at again and again: a leak is a site that only grows\n"
		 "\n"
		 "Each takes --help for its options.",
	.after = "In Ruby: require \"objspace\"; ObjectSpace.trace_object_allocations_start (for file:line);\n"
		 "File.open(\"heap.json\", \"w\") { |f| ObjectSpace.dump_all(output: f) }",
};

/* What the heap commands' options gave; by is the index of --by's value among the choices, -1 if not given. */
struct heap_cli {
	int by;
	int top, json;
	int first; /* the operands start at argv[first] */
};

#define HEAP_TOP 2
#define HEAP_JSON 4

/*
 * Parse the options a heap command accepts (--by one of by_choices when not
 * NULL, HEAP_TOP, HEAP_JSON) and
 * check it has from min to max operands. 0 to go on; else the command ends
 * with *code (its usage printed for --help, or an error).
 */
static int heap_options(int argc, char **argv, int want, const char *const *by_choices, const char *by_help,
			const char *usage, const char *about, int min, int max, struct heap_cli *o, int *code)
{
	*o = (struct heap_cli){ .top = 20, .by = -1 };
	struct opt opts[4] = { 0 }, *p = opts;
	if (by_choices)
		*p++ = (struct opt)OPT_CHOICE(0, "by", &o->by, "GROUP", by_help, by_choices);
	if (want & HEAP_TOP)
		*p++ = (struct opt)OPT_INT(0, "top", &o->top, "N", "show the N largest (default 20; 0: all)", 0, 1e9,
					   "a number (0: all)");
	if (want & HEAP_JSON)
		*p++ = (struct opt)OPT_FLAG(0, "json", &o->json, "one JSON object instead of text");
	char name[32];
	snprintf(name, sizeof(name), "heap %s", argv[0]);
	const struct opt_cmd cmd = { .name = name, .usage = usage, .about = about, .opts = opts };
	if (builtin_parse(&cmd, argc, argv, &o->first, code))
		return 1;
	int n = argc - o->first;
	if (n < min || n > max) {
		error("heap %s takes %s", argv[0], min == max ? (min == 1 ? "one dump" : "a dump and an address")
								: "two or three dumps");
		*code = EXIT_USAGE;
		return 1;
	}
	return 0;
}

/* The results could not be written (a reader that closed the pipe early, a full disk): exit 9, as everywhere. */
static int heap_write_failed(int err)
{
	err_report(err, "cannot write the results");
	return EXIT_OUTPUT;
}

/* On stderr, when path had lines that are not records: how many, and the first ones' numbers; and a cut. */
static void heap_report_bad(const char *path, const struct heap_stats *st)
{
	if (st->cut)
		fprintf(stderr, "rbscope: %s: the compressed data is corrupt or cut short after %llu bytes of dump; "
				"what came before was read\n", path, (unsigned long long)st->bytes);
	if (!st->bad)
		return;
	fprintf(stderr, "rbscope: %s: %llu of %llu lines are not heap records (first at line", path,
		(unsigned long long)st->bad, (unsigned long long)st->lines);
	for (int i = 0; i < 3 && st->first_bad_line[i]; i++)
		fprintf(stderr, "%s %llu", i ? "," : "", (unsigned long long)st->first_bad_line[i]);
	fprintf(stderr, "); they were skipped\n");
}

/*
 * The end of a command that read one dump: a write error is said as one (the
 * analyses write only to stdout, so its error flag tells it from a read's);
 * a file with no records is one line; bad lines are reported, not fatal.
 */
static int heap_finish(const char *path, int err, const struct heap_stats *st)
{
	if (err && ferror(stdout))
		return heap_write_failed(err);
	if (err == ERR_BAD_FILE && st->cut)
		return error("%s: the compressed data is corrupt or cut short before any heap record", path), EXIT_BAD_INPUT;
	if (err == ERR_BAD_FILE)
		return error("%s: no heap records in it (is it an ObjectSpace.dump_all file?)", path), EXIT_BAD_INPUT;
	heap_report_bad(path, st);
	return err ? err_report(err, "cannot read '%s'", path) : EXIT_OK;
}

/*
 * heap summary -p PID / --core CORE: the census of the objects a process has now, read from outside (no agent,
 * no dump, the process not stopped): by type or class only (a location is an allocation trace's).
 */
static int census_summary(int pid, const char *core_path, const char *sysroot, int by, int top, int json)
{
	if (by != HEAP_BY_TYPE && by != HEAP_BY_CLASS)
		return error("--by %s needs allocation sites, which only a dump written with "
			     "ObjectSpace.trace_object_allocations has: from a process, --by type or class",
			     heap_by_names[by]),
		       EXIT_USAGE;
	struct ruby_target t;
	struct core core;
	int rc = core_path ? builtin_open_core(&core, &t, core_path, sysroot) : builtin_attach(&t, pid);
	if (rc)
		return rc;
	struct census c;
	int err = census_take(&t, &c);
	if (err == ERR_UNSUPPORTED) {
		error("the layout of Ruby %s says nothing of its heap pages: no census of it (tables with them: "
		      "Debian's 2.7, 3.1, 3.3, 3.4)", t.version);
		rc = err_exit_code(err);
	} else if (err) {
		rc = core_path ? err_report(err, "cannot read the heap in core '%s'", core_path)
			       : builtin_report_attach(err, pid, "cannot read the heap of process %d", pid);
	} else {
		struct heap_summary_row *rows = NULL;
		size_t n = 0;
		char extra[160];
		snprintf(extra, sizeof(extra), "\"slots\":%llu,\"free_slots\":%llu,\"torn\":%llu,\"pages_gone\":%llu",
			 (unsigned long long)c.slots, (unsigned long long)c.free, (unsigned long long)c.torn,
			 (unsigned long long)c.pages_gone);
		err = census_rows(&t, &c, by == HEAP_BY_CLASS, &rows, &n);
		const struct heap_summary_names nm = { heap_by_names[by], "slot_bytes", "slot bytes", "bytes in their slots" };
		if (!err)
			err = heap_summary_print(stdout, &nm, rows, n, c.objects, c.bytes, top, json, extra);
		census_rows_free(rows, n);
		if (err)
			rc = err == -ENOMEM ? err_report(err, "cannot make the summary") : heap_write_failed(err);
		else if (!json)
			fprintf(stderr, "rbscope: %llu heap pages, %llu slots, %llu of them free\n", (unsigned long long)c.pages,
				(unsigned long long)c.slots, (unsigned long long)c.free);
		if (!err && !json && (c.torn || c.pages_gone))
			fprintf(stderr, "rbscope: %llu slots changed as they were read (left out), %llu pages freed meanwhile\n",
				(unsigned long long)c.torn, (unsigned long long)c.pages_gone);
		census_free(&c);
	}
	ruby_target_detach(&t);
	if (core_path)
		core_close(&core);
	return rc;
}

static int cmd_heap_summary(int argc, char **argv)
{
	int by = -1, top = 20, json = 0, pid = 0, first, rc;
	const char *core_path = NULL, *sysroot = NULL;
	const struct opt opts[] = {
		OPT_CHOICE(0, "by", &by, "GROUP", "group by type (default), class, location, file, gem or generation",
			   heap_by_names),
		OPT_INT(0, "top", &top, "N", "show the N largest (default 20; 0: all)", 0, 1e9, "a number (0: all)"),
		OPT_FLAG(0, "json", &json, "one JSON object instead of text"),
		OPT_PID(&pid, "the Ruby process whose objects to count now, read from outside (no dump)"),
		OPT_STRING(0, "core", &core_path, "CORE", "count the objects of a core file's process instead"),
		OPT_STRING(0, "sysroot", &sysroot, "DIR", "where the core's mapped files are (default /)"),
		BUILTIN_OPT_RUBY_VERSION,
		OPT_END(),
	};
	const struct opt_cmd cmd = {
		.name = "heap summary",
		.usage = "rbscope heap summary (DUMP | -p PID | --core CORE) [--by type|class|location|file|gem|generation]\n"
			 "       [--top N] [--json]",
		.about = "Object counts and memsize per group, largest first. With -p (or --core), a census of the objects\n"
			 "the process has now, read from its memory without stopping it: counts and slot bytes by type\n"
			 "or class.",
		.opts = opts,
	};
	if (builtin_parse(&cmd, argc, argv, &first, &rc))
		return rc;
	int n = argc - first;
	if ((pid || core_path) && n)
		return error("give a dump, or -p PID, or --core CORE: not both"), EXIT_USAGE;
	if (pid && core_path)
		return error("give either -p PID or --core CORE"), EXIT_USAGE;
	if (sysroot && !core_path)
		return error("--sysroot goes with --core CORE"), EXIT_USAGE;
	if (pid || core_path)
		return census_summary(pid, core_path, sysroot, by >= 0 ? by : HEAP_BY_TYPE, top, json);
	if (n != 1)
		return error("heap summary takes one dump (or -p PID, or --core CORE)"), EXIT_USAGE;
	const char *path = argv[first];
	struct heap_stats st;
	return heap_finish(path, heap_summary(path, by >= 0 ? (enum heap_by)by : HEAP_BY_TYPE, top, json, stdout, &st),
			   &st);
}

static int cmd_heap_path(int argc, char **argv)
{
	struct heap_cli o;
	int rc;
	if (heap_options(argc, argv, 0, NULL, NULL, "rbscope heap path DUMP ADDRESS",
			 "The shortest chain of references from a root to the object at ADDRESS; exit 8 when\n"
			 "the dump has no such object, 10 when no root reaches it.", 2, 2, &o, &rc))
		return rc;
	const char *path = argv[o.first], *a = argv[o.first + 1];
	char *end;
	errno = 0;
	unsigned long long addr = strtoull(a, &end, 16);
	if (!*a || *end || errno || !addr || *a == '-')
		return error("'%s' is not an address (0x7f0a12345678, as in the dump)", a), EXIT_USAGE;
	struct heap_stats st;
	int err = heap_path(path, addr, stdout, &st);
	if (err != ERR_NOT_FOUND && err != ERR_UNREACHABLE)
		return heap_finish(path, err, &st);
	heap_report_bad(path, &st);
	if (err == ERR_NOT_FOUND)
		return error("%s: no object at 0x%llx in the dump", path, addr), err_exit_code(err);
	return error("%s: 0x%llx is in the dump but no root reaches it through the dump's references", path, addr),
	       err_exit_code(err);
}

static int cmd_heap_retained(int argc, char **argv)
{
	struct heap_cli o;
	enum heap_retained_by by = HEAP_RETAINED_OBJECTS;
	int rc;
	static const char *const retained_by[] = { "class", "location", NULL };
	if (heap_options(argc, argv, HEAP_TOP | HEAP_JSON, retained_by, "group by class or location (default: each object)",
			 "rbscope heap retained DUMP [--by class|location] [--top N] [--json]",
			 "The objects that keep the most memory alive: an object's retained size is the memsize\n"
			 "of all that no root reaches except through it (dominator tree); by class or location,\n"
			 "a group sums its members that no other member dominates, so nothing counts twice.",
			 1, 1, &o, &rc))
		return rc;
	if (o.by >= 0)
		by = o.by ? HEAP_RETAINED_LOCATION : HEAP_RETAINED_CLASS;
	const char *path = argv[o.first];
	struct heap_stats st;
	return heap_finish(path, heap_retained(path, by, o.top, o.json, stdout, &st), &st);
}

static int cmd_heap_strings(int argc, char **argv)
{
	struct heap_cli o;
	int rc;
	if (heap_options(argc, argv, HEAP_TOP | HEAP_JSON, NULL, NULL, "rbscope heap strings DUMP [--top N] [--json]",
			 "Values held by more than one String: copies, bytes wasted (bytesize x (copies - 1)).", 1, 1, &o,
			 &rc))
		return rc;
	const char *path = argv[o.first];
	struct heap_stats st;
	return heap_finish(path, heap_strings(path, o.top, o.json, stdout, &st), &st);
}

static int cmd_heap_diff(int argc, char **argv)
{
	struct heap_cli o;
	int rc;
	if (heap_options(argc, argv, HEAP_TOP, NULL, NULL, "rbscope heap diff BEFORE AFTER [LATER] [--top N]",
			 "Objects allocated after BEFORE and alive in AFTER (and in LATER: the three-dump way to\n"
			 "find leaks), by allocation site and class; the same object means the same address,\n"
			 "type and allocation (generation, file, line), so reused slots are not leaks.", 2, 3, &o, &rc))
		return rc;
	int n = argc - o.first;
	const char *const *paths = (const char *const *)argv + o.first;
	struct heap_stats st[3];
	int failed;
	int err = heap_diff(paths, n, o.top, stdout, st, &failed);
	for (int i = 0; i < n && (failed < 0 || i < failed); i++)
		heap_report_bad(paths[i], &st[i]);
	if (failed >= 0)
		return heap_finish(paths[failed], err, &st[failed]);
	if (err && ferror(stdout))
		return heap_write_failed(err);
	return err ? err_report(err, "cannot diff the dumps") : EXIT_OK;
}

int cmd_heap(int argc, char **argv)
{
	if (argc < 2)
		return error("heap: which analysis? summary, diff, path, retained, strings or live"), EXIT_USAGE;
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		opt_usage(stdout, &heap_cmd);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "summary"))
		return cmd_heap_summary(argc - 1, argv + 1);
	if (!strcmp(argv[1], "diff"))
		return cmd_heap_diff(argc - 1, argv + 1);
	if (!strcmp(argv[1], "path"))
		return cmd_heap_path(argc - 1, argv + 1);
	if (!strcmp(argv[1], "retained"))
		return cmd_heap_retained(argc - 1, argv + 1);
	if (!strcmp(argv[1], "strings"))
		return cmd_heap_strings(argc - 1, argv + 1);
	if (!strcmp(argv[1], "live"))
		return cmd_heap_live(argc - 1, argv + 1);
	error("'%s' is not a heap command; see 'rbscope help heap'", argv[1]);
	return EXIT_USAGE;
}
