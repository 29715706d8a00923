/* firefox.c: the Gecko profile format that the Firefox Profiler imports, one thread per tid. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/buf.h"
#include "../lib/map.h"
#include "../lib/json.h"
#include "output.h"
#include "thread_samples.h"
#include "../lib/vec.h"

/*
 * The format version written. Everything here has kept its shape up to the
 * profiler's current version (36); the profiler upgrades older versions
 * itself, and the sources table (required from 33) is one its upgrader adds.
 */
#define GECKO_VERSION 29
#define LABEL_MAX (1 << 20)

enum { CATEGORY_RUBY, CATEGORY_C, CATEGORY_OTHER, CATEGORY_IDLE, CATEGORY_GC, CATEGORY_NATIVE };
static const char categories[] =
	"[{\"name\":\"Ruby\",\"color\":\"red\",\"subcategories\":[\"Other\"]},"
	"{\"name\":\"C\",\"color\":\"blue\",\"subcategories\":[\"Other\"]},"
	"{\"name\":\"Other\",\"color\":\"grey\",\"subcategories\":[\"Other\"]},"
	"{\"name\":\"Idle\",\"color\":\"transparent\",\"subcategories\":[\"Other\"]},"
	"{\"name\":\"GC / CC\",\"color\":\"orange\",\"subcategories\":[\"Other\"]},"
	"{\"name\":\"Native\",\"color\":\"green\",\"subcategories\":[\"Other\"]}]";

struct gecko_stack {
	uint32_t prefix; /* a stack index + 1, 0 for a root */
	uint32_t frame;
};

/* One thread's tables, built from the samples as they are written. */
struct gecko_thread {
	uint32_t *frames; /* a table frame -> the profile's frame id */
	uint32_t nframes;
	size_t frames_cap;
	struct gecko_stack *stacks;
	uint32_t nstacks;
	size_t stacks_cap;
	struct map frame_index;  /* profile frame id -> table frame */
	struct map stack_index;  /* prefix << 32 | table frame -> table stack */
	struct map sample_stack; /* profile stack id -> table stack + 1, 0 for an empty stack */
	int keep_thread_roots;
};

/* Milliseconds, exactly: the format's times are fractional ms. */
static void write_ms(FILE *f, uint64_t ns)
{
	fprintf(f, "%llu.%06llu", (unsigned long long)(ns / 1000000), (unsigned long long)(ns % 1000000));
}

/* array with room for element n (grown, *cap updated), or NULL when out of memory. */
static void *reserve(void *array, uint32_t n, size_t *cap, size_t size)
{
	return n < UINT32_MAX / 2 ? vec_grow(array, n, cap, size) : NULL;
}

/* The table frame of profile frame id, added on first use; negative on error. */
static int64_t table_frame(struct gecko_thread *g, uint32_t id)
{
	uint64_t *hit = map_get(&g->frame_index, id);
	if (hit)
		return (int64_t)*hit;
	uint32_t *frames = reserve(g->frames, g->nframes, &g->frames_cap, sizeof(*frames));
	if (!frames)
		return -ENOMEM;
	g->frames = frames;
	int err = map_put(&g->frame_index, id, g->nframes);
	if (err)
		return err;
	frames[g->nframes] = id;
	return g->nframes++;
}

/* The table stack (+ 1, 0 if empty) of profile stack s: its frames as a path of prefixes. */
static int64_t table_stack(struct gecko_thread *g, const struct profile *p, uint32_t s)
{
	uint64_t *hit = map_get(&g->sample_stack, s);
	if (hit)
		return (int64_t)*hit;
	const struct profile_stack *st = &p->stacks[s];
	uint32_t prefix = 0;
	for (uint32_t j = 0; j < st->len; j++) {
		uint32_t id = p->pool[st->start + j];
		/* Each thread is its own track: a --threads root frame would only repeat its name. The request
		   served is a marker, a frame only with --label-frames. */
		if ((p->frames[id].kind == PROFILE_FRAME_THREAD && !g->keep_thread_roots) ||
		    (p->frames[id].kind == PROFILE_FRAME_LABEL && !output_options.label_frames))
			continue;
		int64_t frame = table_frame(g, id);
		if (frame < 0)
			return frame;
		uint64_t key = (uint64_t)prefix << 32 | (uint64_t)frame;
		hit = map_get(&g->stack_index, key);
		if (hit) {
			prefix = (uint32_t)*hit + 1;
			continue;
		}
		struct gecko_stack *stacks = reserve(g->stacks, g->nstacks, &g->stacks_cap, sizeof(*stacks));
		if (!stacks)
			return -ENOMEM;
		g->stacks = stacks;
		int err = map_put(&g->stack_index, key, g->nstacks);
		if (err)
			return err;
		stacks[g->nstacks] = (struct gecko_stack){ prefix, (uint32_t)frame };
		prefix = ++g->nstacks;
	}
	int err = map_put(&g->sample_stack, s, prefix);
	return err ? err : (int64_t)prefix;
}

