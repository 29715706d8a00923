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
#include "../lib/ticker.h"
#include "../output/output.h"
#include "../profile/sampler.h"
#include "../ruby/vm.h"

/*
 * The sliding window is kept as two profiles: the current half-window and
 * the one before it. A table shows both together; each half-window the old
 * one is dropped, so a table covers between one half and one whole window.
 */
struct window {
	struct profile halves[2];
	struct sampler samplers[2];
	int cur;
	struct ruby_gc_counts gc; /* the VM's GC counts at the last table (gc.have_count: read then) */
};

struct view {
	int tty, by_total, mode, on_cpu, native, no_bpf; /* mode: enum sampler_mode */
	int capture_hz; /* the GVL holder sampled on its own CPU (sampler_capture), 0: not */
	uint64_t period_ns; /* the rate's period */
	int rows; /* the busiest rows to show, or -1: what fits (a terminal) or all */
};

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
static void gc_line(struct window *w, struct ruby_target *t, int cols)
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

static int write_table(struct window *w, struct ruby_target *t, const struct view *v, int pid, double window)
{
	struct profile merged;
	struct summary_row *rows = NULL;
	uint32_t n = 0;
	uint64_t total = 0;
	int err = profile_init(&merged);
	for (int h = 0; !err && h < 2; h++)
		err = profile_merge(&merged, &w->halves[h]);
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
	time_t now = time(NULL);
	char when[32];
	strftime(when, sizeof(when), "%H:%M:%S", localtime(&now));
	int cols = v->tty ? term_cols() : 0;
	/* what the view is first: a narrow terminal cuts the end of the line */
	line(cols, "rbscope top - pid %d - by %s - %s - %llu samples, window %.0f s - ruby %s - %s", pid,
	     v->by_total ? "total" : "self", mode_samples[v->mode], (unsigned long long)total,
	     window, t->version, when);
	char states[160];
	output_states_line(&merged, states, sizeof(states));
	line(cols, "%s", states);
	gc_line(w, t, cols);
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
	if (n > (uint64_t)show && !v->tty)
		printf("(%llu more)\n", (unsigned long long)(n - (uint64_t)show));
	if (!v->tty)
		printf("\n");
	fflush(stdout);
	free(rows);
	profile_free(&merged);
	return ferror(stdout) ? -(errno ?: EIO) : 0;
}

/*
 * Start the window afresh (both halves), each sampler counting by mode; the
 * current one samples the GVL holder on its own CPU (unless --no-bpf or it
 * cannot: then v->capture_hz drops to 0, and why is said once).
 */
static int reset_window(struct window *w, struct ruby_target *t, struct view *v)
{
	int err = 0;
	for (int h = 0; h < 2 && !err; h++) {
		sampler_free(&w->samplers[h]);
		profile_free(&w->halves[h]);
		err = profile_init(&w->halves[h]);
		err = err ?: sampler_init(&w->samplers[h], t, &w->halves[h]);
		w->samplers[h].mode = v->mode;
		w->samplers[h].period_ns = v->period_ns;
		w->samplers[h].native = v->native;
	}
	char why[160];
	if (!err && v->capture_hz && sampler_capture(&w->samplers[w->cur], v->capture_hz, why, sizeof(why))) {
		fprintf(stderr, "rbscope: every thread read from outside, short calls undercounted (as --no-bpf): %s\n", why);
		v->capture_hz = 0;
	}
	return err;
}

