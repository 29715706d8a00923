/* record.c: `rbscope record`, sample a Ruby process (or a command it starts) into a profile. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../builtin.h"
#include "../lib/clock.h"
#include "../lib/err.h"
#include "../lib/ticker.h"
#include "../output/output.h"
#include "../profile/procset.h"
#include "../profile/sampler.h"
#include "../proc/task.h"

struct record_opts {
	int pid;
	double rate, duration;
	const char *output, *raw;
	int output_made; /* output named by rbscope, not the user */
	char output_buf[64];
	const struct output_format *format;
	int threads, on_cpu, subprocesses, blocking, mode, syscalls, native, no_bpf;
	char **command;
};

/* 0, or the exit code the command ends with (--help: EXIT_OK), having printed why. */
static int parse_args(int argc, char **argv, struct record_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->rate = 99;
	const struct opt opts[] = {
		OPT_PID(&o->pid, "the Ruby process to sample"),
		OPT_DOUBLE('r', "rate", &o->rate, "HZ", "samples per second (default 99, at most 10000)", 1, 10000,
			   "a number of samples per second from 1 to 10000"),
		OPT_SECONDS('d', "duration", &o->duration, "stop after SECS seconds (default: Ctrl-C or the process exits)"),
		OPT_STRING('o', "output", &o->output, "FILE",
			   "write the profile to FILE; its ending picks the format (.svg, .html,\n"
			   ".speedscope.json, .gecko.json, .pb.gz, callgrind.out.*, .collapsed)\n"
			   "(default: standard output, or rbscope-PID-TIME.svg when that is a terminal)"),
		BUILTIN_OPT_FORMAT(&o->format),
		BUILTIN_OPT_FLAME,
		OPT_STRING(0, "raw", &o->raw, "FILE", "also write every sample with its time and thread, for `rbscope report`"),
		OPT_FLAG(0, "threads", &o->threads, "add a root frame per thread"),
		OPT_FLAG('s', "subprocesses", &o->subprocesses,
			 "also sample the Ruby processes it forks or spawns (Puma, Unicorn, Resque\n"
			 "workers), each under a \"process PID COMMAND\" root frame"),
		OPT_FLAG(0, "blocking", &o->blocking,
			 "stop the process's threads (ptrace) for each sample: every stack is exact,\n"
			 "at a cost to the process; the default never stops it"),
		OPT_FLAG(0, "no-bpf", &o->no_bpf,
			 "read the thread holding the GVL from outside too; by default a BPF\n"
			 "program samples it on its own CPU, where short calls are seen for as\n"
			 "long as they run (it needs root, or CAP_BPF and CAP_PERFMON)"),
		BUILTIN_OPT_MODE(&o->mode),
		OPT_FLAG(0, "on-cpu", &o->on_cpu, "the same as --mode cpu"),
		OPT_FLAG(0, "syscalls", &o->syscalls,
			 "name the system call each blocked thread is in, \"(blocked: read)\" (one\n"
			 "read of /proc per blocked thread per sample)"),
		OPT_FLAG(0, "native", &o->native,
			 "put the native functions the innermost C method called (libc, libz,\n"
			 "extensions) over it, unwound with their call-frame information (a thread\n"
			 "on a CPU from the stack its BPF sample copied; with --no-bpf, stopped\n"
			 "(ptrace) while it is unwound)"),
		BUILTIN_OPT_RUBY_VERSION,
		OPT_END(),
	};
	const struct opt_cmd cmd = {
		.usage = "rbscope record (-p PID | -- COMMAND [ARGS...]) [options]",
		.about = "Sample the stacks of every Ruby thread, without stopping the process, and write a profile.",
		.opts = opts,
		.flags = OPT_ARGS_FIRST,
	};
	int first, code;
	if (builtin_parse(&cmd, argc, argv, &first, &code))
		return code == EXIT_OK ? -1 : code;
	if (first < argc)
		o->command = argv + first;
	if (!o->pid == !o->command)
		return error("give either -p PID or -- COMMAND"), EXIT_USAGE;
	if (o->on_cpu)
		o->mode = SAMPLER_CPU;
	if (o->native && o->blocking)
		return error("--native stops only the threads it must, --blocking all of them: give one"), EXIT_USAGE;
	return 0;
}

