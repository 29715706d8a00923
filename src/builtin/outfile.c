/* outfile.c: the output choices record and report share: format, destination file, flame graph width. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../builtin.h"
#include "../lib/err.h"
#include "../output/output.h"

int parse_min_width(const char *s)
{
	char *end;
	double v = strtod(s, &end);
	if (!*s || *end || !(v >= 0 && v < 1)) {
		error("--flame-min-width takes a fraction of all samples, from 0 to below 1 (e.g. 0.001)");
		return EXIT_USAGE;
	}
	output_options.flame_min_width = v;
	return 0;
}

void choose_output(const struct output_format **fmt, const char **path, const char *stem, char *buf, size_t cap)
{
	if (!*fmt && *path)
		*fmt = output_for_path(*path);
	if (!*fmt)
		*fmt = output_find("flamegraph");
	if (*path || output_text(*fmt) || !isatty(1))
		return;
	/* An SVG or a protobuf on a terminal helps nobody: write a file and say where. */
	snprintf(buf, cap, "%s%s", stem, output_suffix(*fmt));
	*path = buf;
}

void list_formats(FILE *f)
{
	fprintf(f, "Output formats (rbscope record -f FORMAT, rbscope report -f FORMAT):\n\n");
	for (const struct output_format *o = output_formats; o->name; o++)
		fprintf(f, "   %-16s %s\n", o->name, o->description);
	fprintf(f, "\nWithout -f, the ending of -o picks the format: .svg, .html, .speedscope.json, .gecko.json,\n"
		   ".pb.gz, callgrind.out.*, .collapsed; anything else gets a flame graph.\n");
}

int write_profile(const struct output_format *fmt, const struct profile *p, const char *path)
{
	FILE *f = path ? fopen(path, "w") : stdout;
	if (!f)
		return err_report(-errno, "cannot write '%s'", path);
	errno = 0;
	int err = fmt->write(p, f);
	/* The stream's error flag too: a failed write inside the writer leaves nothing to flush. */
	if (!err && (fflush(f) || ferror(f)))
		err = -(errno ?: EIO);
	if (path && fclose(f) && !err)
		err = -errno;
	return err ? err_report(err, "cannot write the profile to '%s'", path ? path : "stdout") : EXIT_OK;
}