int cmd_top(int argc, char **argv)
{
	int pid = 0, count = -1, first, rc;
	double rate = 99, interval = 1, window = 10;
	static const char *const sorts[] = { "self", "total", NULL };
	struct view v = { .rows = -1 };
	const struct opt opts[] = {
		OPT_PID(&pid, "the Ruby process"),
		OPT_DOUBLE('r', "rate", &rate, "HZ", "samples per second (default 99)", 1, 10000,
			   "a number of samples per second from 1 to 10000"),
		OPT_SECONDS('i', "interval", &interval, "refresh every SECS seconds (default 1)"),
		OPT_SECONDS('w', "window", &window, "the sliding window (default 10)"),
		OPT_INT('n', "count", &count, "COUNT", "stop after COUNT refreshes (default: never), as top(1)'s -n", 1,
			1e9, "a positive number of refreshes"),
		OPT_INT(0, "rows", &v.rows, "N",
			"show the N busiest functions (default: what fits the terminal; all when\n"
			"standard output is not one)", 1, 1e6, "a positive number of rows"),
		OPT_CHOICE(0, "sort", &v.by_total, "self|total", "order by self (default) or total", sorts),
		BUILTIN_OPT_MODE(&v.mode),
		OPT_FLAG(0, "on-cpu", &v.on_cpu, "the same as --mode cpu"),
		OPT_FLAG(0, "no-bpf", &v.no_bpf, "read the thread holding the GVL from outside too, as record --no-bpf"),
		OPT_FLAG(0, "native", &v.native,
			 "count the native functions C methods call, as record --native does (with\n"
			 "--no-bpf, a thread on a CPU is stopped while it is unwound)"),
		BUILTIN_OPT_RUBY_VERSION,
		OPT_END(),
	};
	const struct opt_cmd cmd = {
		.usage = "rbscope top -p PID [-r HZ] [-i SECS] [-w SECS] [-n COUNT] [--rows N] [--sort self|total] [--mode wall|cpu|gvl] [--no-bpf] [--native]",
		.about = "Show the functions of PID by % self and % total over a sliding window, refreshed live: a header\n"
			 "and as many of the busiest as the terminal has lines. Keys: s sort by self, t by total, c on-CPU\n"
			 "samples only (or all), q or Ctrl-C quits. When standard output is not a terminal, print a table\n"
			 "every interval.",
		.opts = opts,
	};
	if (builtin_parse(&cmd, argc, argv, &first, &rc))
		return rc;
	if ((rc = builtin_no_args(argc, argv, first)) || (rc = builtin_need_pid(pid)))
		return rc;
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
	struct window w = { .cur = 0 };
	if (v.on_cpu)
		v.mode = SAMPLER_CPU;
	v.capture_hz = sampler_capture_hz(v.mode, 0, v.no_bpf, rate);
	v.period_ns = (uint64_t)(1e9 / rate);
	int err = reset_window(&w, &t, &v);
	uint64_t start = clock_now_ns(), missed = 0, missed_before = 0;
	uint64_t next_table = start + (uint64_t)(interval * 1e9), next_half = start + (uint64_t)(window / 2 * 1e9);
	/* One tick at a random phase in each period, as record's (lib/ticker.h): a fixed step aliases with periodic work. */
	struct ticker tk;
	ticker_init(&tk, rate, start);
	while (!err && !builtin_stop && count != 0) {
		w.samplers[w.cur].ticks_missed = missed - missed_before;
		missed_before = missed;
		err = sampler_tick(&w.samplers[w.cur], clock_now_ns() - start);
		uint64_t now = clock_now_ns();
		if (now >= next_table) {
			err = err ?: write_table(&w, &t, &v, pid, window);
			next_table += (uint64_t)(interval * 1e9);
			if (count > 0)
				count--;
		}
		if (now >= next_half) {
			/* the task clocks go on into the new half */
			struct ruby_capture *cap = w.samplers[w.cur].capture;
			w.samplers[w.cur].capture = NULL;
			w.cur ^= 1;
			profile_free(&w.halves[w.cur]);
			sampler_free(&w.samplers[w.cur]);
			err = err ?: profile_init(&w.halves[w.cur]);
			err = err ?: sampler_init(&w.samplers[w.cur], &t, &w.halves[w.cur]);
			w.samplers[w.cur].mode = v.mode;
			w.samplers[w.cur].period_ns = v.period_ns;
			w.samplers[w.cur].native = v.native;
			w.samplers[w.cur].capture = cap;
			next_half += (uint64_t)(window / 2 * 1e9);
		}
		uint64_t next = ticker_next(&tk, clock_now_ns(), &missed);
		/* Until the next tick: keys on a terminal, else sleep. */
		while (!err && !builtin_stop && (now = clock_now_ns()) < next) {
			struct pollfd pfd = { 0, POLLIN, 0 };
			if (!v.tty) {
				struct timespec ts = { (time_t)((next - now) / 1000000000ULL), (long)((next - now) % 1000000000ULL) };
				nanosleep(&ts, NULL);
				continue;
			}
			char key;
			if (poll(&pfd, 1, (int)((next - now + 999999) / 1000000)) <= 0 || read(0, &key, 1) != 1)
				continue;
			int redraw = 1;
			if (key == 'q' || key == 'Q') {
				builtin_stop = 1;
				redraw = 0;
			} else if (key == 's' || key == 't') {
				v.by_total = key == 't';
			} else if (key == 'c') {
				v.mode = v.mode == SAMPLER_CPU ? SAMPLER_WALL : SAMPLER_CPU;
				err = reset_window(&w, &t, &v); /* what the window held was counted the other way */
			} else {
				redraw = 0;
			}
			if (redraw && !err)
				err = write_table(&w, &t, &v, pid, window);
		}
	}
	if (v.tty)
		tcsetattr(0, TCSANOW, &saved);
	for (int h = 0; h < 2; h++) {
		sampler_free(&w.samplers[h]);
		profile_free(&w.halves[h]);
	}
	ruby_target_detach(&t);
	if (err == ERR_GONE) {
		fprintf(stderr, "rbscope: process %d exited\n", pid);
		return EXIT_OK;
	}
	builtin_hint_children(pid, "`rbscope top -p CHILD` shows each");
	return err ? err_report(err, "sampling process %d", pid) : EXIT_OK;
}
