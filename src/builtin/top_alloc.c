/* top_alloc.c: `rbscope top --mode alloc`: the sites allocating the most over a sliding window, live, through the agent. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../agent/client.h"
#include "../alloc/alloc.h"
#include "../alloc/sites.h"
#include "../builtin.h"
#include "../lib/clock.h"
#include "../lib/err.h"
#include "agent_helpers.h"
#include "top_alloc.h"

/* 1234567 as "1.2M", "12.3K", "987" */
static void human(char *out, size_t cap, double v, const char *unit)
{
	if (v >= 1e9)
		snprintf(out, cap, "%.1fG%s", v / 1e9, unit);
	else if (v >= 1e6)
		snprintf(out, cap, "%.1fM%s", v / 1e6, unit);
	else if (v >= 1e4)
		snprintf(out, cap, "%.1fK%s", v / 1e3, unit);
	else
		snprintf(out, cap, "%.0f%s", v, unit);
}

static int table(const struct top_alloc_view *v, struct alloc_window *w, const struct profile *p, uint64_t now,
		 uint64_t start)
{
	struct alloc_site_row *rows;
	uint32_t n;
	uint64_t span, objects, bytes;
	int err = alloc_window_look(w, p, now, start, v->by_bytes, &rows, &n, &span, &objects, &bytes);
	if (err)
		return err;
	double secs = span ? (double)span / 1e9 : 1;
	long show = v->rows >= 0 ? v->rows : v->tty ? v->lines - 5 : (long)n;
	if (show < 1)
		show = 1;
	if (v->tty)
		fputs("\033[H\033[2J", stdout);
	time_t clock = time(NULL);
	char when[32], o[32], b[32];
	strftime(when, sizeof(when), "%H:%M:%S", localtime(&clock));
	human(o, sizeof(o), (double)objects / secs, "");
	human(b, sizeof(b), (double)bytes / secs, "B");
	printf("rbscope top - pid %d - allocations by %s, one in %llu sampled - window %.0f s - %s objects/s, %s/s - %s\n",
	       v->pid, v->by_bytes ? "bytes" : "objects", (unsigned long long)(p->alloc_interval ? p->alloc_interval : 1),
	       secs, o, b, when);
	if (v->tty)
		printf("keys: b sort by bytes, o by objects, q quit\n");
	printf("%7s %11s %11s  %-48s %s\n", v->by_bytes ? "% bytes" : "% objs", "objects/s", "bytes/s",
	       "site (allocated at, class)", "in");
	for (uint32_t i = 0; i < n && i < (uint64_t)show; i++) {
		char site[512];
		alloc_site_label(p, rows[i].where, rows[i].klass, site, sizeof(site));
		human(o, sizeof(o), (double)rows[i].objects / secs, "");
		human(b, sizeof(b), (double)rows[i].bytes / secs, "B");
		uint64_t part = v->by_bytes ? rows[i].bytes : rows[i].objects, all = v->by_bytes ? bytes : objects;
		/* the Ruby method the line is in, and the C method that allocated when it is one (Class#new) */
		const struct profile_stack *k = &p->stacks[rows[i].stack];
		const char *in = NULL, *via = NULL;
		for (uint32_t j = k->len >= 2 ? k->len - 2 : 0; k->len >= 2 && !in; j--) {
			const struct profile_frame *f = &p->frames[p->pool[k->start + j]];
			if (f->kind == PROFILE_FRAME_RUBY)
				in = strtab_get(&p->strs, f->name);
			else if (!via && f->kind == PROFILE_FRAME_CFUNC)
				via = strtab_get(&p->strs, f->name);
			if (!j)
				break;
		}
		printf("%6.2f%% %11s %11s  %-48s %s%s%s\n", all ? 100.0 * (double)part / (double)all : 0.0, o, b, site,
		       in ? in : via ? via : "?", in && via ? " > " : "", in && via ? via : "");
	}
	free(rows);
	return top_table_end(v->tty, n, (uint64_t)show);
}

int top_table_end(int tty, uint64_t n, uint64_t show)
{
	if (n > show && !tty)
		printf("(%llu more)\n", (unsigned long long)(n - show));
	if (!tty)
		printf("\n");
	fflush(stdout);
	return ferror(stdout) ? -(errno ?: EIO) : 0;
}

int top_alloc_run(struct top_alloc_view *v)
{
	struct agent_conn c;
	int code = agent_cli_connect(&c, v->pid);
	if (code)
		return code;
	struct profile p;
	struct alloc_reader r;
	struct alloc_window w;
	int err = profile_init(&p);
	if (err) {
		agent_close(&c);
		return err_report(err, "top --mode alloc");
	}
	code = agent_cli_allocs(&c, v->pid, v->interval, 0, &p, &r, 0);
	if (code) {
		profile_free(&p);
		agent_close(&c);
		return code;
	}
	uint32_t looks = (uint32_t)(v->window / v->refresh + 0.5);
	err = alloc_window_init(&w, looks ? looks : 1);
	uint64_t start = clock_now_ns(), next = start + (uint64_t)(v->refresh * 1e9);
	int gone = 0, count = v->count;
	while (!err && !builtin_stop && !gone) {
		long got = alloc_reader_drain(&r);
		if (got < 0) {
			code = got == -ENOMEM ? err_report((int)got, "top --mode alloc")
					      : (error("process %d: the allocation ring is corrupt", v->pid), EXIT_AGENT);
			break;
		}
		uint64_t now = clock_now_ns();
		if (now >= next) {
			if ((err = table(v, &w, &p, now, start)))
				break;
			next += (uint64_t)(v->refresh * 1e9);
			if (count > 0 && --count == 0)
				break;
		}
		if (got == ALLOC_DRAIN_BATCH)
			continue;
		/* the ring read every ALLOC_READ_MS; the keys, and the process going away (its socket closes) */
		struct pollfd pf[2] = { { .fd = c.fd, .events = POLLIN }, { .fd = 0, .events = POLLIN } };
		if (poll(pf, v->tty ? 2 : 1, ALLOC_READ_MS) > 0) {
			if (pf[0].revents) {
				gone = 1;
			} else if (v->tty && (pf[1].revents & POLLIN)) {
				char key;
				if (read(0, &key, 1) == 1) {
					if (key == 'q' || key == 'Q')
						builtin_stop = 1;
					else if ((key == 'b' || key == 'o') && v->by_bytes != (key == 'b'))
						v->by_bytes = key == 'b';
				}
			}
		}
	}
	if (!gone && agent_stop(&c, AGENT_CLI_STOP_MS, NULL, NULL, &gone) < 0 && !code)
		code = EXIT_AGENT;
	alloc_window_free(&w);
	alloc_reader_free(&r);
	profile_free(&p);
	agent_close(&c);
	if (gone)
		fprintf(stderr, "rbscope: process %d exited\n", v->pid);
	if (!code && err)
		code = err_report(err, "top --mode alloc, process %d", v->pid);
	return code;
}