static int write_samples(struct gecko_thread *g, const struct profile *p, const struct thread_samples *ts,
			 uint32_t t, FILE *f)
{
	fputs("\"samples\":{\"schema\":{\"stack\":0,\"time\":1,\"eventDelay\":2},\"data\":[", f);
	for (uint64_t k = ts->start[t]; k < ts->start[t + 1]; k++) {
		const struct profile_sample *s = &ts->samples[ts->order[k]];
		int64_t stack = table_stack(g, p, s->stack);
		if (stack < 0)
			return (int)stack;
		fputs(k > ts->start[t] ? ",\n[" : "\n[", f);
		if (stack)
			fprintf(f, "%lld,", (long long)stack - 1);
		else
			fputs("null,", f);
		write_ms(f, s->t_ns);
		fputs(",0]", f);
	}
	fputs("]}", f);
	return 0;
}

static int category_of(const struct profile_frame *fr)
{
	switch (fr->kind) {
	case PROFILE_FRAME_RUBY: return CATEGORY_RUBY;
	case PROFILE_FRAME_CFUNC: return CATEGORY_C;
	case PROFILE_FRAME_WAIT:
	case PROFILE_FRAME_STATE: return CATEGORY_IDLE; /* off the CPU: waiting for the GVL, blocked, asleep */
	case PROFILE_FRAME_GC: return CATEGORY_GC;
	case PROFILE_FRAME_NATIVE: return CATEGORY_NATIVE;
	}
	return CATEGORY_OTHER;
}

static int state_category(int state)
{
	return state == PROFILE_STATE_RUNNING ? CATEGORY_RUBY : state == PROFILE_STATE_GC ? CATEGORY_GC : CATEGORY_IDLE;
}

/* A marker's state: its name, or for a thread blocked in a named system call "blocked: read". */
static void write_state_marker(const struct profile *p, FILE *f, int *first, uint32_t strings, int state,
			       uint32_t syscall, uint64_t from, uint64_t to)
{
	fprintf(f, "%s[%u,", *first ? "\n" : ",\n", strings + (uint32_t)state);
	write_ms(f, from);
	fputc(',', f);
	write_ms(f, to);
	fprintf(f, ",1,%d,{\"type\":\"ThreadState\",\"state\":", state_category(state));
	const char *name = syscall ? strtab_get(&p->strs, syscall) + 1 : NULL; /* "blocked: read)" */
	if (name) { /* (only a blocked sample has one) */
		char buf[96];
		snprintf(buf, sizeof(buf), "%.*s", (int)strcspn(name, ")"), name);
		json_write_string(f, buf);
	} else {
		json_write_string(f, profile_state_name(state));
	}
	fputs("}]", f);
	*first = 0;
}

static void write_label_marker(const struct gecko_thread *g, const struct profile *p, FILE *f, int *first,
			       int64_t label, uint64_t from, uint64_t to)
{
	uint64_t *name = map_get(&g->frame_index, (uint64_t)label); /* (its string: its frame's, added before) */
	if (!name)
		return;
	fprintf(f, "%s[%llu,", *first ? "\n" : ",\n", (unsigned long long)*name);
	write_ms(f, from);
	fputc(',', f);
	write_ms(f, to);
	fprintf(f, ",1,%d,{\"type\":\"Request\",\"endpoint\":", CATEGORY_RUBY);
	json_write_string(f, strtab_get(&p->strs, p->frames[label].name));
	fputs("}]", f);
	*first = 0;
}

/* The requests the thread served, interval markers named after each (runs of samples with its label frame). */
static void write_label_markers(const struct gecko_thread *g, const struct profile *p, const struct thread_samples *ts,
				uint32_t t, int *first, FILE *f)
{
	int64_t label = -1;
	uint64_t from = 0, last = 0;
	for (uint64_t k = ts->start[t]; k < ts->start[t + 1] && !ts->synthetic; k++) {
		const struct profile_sample *s = &ts->samples[ts->order[k]];
		int64_t now = profile_stack_label(p, s->stack);
		int gap = label >= 0 && s->t_ns - last > 4 * ts->period_ns;
		if (label >= 0 && (now != label || gap))
			write_label_marker(g, p, f, first, label, from, gap ? last + ts->period_ns : s->t_ns);
		if (now != label || gap)
			label = now, from = s->t_ns;
		last = s->t_ns;
	}
	if (label >= 0)
		write_label_marker(g, p, f, first, label, from, last + ts->period_ns);
}

