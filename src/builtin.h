/* builtin.h: the subcommands of rbscope, one cmd_<name>() per file in builtin/. */
#ifndef RBSCOPE_BUILTIN_H
#define RBSCOPE_BUILTIN_H

#include <signal.h>
#include <stdio.h>

#include "lib/opt.h"
#include "ruby/label.h"

/*
 * To add a subcommand: write builtin/<name>.c with cmd_<name>(argc, argv),
 * its options declared as data (lib/opt.h) and parsed by builtin_parse(),
 * declare it here, and add a row to commands[] in rbscope.c. A command
 * returns an exit code from lib/err.h; `rbscope help CMD` runs it with --help.
 */
int cmd_snapshot(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_layout(int argc, char **argv);
int cmd_heap(int argc, char **argv);
int cmd_version(int argc, char **argv);
int cmd_trace(int argc, char **argv);
int cmd_backtraces(int argc, char **argv);
int cmd_gcstat(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_heapdump(int argc, char **argv);
int cmd_probes(int argc, char **argv);
int cmd_latency(int argc, char **argv);
int cmd_serve(int argc, char **argv);

/*
 * builtin/stop.c: after builtin_catch_stop(), SIGINT and SIGTERM set builtin_stop, which the live
 * commands (record, top, trace, latency) check to write what they have and end with exit 0.
 */
extern volatile sig_atomic_t builtin_stop;
void builtin_catch_stop(void);

/*
 * Parse a command's options (builtin/common.c). 0: go on, its arguments from argv[*first]. Else the
 * command ends with *code: EXIT_OK after printing its usage for --help, or an exit code after a
 * one-line error and a hint.
 */
int builtin_parse(const struct opt_cmd *cmd, int argc, char **argv, int *first, int *code);
/* 0 when no argument is left from first on; else prints the first and returns EXIT_USAGE. */
int builtin_no_args(int argc, char **argv, int first);
/* 0 when -p was given (pid != 0); else prints what is missing and returns EXIT_USAGE. */
int builtin_need_pid(int pid);
/*
 * Attach with builtin_attach_opts (--ruby-version), a one-line error and hint on failure and a note
 * when a newer patch release is read with an older table; returns 0 or an exit code.
 */
struct ruby_target;
struct ruby_attach_opts;
extern struct ruby_attach_opts builtin_attach_opts;
int builtin_attach(struct ruby_target *t, int pid);
/* Open the core at path (its mapped files under sysroot, NULL: /) and the Ruby in it, with a one-line error
   and hint on failure; 0 or an exit code. */
struct core;
int builtin_open_core(struct core *c, struct ruby_target *t, const char *path, const char *sysroot);
/*
 * Report err for what (a format) about process pid; for a permission refusal
 * the hint says why the kernel refused (task_access_why). The exit code.
 */
int builtin_report_attach(int err, int pid, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A hint on stderr naming pid's Ruby descendants, which the command left out, and the remedy. */
void builtin_hint_children(int pid, const char *remedy);

/* Options several commands share. */
#define BUILTIN_OPT_RUBY_VERSION \
	OPT_STRING(0, "ruby-version", &builtin_attach_opts.version, "X.Y.Z", \
		   "read it with that release's layout, whatever it says it runs")
#define BUILTIN_OPT_FORMAT(v) \
	OPT_CALL('f', "format", (v), "FORMAT", \
		 "flamegraph (default), html, speedscope, firefox, pprof, callgrind,\n" \
		 "collapsed, summary, summary-by-line (`rbscope help formats`)", builtin_opt_format)
#define BUILTIN_OPT_LABEL_FRAMES \
	OPT_FLAG(0, "label-frames", &output_options.label_frames, \
		 "the request each sample's thread served (a Sinatra route, a Rails action) as a\n" \
		 "frame over its Ruby frames in every format (pprof has it as a label anyway)")
/* --label NAME=EXPR, repeatable, into a struct builtin_labels (builtin_opt_label) */
#define BUILTIN_OPT_LABEL(v) \
	OPT_CALL(0, "label", (v), "NAME=EXPR", \
		 "also label each sample with a value read from its thread (repeatable, up to 4):\n" \
		 "a local variable (order_id; Klass#meth:order_id: only that method's), an\n" \
		 "instance variable of self (@tenant) or a fiber-local (Thread.current[:request_id]);\n" \
		 "pprof has it as label NAME", builtin_opt_label)
#define BUILTIN_OPT_FLAME \
	OPT_CALL(0, "flame-min-width", NULL, "F", "leave out frames narrower than F of all samples (default 0.0001)", \
		 builtin_opt_min_width), \
	OPT_STRING(0, "title", &output_options.title, "TEXT", "the flame graph's title")
/* --mode into an enum sampler_mode (profile/sampler.h: the choices' order is the enum's). */
extern const char *const builtin_modes[];
#define BUILTIN_OPT_MODE(v) \
	OPT_CHOICE(0, "mode", (v), "wall|cpu|gvl", \
		   "what a profile counts: every thread at every tick (wall, the default), the\n" \
		   "CPU time each thread ran by the kernel's account (cpu), or threads waiting\n" \
		   "for the GVL (gvl)", builtin_modes)
/* -f FORMAT into *(const struct output_format **)data; --flame-min-width F into output_options */
int builtin_opt_format(struct opt_parser *p, void *data, const char *arg);
int builtin_opt_min_width(struct opt_parser *p, void *data, const char *arg);
/* --label's, parsed (ruby/label.h's struct user_label) */
struct builtin_labels {
	struct user_label v[USER_LABELS_MAX];
	int n;
};
int builtin_opt_label(struct opt_parser *p, void *data, const char *arg);

/* Output choices shared by record and report (builtin/outfile.c). */
struct output_format;
/*
 * Settle *fmt (given, else from *path's ending, else flamegraph) and *path:
 * with no path, a non-text format, a terminal on stdout and a stem, stem +
 * the format's ending, made in buf. A path whose ending names no format (and
 * no -f) is an error: 0 or EXIT_USAGE, printed.
 */
int builtin_choose_output(const struct output_format **fmt, const char **path, const char *stem, char *buf, size_t cap);
/*
 * An output file opened (and so checked) before a recording starts, but not
 * truncated until outfile_begin(): a recording that never starts leaves a file
 * that was there as it was, and removes one it created (outfile_abandon).
 * path NULL is stdout. Each returns 0 or an exit code, errors printed.
 */
struct outfile {
	const char *path;
	FILE *f;
	int created, begun;
};
int outfile_open(struct outfile *o, const char *path);
int outfile_begin(struct outfile *o);
void outfile_abandon(struct outfile *o);
/* Write p in fmt to path (stdout when NULL), or to o, flushed and closed; the exit code, errors reported. */
struct profile;
int builtin_write_profile(const struct output_format *fmt, const struct profile *p, const char *path);
int builtin_write_profile_to(const struct output_format *fmt, const struct profile *p, struct outfile *o);
/* `rbscope help formats` */
void builtin_list_formats(FILE *f);

#endif
