/* summary.c: functions (or lines) by % self and % total, as a table. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/map.h"
#include "../lib/utf8.h"
#include "output.h"

static int by_self(const void *a, const void *b)
{
	const struct summary_row *x = a, *y = b;
	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	return x->total < y->total ? 1 : x->total > y->total ? -1 : 0;
}

static int by_total(const void *a, const void *b)
{
	const struct summary_row *x = a, *y = b;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return x->self < y->self ? 1 : x->self > y->self ? -1 : 0;
}

void summary_sort(struct summary_row *rows, uint32_t n, int total)
{
	qsort(rows, n, sizeof(*rows), total ? by_total : by_self);
}

/* A frame with no line of its own (the GC, a state, a native function, a C frame of a core): by line, it is its function. */
static int has_line(const struct profile_frame *f)
{
	return f->line > 0 && f->path && f->kind != PROFILE_FRAME_THREAD && f->kind != PROFILE_FRAME_TRUNCATED;
}

/* Group frames by function (name + path) or by line (path + line): frame id -> group id. */
static uint32_t *group_frames(const struct profile *p, int by_line, uint32_t *ngroups)
{
	uint32_t *g = malloc((p->nframes + 1) * sizeof(*g));
	struct map m;
	map_init(&m);
	*ngroups = 0;
	for (uint32_t i = 0; g && i < p->nframes; i++) {
		const struct profile_frame *f = &p->frames[i];
		/* (a line's key has its top bit set: no function's, whose name is a string id under 2^31) */
		uint64_t key = by_line && has_line(f) ? (UINT64_C(1) << 63 | (uint64_t)f->path << 32 | (uint32_t)f->line)
						      : ((uint64_t)f->name << 32 | f->path);
		uint64_t *hit = map_get(&m, key);
		if (hit) {
			g[i] = (uint32_t)*hit;
		} else {
			g[i] = (*ngroups)++;
			map_put(&m, key, g[i]);
		}
	}
	map_free(&m);
	return g;
}

int summary_rows(const struct profile *p, int by_line, struct summary_row **out, uint32_t *nout, uint64_t *total_out)
{
	uint32_t ngroups;
	uint32_t *group = group_frames(p, by_line, &ngroups);
	struct summary_row *rows = calloc(ngroups + 1, sizeof(*rows));
	uint32_t *seen = calloc(ngroups + 1, sizeof(*seen)); /* stack index + 1 that last counted a group */
	if (!group || !rows || !seen) {
		free(group);
		free(rows);
		free(seen);
		return -ENOMEM;
	}
	uint64_t total = 0;
	for (uint32_t i = 0; i < p->nframes; i++)
		rows[group[i]].frame = i;
	for (uint32_t i = 0; i < p->nstacks; i++) {
		const struct profile_stack *s = &p->stacks[i];
		uint64_t w = profile_stack_weight(p, i);
		/* An allocation's class is not a function: the allocating frame's self is what it allocated. */
		uint32_t len = s->len;
		while (len && p->frames[p->pool[s->start + len - 1]].kind == PROFILE_FRAME_CLASS)
			len--;
		if (!w || !s->len)
			continue;
		total += w;
		for (uint32_t j = 0; j < len; j++) {
			uint32_t gid = group[p->pool[s->start + j]];
			uint32_t kind = p->frames[p->pool[s->start + j]].kind;
			if (kind == PROFILE_FRAME_THREAD || (kind == PROFILE_FRAME_LABEL && !output_options.label_frames))
				continue; /* (a request is not a function, unless asked) */
			if (seen[gid] != i + 1) { /* recursion counts once per sample in total */
				seen[gid] = i + 1;
				rows[gid].total += w;
			}
		}
		if (len)
			rows[group[p->pool[s->start + len - 1]]].self += w;
	}
	qsort(rows, ngroups, sizeof(*rows), by_self);
	uint32_t n = 0;
	for (uint32_t i = 0; i < ngroups; i++)
		if (rows[i].self || rows[i].total)
			rows[n++] = rows[i];
	free(group);
	free(seen);
	*out = rows;
	*nout = n;
	*total_out = total;
	return 0;
}