/* Start COMMAND and wait until it is a Ruby we can read (libruby loaded, VM made). */
static int spawn_and_attach(struct record_opts *o, struct ruby_target *t)
{
	pid_t pid = fork();
	if (pid < 0)
		return err_report(-errno, "cannot start '%s'", o->command[0]);
	if (!pid) {
		execvp(o->command[0], o->command);
		fprintf(stderr, "rbscope: cannot run '%s': %s\n", o->command[0], strerror(errno));
		_exit(127);
	}
	o->pid = pid;
	int err = 0;
	for (int tries = 0; tries < 1000 && !builtin_stop; tries++) {
		int status;
		if (waitpid(pid, &status, WNOHANG) == pid)
			return error("'%s' exited before rbscope could attach", o->command[0]), EXIT_GONE;
		err = ruby_target_attach(t, pid, &builtin_attach_opts);
		if (!err)
			return 0;
		ruby_target_detach(t);
		if (err != ERR_NOT_RUBY && err != ERR_NO_VM && err != -EFAULT && err != ERR_TORN)
			break;
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	kill(pid, SIGTERM);
	return builtin_report_attach(err, pid, "cannot attach to '%s' (pid %d)", o->command[0], (int)pid);
}

static void status_line(const struct procset *ps, uint64_t elapsed, int final)
{
	struct sampler s;
	procset_totals(ps, &s);
	double secs = (double)elapsed / 1e9, rate = secs > 0 ? (double)s.samples / secs : 0;
	char procs[48] = "";
	if (ps->follow)
		snprintf(procs, sizeof(procs), ", %d process%s", ps->live, ps->live == 1 ? "" : "es");
	fprintf(stderr, "%srbscope: %llu samples in %.1fs (%.1f/s)%s, %llu torn, %llu errors%s", final ? "" : "\r",
		(unsigned long long)s.samples, secs, rate, procs, (unsigned long long)s.torn,
		(unsigned long long)s.errors, final ? "\n" : "   ");
}

#define RAW_FLUSH_NS 1000000000ULL /* --raw: written out at least once a second */
#define RAW_FLUSH_SAMPLES 65536    /* or when this many samples wait */

/* Sample at o->rate on average, one tick at a random phase in each period (lib/ticker.h). */
static int sample_loop(const struct record_opts *o, struct procset *ps, struct raw_writer *raw, int *gone)
{
	struct profile *p = ps->profile;
	uint64_t start = clock_now_ns(), last_status = start, last_flush = start;
	struct ticker tk;
	ticker_init(&tk, o->rate, start);
	struct timespec wall;
	clock_gettime(CLOCK_REALTIME, &wall);
	p->start_ns = (uint64_t)wall.tv_sec * 1000000000u + (uint64_t)wall.tv_nsec;
	uint64_t end = o->duration > 0 ? start + (uint64_t)(o->duration * 1e9) : UINT64_MAX;
	int tty = isatty(2), consecutive_errors = 0, err;
	uint64_t dropped_before = p->dropped;
	if (raw && (err = raw_writer_start(raw, raw->f, p)))
		return err_report(err, "cannot write '%s'", o->raw);
	while (!builtin_stop) {
		uint64_t now = clock_now_ns();
		if (now >= end)
			break;
		procset_discover(ps, now);
		err = procset_tick(ps, now - start, p->dropped - dropped_before);
		dropped_before = p->dropped;
		if (err == ERR_GONE) {
			*gone = 1;
			break;
		}
		if (err && ++consecutive_errors >= 100)
			return err_report(err, "sampling process %d keeps failing", o->pid);
		if (!err)
			consecutive_errors = 0;
		if (tty && now - last_status > 250000000ULL) {
			status_line(ps, now - start, 0);
			last_status = now;
		}
		if (raw && (now - last_flush >= RAW_FLUSH_NS || p->nsamples >= RAW_FLUSH_SAMPLES)) {
			if ((err = raw_writer_flush(raw, p, p->keep_samples_all)))
				return err_report(err, "cannot write '%s'", o->raw);
			last_flush = now;
		}
		uint64_t next = ticker_next(&tk, clock_now_ns(), &p->dropped);
		struct timespec ts = { (time_t)(next / 1000000000ULL), (long)(next % 1000000000ULL) };
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR && !builtin_stop)
			;
	}
	p->duration_ns = clock_now_ns() - start;
	return 0;
}

