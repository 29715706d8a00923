/* output.c: the table of profile writers and the frame label they share. */
#include "output.h"

#include <string.h>


struct output_options output_options = { .flame_min_width = 0.0001 };

const struct output_format output_formats[] = {
	{ "flamegraph", "interactive SVG flame graph: hover, click to zoom, search (any browser)", output_flamegraph, 0, 0 },
	{ "collapsed", "folded stacks, one line per unique stack with its count (flamegraph.pl, speedscope)",
	  output_collapsed, 0, 0 },
	{ "summary", "functions by % self and % total", output_summary, 0, 0 },
	{ "summary-by-line", "file:line by % self and % total", output_summary_by_line, 0, 0 },
	{ "html", "one self-contained page: flame graph, summary tables, threads, metadata", output_html, 1, 0 },
	{ "pprof", "gzipped perftools.profiles.Profile protobuf with thread and endpoint labels (go tool pprof)",
	  output_pprof, 1, 1 },
	{ "callgrind", "callgrind profile with inclusive call costs (KCachegrind, QCachegrind, callgrind_annotate)",
	  output_callgrind, 0, 0 },
	{ "speedscope", "speedscope JSON, a timeline per thread (samples weighted by time), a profile per endpoint",
	  output_speedscope, 1, 1 },
	{ "firefox", "Gecko profile JSON with a track per thread, its states and requests as markers (profiler.firefox.com)",
	  output_firefox, 1, 1 },
	/* new formats above this line */
	{ NULL, NULL, NULL, 0, 0 },
};

const struct output_format *output_find(const char *name)
{
	for (const struct output_format *o = output_formats; o->name; o++)
		if (!strcmp(o->name, name))
			return o;
	return NULL;
}

/* File name endings that choose a format, for -o without -f; the first one per format is its default. */
static const struct {
	const char *format, *suffix;
} SUFFIXES[] = {
	{ "flamegraph", ".svg" }, { "html", ".html" }, { "html", ".htm" }, { "speedscope", ".speedscope.json" },
	{ "firefox", ".gecko.json" }, { "pprof", ".pb.gz" }, { "pprof", ".pprof" }, { "collapsed", ".collapsed" },
	{ "collapsed", ".folded" }, { "summary", ".summary.txt" }, { "summary-by-line", ".lines.txt" },
};

const struct output_format *output_for_path(const char *path)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	if (!strncmp(base, "callgrind.out", 13))
		return output_find("callgrind");
	size_t n = strlen(base);
	for (size_t i = 0; i < sizeof(SUFFIXES) / sizeof(SUFFIXES[0]); i++) {
		size_t k = strlen(SUFFIXES[i].suffix);
		if (n > k && !strcmp(base + n - k, SUFFIXES[i].suffix))
			return output_find(SUFFIXES[i].format);
	}
	return NULL;
}

const char *output_endings(void)
{
	static char list[512];
	if (list[0])
		return list;
	size_t len = 0;
	for (size_t i = 0; i < sizeof(SUFFIXES) / sizeof(SUFFIXES[0]) && len < sizeof(list); i++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s (%s), ", SUFFIXES[i].suffix, SUFFIXES[i].format);
	if (len < sizeof(list))
		snprintf(list + len, sizeof(list) - len, "callgrind.out.* (callgrind)");
	return list;
}

const char *output_suffix(const struct output_format *o)
{
	if (!strcmp(o->name, "callgrind"))
		return ".callgrind.out";
	for (size_t i = 0; i < sizeof(SUFFIXES) / sizeof(SUFFIXES[0]); i++)
		if (!strcmp(SUFFIXES[i].format, o->name))
			return SUFFIXES[i].suffix;
	return ".txt";
}

int output_text(const struct output_format *o)
{
	return !strcmp(o->name, "collapsed") || !strcmp(o->name, "summary") || !strcmp(o->name, "summary-by-line");
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

/* path from its gem's directory, or from Ruby's own library ("ruby/3.1.0/..."), or as it is. */
static const char *short_path(const char *path)
{
	const char *gems = NULL, *lib = NULL;
	for (const char *q = strstr(path, "/gems/"); q; q = strstr(q + 1, "/gems/"))
		gems = q + 6;
	if (gems && *gems)
		return gems;
	for (const char *q = strstr(path, "/lib/ruby/"); q; q = strstr(q + 1, "/lib/ruby/"))
		lib = q + 5;
	return lib && *lib ? lib : path;
}

void output_frame_label_fit(const struct profile *p, uint32_t frame, size_t width, char *out, size_t cap)
{
	const struct profile_frame *f = &p->frames[frame];
	const char *name = strtab_get(&p->strs, f->name), *path = strtab_get(&p->strs, f->path);
	if (f->kind == PROFILE_FRAME_THREAD || f->kind == PROFILE_FRAME_TRUNCATED || f->kind == PROFILE_FRAME_LABEL || !*path) {
		snprintf(out, cap, "%s", name);
		return;
	}
	path = short_path(path);
	size_t room = width ? width : SIZE_MAX, need = strlen(name) + 3 + strlen(path);
	if (need <= room) {
		snprintf(out, cap, "%s (%s)", name, path);
		return;
	}
	if (room < strlen(name) + 3 + 3 + 8) { /* too narrow for enough of the path to tell files apart */
		snprintf(out, cap, "%s", name);
		return;
	}
	size_t keep = room - strlen(name) - 3 - 3;
	const char *tail = path + strlen(path) - keep;
	while (*tail && ((unsigned char)*tail & 0xc0) == 0x80) /* not in the middle of a character */
		tail++;
	snprintf(out, cap, "%s (...%s)", name, tail);
}

void output_frame_label(const struct profile *p, uint32_t frame, int with_line, char *out, size_t cap)
{
	const struct profile_frame *f = &p->frames[frame];
	const char *name = strtab_get(&p->strs, f->name), *path = strtab_get(&p->strs, f->path);
	if (f->kind == PROFILE_FRAME_THREAD || f->kind == PROFILE_FRAME_TRUNCATED || f->kind == PROFILE_FRAME_LABEL || !*path)
		snprintf(out, cap, "%s", name);
	else if (with_line && f->line > 0)
		snprintf(out, cap, "%s (%s:%d)", name, path, f->line);
	else if (with_line && f->line == PROFILE_LINE_UNKNOWN)
		snprintf(out, cap, "%s (%s:?)", name, path);
	else
		snprintf(out, cap, "%s (%s)", name, path);
}
