/* report.c: `rbscope report`, turn a --raw recording into any output format. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../builtin.h"
#include "../lib/err.h"
#include "../output/output.h"

int cmd_report(int argc, char **argv)
{
	const char *input = NULL, *output = NULL;
	const struct output_format *format = NULL;
	int by_bytes = 0;
	const struct opt opts[] = {
		OPT_STRING('i', "input", &input, "RAW", "the raw recording"),
		BUILTIN_OPT_FORMAT(&format),
		OPT_STRING('o', "output", &output, "FILE",
			   "its ending picks the format when -f is not given (default: standard\n"
			   "output, or RAW's name with the format's ending when that is a terminal)"),
		BUILTIN_OPT_FLAME,
		OPT_FLAG(0, "bytes", &by_bytes,
			 "a recording of allocations (record --mode alloc): weigh stacks by bytes,\n"
			 "not objects, in the formats that show one value"),
		OPT_END(),
	};
	const struct opt_cmd cmd = {
		.usage = "rbscope report -i RAW [-f FORMAT] [-o FILE] [options]",
		.about = "Write a profile in FORMAT from a recording made with `rbscope record --raw RAW`.",
		.opts = opts,
	};
	int first, rc;
	if (builtin_parse(&cmd, argc, argv, &first, &rc))
		return rc;
	if ((rc = builtin_no_args(argc, argv, first)))
		return rc;
	if (!input)
		return error("which recording? give -i RAW"), EXIT_USAGE;
	char stem[4096], made[4200];
	const char *base = strrchr(input, '/') ? strrchr(input, '/') + 1 : input;
	snprintf(stem, sizeof(stem), "%.*s", (int)(strlen(base) > 4 && !strcmp(base + strlen(base) - 4, ".raw") ?
						     strlen(base) - 4 : strlen(base)), base);
	const char *given = output;
	rc = builtin_choose_output(&format, &output, strcmp(input, "-") ? stem : "rbscope", made, sizeof(made));
	if (rc)
		return rc;
	if (output != given)
		fprintf(stderr, "rbscope: writing %s to %s\n", format->name, output);
	FILE *in = strcmp(input, "-") ? fopen(input, "rb") : stdin;
	if (!in)
		return err_report(-errno, "cannot open '%s'", input);
	struct profile p;
	int cut_short = 0;
	int err = profile_read_raw(&p, in, format->needs_samples, &cut_short);
	if (in != stdin)
		fclose(in);
	if (err) {
		profile_free(&p);
		return err_report(err == ERR_BAD_FILE ? ERR_BAD_FILE : err, "cannot read recording '%s'", input);
	}
	if (by_bytes && p.kind != PROFILE_ALLOCS) {
		profile_free(&p);
		return error("--bytes: '%s' is not a recording of allocations (record --mode alloc)", input), EXIT_USAGE;
	}
	p.by_bytes = by_bytes;
	if (cut_short)
		fprintf(stderr, "rbscope: note: '%s' ends early (its recording was stopped before it finished): "
			"%llu samples, %.1f s\n", input, (unsigned long long)profile_total(&p), (double)p.duration_ns / 1e9);
	int code = builtin_write_profile(format, &p, output);
	profile_free(&p);
	return code;
}
