/* top.c: `rbscope top`, a live view of the functions using the most time in a Ruby process. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "../builtin.h"
#include "../lib/buf.h"
#include "../lib/clock.h"
#include "../lib/err.h"
#include "../output/output.h"
#include "../profile/sampling.h"
#include "../ruby/jit.h"
#include "../ruby/vm.h"
#include "agent_helpers.h"
#include "../alloc/alloc.h"
#include "top_alloc.h"

struct view {
	int tty, by_total, mode, on_cpu, native, no_bpf; /* mode: enum sampler_mode */
	int rows; /* the busiest rows to show, or -1: what fits (a terminal) or all */
	int pid, count; /* count: tables still to show, or -1: no end */
	double interval, window; /* seconds */
	uint64_t next_table; /* when the next table is due (the loop's time) */
	struct ruby_gc_counts gc; /* the VM's GC counts at the last table (gc.have_count: read then) */
};

#define TOP_DONE 1 /* (a consumer's value ending the loop: the tables asked for are shown) */

/* Lines on the terminal, or 0 when standard output is not one. */
static int term_lines(void)
{
	struct winsize ws;
	return ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 ? ws.ws_row : 0;
}

/* Columns on the terminal, or 0 when standard output is not one. */
static int term_cols(void)
{
	struct winsize ws;
	return ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 0;
}

/*
 * One line of the table: on a terminal, cut to its width (at a UTF-8
 * character's start), so that a long label never wraps and scrolls the
 * header off the screen.
 */
