/* latency.c: `rbscope latency -p PID PROVIDER:PROBE`: a live histogram of a probe's first argument, fed by the agent, without bpftrace. */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "../agent/client.h"
#include "../agent/hist.h"
#include "../agent/hist_stats.h"
#include "../agent/proto.h"
#include "../builtin.h"
#include "../lib/clock.h"
#include "../lib/err.h"
#include "../lib/opt.h"
#include "agent_helpers.h"

struct latency_opts {
	int pid, json;
	const char *probe;
	double interval, duration;
	double unit_ns; /* 0: plain numbers */
};

/* A value for people: a time when a unit was given, else a number with K/M/G (powers of 1024, as bpftrace). */
static void fmt_value(char *buf, size_t cap, double v, double unit_ns)
{
	if (unit_ns > 0) {
		double ns = v * unit_ns;
		static const struct { double div; const char *sfx; } u[] = { { 1e9, "s" }, { 1e6, "ms" }, { 1e3, "us" }, { 1, "ns" } };
		for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++)
			if (ns >= u[i].div || u[i].div == 1) {
				snprintf(buf, cap, "%.3g%s", ns / u[i].div, u[i].sfx);
				return;
			}
	}
	static const char *sfx[] = { "", "K", "M", "G", "T", "P", "E" };
	int k = 0;
	while (v >= 1024 && k < 6 && fmod(v, 1024) == 0) {
		v /= 1024;
		k++;
	}
	snprintf(buf, cap, "%.0f%s", v, sfx[k]);
}

static void print_hist(FILE *out, const struct latency_opts *o, const struct agent_hist *h, const uint64_t *b,
		       uint64_t count, uint64_t prev_count, double secs)
{
	double p50 = hist_percentile(h, b, count, 0.50), p90 = hist_percentile(h, b, count, 0.90), p99 = hist_percentile(h, b, count, 0.99);
	char s50[32], s90[32], s99[32], smax[32], smean[32];
	fmt_value(s50, sizeof(s50), p50, o->unit_ns);
	fmt_value(s90, sizeof(s90), p90, o->unit_ns);
	fmt_value(s99, sizeof(s99), p99, o->unit_ns);
	fmt_value(smax, sizeof(smax), (double)h->max, o->unit_ns);
	fmt_value(smean, sizeof(smean), count ? (double)h->sum / (double)count : 0, o->unit_ns);
	if (o->json) {
		fprintf(out, "{\"probe\":\"%s\",\"count\":%llu,\"negative\":%llu,\"p50\":%.0f,\"p90\":%.0f,\"p99\":%.0f,"
			     "\"min\":%llu,\"max\":%llu,\"sum\":%llu,\"log2\":[",
			o->probe, (unsigned long long)count, (unsigned long long)h->negative, p50, p90, p99,
			(unsigned long long)(count ? h->min : 0), (unsigned long long)h->max, (unsigned long long)h->sum);
		uint64_t rows[HIST_NBUCKETS], lo[HIST_NBUCKETS];
		int n = hist_log2_rows(b, rows, lo), first = 1;
		for (int i = 0; i < n; i++)
			if (rows[i]) {
				fprintf(out, "%s[%llu,%llu]", first ? "" : ",", (unsigned long long)lo[i], (unsigned long long)rows[i]);
				first = 0;
			}
		fputs("]}\n", out);
		return;
	}
	time_t t = time(NULL);
	char ts[16];
	strftime(ts, sizeof(ts), "%H:%M:%S", localtime(&t));
	fprintf(out, "%s %s  count %llu (%.0f/s)  p50 %s  p90 %s  p99 %s  max %s  mean %s\n", ts, o->probe,
		(unsigned long long)count, secs > 0 ? (double)(count - prev_count) / secs : 0.0, s50, s90, s99, smax, smean);
	uint64_t rows[HIST_NBUCKETS], lo[HIST_NBUCKETS], top = 0;
	int n = hist_log2_rows(b, rows, lo), first = -1, last = -1;
	for (int i = 0; i < n; i++)
		if (rows[i]) {
			if (first < 0)
				first = i;
			last = i;
			if (rows[i] > top)
				top = rows[i];
		}
	for (int i = first; first >= 0 && i <= last; i++) {
		char a[32], z[32], label[72], bar[53];
		fmt_value(a, sizeof(a), (double)lo[i], o->unit_ns);
		if (i + 1 < n)
			fmt_value(z, sizeof(z), (double)lo[i + 1], o->unit_ns);
		else
			snprintf(z, sizeof(z), "...");
		if (lo[i] < 2)
			snprintf(label, sizeof(label), "[%s]", a);
		else
			snprintf(label, sizeof(label), "[%s, %s)", a, z);
		int w = (int)(rows[i] * 52 / top);
		memset(bar, '@', (size_t)w);
		memset(bar + w, ' ', (size_t)(52 - w));
		bar[52] = '\0';
		fprintf(out, "%-20s %8llu |%s|\n", label, (unsigned long long)rows[i], bar);
	}
	if (h->negative)
		fprintf(out, "(%llu negative values, not in the histogram)\n", (unsigned long long)h->negative);
	fputc('\n', out);
}

/*
 * Print the histogram as it is now, copied into b first (the agent keeps adding to it); *count is the
 * total at the last print, and becomes this one's. 0, or the exit code of a failed write.
 */
static int show(const struct latency_opts *o, const struct agent_hist *h, uint64_t *b, uint64_t *count, double secs)
{
	memcpy(b, h->bucket, sizeof(h->bucket));
	uint64_t n = 0;
	for (unsigned i = 0; i < HIST_NBUCKETS; i++)
		n += b[i];
	print_hist(stdout, o, h, b, n, *count, secs);
	*count = n;
	if (fflush(stdout) || ferror(stdout))
		return err_report(errno == EPIPE ? -EPIPE : -EIO, "cannot write the histogram");
	return 0;
}