void summary_label(const struct profile *p, const struct summary_row *r, int by_line, char *out, size_t cap)
{
	const struct profile_frame *fr = &p->frames[r->frame];
	if (by_line && has_line(fr))
		snprintf(out, cap, "%s:%d", strtab_get(&p->strs, fr->path), fr->line);
	else if (by_line && fr->line == PROFILE_LINE_UNKNOWN) /* (its function's frames of unknown line) */
		snprintf(out, cap, "%s:? (%s)", strtab_get(&p->strs, fr->path), strtab_get(&p->strs, fr->name));
	else
		output_frame_label(p, r->frame, 0, out, cap);
}

/* Each thread's samples by state, as % of its samples: what it did, not where. */
static void write_thread_states(const struct profile *p, FILE *f)
{
	uint32_t shown = 0;
	for (uint32_t i = 0; i < p->nthreads; i++) {
		uint64_t n = profile_thread_samples(p, i);
		if (!n)
			continue;
		if (!shown++) {
			fprintf(f, "\n%-32s %8s", "thread", "samples");
			for (int k = 0; k < PROFILE_STATES; k++)
				fprintf(f, " %9s", profile_state_name(k));
			fputc('\n', f);
		}
		/* The column is 32 characters: a longer name keeps its start and its tid, "puma srv tp 0... (tid 12)". */
		char ref[24], tid[28];
		const char *name = strtab_get(&p->strs, p->threads[i].name);
		profile_thread_ref(p->threads[i].tid, ref, sizeof(ref));
		int tl = snprintf(tid, sizeof(tid), "(%s)", ref), chars = 0, bytes = 0, cut = 0;
		while (name[bytes]) { /* characters (a byte that is not UTF-8 counts as one) */
			int l = utf8_len((const unsigned char *)name + bytes);
			if (chars == 32 - 4 - tl)
				cut = bytes;
			bytes += l ? l : 1;
			chars++;
		}
		if (!chars)
			fprintf(f, "%-32s", tid);
		else if (chars + 1 + tl <= 32)
			fprintf(f, "%s %s%*s", name, tid, 32 - chars - 1 - tl, "");
		else
			fprintf(f, "%.*s... %s", cut, name, tid);
		fprintf(f, " %8llu", (unsigned long long)n);
		for (int k = 0; k < PROFILE_STATES; k++)
			fprintf(f, " %8.1f%%", 100.0 * (double)p->thread_states[i][k] / (double)n);
		fputc('\n', f);
	}
}

void output_states_line(const struct profile *p, char *out, size_t cap)
{
	uint64_t by[PROFILE_STATES] = { 0 }, n = 0;
	for (uint32_t i = 0; p->thread_states && i < p->nthreads; i++)
		for (int k = 0; k < PROFILE_STATES; k++)
			by[k] += p->thread_states[i][k], n += p->thread_states[i][k];
	size_t len = (size_t)snprintf(out, cap, "states:");
	for (int k = 0; k < PROFILE_STATES && len < cap; k++)
		len += (size_t)snprintf(out + len, cap - len, " %s %.1f%%%s", profile_state_name(k),
					n ? 100.0 * (double)by[k] / (double)n : 0.0, k + 1 < PROFILE_STATES ? "," : "");
}

struct class_row {
	uint32_t name;
	uint64_t objects, bytes;
};

static int by_objects(const void *a, const void *b)
{
	const struct class_row *x = a, *y = b;
	return x->objects != y->objects ? (x->objects < y->objects ? 1 : -1) : (x->bytes < y->bytes) - (x->bytes > y->bytes);
}

