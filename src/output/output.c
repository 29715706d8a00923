/* output.c: the table of profile writers and the frame label they share. */
#include "output.h"

#include <string.h>

#include "../ruby/walk.h"

const struct output_format output_formats[] = {
	{ "collapsed", "folded stacks, one line per unique stack with its count (flamegraph.pl, speedscope)",
	  output_collapsed, 0 },
	{ "summary", "functions by % self and % total", output_summary, 0 },
	{ "summary-by-line", "file:line by % self and % total", output_summary_by_line, 0 },
	/* new formats above this line */
	{ NULL, NULL, NULL, 0 },
};

const struct output_format *output_find(const char *name)
{
	for (const struct output_format *o = output_formats; o->name; o++)
		if (!strcmp(o->name, name))
			return o;
	return NULL;
}

const char *output_names(void)
{
	static char names[256];
	names[0] = '\0';
	for (const struct output_format *o = output_formats; o->name; o++) {
		if (names[0])
			strncat(names, ", ", sizeof(names) - strlen(names) - 1);
		strncat(names, o->name, sizeof(names) - strlen(names) - 1);
	}
	return names;
}

void output_frame_label(const struct profile *p, uint32_t frame, int with_line, char *out, size_t cap)
{
	const struct profile_frame *f = &p->frames[frame];
	const char *name = strtab_get(&p->strs, f->name), *path = strtab_get(&p->strs, f->path);
	if (f->kind == PROFILE_FRAME_THREAD || f->kind == FRAME_TRUNCATED || !*path)
		snprintf(out, cap, "%s", name);
	else if (with_line && f->line > 0)
		snprintf(out, cap, "%s (%s:%d)", name, path, f->line);
	else
		snprintf(out, cap, "%s (%s)", name, path);
}