/*
 * The thread's states as interval markers, one per run of samples in the
 * same state (blocked in the same system call, with --syscalls): a track
 * that shows when it ran, waited for the GVL, blocked. A run ends at the
 * next sample in another state, or a period after its last sample when the
 * thread was not seen for longer. The markers' names are strings from index
 * strings on (see write_tables).
 */
static void write_markers(const struct gecko_thread *g, const struct profile *p, const struct thread_samples *ts,
			  uint32_t t, uint32_t strings, FILE *f)
{
	fputs("\"markers\":{\"schema\":{\"name\":0,\"startTime\":1,\"endTime\":2,\"phase\":3,\"category\":4,"
	      "\"data\":5},\"data\":[", f);
	int first = 1, state = -1;
	uint32_t syscall = 0;
	uint64_t from = 0, last = 0;
	for (uint64_t k = ts->start[t]; k < ts->start[t + 1] && !ts->synthetic; k++) {
		const struct profile_sample *s = &ts->samples[ts->order[k]];
		int now = profile_stack_state(p, s->stack);
		int64_t leaf = profile_stack_syscall(p, s->stack);
		uint32_t in = leaf >= 0 ? p->frames[leaf].name : 0;
		int gap = state >= 0 && s->t_ns - last > 4 * ts->period_ns;
		int change = now != state || in != syscall;
		if (state >= 0 && (change || gap))
			write_state_marker(p, f, &first, strings, state, syscall, from, gap ? last + ts->period_ns : s->t_ns);
		if (change || gap)
			state = now, syscall = in, from = s->t_ns;
		last = s->t_ns;
	}
	if (state >= 0)
		write_state_marker(p, f, &first, strings, state, syscall, from, last + ts->period_ns);
	write_label_markers(g, p, ts, t, &first, f);
	fputs("]}", f);
}

/*
 * The stack and frame tables, and the strings: frame i's location is string
 * i. A Ruby frame's location is "name (path:line)", which the profiler
 * reads as a function with a file; other frames are their bare name.
 */
static int write_tables(const struct gecko_thread *g, const struct profile *p, struct buf *b, FILE *f)
{
	fputs(",\n\"stackTable\":{\"schema\":{\"prefix\":0,\"frame\":1},\"data\":[", f);
	for (uint32_t i = 0; i < g->nstacks; i++) {
		fputs(i ? ",\n[" : "\n[", f);
		if (g->stacks[i].prefix)
			fprintf(f, "%u,%u]", g->stacks[i].prefix - 1, g->stacks[i].frame);
		else
			fprintf(f, "null,%u]", g->stacks[i].frame);
	}
	fputs("]},\n\"frameTable\":{\"schema\":{\"location\":0,\"relevantForJS\":1,\"innerWindowID\":2,"
	      "\"implementation\":3,\"line\":4,\"column\":5,\"category\":6,\"subcategory\":7},\"data\":[", f);
	for (uint32_t i = 0; i < g->nframes; i++) {
		const struct profile_frame *fr = &p->frames[g->frames[i]];
		fprintf(f, "%s[%u,false,null,null,", i ? ",\n" : "\n", i);
		if (fr->line > 0 && fr->kind != PROFILE_FRAME_THREAD && fr->kind != PROFILE_FRAME_TRUNCATED)
			fprintf(f, "%d", (int)fr->line);
		else
			fputs("null", f);
		fprintf(f, ",null,%d,0]", category_of(fr));
	}
	fputs("]},\n\"stringTable\":[", f);
	for (uint32_t i = 0; i < g->nframes; i++) {
		const struct profile_frame *fr = &p->frames[g->frames[i]];
		const char *name = strtab_get(&p->strs, fr->name), *path = strtab_get(&p->strs, fr->path);
		fputs(i ? ",\n" : "\n", f);
		if (fr->kind != PROFILE_FRAME_RUBY || !*path || (fr->line <= 0 && fr->line != PROFILE_LINE_UNKNOWN)) {
			json_write_string(f, name);
			continue;
		}
		int err = fr->line == PROFILE_LINE_UNKNOWN ? json_write_stringf(f, b, "%s (%s:?)", name, path)
							   : json_write_stringf(f, b, "%s (%s:%d)", name, path, (int)fr->line);
		if (err)
			return err;
	}
	for (int k = 0; k < PROFILE_STATES; k++) { /* the markers' names */
		fputs(g->nframes || k ? ",\n" : "\n", f);
		json_write_string(f, profile_state_name(k));
	}
	fputs("]", f);
	return 0;
}