/* An allocation profile's objects and bytes by class (its stacks' leaves). */
static int write_classes(const struct profile *p, FILE *f)
{
	struct class_row *rows = calloc(p->nframes + 1, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	uint64_t objects = 0, bytes = 0;
	for (uint32_t i = 0; i < p->nstacks; i++) {
		const struct profile_stack *s = &p->stacks[i];
		if (!s->count || !s->len)
			continue;
		uint32_t leaf = p->pool[s->start + s->len - 1];
		if (p->frames[leaf].kind != PROFILE_FRAME_CLASS)
			continue;
		rows[leaf].name = p->frames[leaf].name;
		rows[leaf].objects += profile_stack_objects(p, i);
		rows[leaf].bytes += profile_stack_bytes(p, i);
		objects += profile_stack_objects(p, i);
		bytes += profile_stack_bytes(p, i);
	}
	qsort(rows, p->nframes, sizeof(*rows), by_objects);
	fprintf(f, "\n%9s %12s %9s %14s  %s\n", "% objects", "objects", "% bytes", "bytes", "class");
	for (uint32_t i = 0; i < p->nframes && rows[i].objects; i++)
		fprintf(f, "%8.2f%% %12llu %8.2f%% %14llu  %s\n", 100.0 * (double)rows[i].objects / (double)objects,
			(unsigned long long)rows[i].objects, bytes ? 100.0 * (double)rows[i].bytes / (double)bytes : 0.0,
			(unsigned long long)rows[i].bytes, strtab_get(&p->strs, rows[i].name));
	free(rows);
	return 0;
}

static int write_summary(const struct profile *p, FILE *f, int by_line)
{
	struct summary_row *rows;
	uint32_t n;
	uint64_t total;
	int err = summary_rows(p, by_line, &rows, &n, &total);
	if (err)
		return err;
	int allocs = p->kind == PROFILE_ALLOCS;
	if (allocs) {
		uint64_t objects = 0, bytes = 0, samples = 0;
		for (uint32_t i = 0; i < p->nstacks; i++) {
			objects += profile_stack_objects(p, i);
			bytes += profile_stack_bytes(p, i);
			samples += p->stacks[i].count;
		}
		fprintf(f, "%s: %llu objects, %llu bytes, estimated from %llu samples (one in %llu)",
			p->alloc_live ? "alive (of the objects allocated while followed)" : "allocations",
			(unsigned long long)objects, (unsigned long long)bytes, (unsigned long long)samples,
			(unsigned long long)p->alloc_interval);
		if (p->alloc_total && !p->alloc_live)
			fprintf(f, "; the VM counted %llu objects", (unsigned long long)p->alloc_total);
		fprintf(f, "\nself: %s allocated in the function (or at the line) itself; total: with its callees\n\n",
			p->by_bytes ? "bytes" : "objects");
	}
	fprintf(f, "%8s %8s %10s %10s  %s\n", "% self", "% total", "self", "total", by_line ? "location" : "function");
	char label[1024];
	for (uint32_t i = 0; i < n && total; i++) {
		const struct summary_row *r = &rows[i];
		summary_label(p, r, by_line, label, sizeof(label));
		fprintf(f, "%7.2f%% %7.2f%% %10llu %10llu  %s\n", 100.0 * (double)r->self / (double)total,
			100.0 * (double)r->total / (double)total, (unsigned long long)r->self,
			(unsigned long long)r->total, label);
	}
	free(rows);
	if (allocs)
		return write_classes(p, f) ?: ferror(f) ? -(errno ?: EIO) : 0;
	/* How much of it was waiting, not working: samples in a method that waits (idle, as profile_stack_state
	   sees it: under the native frames --native puts over it too). */
	uint64_t waiting = 0;
	for (uint32_t i = 0; i < p->nstacks; i++)
		if (p->stacks[i].count && profile_stack_state(p, i) == PROFILE_STATE_IDLE)
			waiting += p->stacks[i].count;
	if (waiting && total)
		fprintf(f, "(%.2f%% of the samples wait: sleep, locks, queues, I/O readiness, children; --mode cpu leaves "
			   "them out)\n", 100.0 * (double)waiting / (double)total);
	write_thread_states(p, f);
	return ferror(f) ? -(errno ?: EIO) : 0;
}

int output_summary(const struct profile *p, FILE *f)
{
	return write_summary(p, f, 0);
}

int output_summary_by_line(const struct profile *p, FILE *f)
{
	return write_summary(p, f, 1);
}
