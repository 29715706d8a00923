/* heap.c: `rbscope heap`, analyse ObjectSpace.dump_all heap dumps. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../builtin.h"
#include "../heap/diff.h"
#include "../heap/summary.h"
#include "../lib/err.h"

const char usage_heap[] =
	"usage: rbscope heap summary DUMP [--by type|class|location|file|gem|generation] [--top N] [--json]\n"
	"   or: rbscope heap diff BEFORE AFTER [LATER] [--top N]\n"
	"\n"
	"Analyse a heap dump written by ObjectSpace.dump_all (JSON lines; .gz read as is; - for stdin).\n"
	"\n"
	"  summary   object counts and memsize per group, largest first (default --by type, --top 20)\n"
	"  diff      objects allocated after BEFORE and alive in AFTER (and in LATER: the three-dump way to\n"
	"            find leaks), by allocation site and class; the same object means the same address,\n"
	"            type and allocation (generation, file, line), so reused slots are not leaks\n"
	"\n"
	"In Ruby: require \"objspace\"; ObjectSpace.trace_object_allocations_start (for file:line);\n"
	"File.open(\"heap.json\", \"w\") { |f| ObjectSpace.dump_all(output: f) }\n";

static int cmd_heap_summary(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "by", required_argument, NULL, 'b' },
		{ "top", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	enum heap_by by = HEAP_BY_TYPE;
	int c, top = 20, json = 0;
	char *end;
	while ((c = getopt_long(argc, argv, "b:n:jh", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			if (heap_by_parse(optarg, &by))
				return error("--by takes type, class, location, file, gem or generation"), EXIT_USAGE;
			break;
		case 'n':
			top = (int)strtol(optarg, &end, 10);
			if (*end || top < 0)
				return error("--top takes a number (0: all)"), EXIT_USAGE;
			break;
		case 'j': json = 1; break;
		case 'h': fputs(usage_heap, stdout); return EXIT_OK;
		default: fputs(usage_heap, stderr); return EXIT_USAGE;
		}
	}
	if (optind + 1 != argc) {
		fputs(usage_heap, stderr);
		return EXIT_USAGE;
	}
	const char *path = argv[optind];
	struct heap_stats st;
	int err = heap_summary(path, by, top, json, stdout, &st);
	heap_report_bad(path, &st); /* bad lines are not fatal */
	if (err == ERR_BAD_FILE)
		return error("%s: no heap records in it (is it an ObjectSpace.dump_all file?)", path), EXIT_BAD_INPUT;
	return err ? err_report(err, "cannot read '%s'", path) : EXIT_OK;
}

static int cmd_heap_diff(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "top", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c, top = 20;
	char *end;
	while ((c = getopt_long(argc, argv, "n:h", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			top = (int)strtol(optarg, &end, 10);
			if (*end || top < 0)
				return error("--top takes a number (0: all)"), EXIT_USAGE;
			break;
		case 'h': fputs(usage_heap, stdout); return EXIT_OK;
		default: fputs(usage_heap, stderr); return EXIT_USAGE;
		}
	}
	int n = argc - optind;
	if (n < 2 || n > 3) {
		fputs(usage_heap, stderr);
		return EXIT_USAGE;
	}
	int err = heap_diff((const char *const *)argv + optind, n, top, stdout);
	if (err == ERR_BAD_FILE)
		return EXIT_BAD_INPUT;
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
	error("'%s' is not a heap command; see 'rbscope help heap'", argv[1]);
	return EXIT_USAGE;
}
