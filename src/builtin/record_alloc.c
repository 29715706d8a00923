/* record_alloc.c: `rbscope record --mode alloc`: allocations sampled by the process's agent, written as a profile. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../agent/client.h"
#include "../agent/proto.h"
#include "../alloc/alloc.h"
#include "../builtin.h"
#include "../lib/clock.h"
#include "../lib/err.h"
#include "../output/output.h"
#include "agent_helpers.h"
#include "record_alloc.h"

static void status_line(const struct alloc_reader *r, uint64_t elapsed, int final)
{
	double secs = (double)elapsed / 1e9;
	fprintf(stderr, "%srbscope: %llu allocations sampled in %.1fs%s", final ? "" : "\r",
		(unsigned long long)r->samples, secs, final ? "\n" : "   ");
}

#define RAW_FLUSH_NS 1000000000ULL /* --raw: written out at least once a second */

/*
 * Read the ring until told to stop, writing --raw (raw, unless NULL) once a second; 0, or the exit code
 * having said why; *gone if the process went away.
 */
static int read_loop(const struct record_alloc_opts *o, struct agent_conn *c, struct alloc_reader *r,
		     struct raw_writer *raw, int *gone)
{
	uint64_t start = clock_now_ns(), last_status = 0, last_flush = start;
	uint64_t deadline = o->duration > 0 ? start + (uint64_t)(o->duration * 1e9) : UINT64_MAX;
	int tty = isatty(2);
	while (!builtin_stop && clock_now_ns() < deadline) {
		long n = alloc_reader_drain(r);
		if (n < 0)
			return n == -ENOMEM ? err_report((int)n, "recording allocations")
					    : (error("process %d: the allocation ring is corrupt", o->pid), EXIT_AGENT);
		uint64_t now = clock_now_ns();
		int err;
		if (raw && now - last_flush >= RAW_FLUSH_NS) {
			if ((err = raw_writer_flush(raw, r->p, r->p->keep_samples_all)))
				return err_report(err, "cannot write '%s'", o->raw);
			last_flush = now;
		}
		if (tty && now - last_status > 250000000ULL) {
			status_line(r, now - start, 0);
			last_status = now;
		}
		if (n == ALLOC_DRAIN_BATCH)
			continue;
		/* Read in batches ALLOC_READ_MS apart, and notice the process going away (its socket closes). */
		struct pollfd pf = { .fd = c->fd, .events = POLLIN };
		if (poll(&pf, 1, ALLOC_READ_MS) > 0) {
			*gone = 1;
			return 0;
		}
	}
	return 0;
}

static int record(const struct record_alloc_opts *o, struct agent_conn *c, struct outfile *out, struct outfile *raw_out)
{
	struct profile p;
	struct alloc_reader r;
	int err = profile_init(&p);
	if (err)
		return err_report(err, "recording allocations");
	p.keep_samples_all = o->format->needs_samples;
	p.keep_samples = o->format->needs_samples || raw_out;
	int code = agent_cli_allocs(c, o->pid, o->interval, o->no_windows ? ALLOC_NO_WINDOWS : 0, &p, &r, o->threads);
	if (code) {
		profile_free(&p);
		return code;
	}
	struct timespec wall;
	clock_gettime(CLOCK_REALTIME, &wall);
	p.start_ns = (uint64_t)wall.tv_sec * 1000000000u + (uint64_t)wall.tv_nsec;
	p.by_bytes = o->by_bytes;
	uint64_t t0 = clock_now_ns();
	int gone = 0;
	struct raw_writer raw = { 0 };
	if (raw_out && ((code = outfile_begin(raw_out)) || (err = raw_writer_start(&raw, raw_out->f, &p))))
		code = code ?: err_report(err, "cannot write '%s'", o->raw);
	code = code ?: read_loop(o, c, &r, raw_out ? &raw : NULL, &gone);
	if (!gone && agent_stop(c, AGENT_CLI_STOP_MS, code ? NULL : alloc_reader_drain_ctx, &r, &gone) < 0 && !code)
		code = (error("process %d: the allocation ring is corrupt", o->pid), EXIT_AGENT);
	if (!code && alloc_reader_drain_all(&r) < 0)
		code = (error("process %d: the allocation ring is corrupt", o->pid), EXIT_AGENT);
	p.duration_ns = clock_now_ns() - t0;
	if (isatty(2))
		fputc('\n', stderr);
	if (raw_out && raw_out->f) {
		if (!code && (err = raw_writer_finish(&raw, &p, 1)))
			code = err_report(err, "cannot write '%s'", o->raw);
		raw_writer_free(&raw);
		if (fclose(raw_out->f) && !code)
			code = err_report(-errno, "cannot write '%s'", o->raw);
		raw_out->f = NULL;
	}
	if (!code && !r.samples)
		fprintf(stderr, "rbscope: process %d: no allocation was sampled: it allocated fewer objects than one "
			"interval, or none (--interval sets it)\n", o->pid);
	if (!code) {
		if (o->output_made)
			fprintf(stderr, "rbscope: writing %s to %s\n", o->format->name, o->output);
		code = builtin_write_profile_to(o->format, &p, out);
	}
	status_line(&r, p.duration_ns, 1);
	const struct ring_allocs *e = &r.last;
	uint64_t estimate = r.samples * (p.alloc_interval ? p.alloc_interval : o->interval);
	fprintf(stderr,
		"rbscope: %llu objects allocated (the VM's count%s), %llu estimated from the samples (one in %llu); %llu "
		"samples lost (the agent behind), %llu dropped (the ring full), %llu stacks truncated\n",
		(unsigned long long)p.alloc_total, r.ended ? "" : ", up to the last count read",
		(unsigned long long)estimate, (unsigned long long)(p.alloc_interval ? p.alloc_interval : o->interval),
		(unsigned long long)e->lost, (unsigned long long)alloc_reader_dropped(&r), (unsigned long long)r.truncated);
	if (e->den > 1) {
		uint64_t seen = e->seen - r.first.seen;
		uint64_t ns = e->hook_ns - r.first.hook_ns, span = e->ts - r.first.ts;
		fprintf(stderr, "rbscope: the hook was in for %llu windows, %.1f ms of %.1f s (%.2f%%; 1/%llu by design), "
			"which saw %llu of those objects (%.2f%%)\n", (unsigned long long)(e->windows - r.first.windows),
			(double)ns / 1e6, (double)span / 1e9, span ? 100.0 * (double)ns / (double)span : 0.0,
			(unsigned long long)e->den, (unsigned long long)seen,
			p.alloc_total ? 100.0 * (double)seen / (double)p.alloc_total : 0.0);
	}
	if (gone)
		fprintf(stderr, "rbscope: process %d exited; the profile holds what was sampled until then\n", o->pid);
	alloc_reader_free(&r);
	profile_free(&p);
	return code;
}

int record_allocs(const struct record_alloc_opts *o, struct outfile *out, struct outfile *raw_out)
{
	struct agent_conn c;
	int code = agent_cli_connect(&c, o->pid);
	if (code)
		return code;
	code = record(o, &c, out, raw_out);
	agent_close(&c);
	return code;
}
