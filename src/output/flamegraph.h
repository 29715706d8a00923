/* flamegraph.h: the interactive SVG flame graph, standalone or inline in the HTML report. */
#ifndef RBSCOPE_FLAMEGRAPH_H
#define RBSCOPE_FLAMEGRAPH_H

#include <stdio.h>

#include "../profile/profile.h"

/* Write the flame graph of p; standalone adds the XML prolog (a .svg file), else it is inline SVG. */
int flamegraph_svg(const struct profile *p, FILE *f, int standalone);
/* "COMMAND (pid N, Ruby X) — 5.0 s at 99 Hz, 1,234 samples", or output_options.title. */
void flamegraph_title(const struct profile *p, char *out, size_t cap);

#endif
