/* outfile.c: the output choices record and report share: format, destination file, flame graph width. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../builtin.h"
#include "../lib/err.h"
#include "../output/output.h"

int builtin_opt_label(struct opt_parser *p, void *data, const char *arg)
{
	struct builtin_labels *l = data;
	char why[200];
	if (l->n == USER_LABELS_MAX)
		return opt_fail(p, "at most %d --label", USER_LABELS_MAX);
	if (ruby_user_label_parse(arg, &l->v[l->n], why, sizeof(why)))
		return opt_fail(p, "%s", why);
	for (int i = 0; i < l->n; i++)
		if (!strcmp(l->v[i].key, l->v[l->n].key))
			return opt_fail(p, "--label %s: two labels named %s", arg, l->v[i].key);
	l->n++;
	return 0;
}

int builtin_opt_min_width(struct opt_parser *p, void *data, const char *arg)
{
	char *end;
	(void)data;
	double v = strtod(arg, &end);
	if (!*arg || *end || !(v >= 0 && v < 1))
		return opt_fail(p, "--flame-min-width takes a fraction of all samples, from 0 to below 1 (e.g. 0.001)");
	output_options.flame_min_width = v;
	return 0;
}

int builtin_opt_format(struct opt_parser *p, void *data, const char *arg)
{
	if (!(*(const struct output_format **)data = output_find(arg)))
		return opt_fail(p, "unknown format '%s'; valid formats: %s", arg, output_names());
	return 0;
}

int builtin_choose_output(const struct output_format **fmt, const char **path, const char *stem, char *buf, size_t cap)
{
	if (!*fmt && *path && !(*fmt = output_for_path(*path)) && strncmp(*path, "/dev/", 5)) {
		error("cannot tell a format from the name '%s': give -f FORMAT, or a name ending in one of %s",
		      *path, output_endings());
		return EXIT_USAGE;
	}
	if (!*fmt)
		*fmt = output_find("flamegraph");
	if (*path || output_text(*fmt) || !isatty(1) || !stem)
		return 0;
	/* An SVG or a protobuf on a terminal helps nobody: write a file and say where. */
	snprintf(buf, cap, "%s%s", stem, output_suffix(*fmt));
	*path = buf;
	return 0;
}

int outfile_open(struct outfile *o, const char *path)
{
	memset(o, 0, sizeof(*o));
	o->path = path;
	if (!path) {
		o->f = stdout;
		return 0;
	}
	struct stat st;
	o->created = stat(path, &st) != 0;
	/* Not truncated yet: a recording that fails to start leaves what the file held. */
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
	if (fd < 0 || !(o->f = fdopen(fd, "w"))) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		err_report(-e, "cannot write '%s'", path);
		return EXIT_OUTPUT; /* whatever the reason: the output cannot be written */
	}
	return 0;
}

int outfile_begin(struct outfile *o)
{
	if (!o->path || o->begun)
		return 0;
	o->begun = 1;
	if (ftruncate(fileno(o->f), 0) && errno != EINVAL) /* EINVAL: a device or a pipe */
		return err_report(-errno, "cannot write '%s'", o->path);
	return 0;
}

void outfile_abandon(struct outfile *o)
{
	if (!o->path || !o->f)
		return;
	fclose(o->f);
	o->f = NULL;
	if (o->created && !o->begun)
		unlink(o->path);
}

void builtin_list_formats(FILE *f)
{
	fprintf(f, "Output formats (rbscope record -f FORMAT, rbscope report -f FORMAT):\n\n");
	for (const struct output_format *o = output_formats; o->name; o++)
		fprintf(f, "   %-16s %s\n", o->name, o->description);
	fprintf(f, "\nWithout -f, the ending of -o picks the format: %s.\nAny other name is refused (exit 2) unless "
		   "-f names the format; without -o, a flame graph\n(written to a file named after the process when "
		   "standard output is a terminal).\n", output_endings());
}

int builtin_write_profile_to(const struct output_format *fmt, const struct profile *p, struct outfile *o)
{
	const char *name = o->path ? o->path : "stdout";
	int err = outfile_begin(o);
	if (err)
		return err;
	/* The requests each sample served: pprof's labels; a frame of their own with --label-frames; else left out. */
	struct profile plain;
	int strip = !fmt->labels && !output_options.label_frames && profile_has_labels(p);
	errno = 0;
	err = strip ? profile_without_labels(&plain, p) : 0;
	err = err ?: fmt->write(strip ? &plain : p, o->f);
	if (strip)
		profile_free(&plain);
	/* The stream's error flag too: a failed write inside the writer leaves nothing to flush. */
	if (!err && (fflush(o->f) || ferror(o->f)))
		err = -(errno ?: EIO);
	if (o->path) {
		if (fclose(o->f) && !err)
			err = -errno;
		o->f = NULL;
	}
	return err ? err_report(err, "cannot write the profile to '%s'", name) : EXIT_OK;
}

int builtin_write_profile(const struct output_format *fmt, const struct profile *p, const char *path)
{
	struct outfile o;
	int rc = outfile_open(&o, path);
	return rc ? rc : builtin_write_profile_to(fmt, p, &o);
}
