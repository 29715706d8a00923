/* builtin.h: the subcommands of rbscope, one cmd_<name>() per file in builtin/. */
#ifndef RBSCOPE_BUILTIN_H
#define RBSCOPE_BUILTIN_H

#include <signal.h>
#include <stdio.h>

/*
 * To add a subcommand: write builtin/<name>.c with cmd_<name>(argc, argv)
 * and usage_<name>, declare both here, and add a row to commands[] in
 * rbscope.c. A command returns an exit code from lib/err.h.
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

extern const char usage_snapshot[], usage_record[], usage_report[], usage_top[], usage_layout[], usage_heap[],
	usage_version[], usage_trace[], usage_backtraces[], usage_gcstat[], usage_eval[], usage_heapdump[],
	usage_probes[], usage_latency[];

/*
 * builtin/stop.c: after builtin_catch_stop(), SIGINT and SIGTERM set builtin_stop, which the live
 * commands (record, top, trace, latency) check to write what they have and end with exit 0.
 */
extern volatile sig_atomic_t builtin_stop;
void builtin_catch_stop(void);

/* Output choices shared by record and report (builtin/outfile.c). */
struct output_format;
/* Parse --flame-min-width into output_options; 0, or prints an error and returns EXIT_USAGE. */
int parse_min_width(const char *s);
/*
 * Settle *fmt (given, else from *path's ending, else flamegraph) and *path:
 * with no path, a non-text format, a terminal on stdout and a stem, stem +
 * the format's ending, made in buf. A path whose ending names no format (and
 * no -f) is an error: 0 or EXIT_USAGE, printed.
 */
int choose_output(const struct output_format **fmt, const char **path, const char *stem, char *buf, size_t cap);
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
int write_profile(const struct output_format *fmt, const struct profile *p, const char *path);
int write_profile_to(const struct output_format *fmt, const struct profile *p, struct outfile *o);
/* `rbscope help formats` */
void list_formats(FILE *f);

/* Parse a pid argument; 0 and *pid, or prints an error and returns EXIT_USAGE. */
int parse_pid(const char *s, int *pid);
/*
 * Attach with builtin_attach's options (--ruby-version), a one-line error and hint on failure and
 * a note when a newer patch release is read with an older table; returns 0 or an exit code.
 */
struct ruby_target;
struct ruby_attach_opts;
extern struct ruby_attach_opts builtin_attach;
int attach_or_report(struct ruby_target *t, int pid);
/* A hint on stderr naming pid's Ruby descendants, which the command left out, and the remedy. */
void hint_children(int pid, const char *remedy);

#endif
