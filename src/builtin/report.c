/* report.c: `rbscope report`, turn a --raw recording into any output format. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "../builtin.h"
#include "../lib/err.h"
#include "../output/output.h"

const char usage_report[] =
	"usage: rbscope report -i RAW [-f FORMAT] [-o FILE] [options]\n"
	"\n"
	"Write a profile in FORMAT from a recording made with `rbscope record --raw RAW`.\n"
	"\n"
	"  -i, --input RAW       the raw recording\n"
	"  -f, --format FORMAT   flamegraph (default), html, speedscope, firefox, pprof, callgrind,\n"
	"                        collapsed, summary, summary-by-line (`rbscope help formats`)\n"
	"  -o, --output FILE     its ending picks the format when -f is not given (default: standard\n"
	"                        output, or RAW's name with the format's ending when that is a terminal)\n"
	"      --flame-min-width F  leave out frames narrower than F of all samples (default 0.0001)\n"
	"      --title TEXT      the flame graph's title\n";

int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "flame-min-width", required_argument, NULL, 'W' },
		{ "title", required_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *input = NULL, *output = NULL;
	const struct output_format *format = NULL;
	int c, rc;
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
		case 'W':
			if ((rc = parse_min_width(optarg)))
				return rc;
			break;
		case 'N': output_options.title = optarg; break;
		case 'h': fputs(usage_report, stdout); return EXIT_OK;
		default: fputs(usage_report, stderr); return EXIT_USAGE;
		}
	}
	if (!input || optind < argc) {
		fputs(usage_report, stderr);
		return EXIT_USAGE;
	}
	char stem[4096], made[4200];
	const char *base = strrchr(input, '/') ? strrchr(input, '/') + 1 : input;
	snprintf(stem, sizeof(stem), "%.*s", (int)(strlen(base) > 4 && !strcmp(base + strlen(base) - 4, ".raw") ?
						     strlen(base) - 4 : strlen(base)), base);
	const char *given = output;
	rc = choose_output(&format, &output, strcmp(input, "-") ? stem : "rbscope", made, sizeof(made));
	if (rc)
		return rc;
	if (output != given)
		fprintf(stderr, "rbscope: writing %s to %s\n", format->name, output);
	FILE *in = strcmp(input, "-") ? fopen(input, "rb") : stdin;
	if (!in)
		return err_report(-errno, "cannot open '%s'", input);
	struct profile p;
	int cut_short = 0;
	int err = profile_read_raw(&p, in, &cut_short);
	if (in != stdin)
		fclose(in);
	if (err) {
		profile_free(&p);
		return err_report(err == ERR_BAD_FILE ? ERR_BAD_FILE : err, "cannot read recording '%s'", input);
	}
	if (cut_short)
		fprintf(stderr, "rbscope: note: '%s' ends early (its recording was stopped before it finished): "
			"%llu samples, %.1f s\n", input, (unsigned long long)p.nsamples, (double)p.duration_ns / 1e9);
	int code = write_profile(format, &p, output);
	profile_free(&p);
	return code;
}
