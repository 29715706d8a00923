/* heap_live.c: `rbscope heap live -p PID`: which allocation sites hold objects now, and which keep growing. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../agent/client.h"
#include "../agent/proto.h"
#include "../alloc/alloc.h"
#include "../alloc/live.h"
#include "../builtin.h"
#include "../lib/clock.h"
#include "../lib/err.h"
#include "../output/output.h"
#include "agent_helpers.h"
#include "heap_live.h"

struct live_opts {
	int pid, top, interval;
	double duration, every;
	const char *output;
	const struct output_format *format;
};

static void print_look(const struct live_opts *o, const struct alloc_reader *r, const struct live_sites *s, double secs)
{
	const struct ring_allocs *c = &r->last;
	printf("-- %.1f s: %llu objects sampled and followed, %llu alive (one in %llu)", secs,
	       (unsigned long long)r->samples, (unsigned long long)(r->samples - r->freed),
	       (unsigned long long)r->p->alloc_interval);
	if (c->compactions)
		printf("; the heap was compacted (GC.compact ran %llu time%s): the objects it moved are no longer followed "
		       "and read as alive", (unsigned long long)c->compactions, c->compactions == 1 ? "" : "s");
	if (c->untracked || c->frees_lost || r->free_unknown)
		printf("; %llu not followed (the table full), %llu frees not seen (the ring full)",
		       (unsigned long long)c->untracked, (unsigned long long)(c->frees_lost + r->free_unknown));
	printf("\n%12s %14s %12s %12s  %s\n", "objects", "bytes", "since last", "since first", "site (allocated at, class)");
	char label[1200];
	int shown = 0;
	for (uint32_t i = 0; i < s->n && shown < o->top; i++) {
		const struct live_site *site = &s->v[i];
		if (!site->objects)
			continue;
		live_site_label(r, site, label, sizeof(label));
		printf("%12llu %14llu %+12lld %+12lld  %s\n", (unsigned long long)site->objects, (unsigned long long)site->bytes,
		       (long long)(site->objects - site->prev), (long long)(site->objects - site->first), label);
		shown++;
	}
	fflush(stdout);
}

static int parse(int argc, char **argv, struct live_opts *o)
{
	*o = (struct live_opts){ .top = 10, .interval = ALLOC_INTERVAL, .every = 10 };
	const struct opt opts[] = {
		OPT_PID(&o->pid, "the Ruby process"),
		AGENT_CLI_OPT_INJECT,
		OPT_SECONDS('d', "duration", &o->duration, "stop after SECS seconds (default: Ctrl-C or the process exits)"),
		OPT_SECONDS(0, "every", &o->every, "look every SECS seconds (default 10)"),
		OPT_INT(0, "top", &o->top, "N", "the N sites holding the most objects (default 10)", 1, 1e6,
			"a positive number of sites"),
		OPT_INT(0, "interval", &o->interval, "N",
			"sample one allocation in N, at random (default " ALLOC_INTERVAL_TEXT ")", 1, 1e9,
			"a positive number of allocations"),
		OPT_STRING('o', "output", &o->output, "FILE",
			   "also write what is alive at the end as a profile (pprof: inuse_objects,\n"
			   "inuse_space); its ending picks the format"),
		BUILTIN_OPT_FORMAT(&o->format),
		OPT_END(),
	};
	const struct opt_cmd cmd = {
		.name = "heap live",
		.usage = "rbscope heap live -p PID [--inject] [-d SECS] [--every SECS] [--top N] [--interval N] [-o FILE]",
		.about = "Sample the process's allocations (through its agent, as `record --mode alloc`) and follow each\n"
			 "sampled object until it is freed: every --every seconds, the allocation sites (line and class)\n"
			 "whose objects are alive, estimated, with how much each grew since the look before and since its\n"
			 "first. At the end, the sites that keep growing, each with its stack: counting only the\n"
			 "objects followed since before the look before (garbage is freed sooner), the least of them in\n"
			 "each third of the looks above the third's before, and three samples more at the last look than\n"
			 "at the first (a leak; a full cache's entries are freed as they are replaced, a connection's\n"
			 "buffers made once come in a step).",
		.opts = opts,
	};
	int first, code;
	if (builtin_parse(&cmd, argc, argv, &first, &code))
		return code == EXIT_OK ? -1 : code;
	if ((code = builtin_no_args(argc, argv, first)) || (code = builtin_need_pid(o->pid)))
		return code;
	if (o->format && !o->output)
		return error("-f goes with -o FILE"), EXIT_USAGE;
	return o->output ? builtin_choose_output(&o->format, &o->output, NULL, NULL, 0) : 0;
}

static int run(const struct live_opts *o, struct agent_conn *c)
{
	struct profile p;
	struct alloc_reader r;
	struct live_sites s;
	live_sites_init(&s);
	int err = profile_init(&p);
	if (err)
		return err_report(err, "following allocations");
	int code = agent_cli_allocs(c, o->pid, (uint64_t)o->interval, ALLOC_LIVE, &p, &r, 0);
	if (code) {
		profile_free(&p);
		return code;
	}
	uint64_t start = clock_now_ns(), next = start + (uint64_t)(o->every * 1e9);
	uint64_t deadline = o->duration > 0 ? start + (uint64_t)(o->duration * 1e9) : UINT64_MAX;
	int gone = 0;
	while (!builtin_stop && !code) {
		if (alloc_reader_drain_all(&r) < 0) {
			code = (error("process %d: the allocation ring is corrupt", o->pid), EXIT_AGENT);
			break;
		}
		uint64_t now = clock_now_ns();
		if (now >= next || now >= deadline) {
			if ((err = live_look(&s, &r)))
				code = err_report(err, "following allocations");
			else
				print_look(o, &r, &s, (double)(now - start) / 1e9);
			next += (uint64_t)(o->every * 1e9);
		}
		if (now >= deadline)
			break;
		struct pollfd pf = { .fd = c->fd, .events = POLLIN };
		if (poll(&pf, 1, ALLOC_READ_MS) > 0) {
			gone = 1;
			break;
		}
	}
	if (!gone && agent_stop(c, AGENT_CLI_STOP_MS, code ? NULL : alloc_reader_drain_ctx, &r, &gone) < 0 && !code)
		code = (error("process %d: the allocation ring is corrupt", o->pid), EXIT_AGENT);
	if (!code) {
		char label[1200];
		int n = 0;
		printf("-- sites that keep growing (%u looks):", s.looks);
		for (uint32_t i = 0; i < s.n && s.looks >= 5; i++) {
			const struct live_site *site = &s.v[i];
			if (!live_site_growing(site))
				continue;
			live_site_label(&r, site, label, sizeof(label));
			uint64_t kept = (site->old_last - site->old_first) * (p.alloc_interval ? p.alloc_interval : 1);
			printf("\n  %s: +%llu objects kept (of those a look old or more), %llu alive, allocated by:\n", label,
			       (unsigned long long)kept, (unsigned long long)site->last);
			live_site_stack(stdout, &r, site, 12);
			n++;
		}
		printf("%s\n", s.looks < 5 ? " too few looks to tell (five at least)" : n ? "" : " none");
		if (fflush(stdout) || ferror(stdout))
			code = err_report(-EIO, "cannot write the sites");
	}
	if (!code && o->output) {
		live_to_profile(&r);
		p.duration_ns = clock_now_ns() - start;
		code = builtin_write_profile(o->format, &p, o->output);
	}
	if (gone)
		fprintf(stderr, "rbscope: process %d exited\n", o->pid);
	live_sites_free(&s);
	alloc_reader_free(&r);
	profile_free(&p);
	return code;
}

int cmd_heap_live(int argc, char **argv)
{
	struct live_opts o;
	int code = parse(argc, argv, &o);
	if (code)
		return code < 0 ? EXIT_OK : code;
	struct agent_conn c;
	if ((code = agent_cli_connect(&c, o.pid)))
		return code;
	builtin_catch_stop();
	code = run(&o, &c);
	agent_close(&c);
	return code;
}
