/* heap.c: `rbscope heap`, analyse ObjectSpace.dump_all heap dumps. */
#include <errno.h>
#include <getopt.h>
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

const char usage_heap[] =
	"usage: rbscope heap summary DUMP [--by type|class|location|file|gem|generation] [--top N] [--json]\n"
	"   or: rbscope heap diff BEFORE AFTER [LATER] [--top N]\n"
	"   or: rbscope heap path DUMP ADDRESS\n"
	"   or: rbscope heap retained DUMP [--by class|location] [--top N] [--json]\n"
	"   or: rbscope heap strings DUMP [--top N] [--json]\n"
	"\n"
	"Analyse a heap dump written by ObjectSpace.dump_all (JSON lines; .gz read as is; - for stdin).\n"
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
	"\n"
	"In Ruby: require \"objspace\"; ObjectSpace.trace_object_allocations_start (for file:line);\n"
	"File.open(\"heap.json\", \"w\") { |f| ObjectSpace.dump_all(output: f) }\n";

/* What the heap commands' options gave; by is NULL when --by was not given. */
struct heap_cli {
	const char *by;
	int top, json;
};

/*
 * Parse the options a heap command accepts, named by their short letters in
 * shorts ("b:n:jh": --by, --top, --json, --help). -1 to go on with optind at
 * the operands, or the exit code (usage printed).
 */
static int heap_options(int argc, char **argv, const char *shorts, struct heap_cli *o)
{
	static const struct option opts[] = {
		{ "by", required_argument, NULL, 'b' },
		{ "top", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	char *end;
	int c;
	*o = (struct heap_cli){ .top = 20 };
	while ((c = getopt_long(argc, argv, shorts, opts, NULL)) != -1) {
		if (c != '?' && !strchr(shorts, c))
			c = '?'; /* a long option this command does not take */
		switch (c) {
		case 'b': o->by = optarg; break;
		case 'n':
			o->top = (int)strtol(optarg, &end, 10);
			if (*end || o->top < 0)
				return error("--top takes a number (0: all)"), EXIT_USAGE;
			break;
		case 'j': o->json = 1; break;
		case 'h': fputs(usage_heap, stdout); return EXIT_OK;
		default: fputs(usage_heap, stderr); return EXIT_USAGE;
		}
	}
	return -1;
}

/* The operands are exactly n; else usage on stderr. */
static int heap_operands(int argc, int n)
{
	if (argc - optind == n)
		return 0;
	fputs(usage_heap, stderr);
	return -1;
}

/* The results could not be written (a reader that closed the pipe early, a full disk): exit 9, as everywhere. */
static int heap_write_failed(int err)
{
	err_report(err, "cannot write the results");
	return EXIT_OUTPUT;
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

static int cmd_heap_summary(int argc, char **argv)
{
	struct heap_cli o;
	enum heap_by by = HEAP_BY_TYPE;
	int rc = heap_options(argc, argv, "b:n:jh", &o);
	if (rc >= 0)
		return rc;
	if (o.by && heap_by_parse(o.by, &by))
		return error("--by takes type, class, location, file, gem or generation"), EXIT_USAGE;
	if (heap_operands(argc, 1))
		return EXIT_USAGE;
	const char *path = argv[optind];
	struct heap_stats st;
	return heap_finish(path, heap_summary(path, by, o.top, o.json, stdout, &st), &st);
}

static int cmd_heap_path(int argc, char **argv)
{
	struct heap_cli o;
	int rc = heap_options(argc, argv, "h", &o);
	if (rc >= 0)
		return rc;
	if (heap_operands(argc, 2))
		return EXIT_USAGE;
	const char *path = argv[optind], *a = argv[optind + 1];
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
	int rc = heap_options(argc, argv, "b:n:jh", &o);
	if (rc >= 0)
		return rc;
	if (o.by && !strcmp(o.by, "class"))
		by = HEAP_RETAINED_CLASS;
	else if (o.by && !strcmp(o.by, "location"))
		by = HEAP_RETAINED_LOCATION;
	else if (o.by)
		return error("--by takes class or location"), EXIT_USAGE;
	if (heap_operands(argc, 1))
		return EXIT_USAGE;
	const char *path = argv[optind];
	struct heap_stats st;
	return heap_finish(path, heap_retained(path, by, o.top, o.json, stdout, &st), &st);
}

static int cmd_heap_strings(int argc, char **argv)
{
	struct heap_cli o;
	int rc = heap_options(argc, argv, "n:jh", &o);
	if (rc >= 0)
		return rc;
	if (heap_operands(argc, 1))
		return EXIT_USAGE;
	const char *path = argv[optind];
	struct heap_stats st;
	return heap_finish(path, heap_strings(path, o.top, o.json, stdout, &st), &st);
}

static int cmd_heap_diff(int argc, char **argv)
{
	struct heap_cli o;
	int rc = heap_options(argc, argv, "n:h", &o);
	if (rc >= 0)
		return rc;
	int n = argc - optind;
	if (n < 2 || n > 3) {
		fputs(usage_heap, stderr);
		return EXIT_USAGE;
	}
	const char *const *paths = (const char *const *)argv + optind;
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
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs(usage_heap, argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : EXIT_OK;
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
	error("'%s' is not a heap command; see 'rbscope help heap'", argv[1]);
	return EXIT_USAGE;
}