static void line(int cols, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(int cols, const char *fmt, ...)
{
	char buf[2048];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	size_t len = n < 0 ? 0 : (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1;
	if (cols > 1 && len > (size_t)cols - 1) {
		len = (size_t)cols - 1;
		while (len && ((unsigned char)buf[len] & 0xc0) == 0x80)
			len--;
	}
	fwrite(buf, 1, len, stdout);
	fputc('\n', stdout);
}

/*
 * The VM's own GC counts and heap slots, read now (as serve's /metrics):
 * collections since the last table, and since the process started.
 */
static void gc_line(struct view *w, struct ruby_target *t, int cols)
{
	struct ruby_gc_counts gc;
	if (ruby_gc_counts(t, &gc) || (!gc.have_count && !gc.have_slots)) {
		line(cols, "gc: not known for this Ruby");
		return;
	}
	struct buf b;
	buf_init(&b, 512);
	buf_adds(&b, "gc: ");
	if (gc.have_count) {
		buf_addf(&b, "%llu collections (%llu major)", (unsigned long long)gc.count, (unsigned long long)gc.major);
		if (gc.have_time)
			buf_addf(&b, ", %.3f s measured in GC", (double)gc.time_ns / 1e9);
		if (w->gc.have_count && gc.count >= w->gc.count) {
			buf_addf(&b, "; since the last refresh: %llu", (unsigned long long)(gc.count - w->gc.count));
			if (gc.have_time && gc.time_ns >= w->gc.time_ns)
				buf_addf(&b, ", %.1f ms", (double)(gc.time_ns - w->gc.time_ns) / 1e6);
		}
	}
	if (gc.have_slots)
		buf_addf(&b, "%sheap slots: %llu live, %llu free", gc.have_count ? "; " : "",
			 (unsigned long long)gc.live_slots, (unsigned long long)gc.free_slots);
	line(cols, "%.*s", (int)b.len, b.data ? b.data : "");
	buf_free(&b);
	w->gc = gc;
}

static const char *const mode_samples[] = { "all samples", "on-CPU samples", "GVL-wait samples" };

/* The table of the window's samples up to now (the loop's time). */
static int write_table(struct view *v, struct sampling *sm, uint64_t now)
{
	struct ruby_target *t = &sm->procs.v[0]->t;
	uint64_t span = (uint64_t)(v->window * 1e9);
	struct profile merged;
	struct summary_row *rows = NULL;
	uint32_t n = 0;
	uint64_t total = 0;
	int err = profile_init(&merged);
	err = err ?: window_copy(&sm->window, &merged, now > span ? now - span : 0, now + 1, NULL, NULL);
	err = err ?: summary_rows(&merged, 0, &rows, &n, &total);
	if (err) {
		profile_free(&merged);
		return err;
	}
	summary_sort(rows, n, v->by_total);
	/* Header (5 lines) and the rows that fit below it, keeping the last line free. */
	long show = v->rows >= 0 ? v->rows : v->tty ? term_lines() - 6 : (long)n;
	if (show < 1)
		show = 1;
	if (v->tty)
		fputs("\033[H\033[2J", stdout);
	time_t clock = time(NULL);
	char when[32];
	strftime(when, sizeof(when), "%H:%M:%S", localtime(&clock));
	int cols = v->tty ? term_cols() : 0;
	/* what the view is first: a narrow terminal cuts the end of the line */
	const char *jit = ruby_jit_on(t);
	line(cols, "rbscope top - pid %d - by %s - %s - %llu samples, window %.0f s - ruby %s%s%s - %s", v->pid,
	     v->by_total ? "total" : "self", mode_samples[v->mode], (unsigned long long)total,
	     v->window, t->version, jit ? " +" : "", jit ? jit : "", when);
	char states[160];
	output_states_line(&merged, states, sizeof(states));
	line(cols, "%s", states);
	gc_line(v, t, cols);
	if (v->tty)
		line(cols, "keys: s sort by self, t by total, c %s, q quit", v->mode == SAMPLER_CPU ? "all samples" : "on-CPU only");
	line(cols, "%8s %8s %10s %10s  %s", "% self", "% total", "self", "total", "function");
	char label[1024];
	size_t width = cols > 45 ? (size_t)cols - 1 - 41 : 0; /* the columns before the function take 41 */
	for (uint32_t i = 0; i < n && i < (uint64_t)show && total; i++) {
		output_frame_label_fit(&merged, rows[i].frame, width, label, sizeof(label));
		line(cols, "%7.2f%% %7.2f%% %10llu %10llu  %s", 100.0 * (double)rows[i].self / (double)total,
		     100.0 * (double)rows[i].total / (double)total, (unsigned long long)rows[i].self,
		     (unsigned long long)rows[i].total, label);
	}
	free(rows);
	profile_free(&merged);
	return top_table_end(v->tty, n, (uint64_t)show);
}

static int top_ticked(void *ctx, struct sampling *sm, uint64_t now)
{
	struct view *v = ctx;
	if (now < v->next_table)
		return 0;
	int err = write_table(v, sm, now);
	if (err)
		return err;
	v->next_table += (uint64_t)(v->interval * 1e9);
	if (v->count > 0 && --v->count == 0)
		return TOP_DONE;
	/* (at each table, not each tick: what is dropped is moved down) */
	uint64_t span = (uint64_t)(v->window * 1e9);
	return sampling_keep(sm, now > span ? now - span : 0, now);
}

/* Until the next tick (deadline): the keys pressed on the terminal. */
static int top_keys(void *ctx, struct sampling *sm, uint64_t deadline)
{
	struct view *v = ctx;
	uint64_t now = clock_now_ns();
	struct pollfd pfd = { 0, POLLIN, 0 };
	char key;
	if (now >= deadline || poll(&pfd, 1, (int)((deadline - now + 999999) / 1000000)) <= 0 || read(0, &key, 1) != 1)
		return 0;
	if (key == 'q' || key == 'Q') {
		builtin_stop = 1;
		return 0;
	}
	if (key == 's' || key == 't') {
		v->by_total = key == 't';
	} else if (key == 'c') {
		v->mode = v->mode == SAMPLER_CPU ? SAMPLER_WALL : SAMPLER_CPU;
		int err = sampling_set_mode(sm, v->mode); /* what the window held was counted the other way */
		if (err)
			return err;
	} else {
		return 0;
	}
	return write_table(v, sm, sampling_now(sm));
}

/* --mode: the sampler's modes (builtin_modes' order), then the agent's allocations (top_alloc.c). */
static const char *const top_modes[] = { "wall", "cpu", "gvl", "alloc", NULL };
#define TOP_ALLOC 3

int cmd_top(int argc, char **argv)
{
	int first, rc, alloc_interval = 0, by_bytes = 0;
	double rate = 99;
	static const char *const sorts[] = { "self", "total", NULL };
	struct view v = { .rows = -1, .count = -1, .interval = 1, .window = 10 };
	const struct opt opts[] = {
		OPT_PID(&v.pid, "the Ruby process"),
		OPT_DOUBLE('r', "rate", &rate, "HZ", "samples per second (default 99)", 1, 10000,
			   "a number of samples per second from 1 to 10000"),
		OPT_SECONDS('i', "interval", &v.interval, "refresh every SECS seconds (default 1)"),
		OPT_SECONDS('w', "window", &v.window, "the sliding window (default 10)"),
		OPT_INT('n', "count", &v.count, "COUNT", "stop after COUNT refreshes (default: never), as top(1)'s -n", 1,
			1e9, "a positive number of refreshes"),
		OPT_INT(0, "rows", &v.rows, "N",
			"show the N busiest functions (default: what fits the terminal; all when\n"
			"standard output is not one)", 1, 1e6, "a positive number of rows"),
		OPT_CHOICE(0, "sort", &v.by_total, "self|total", "order by self (default) or total", sorts),
		OPT_CHOICE(0, "mode", &v.mode, "wall|cpu|gvl|alloc",
			   "what the table counts: every thread at every tick (wall, the default), the\n"
			   "CPU time each thread ran (cpu), threads waiting for the GVL (gvl), or the\n"
			   "objects each site allocates, sampled by the agent (alloc: see --inject)", top_modes),
		OPT_INT(0, "alloc-interval", &alloc_interval, "N",
			"--mode alloc: sample one allocation in N, at random (default " ALLOC_INTERVAL_TEXT ")", 1, 1 << 30,
			"a positive number of allocations"),
		OPT_FLAG(0, "bytes", &by_bytes, "--mode alloc: rank the sites by bytes, not objects"),
		AGENT_CLI_OPT_INJECT,
		OPT_FLAG(0, "on-cpu", &v.on_cpu, "the same as --mode cpu"),
		OPT_FLAG(0, "no-bpf", &v.no_bpf, "read the thread holding the GVL from outside too, as record --no-bpf"),
		OPT_FLAG(0, "native", &v.native,
			 "count the native functions C methods call, as record --native does (with\n"
			 "--no-bpf, a thread on a CPU is stopped while it is unwound)"),
		BUILTIN_OPT_RUBY_VERSION,
		OPT_END(),
	};
	const struct opt_cmd cmd = {
		.usage = "rbscope top -p PID [-r HZ] [-i SECS] [-w SECS] [-n COUNT] [--rows N] [--sort self|total] [--mode wall|cpu|gvl|alloc] [--no-bpf] [--native] [--alloc-interval N] [--bytes] [--inject]",
		.about = "Show the functions of PID by % self and % total over a sliding window, refreshed live: a header\n"
			 "and as many of the busiest as the terminal has lines. Keys: s sort by self, t by total, c on-CPU\n"
			 "samples only (or all), q or Ctrl-C quits. When standard output is not a terminal, print a table\n"
			 "every interval. With --mode alloc, the sites allocating the most, through the process's agent.",
		.opts = opts,
	};
	if (builtin_parse(&cmd, argc, argv, &first, &rc))
		return rc;
	if ((rc = builtin_no_args(argc, argv, first)) || (rc = builtin_need_pid(v.pid)))
		return rc;
	if (v.mode != TOP_ALLOC && (alloc_interval || by_bytes || agent_cli_inject))
		return error("top: --alloc-interval, --bytes and --inject are for --mode alloc"), EXIT_USAGE;
	if (v.mode == TOP_ALLOC && (v.on_cpu || v.native || v.no_bpf))
		return error("top: --mode alloc counts what the agent samples: no --on-cpu, --native or --no-bpf"), EXIT_USAGE;
	if (v.mode == TOP_ALLOC) {
		struct top_alloc_view a = {
			.pid = v.pid, .tty = isatty(1) && isatty(0), .lines = term_lines(), .rows = v.rows, .count = v.count,
			.refresh = v.interval, .window = v.window, .interval = alloc_interval ? (uint64_t)alloc_interval : ALLOC_INTERVAL,
			.by_bytes = by_bytes,
		};
		builtin_catch_stop();
		struct termios saved;
		int raw_keys = a.tty && !tcgetattr(0, &saved);
		if (raw_keys) {
			struct termios raw = saved;
			raw.c_lflag &= (tcflag_t) ~(ICANON | ECHO);
			tcsetattr(0, TCSANOW, &raw);
		}
		rc = top_alloc_run(&a);
		if (raw_keys)
			tcsetattr(0, TCSANOW, &saved);
		return rc;
	}
	int pid = v.pid;
	struct ruby_target t;
	if ((rc = builtin_attach(&t, pid)))
		return rc;
	builtin_catch_stop();
	v.tty = isatty(1) && isatty(0);
	struct termios saved;
	if (v.tty && !tcgetattr(0, &saved)) {
		struct termios raw = saved;
		raw.c_lflag &= (tcflag_t) ~(ICANON | ECHO);
		tcsetattr(0, TCSANOW, &raw);
	}
	if (v.on_cpu)
		v.mode = SAMPLER_CPU;
	/* The window's samples, in one profile renewed as it grows: a table is exactly the last window. */
	const struct sampling_options so = {
		.rate = rate,
		.stop = &builtin_stop,
		.no_bpf = v.no_bpf,
		.procs = { .scope = PROCS_GIVEN, .sampler = { .mode = v.mode, .native = v.native } },
	};
	struct sampling sm;
	int err = sampling_init(&sm, &so, NULL);
	err = err ?: sampling_add(&sm, pid, &t);
	if (err)
		ruby_target_detach(&t);
	if (!err && sm.procs.cfg.capture_hz && !sm.procs.captures)
		fprintf(stderr, "rbscope: every thread read from outside, short calls undercounted (as --no-bpf): %s\n",
			sm.procs.capture_why);
	v.next_table = (uint64_t)(v.interval * 1e9);
	const struct sampling_consumer c = { top_ticked, v.tty ? top_keys : NULL };
	err = err ?: sampling_run(&sm, &c, &v);
	if (err == TOP_DONE)
		err = 0;
	if (v.tty)
		tcsetattr(0, TCSANOW, &saved);
	sampling_free(&sm);
	if (err == ERR_GONE) {
		fprintf(stderr, "rbscope: process %d exited\n", pid);
		return EXIT_OK;
	}
	builtin_hint_children(pid, "`rbscope top -p CHILD` shows each");
	return err ? err_report(err, "sampling process %d", pid) : EXIT_OK;
}
