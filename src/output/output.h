/* output.h: the profile writers, one per format, chosen by name. */
#ifndef RBSCOPE_OUTPUT_H
#define RBSCOPE_OUTPUT_H

#include <stdio.h>

#include "../profile/profile.h"

struct output_format {
	const char *name;
	const char *description;
	/* Write p to f; 0 or a negative code (a failed write is -errno). */
	int (*write)(const struct profile *p, FILE *f);
	int needs_samples; /* uses p->samples (each sample's time and thread), not only stack counts */
};

/* The formats, NULL-terminated. */
extern const struct output_format output_formats[];
const struct output_format *output_find(const char *name);
/* "a, b, c": the valid format names, for error messages. */
const char *output_names(void);

int output_collapsed(const struct profile *p, FILE *f);
int output_summary(const struct profile *p, FILE *f);
int output_summary_by_line(const struct profile *p, FILE *f);

/* "Foo#bar (path:line)", or the bare name for thread roots and frames with no path. */
void output_frame_label(const struct profile *p, uint32_t frame, int with_line, char *out, size_t cap);

#endif