static int unit_option(struct opt_parser *p, void *data, const char *arg)
{
	double *unit_ns = data;
	*unit_ns = !strcmp(arg, "ns") ? 1 : !strcmp(arg, "us") ? 1e3 : !strcmp(arg, "ms") ? 1e6 : !strcmp(arg, "s") ? 1e9 : 0;
	return *unit_ns ? 0 : opt_fail(p, "bad unit '%s': ns, us, ms or s", arg);
}

/* 0, or the exit code the command ends with (--help: -1), having printed why. */
static int parse(int argc, char **argv, struct latency_opts *o)
{
	o->interval = 1;
	const struct opt opts[] = {
		OPT_PID(&o->pid, "the Ruby process (which runs the rbscope gem)"), AGENT_CLI_OPT_INJECT,
		OPT_DOUBLE('i', "interval", &o->interval, "SECS", "print every SECS seconds (default 1)", 1e-3, 1e7,
			   "seconds, from 0.001 to 10000000"),
		OPT_DOUBLE('d', "duration", &o->duration, "SECS", "stop after SECS seconds", 1e-3, 1e7,
			   "seconds, from 0.001 to 10000000"),
		OPT_CALL('u', "unit", &o->unit_ns, "UNIT", "the values are durations in UNIT (ns, us, ms or s): print them as times",
			 unit_option),
		OPT_FLAG(0, "json", &o->json, "one JSON object per interval instead of the histogram"),
		OPT_END(),
	};
	const struct opt_cmd cmd = {
		.usage = "rbscope latency -p PID [--inject [--agent DIRS]] PROVIDER:PROBE [-i SECS] [-d SECS] [-u ns|us|ms|s] [--json]",
		.about = "Show a live histogram of the first argument of a USDT probe declared with Rbscope::Provider\n"
			 "(e.g. the duration_ns of Rbscope.trace_latency), with its count and p50/p90/p99, every interval.\n"
			 "The probe counts as enabled while this runs, as it does under bpftrace. Ctrl-C stops.",
		.opts = opts,
	};
	int first, code;
	if (builtin_parse(&cmd, argc, argv, &first, &code))
		return code == EXIT_OK ? -1 : code;
	if ((code = builtin_need_pid(o->pid)))
		return code;
	if (first + 1 != argc)
		return error(first == argc ? "which probe? give PROVIDER:PROBE" : "give one PROVIDER:PROBE"), EXIT_USAGE;
	o->probe = argv[first];
	if (!strchr(o->probe, ':'))
		return error("bad probe '%s': PROVIDER:PROBE is expected", o->probe), EXIT_USAGE;
	return 0;
}

static int run(const struct latency_opts *o, struct agent_conn *c)
{
	char *reply;
	int fd = -1;
	int code = agent_cli_ask(c, o->pid, AGENT_LATENCY, o->probe, strlen(o->probe), -1, AGENT_CLI_TIMEOUT_MS, &reply,
				 NULL, &fd);
	if (code)
		return code;
	size_t size = (sizeof(struct agent_hist) + 4095) & ~(size_t)4095;
	struct agent_hist *h = fd >= 0 ? mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
	if (fd >= 0)
		close(fd);
	if (h == MAP_FAILED || h->magic != HIST_MAGIC || h->version != HIST_VERSION) {
		free(reply);
		if (h != MAP_FAILED)
			munmap(h, size);
		return error("process %d: the agent's histogram is not usable", o->pid), EXIT_AGENT;
	}
	fprintf(stderr, "rbscope: process %d: %s (Ctrl-C to stop)\n", o->pid, reply ? reply : o->probe);
	free(reply);

	uint64_t start = clock_now_ns(), last = start, prev = 0;
	uint64_t deadline = o->duration > 0 ? start + (uint64_t)(o->duration * 1e9) : UINT64_MAX;
	uint64_t *b = malloc(sizeof(h->bucket));
	int gone = 0;
	code = EXIT_OK;
	if (!b) {
		munmap(h, size);
		return err_report(-ENOMEM, "latency");
	}
	while (!builtin_stop && !gone && code == EXIT_OK) {
		uint64_t now = clock_now_ns(), next = last + (uint64_t)(o->interval * 1e9);
		if (next > deadline)
			next = deadline;
		if (now < next) {
			/* Wait for the interval, or for the process to go away (its end of the socket closes). */
			struct pollfd pf = { .fd = c->fd, .events = POLLIN };
			int ms = (int)((next - now + 999999) / 1000000);
			if (poll(&pf, 1, ms) > 0)
				gone = 1;
			continue;
		}
		code = show(o, h, b, &prev, (double)(now - last) / 1e9);
		last = now;
		if (now >= deadline)
			break;
	}
	if ((builtin_stop || gone) && code == EXIT_OK) /* the final picture */
		code = show(o, h, b, &prev, (double)(clock_now_ns() - last) / 1e9);
	if (!gone) {
		char *bye = NULL;
		agent_request(c, AGENT_STOP, "", 0, -1, 2000, &bye, NULL, NULL);
		free(bye);
	} else {
		fprintf(stderr, "rbscope: process %d exited\n", o->pid);
	}
	free(b);
	munmap(h, size);
	return code;
}

int cmd_latency(int argc, char **argv)
{
	struct latency_opts o = { 0 };
	int code = parse(argc, argv, &o);
	if (code)
		return code < 0 ? EXIT_OK : code;
	struct agent_conn c;
	code = agent_cli_connect(&c, o.pid);
	if (code)
		return code;
	builtin_catch_stop();
	code = run(&o, &c);
	agent_close(&c);
	return code;
}
