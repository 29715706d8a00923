/* report.c: `rbscope report`, turn a --raw recording into any output format. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "../builtin.h"
#include "../lib/err.h"
#include "../output/output.h"

const char usage_report[] =
	"usage: rbscope report -i RAW [-f FORMAT] [-o FILE]\n"
	"\n"
	"Write a profile in FORMAT from a recording made with `rbscope record --raw RAW`.\n"
	"\n"
	"  -i, --input RAW       the raw recording\n"
	"  -f, --format FORMAT   collapsed (default), summary, summary-by-line\n"
	"  -o, --output FILE     default: standard output\n";

int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *input = NULL, *output = NULL;
	const struct output_format *format = output_find("collapsed");
	int c;
	while ((c = getopt_long(argc, argv, "i:f:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'i': input = optarg; break;
		case 'o': output = optarg; break;
		case 'f':
			if (!(format = output_find(optarg))) {
				error("unknown format '%s'; valid formats: %s", optarg, output_names());
				return EXIT_USAGE;
			}
			break;
		case 'h': fputs(usage_report, stdout); return EXIT_OK;
		default: fputs(usage_report, stderr); return EXIT_USAGE;
		}
	}
	if (!input || optind < argc) {
		fputs(usage_report, stderr);
		return EXIT_USAGE;
	}
	FILE *in = strcmp(input, "-") ? fopen(input, "rb") : stdin;
	if (!in)
		return err_report(-errno, "cannot open '%s'", input);
	struct profile p;
	int err = profile_read_raw(&p, in);
	if (in != stdin)
		fclose(in);
	if (err) {
		profile_free(&p);
		return err_report(err == ERR_BAD_FILE ? ERR_BAD_FILE : err, "cannot read recording '%s'", input);
	}
	FILE *out = output ? fopen(output, "w") : stdout;
	if (!out) {
		profile_free(&p);
		return err_report(-errno, "cannot write '%s'", output);
	}
	err = format->write(&p, out);
	if (!err && fflush(out))
		err = -errno;
	if (output && fclose(out) && !err)
		err = -errno;
	profile_free(&p);
	return err ? err_report(err, "cannot write the profile to '%s'", output ? output : "stdout") : EXIT_OK;
}