/* The status to exit with for a command rbscope started: its own, as a shell reports it. */
static int command_status(int status)
{
	return WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : EXIT_FAILURE_;
}

int cmd_record(int argc, char **argv)
{
	struct record_opts o;
	int rc = parse_args(argc, argv, &o);
	if (rc)
		return rc < 0 ? EXIT_OK : rc;
	/* The outputs first: a name that says no format, or a file that cannot be written, ends it now. */
	if ((rc = builtin_choose_output(&o.format, &o.output, NULL, NULL, 0)))
		return rc;
	struct outfile out = { 0 }, raw_out = { 0 };
	if ((o.output && (rc = outfile_open(&out, o.output))) || (o.raw && (rc = outfile_open(&raw_out, o.raw)))) {
		outfile_abandon(&out);
		return rc;
	}
	builtin_catch_stop();
	struct ruby_target t;
	rc = o.command ? spawn_and_attach(&o, &t) : builtin_attach(&t, o.pid);
	if (rc) {
		outfile_abandon(&out);
		outfile_abandon(&raw_out);
		return rc;
	}
	if (!o.output) {
		/* No -o: standard output, or a file named after the process when that is a terminal. */
		char stem[48];
		time_t now = time(NULL);
		struct tm tm;
		localtime_r(&now, &tm);
		int len = snprintf(stem, sizeof(stem), "rbscope-%d-", o.pid);
		strftime(stem + len, sizeof(stem) - (size_t)len, "%Y%m%d-%H%M%S", &tm);
		builtin_choose_output(&o.format, &o.output, stem, o.output_buf, sizeof(o.output_buf));
		o.output_made = o.output != NULL;
		if ((rc = outfile_open(&out, o.output)))
			goto out_target;
	}
	struct profile p;
	struct procset ps;
	struct raw_writer raw;
	int err = profile_init(&p);
	procset_init(&ps, &p);
	ps.follow = o.subprocesses;
	ps.threads_root = o.threads;
	ps.mode = o.mode;
	ps.period_ns = (uint64_t)(1e9 / o.rate);
	ps.syscalls = o.syscalls;
	ps.native = o.native;
	ps.blocking = o.blocking;
	ps.capture_hz = sampler_capture_hz(o.mode, o.blocking, o.no_bpf, o.rate);
	ps.verbose = isatty(2);
	ps.attach = &builtin_attach_opts;
	err = err ?: procset_add(&ps, o.pid, &t);
	if (err) {
		procset_free(&ps);
		profile_free(&p);
		rc = builtin_report_attach(err, o.pid, o.blocking ? "cannot stop process %d's threads (--blocking)"
							      : "cannot record process %d", o.pid);
		goto out_target;
	}
	p.pid = o.pid;
	p.rate_hz = (uint32_t)o.rate;
	/* Samples are held for a format that shows them in time (a timeline), else only counted. */
	p.keep_samples_all = o.format->needs_samples;
	p.keep_samples = o.raw != NULL || o.format->needs_samples;
	char cmdline[1024] = "";
	task_cmdline(o.pid, cmdline, sizeof(cmdline));
	p.command = (uint32_t)strtab_intern(&p.strs, cmdline, strlen(cmdline));
	p.ruby_version = (uint32_t)strtab_intern(&p.strs, t.version, strlen(t.version));
	int gone = 0;
	raw.f = raw_out.f;
	rc = o.raw ? outfile_begin(&raw_out) : 0;
	rc = rc ?: sample_loop(&o, &ps, o.raw ? &raw : NULL, &gone);
	struct sampler sum;
	procset_totals(&ps, &sum);
	p.errors = sum.errors;
	p.torn = sum.torn;
	if (isatty(2))
		fputc('\n', stderr);
	if (o.raw) {
		if (!rc && (err = raw_writer_finish(&raw, &p, 1)))
			rc = err_report(err, "cannot write '%s'", o.raw);
		raw_writer_free(&raw);
		if (fclose(raw_out.f) && !rc)
			rc = err_report(-errno, "cannot write '%s'", o.raw);
		raw_out.f = NULL;
	}
	if (!rc) {
		if (o.output_made)
			fprintf(stderr, "rbscope: writing %s to %s\n", o.format->name, o.output);
		rc = builtin_write_profile_to(o.format, &p, &out);
	}
	status_line(&ps, p.duration_ns, 1);
	fprintf(stderr,
		"rbscope: %llu ticks dropped (sampler behind), %llu stacks salvaged, %llu torn reads, %llu failed samples, "
		"%llu stacks unchanged since the sample before\n",
		(unsigned long long)p.dropped, (unsigned long long)sum.salvaged, (unsigned long long)sum.torn,
		(unsigned long long)sum.errors, (unsigned long long)sum.unchanged);
	if (ps.captures)
		fprintf(stderr,
			"rbscope: the thread holding the GVL sampled on its own CPU (BPF): %llu samples, %llu lost, %llu "
			"unreadable; %llu more for its time off its CPU (preempted or blocked); %llu threads without a "
			"clock (read from outside)\n",
			(unsigned long long)sum.captured, (unsigned long long)sum.capture_lost,
			(unsigned long long)sum.capture_bad, (unsigned long long)sum.owed,
			(unsigned long long)sum.capture_unfollowed);
	else if (ps.capture_hz)
		fprintf(stderr, "rbscope: every thread read from outside, short calls undercounted (as --no-bpf): %s\n",
			ps.capture_why);
	if (o.native && ps.captures)
		fprintf(stderr,
			"rbscope: --native from the kernel's copy of the registers and stack at each sample (no stop): the "
			"thread holding the GVL %llu times with native frames, %llu without; threads on a CPU without it "
			"%llu times; %llu running threads stopped, %.1f us each on average; %llu stacks left without native "
			"frames (the thread moved on)\n",
			(unsigned long long)sum.capture_native, (unsigned long long)sum.capture_native_missed,
			(unsigned long long)sum.native_sampled, (unsigned long long)sum.native_stops,
			sum.native_stops ? (double)sum.native_stop_ns / 1e3 / (double)sum.native_stops : 0.0,
			(unsigned long long)sum.native_moved);
	else if (o.native)
		fprintf(stderr,
			"rbscope: --native stopped %llu running threads for their registers, %.1f us each on average; %llu "
			"stacks left without native frames (the thread moved on during the unwind)\n",
			(unsigned long long)sum.native_stops,
			sum.native_stops ? (double)sum.native_stop_ns / 1e3 / (double)sum.native_stops : 0.0,
			(unsigned long long)sum.native_moved);
	if (ps.follow)
		fprintf(stderr, "rbscope: followed %llu subprocess%s\n", (unsigned long long)ps.followed,
			ps.followed == 1 ? "" : "es");
	else
		builtin_hint_children(o.pid, "-s/--subprocesses samples them too");
	if (gone)
		fprintf(stderr, "rbscope: process %d exited; the profile holds what was sampled until then\n", o.pid);
	if (o.command) {
		int status = 0;
		if (!gone)
			kill(o.pid, SIGTERM);
		if (waitpid(o.pid, &status, 0) == o.pid && gone && !rc)
			rc = command_status(status); /* the command's own status, once its profile is written */
	}
	procset_free(&ps);
	profile_free(&p);
	outfile_abandon(&out);
	return rc;
out_target:
	ruby_target_detach(&t);
	if (o.command) {
		kill(o.pid, SIGTERM);
		waitpid(o.pid, NULL, 0);
	}
	outfile_abandon(&out);
	outfile_abandon(&raw_out);
	return rc;
}
