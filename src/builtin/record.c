/* record.c: `rbscope record`, sample a Ruby process (or a command it starts) into a profile. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../alloc/alloc.h"
#include "../builtin.h"
#include "../lib/clock.h"
#include "../lib/err.h"
#include "../output/output.h"
#include "../profile/sampling.h"
#include "../proc/task.h"
#include "../ruby/jit.h"
#include "agent_helpers.h"
#include "record_alloc.h"

struct record_opts {
	int pid;
	double rate, duration;
	const char *output, *raw;
	int output_made; /* output named by rbscope, not the user */
	char output_buf[64];
	const struct output_format *format;
	int threads, on_cpu, subprocesses, blocking, mode, syscalls, native, no_bpf, no_labels;
	int alloc_interval, by_bytes, no_windows;
	struct builtin_labels labels;
	char **command;
};

/* --mode: the sampler's modes (enum sampler_mode, builtin_modes' order), then the agent's allocations. */
static const char *const record_modes[] = { "wall", "cpu", "gvl", "alloc", NULL };
#define RECORD_ALLOC 3

/* 0, or the exit code the command ends with (--help: EXIT_OK), having printed why. */
static int parse_args(int argc, char **argv, struct record_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->rate = 99;
	o->alloc_interval = ALLOC_INTERVAL;
	const struct opt opts[] = {
		OPT_PID(&o->pid, "the Ruby process to sample"),
		OPT_DOUBLE('r', "rate", &o->rate, "HZ", "samples per second (default 99, at most 10000)", 1, 10000,
			   "a number of samples per second from 1 to 10000"),
		OPT_SECONDS('d', "duration", &o->duration, "stop after SECS seconds (default: Ctrl-C or the process exits)"),
		OPT_STRING('o', "output", &o->output, "FILE",
			   "write the profile to FILE; its ending picks the format (.svg, .html, ...:\n"
			   "`rbscope help formats` lists them) (default: standard output, or\n"
			   "rbscope-PID-TIME.svg when that is a terminal)"),
		BUILTIN_OPT_FORMAT(&o->format),
		BUILTIN_OPT_FLAME,
		OPT_STRING(0, "raw", &o->raw, "FILE", "also write every sample with its time and thread, for `rbscope report`"),
		OPT_FLAG(0, "threads", &o->threads, "add a root frame per thread"),
		BUILTIN_OPT_LABEL_FRAMES,
		BUILTIN_OPT_LABEL(&o->labels),
		OPT_FLAG(0, "no-labels", &o->no_labels,
			 "do not tell the request each thread serves (a Sinatra route, a Rails action)"),
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
		OPT_CHOICE(0, "mode", &o->mode, "wall|cpu|gvl|alloc",
			   "what a profile counts: every thread at every tick (wall, the default), the\n"
			   "CPU time each thread ran by the kernel's account (cpu), threads waiting\n"
			   "for the GVL (gvl), or objects allocated, sampled by the agent (alloc: see\n"
			   "--interval, --inject)", record_modes),
		OPT_FLAG(0, "on-cpu", &o->on_cpu, "the same as --mode cpu"),
		OPT_INT(0, "interval", &o->alloc_interval, "N",
			"--mode alloc: sample one allocation in N, at random (default "
			ALLOC_INTERVAL_TEXT ")", 1, 1e9, "a positive number of allocations"),
		OPT_FLAG(0, "no-windows", &o->no_windows,
			 "--mode alloc: keep the hook on allocation in throughout (by default it is in\n"
			 "for short windows at random, 1/64 of the time: while it is in, every\n"
			 "allocation takes Ruby's slow path, a third of an allocating loop's speed)"),
		OPT_FLAG(0, "bytes", &o->by_bytes,
			 "--mode alloc: weigh stacks by the bytes allocated, not the objects, in the\n"
			 "formats that show one value (pprof shows both)"),
		AGENT_CLI_OPT_INJECT,
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
	if (o->mode == RECORD_ALLOC) {
		const char *no = o->command ? "-- COMMAND (give -p PID of a running process)" : o->blocking ? "--blocking"
			: o->native ? "--native" : o->no_bpf ? "--no-bpf" : o->syscalls ? "--syscalls"
			: o->subprocesses ? "--subprocesses" : NULL;
		if (no)
			return error("--mode alloc samples allocations in the process, through its agent: %s does not go "
				     "with it", no), EXIT_USAGE;
	} else if (o->by_bytes || o->no_windows || o->alloc_interval != ALLOC_INTERVAL) {
		return error("%s goes with --mode alloc", o->by_bytes ? "--bytes" : o->no_windows ? "--no-windows"
			     : "--interval"), EXIT_USAGE;
	} else if (agent_cli_inject) {
		return error("--inject goes with --mode alloc (the other modes read the process from outside)"), EXIT_USAGE;
	}
	return 0;
}

/* No -o: standard output, or a file named after the process when that is a terminal. 0 or the exit code. */
static int default_output(struct record_opts *o, struct outfile *out)
{
	char stem[48];
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	int len = snprintf(stem, sizeof(stem), "rbscope-%d-", o->pid);
	strftime(stem + len, sizeof(stem) - (size_t)len, "%Y%m%d-%H%M%S", &tm);
	builtin_choose_output(&o->format, &o->output, stem, o->output_buf, sizeof(o->output_buf));
	o->output_made = o->output != NULL;
	return outfile_open(out, o->output);
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

static void status_line(const struct sampling *sm, uint64_t elapsed, int final)
{
	struct sampler_stats s;
	sampling_stats(sm, &s);
	double secs = (double)elapsed / 1e9, rate = secs > 0 ? (double)s.samples / secs : 0;
	char procs[48] = "";
	if (sm->procs.cfg.scope == PROCS_DESCENDANTS)
		snprintf(procs, sizeof(procs), ", %d process%s", sm->procs.live, sm->procs.live == 1 ? "" : "es");
	fprintf(stderr, "%srbscope: %llu samples in %.1fs (%.1f/s)%s, %llu torn, %llu errors%s", final ? "" : "\r",
		(unsigned long long)s.samples, secs, rate, procs, (unsigned long long)s.torn,
		(unsigned long long)s.errors, final ? "\n" : "   ");
}

#define RAW_FLUSH_NS 1000000000ULL /* --raw: written out at least once a second */
#define RAW_FLUSH_SAMPLES 65536    /* or when this many samples wait */

/* What record does between ticks: a status line on a terminal, --raw's samples written out. */
struct recording {
	const struct record_opts *o;
	struct raw_writer *raw;
	uint64_t last_status, last_flush;
	int tty;
};

static int recording_ticked(void *ctx, struct sampling *sm, uint64_t now)
{
	struct recording *r = ctx;
	struct profile *p = sm->profile;
	if (r->tty && now - r->last_status > 250000000ULL) {
		status_line(sm, now, 0);
		r->last_status = now;
	}
	if (r->raw && (now - r->last_flush >= RAW_FLUSH_NS || p->nsamples >= RAW_FLUSH_SAMPLES)) {
		int err = raw_writer_flush(r->raw, p, p->keep_samples_all);
		if (err)
			return err_report(err, "cannot write '%s'", r->o->raw);
		r->last_flush = now;
	}
	return 0;
}

static void say_followed(void *ctx, const struct proc_entry *e)
{
	(void)ctx;
	fprintf(stderr, "rbscope: following process %d (Ruby %s)\n", (int)e->pid, e->t.version);
}

/* Sample until stopped, the duration is up or the process exits (*gone set): 0, or the exit code, having said why. */
static int sample_loop(const struct record_opts *o, struct sampling *sm, struct raw_writer *raw, int *gone)
{
	struct profile *p = sm->profile;
	struct timespec wall;
	clock_gettime(CLOCK_REALTIME, &wall);
	p->start_ns = (uint64_t)wall.tv_sec * 1000000000u + (uint64_t)wall.tv_nsec;
	int err;
	if (raw && (err = raw_writer_start(raw, raw->f, p)))
		return err_report(err, "cannot write '%s'", o->raw);
	struct recording r = { o, raw, 0, 0, isatty(2) };
	const struct sampling_consumer c = { recording_ticked, NULL };
	int rc = sampling_run(sm, &c, &r);
	p->duration_ns = sampling_now(sm);
	if (rc == ERR_GONE) {
		*gone = 1;
		return 0;
	}
	return rc < 0 ? err_report(rc, "sampling process %d keeps failing", o->pid) : rc;
}

/* Whether a JIT ran the lead process's Ruby code (on at the start: before; its Ruby's: name), and how many samples' lines it hid. */
static void say_jit(struct procs *ps, const char *before, const char *name, const struct sampler_stats *sum)
{
	int live = ps->lead && ps->v[0]->state == PROC_LIVE;
	const char *now = live ? ruby_jit_on(&ps->v[0]->t) : NULL;
	const char *jit = now ? now : before;
	if (!jit && !sum->jit_lines)
		return;
	fprintf(stderr, "rbscope: %s on%s: %llu of %llu thread samples ran JIT code in their innermost Ruby frame, its "
		"method known and its line not (shown as ?)\n", jit ? jit : name,
		now && !before ? " (turned on during the recording)" : "", (unsigned long long)sum->jit_lines,
		(unsigned long long)sum->samples);
	if (sum->jit_table_asked)
		fprintf(stderr, "rbscope: %s's own tables gave the line of %llu of the %llu innermost frames caught in its "
			"code (%llu in a block of code over several lines, the rest in code apart)\n",
			jit ? jit : name, (unsigned long long)sum->jit_table_found, (unsigned long long)sum->jit_table_asked,
			(unsigned long long)sum->jit_table_spanning);
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
	if (o.mode == RECORD_ALLOC) {
		if (!o.output && (rc = default_output(&o, &out))) {
			outfile_abandon(&raw_out);
			return rc;
		}
		const struct record_alloc_opts ao = {
			.pid = o.pid, .duration = o.duration, .interval = (uint64_t)o.alloc_interval, .threads = o.threads,
			.by_bytes = o.by_bytes, .no_windows = o.no_windows, .format = o.format, .output = o.output,
			.output_made = o.output_made, .raw = o.raw,
		};
		rc = record_allocs(&ao, &out, o.raw ? &raw_out : NULL);
		outfile_abandon(&out);
		outfile_abandon(&raw_out);
		return rc;
	}
	struct ruby_target t;
	rc = o.command ? spawn_and_attach(&o, &t) : builtin_attach(&t, o.pid);
	if (rc) {
		outfile_abandon(&out);
		outfile_abandon(&raw_out);
		return rc;
	}
	if (!o.output && (rc = default_output(&o, &out)))
		goto out_target;
	struct profile p;
	struct sampling sm;
	struct raw_writer raw;
	memset(&sm, 0, sizeof(sm));
	int err = profile_init(&p);
	const struct sampling_options so = {
		.rate = o.rate,
		.duration = o.duration,
		.stop = &builtin_stop,
		.no_bpf = o.no_bpf,
		.procs = {
			.scope = o.subprocesses ? PROCS_DESCENDANTS : PROCS_GIVEN,
			.attach = &builtin_attach_opts,
			.sampler = { .mode = o.mode, .threads_root = o.threads, .syscalls = o.syscalls, .native = o.native,
				     .no_labels = o.no_labels, .labels = o.labels.v, .nlabels = o.labels.n },
			.process_frames = o.subprocesses,
			.blocking = o.blocking,
			.followed = isatty(2) ? say_followed : NULL,
		},
	};
	err = err ?: sampling_init(&sm, &so, &p);
	err = err ?: sampling_add(&sm, o.pid, &t);
	if (err) {
		sampling_free(&sm);
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
	const char *jit_before = ruby_jit_on(&t), *jit_name = ruby_jit_name(&t);
	int gone = 0;
	raw.f = raw_out.f;
	rc = o.raw ? outfile_begin(&raw_out) : 0;
	rc = rc ?: sample_loop(&o, &sm, o.raw ? &raw : NULL, &gone);
	struct sampler_stats sum;
	sampling_stats(&sm, &sum);
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
	status_line(&sm, p.duration_ns, 1);
	fprintf(stderr,
		"rbscope: %llu ticks dropped (sampler behind), %llu stacks salvaged, %llu torn reads, %llu failed samples, "
		"%llu stacks unchanged since the sample before\n",
		(unsigned long long)p.dropped, (unsigned long long)sum.salvaged, (unsigned long long)sum.torn,
		(unsigned long long)sum.errors, (unsigned long long)sum.unchanged);
	say_jit(&sm.procs, jit_before, jit_name, &sum);
	const struct procs *ps = &sm.procs;
	if (ps->captures)
		fprintf(stderr,
			"rbscope: the thread holding the GVL sampled on its own CPU (BPF): %llu stacks, %llu lost, %llu "
			"unreadable; %llu of its %llu samples taken so (the rest read from outside: no stack taken since "
			"the tick before); %llu threads without a clock (read from outside)\n",
			(unsigned long long)sum.captured, (unsigned long long)sum.capture_lost,
			(unsigned long long)sum.capture_bad, (unsigned long long)sum.holder_own,
			(unsigned long long)(sum.holder_own + sum.holder_read), (unsigned long long)sum.capture_unfollowed);
	else if (ps->cfg.capture_hz)
		fprintf(stderr, "rbscope: every thread read from outside, short calls undercounted (as --no-bpf): %s\n",
			ps->capture_why);
	if (o.native && ps->captures)
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
	if (o.subprocesses)
		fprintf(stderr, "rbscope: followed %llu subprocess%s\n", (unsigned long long)ps->attached,
			ps->attached == 1 ? "" : "es");
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
	sampling_free(&sm);
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