static int write_thread(const struct profile *p, const struct thread_samples *ts, uint32_t t, struct buf *b, FILE *f)
{
	struct gecko_thread g = { .keep_thread_roots = ts->synthetic };
	map_init(&g.frame_index);
	map_init(&g.stack_index);
	map_init(&g.sample_stack);
	char tmp[32];
	const char *command = strtab_get(&p->strs, p->command);
	fputs("{\"name\":", f);
	json_write_string(f, thread_samples_name(ts, p, t, tmp, sizeof(tmp)));
	fprintf(f, ",\"tid\":%d,\"pid\":%d,\"processType\":\"default\",\"processName\":", (int)ts->tids[t], p->pid);
	json_write_string(f, *command ? command : "ruby");
	fputs(",\"registerTime\":", f);
	write_ms(f, ts->samples[ts->order[ts->start[t]]].t_ns);
	fputs(",\"unregisterTime\":null,\n", f);
	int err = write_samples(&g, p, ts, t, f);
	/* the requests' names are their frames' strings: in the table before the states' names start */
	for (uint64_t k = ts->start[t]; k < ts->start[t + 1] && !err; k++) {
		int64_t label = profile_stack_label(p, ts->samples[ts->order[k]].stack);
		if (label >= 0 && table_frame(&g, (uint32_t)label) < 0)
			err = -ENOMEM;
	}
	if (!err) {
		fputs(",\n", f);
		write_markers(&g, p, ts, t, g.nframes, f);
	}
	err = err ?: write_tables(&g, p, b, f);
	fputs("}", f);
	free(g.frames);
	free(g.stacks);
	map_free(&g.frame_index);
	map_free(&g.stack_index);
	map_free(&g.sample_stack);
	return err;
}

static int write_meta(const struct profile *p, const struct thread_samples *ts, struct buf *b, FILE *f)
{
	uint64_t end = p->duration_ns;
	if (ts->nsamples && ts->samples[ts->nsamples - 1].t_ns + ts->period_ns > end)
		end = ts->samples[ts->nsamples - 1].t_ns + ts->period_ns;
	const char *version = strtab_get(&p->strs, p->ruby_version);
	fprintf(f, "\"meta\":{\"version\":%d,\"startTime\":", GECKO_VERSION);
	write_ms(f, p->start_ns);
	fputs(",\"shutdownTime\":null,\"interval\":", f);
	write_ms(f, ts->period_ns);
	fputs(",\"profilingStartTime\":0,\"profilingEndTime\":", f);
	write_ms(f, end);
	fputs(",\"processType\":0,\"stackwalk\":0,\"debug\":0,\"gcpoison\":0,\"asyncstack\":0,"
	      "\"platform\":\"Linux\",\"product\":", f);
	int err = json_write_stringf(f, b, "rbscope (Ruby %s)", *version ? version : "unknown");
	fprintf(f, ",\n\"categories\":%s,\"markerSchema\":[{\"name\":\"ThreadState\",\"display\":[\"marker-chart\","
		   "\"marker-table\",\"timeline-overview\"],\"chartLabel\":\"{marker.data.state}\",\"tooltipLabel\":"
		   "\"{marker.data.state}\",\"tableLabel\":\"{marker.data.state}\",\"data\":[{\"key\":\"state\","
		   "\"label\":\"State\",\"format\":\"string\",\"searchable\":true}]},{\"name\":\"Request\",\"display\":"
		   "[\"marker-chart\",\"marker-table\",\"timeline-overview\"],\"chartLabel\":\"{marker.data.endpoint}\","
		   "\"tooltipLabel\":\"{marker.data.endpoint}\",\"tableLabel\":\"{marker.data.endpoint}\",\"data\":"
		   "[{\"key\":\"endpoint\",\"label\":\"Endpoint\",\"format\":\"string\",\"searchable\":true}]}]}",
		categories);
	return err;
}

int output_firefox(const struct profile *p, FILE *f)
{
	struct thread_samples ts;
	int err = thread_samples_init(&ts, p);
	if (err)
		return err;
	struct buf b = BUF_INIT(LABEL_MAX);
	fputc('{', f);
	err = write_meta(p, &ts, &b, f);
	fputs(",\n\"libs\":[],\"pausedRanges\":[],\"processes\":[],\n\"threads\":[", f);
	for (uint32_t t = 0; t < ts.nthreads && !err && !ferror(f); t++) {
		fputs(t ? ",\n" : "\n", f);
		err = write_thread(p, &ts, t, &b, f);
	}
	fputs("]}\n", f);
	buf_free(&b);
	thread_samples_free(&ts);
	return err;
}
