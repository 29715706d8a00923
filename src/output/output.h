/* output.h: the profile writers, one per format, chosen by name. */
#ifndef RBSCOPE_OUTPUT_H
#define RBSCOPE_OUTPUT_H

#include <stdio.h>

#include "../profile/diff.h"
#include "../profile/profile.h"

struct output_format {
	const char *name;
	const char *description;
	/* Write p to f; 0 or a negative code. The caller flushes f and checks it for write errors. */
	int (*write)(const struct profile *p, FILE *f);
	int needs_samples; /* uses p->samples (each sample's time and thread), not only stack counts */
	int labels;        /* writes the request label frames its own way (pprof: labels); the others get a profile
			      without them (profile_without_labels) unless output_options.label_frames */
};

/* The formats, NULL-terminated. */
extern const struct output_format output_formats[];
const struct output_format *output_find(const char *name);
/* The format a file name asks for by its ending (".svg", ".pb.gz", "callgrind.out.*"...), or NULL. */
const struct output_format *output_for_path(const char *path);
/* "Ending (format), ...": every file ending output_for_path knows, for help and error messages. */
const char *output_endings(void);
/* The usual file ending of a format (".svg" for flamegraph). */
const char *output_suffix(const struct output_format *o);
/* Whether a format is plain text meant to be read on a terminal. */
int output_text(const struct output_format *o);
/* "a, b, c": the valid format names, for error messages. */
const char *output_names(void);

int output_collapsed(const struct profile *p, FILE *f);
int output_summary(const struct profile *p, FILE *f);
int output_summary_by_line(const struct profile *p, FILE *f);
int output_speedscope(const struct profile *p, FILE *f);
int output_firefox(const struct profile *p, FILE *f);
int output_pprof(const struct profile *p, FILE *f);
int output_callgrind(const struct profile *p, FILE *f);
int output_flamegraph(const struct profile *p, FILE *f);
int output_html(const struct profile *p, FILE *f);

/* A row of the summary: a function (name + path) or a line (path + line), with its sample counts. */
struct summary_row {
	uint32_t frame; /* a representative frame id */
	uint64_t self, total;
};
/* Rows by % self then % total (zero rows left out); *rows is malloc'd. 0 or -ENOMEM. */
int summary_rows(const struct profile *p, int by_line, struct summary_row **rows, uint32_t *n, uint64_t *total);
/* Order rows by self (then total), the way summary_rows() leaves them, or by total (then self). */
void summary_sort(struct summary_row *rows, uint32_t n, int by_total);
void summary_label(const struct profile *p, const struct summary_row *r, int by_line, char *out, size_t cap);

/* "states: running 52.0%, GVL wait 48.0%, ...": all threads' samples by state (enum profile_state). */
void output_states_line(const struct profile *p, char *out, size_t cap);

/*
 * pprof with choices `rbscope serve` makes per request: the sample types of
 * Go's CPU profile (samples/count, cpu/nanoseconds) or wall clock, and labels
 * of each sample's process found from its thread id.
 */
struct pprof_labels {
	int64_t pid;           /* 0: none */
	const char *command;   /* "process command" */
	const char *container; /* "container id", NULL or "" for none */
	const char *service;   /* "service_name", NULL or "" for none */
};
struct pprof_options {
	int cpu; /* sample types samples/count and cpu/nanoseconds, period type cpu/nanoseconds */
	/* The labels of thread tid's process; 0, or -1 for none. */
	int (*labels)(void *ctx, int32_t tid, struct pprof_labels *out);
	void *ctx;
	const char *comment; /* replaces the one made from the profile's pid and command */
	/*
	 * A profile of diff->p: NEW's samples, then BASE's scaled to NEW's
	 * total and negated, labelled pprof::base=true, as `go tool pprof
	 * -diff_base` makes them: what it shows is the difference.
	 */
	const struct profile_diff *diff;
};
int output_pprof_with(const struct profile *p, FILE *f, const struct pprof_options *o);

/*
 * report --diff: the largest changes in share, NEW minus BASE, function by
 * function, as a table; and the stacks folded with both weights ("root;...;leaf
 * BASE NEW", what difffolded.pl writes and flamegraph.pl draws).
 */
int output_diff_summary(const struct profile_diff *d, FILE *f);
int output_diff_collapsed(const struct profile_diff *d, FILE *f);
/*
 * The writer of a diff in format name (summary, flamegraph, pprof or
 * collapsed), or NULL for a format that shows no difference: each writes
 * output_options.diff, passed its profile.
 */
const struct output_format *output_diff_format(const char *name);

/* Options some writers take, set by the command before writing. */
struct output_options {
	double flame_min_width; /* flamegraph: drop frames narrower than this fraction of all samples */
	const char *title;      /* flamegraph and html: overrides the title made from the recording */
	/* flamegraph of d->p: widths are NEW's, each frame red where its share grew, blue where it shrank */
	const struct profile_diff *diff;
	int label_frames; /* --label-frames: the request each sample served is a frame over its Ruby frames */
};
extern struct output_options output_options;

/* "Foo#bar (path:line)", or the bare name for thread roots and frames with no path. */
void output_frame_label(const struct profile *p, uint32_t frame, int with_line, char *out, size_t cap);
/*
 * The same for a narrow view (top): the path from its gem ("puma-6.4.2/lib/puma/server.rb") or Ruby's
 * library ("ruby/3.1.0/net/http.rb"), and in at most width bytes (0: any) the name whole with as much of
 * the path's end as fits ("(...ma/server.rb)"), none if that is under 8 bytes: rows of one method in
 * several files stay apart.
 */
void output_frame_label_fit(const struct profile *p, uint32_t frame, size_t width, char *out, size_t cap);

#endif
