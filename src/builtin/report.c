/* report.c: `rbscope report`, turn a --raw recording into any output format. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../builtin.h"
#include "../lib/err.h"
#include "../output/output.h"
#include "../profile/pprof_read.h"

/* A recording to compare: a --raw file or a pprof profile (serve's), told by its first bytes. 0 or an exit code. */
static int read_any(const char *path, struct profile *p, int by_bytes)
{
	FILE *in = fopen(path, "rb");
	if (!in)
		return err_report(-errno, "cannot open '%s'", path);
	char magic[7] = { 0 };
	size_t got = fread(magic, 1, sizeof(magic), in);
	int raw = got == sizeof(magic) && !memcmp(magic, "RBSCRAW", 7), cut_short = 0, err;
	if (fseek(in, 0, SEEK_SET))
		err = -errno;
	else
		err = raw ? profile_read_raw(p, in, 0, &cut_short) : profile_read_pprof(p, in);
	fclose(in);
	if (err) {
		profile_free(p);
		return err_report(err == ERR_BAD_FILE ? ERR_BAD_FILE : err, "cannot read '%s' as a --raw recording or a "
				  "pprof profile", path);
	}
	if (cut_short) {
		profile_free(p);
		return err_report(ERR_BAD_FILE, "'%s' ends early (its recording was stopped before it finished): "
				  "a part of a recording compares as nothing does", path);
	}
	if (by_bytes && p->kind != PROFILE_ALLOCS) {
		profile_free(p);
		return error("--bytes: '%s' is not a recording of allocations (record --mode alloc)", path), EXIT_USAGE;
	}
	p->by_bytes = by_bytes;
	return 0;
}

/* report --diff BASE NEW: the same program's two profiles compared, share by share. */
static int report_diff(const char *base_path, const char *new_path, const struct output_format *format,
		       const char *output, int by_bytes)
{
	const struct output_format *w = output_diff_format(format ? format->name : "summary");
	if (!w)
		return error("--diff writes summary, flamegraph, pprof or collapsed, not %s", format->name), EXIT_USAGE;
	struct profile base, newer;
	int rc = read_any(base_path, &base, by_bytes);
	if (rc)
		return rc;
	if ((rc = read_any(new_path, &newer, by_bytes))) {
		profile_free(&base);
		return rc;
	}
	struct profile plain;
	if (!output_options.label_frames && (profile_has_labels(&base) || profile_has_labels(&newer))) {
		/* (the requests are a frame of their own only when asked) */
		int err = profile_without_labels(&plain, &base);
		profile_free(&base);
		base = plain;
		err = err ?: profile_without_labels(&plain, &newer);
		profile_free(&newer);
		newer = plain;
		if (err) {
			profile_free(&base);
			profile_free(&newer);
			return err_report(err, "cannot compare '%s' with '%s'", base_path, new_path);
		}
	}
	if (base.kind != newer.kind) {
		error("'%s' is %s profile and '%s' %s: compare like with like", base_path,
		      base.kind == PROFILE_ALLOCS ? "an allocation" : "a time", new_path,
		      newer.kind == PROFILE_ALLOCS ? "an allocation profile" : "a time profile");
		rc = EXIT_USAGE;
	} else {
		struct profile_diff d;
		int err = profile_diff_build(&d, &base, &newer);
		if (err) {
			rc = err_report(err, "cannot compare '%s' with '%s'", base_path, new_path);
		} else {
			char title[512];
			if (!output_options.title) {
				snprintf(title, sizeof(title), "Differential flame graph: %s -> %s", base_path, new_path);
				output_options.title = title;
			}
			output_options.diff = &d;
			rc = builtin_write_profile(w, &d.p, output);
			output_options.diff = NULL;
		}
		profile_diff_free(&d);
	}
	profile_free(&base);
	profile_free(&newer);
	return rc;
}

int cmd_report(int argc, char **argv)
{
	const char *input = NULL, *output = NULL;
	const struct output_format *format = NULL;
	int by_bytes = 0, diff = 0;
	const struct opt opts[] = {
		OPT_STRING('i', "input", &input, "RAW", "the raw recording"),
		OPT_FLAG(0, "diff", &diff,
			 "compare two profiles of one program, BASE and NEW (--raw recordings or pprof\n"
			 "files, serve's): what grew and what shrank, as shares of each one's total;\n"
			 "formats summary (the default), flamegraph, pprof and collapsed"),
		BUILTIN_OPT_FORMAT(&format),
		OPT_STRING('o', "output", &output, "FILE",
			   "its ending picks the format when -f is not given (default: standard\n"
			   "output, or RAW's name with the format's ending when that is a terminal)"),
		BUILTIN_OPT_FLAME,
		BUILTIN_OPT_LABEL_FRAMES,
		OPT_FLAG(0, "bytes", &by_bytes,
			 "a recording of allocations (record --mode alloc): weigh stacks by bytes,\n"
			 "not objects, in the formats that show one value"),
		OPT_END(),
	};
	const struct opt_cmd cmd = {
		.usage = "rbscope report -i RAW [-f FORMAT] [-o FILE] [options]\n"
			 "   or: rbscope report --diff BASE NEW [-f FORMAT] [-o FILE] [options]",
		.about = "Write a profile in FORMAT from a recording made with `rbscope record --raw RAW`; with --diff,\n"
			 "what changed from one profile to another.",
		.opts = opts,
	};
	int first, rc;
	if (builtin_parse(&cmd, argc, argv, &first, &rc))
		return rc;
	if (diff) {
		if (input)
			return error("--diff takes BASE and NEW, not -i"), EXIT_USAGE;
		if (argc - first != 2)
			return error("--diff compares two profiles: give BASE and NEW"), EXIT_USAGE;
		if (!format && output && !(format = output_for_path(output)))
			return error("cannot tell a format from the name '%s': give -f FORMAT", output), EXIT_USAGE;
		return report_diff(argv[first], argv[first + 1], format, output, by_bytes);
	}
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
