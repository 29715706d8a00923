/* top.c: `rbscope top`, a live view of the functions using the most time in a Ruby process. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "../builtin.h"
#include "../lib/err.h"
#include "../output/output.h"
#include "../profile/sampler.h"

const char usage_top[] =
	"usage: rbscope top -p PID [-r HZ] [-i SECS] [-w SECS] [-n COUNT]\n"
	"\n"
	"Show the functions of PID by % self and % total over a sliding window, refreshed live.\n"
	"q or Ctrl-C quits. When standard output is not a terminal, print a table every interval.\n"
	"\n"
	"  -p, --pid PID         the Ruby process\n"
	"  -r, --rate HZ         samples per second (default 99)\n"
	"  -i, --interval SECS   refresh every SECS seconds (default 1)\n"
	"  -w, --window SECS     the sliding window (default 10)\n"
	"  -n, --count COUNT     stop after COUNT refreshes (default: never)\n"
	"      --ruby-version X.Y.Z  read it with that release's layout, whatever it says it runs\n";

/*
 * The sliding window is kept as two profiles: the current half-window and
 * the one before it. A table shows both together; each half-window the old
 * one is dropped, so a table covers between one half and one whole window.
 */
struct window {
	struct profile halves[2];
	struct sampler samplers[2];
	int cur;
};

static int write_table(struct window *w, struct ruby_target *t, int tty, int pid)
{
	/* Merge the two halves into one profile for the summary writer. */
	struct profile merged;
	int err = profile_init(&merged);
	uint32_t *buf = malloc((WALK_MAX_FRAMES + 2) * sizeof(*buf));
	for (int h = 0; !err && buf && h < 2; h++) {
		const struct profile *p = &w->halves[h];
		for (uint32_t i = 0; !err && i < p->nstacks; i++) {
			const struct profile_stack *s = &p->stacks[i];
			for (uint32_t j = 0; j < s->len; j++) {
				const struct profile_frame *f = &p->frames[p->pool[s->start + j]];
				int64_t id = profile_frame(&merged, strtab_get(&p->strs, f->name), strtab_get(&p->strs, f->path),
							   f->line, f->kind);
				buf[j] = (uint32_t)id;
			}
			int64_t st = profile_stack(&merged, buf, s->len);
			if (st >= 0)
				merged.stacks[st].count += s->count;
		}
	}
	if (tty)
		fputs("\033[H\033[2J", stdout);
	time_t now = time(NULL);
	char when[32];
	strftime(when, sizeof(when), "%H:%M:%S", localtime(&now));
	printf("rbscope top - pid %d - ruby %s - %s - %llu samples in window\n", pid, t->version, when,
	       (unsigned long long)profile_total(&merged));
	if (!err)
		err = output_summary(&merged, stdout);
	if (!tty)
		printf("\n");
	fflush(stdout);
	free(buf);
	profile_free(&merged);
	return err;
}

int cmd_top(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' }, { "rate", required_argument, NULL, 'r' },
		{ "interval", required_argument, NULL, 'i' }, { "window", required_argument, NULL, 'w' },
		{ "count", required_argument, NULL, 'n' }, { "ruby-version", required_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' }, { 0 },
	};
	int pid = 0, c, rc;
	double rate = 99, interval = 1, window = 10;
	long count = -1;
	while ((c = getopt_long(argc, argv, "p:r:i:w:n:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if ((rc = parse_pid(optarg, &pid)))
				return rc;
			break;
		case 'r': rate = atof(optarg); break;
		case 'i': interval = atof(optarg); break;
		case 'w': window = atof(optarg); break;
		case 'n': count = atol(optarg); break;
		case 'V': builtin_attach.version = optarg; break;
		case 'h': fputs(usage_top, stdout); return EXIT_OK;
		default: fputs(usage_top, stderr); return EXIT_USAGE;
		}
	}
	if (!pid || optind < argc || rate < 1 || rate > 10000 || interval <= 0 || window <= 0) {
		fputs(usage_top, stderr);
		return EXIT_USAGE;
	}
	struct ruby_target t;
	if ((rc = attach_or_report(&t, pid)))
		return rc;
	builtin_catch_stop();
	int tty = isatty(1) && isatty(0);
	struct termios saved;
	if (tty && !tcgetattr(0, &saved)) {
		struct termios raw = saved;
		raw.c_lflag &= (tcflag_t) ~(ICANON | ECHO);
		tcsetattr(0, TCSANOW, &raw);
	}
	struct window w = { .cur = 0 };
	int err = 0;
	for (int h = 0; h < 2 && !err; h++) {
		err = profile_init(&w.halves[h]);
		err = err ?: sampler_init(&w.samplers[h], &t, &w.halves[h]);
	}
	uint64_t step = (uint64_t)(1e9 / rate), start = sampler_now(), next = start;
	uint64_t next_table = start + (uint64_t)(interval * 1e9), next_half = start + (uint64_t)(window / 2 * 1e9);
	while (!err && !builtin_stop && count != 0) {
		err = sampler_tick(&w.samplers[w.cur], sampler_now() - start);
		uint64_t now = sampler_now();
		if (now >= next_table) {
			err = err ?: write_table(&w, &t, tty, pid);
			next_table += (uint64_t)(interval * 1e9);
			if (count > 0)
				count--;
		}
		if (now >= next_half) {
			w.cur ^= 1;
			profile_free(&w.halves[w.cur]);
			sampler_free(&w.samplers[w.cur]);
			err = err ?: profile_init(&w.halves[w.cur]);
			err = err ?: sampler_init(&w.samplers[w.cur], &t, &w.halves[w.cur]);
			next_half += (uint64_t)(window / 2 * 1e9);
		}
		next += step;
		now = sampler_now();
		int wait_ms = next > now ? (int)((next - now) / 1000000) : 0;
		struct pollfd pfd = { 0, POLLIN, 0 };
		if (tty && poll(&pfd, 1, wait_ms) > 0) {
			char key;
			if (read(0, &key, 1) == 1 && (key == 'q' || key == 'Q'))
				builtin_stop = 1;
		} else if (!tty && next > now) {
			struct timespec ts = { (time_t)((next - now) / 1000000000ULL), (long)((next - now) % 1000000000ULL) };
			nanosleep(&ts, NULL);
		}
		if (next < now)
			next = now;
	}
	if (tty)
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
	return err ? err_report(err, "sampling process %d", pid) : EXIT_OK;
}
