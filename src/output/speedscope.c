/* speedscope.c: the speedscope file format, one sampled profile per thread, each sample weighted by its time. */
#include <errno.h>

#include "../lib/buf.h"
#include "../lib/json.h"
#include "output.h"
#include "thread_samples.h"

#define SPEEDSCOPE_SCHEMA "https://www.speedscope.app/file-format-schema.json"
/* Labels are built whole (never cut inside a UTF-8 sequence) up to this size. */
#define LABEL_MAX (1 << 20)

/* Frame ids are the profile's own, so a sample's stack is its pool slice. */
static void write_frame(const struct profile *p, uint32_t id, FILE *f)
{
	const struct profile_frame *fr = &p->frames[id];
	const char *path = strtab_get(&p->strs, fr->path);
	fputs("{\"name\":", f);
	json_write_string(f, strtab_get(&p->strs, fr->name));
	if (*path && fr->kind != PROFILE_FRAME_THREAD && fr->kind != PROFILE_FRAME_TRUNCATED && fr->kind != PROFILE_FRAME_LABEL) {
		fputs(",\"file\":", f);
		json_write_string(f, path);
		if (fr->line > 0)
			fprintf(f, ",\"line\":%d", (int)fr->line);
	}
	fputc('}', f);
}

static void write_stack(const struct profile *p, const struct thread_samples *ts, uint32_t stack, FILE *f)
{
	const struct profile_stack *s = &p->stacks[stack];
	const char *sep = "";
	fputc('[', f);
	for (uint32_t j = 0; j < s->len; j++) {
		uint32_t id = p->pool[s->start + j];
		/* Each thread is a profile of its own: a --threads root frame would only repeat its name; each
		   request too (write_label): its frame only with --label-frames. */
		if ((p->frames[id].kind == PROFILE_FRAME_THREAD && !ts->synthetic) ||
		    (p->frames[id].kind == PROFILE_FRAME_LABEL && !output_options.label_frames))
			continue;
		fprintf(f, "%s%u", sep, id);
		sep = ",";
	}
	fputc(']', f);
}

/*
 * Thread t's samples as one profile; with states, each sample's stack is only
 * its state's frame (ids from p->nframes on, or the "(blocked: read)" frame
 * --syscalls added): the thread's state over time, a track beside its
 * stacks (speedscope has no markers).
 */
static int write_thread(const struct profile *p, const struct thread_samples *ts, uint32_t t, int states, struct buf *b,
			FILE *f)
{
	uint64_t begin = ts->start[t], end = ts->start[t + 1], total = 0;
	uint64_t t0 = ts->samples[ts->order[begin]].t_ns;
	for (uint64_t k = begin; k < end; k++)
		total += thread_samples_weight(ts, t, k);
	char tmp[32];
	const char *name = thread_samples_name(ts, p, t, tmp, sizeof(tmp));
	fputs("{\"type\":\"sampled\",\"name\":", f);
	if (ts->synthetic) {
		json_write_string(f, name);
	} else {
		char ref[24];
		profile_thread_ref(ts->tids[t], ref, sizeof(ref));
		int err = json_write_stringf(f, b, "%s (%s)%s", name, ref, states ? " states" : "");
		if (err)
			return err;
	}
	const char *unit = p->kind != PROFILE_ALLOCS ? "nanoseconds" : p->by_bytes ? "bytes" : "none";
	if (p->kind == PROFILE_ALLOCS)
		t0 = 0; /* (a weight that is not time starts at 0) */
	fprintf(f, ",\"unit\":\"%s\",\"startValue\":%llu,\"endValue\":%llu,\n\"samples\":[", unit,
		(unsigned long long)t0, (unsigned long long)(t0 + total));
	for (uint64_t k = begin; k < end; k++) {
		fputs(k > begin ? ",\n" : "", f);
		uint32_t stack = ts->samples[ts->order[k]].stack;
		int64_t call = states ? profile_stack_syscall(p, stack) : -1;
		if (call >= 0)
			fprintf(f, "[%u]", (uint32_t)call); /* blocked, in the call --syscalls named */
		else if (states)
			fprintf(f, "[%u]", p->nframes + (uint32_t)profile_stack_state(p, stack));
		else
			write_stack(p, ts, stack, f);
	}
	fputs("],\n\"weights\":[", f);
	for (uint64_t k = begin; k < end; k++)
		fprintf(f, "%s%llu", k > begin ? "," : "", (unsigned long long)thread_samples_weight(ts, t, k));
	fputs("]}", f);
	return 0;
}

/* The samples of the request whose label frame is label, every thread's, as a profile of their own. */
static int write_label(const struct profile *p, const struct thread_samples *ts, uint32_t label, struct buf *b, FILE *f)
{
	fputs("{\"type\":\"sampled\",\"name\":", f);
	int err = json_write_stringf(f, b, "endpoint %s", strtab_get(&p->strs, p->frames[label].name));
	uint64_t total = 0, per = p->kind != PROFILE_ALLOCS && ts->period_ns ? ts->period_ns : 1;
	for (uint32_t i = 0; i < p->nstacks; i++)
		if (profile_stack_label(p, i) == (int64_t)label)
			total += profile_stack_weight(p, i) * per;
	const char *unit = p->kind != PROFILE_ALLOCS ? "nanoseconds" : p->by_bytes ? "bytes" : "none";
	fprintf(f, ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%llu,\n\"samples\":[", unit,
		(unsigned long long)total);
	const char *sep = "";
	for (uint32_t i = 0; i < p->nstacks; i++) {
		if (profile_stack_label(p, i) != (int64_t)label || !profile_stack_weight(p, i))
			continue;
		fputs(sep, f);
		write_stack(p, ts, i, f);
		sep = ",\n";
	}
	fputs("],\n\"weights\":[", f);
	sep = "";
	for (uint32_t i = 0; i < p->nstacks; i++) {
		if (profile_stack_label(p, i) != (int64_t)label || !profile_stack_weight(p, i))
			continue;
		fprintf(f, "%s%llu", sep, (unsigned long long)(profile_stack_weight(p, i) * per));
		sep = ",";
	}
	fputs("]}", f);
	return err;
}

int output_speedscope(const struct profile *p, FILE *f)
{
	struct thread_samples ts;
	int err = thread_samples_init(&ts, p);
	if (err)
		return err;
	struct buf b = BUF_INIT(LABEL_MAX);
	const char *command = strtab_get(&p->strs, p->command);
	fputs("{\"$schema\":\"" SPEEDSCOPE_SCHEMA "\",\n\"exporter\":\"rbscope\",\"name\":", f);
	err = *command ? json_write_stringf(f, &b, "%s (pid %d)", command, p->pid) : json_write_stringf(f, &b, "pid %d", p->pid);
	fputs(",\n\"shared\":{\"frames\":[", f);
	for (uint32_t i = 0; i < p->nframes; i++) {
		fputs(i ? ",\n" : "\n", f);
		write_frame(p, i, f);
	}
	for (int k = 0; k < PROFILE_STATES; k++)
		fprintf(f, "%s{\"name\":\"(%s)\"}", p->nframes || k ? ",\n" : "\n", profile_state_name(k));
	fputs("]},\n\"profiles\":[", f);
	/* Each thread's stacks, then each thread's states (a synthetic --threads view has no states of its own). */
	for (uint32_t i = 0; i < ts.nthreads * (ts.synthetic ? 1 : 2) && !err && !ferror(f); i++) {
		fputs(i ? ",\n" : "\n", f);
		err = write_thread(p, &ts, i % ts.nthreads, i >= ts.nthreads, &b, f);
	}
	/* and each request's samples, all threads' (a profile per endpoint) */
	for (uint32_t i = 0; i < p->nframes && !err && !ferror(f); i++)
		if (p->frames[i].kind == PROFILE_FRAME_LABEL) {
			fputs(ts.nthreads ? ",\n" : "\n", f);
			err = write_label(p, &ts, i, &b, f);
		}
	fputs("]}\n", f);
	buf_free(&b);
	thread_samples_free(&ts);
	return err;
}
