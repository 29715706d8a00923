/* common.c: what several commands share: option parsing with its errors and help, -p checks, attaching with a report. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../builtin.h"
#include "../lib/err.h"
#include "../lib/opt.h"
#include "../proc/core.h"
#include "../proc/task.h"
#include "../profile/sampler.h"
#include "../ruby/layout.h"
#include "../ruby/target.h"

int builtin_parse(const struct opt_cmd *cmd, int argc, char **argv, int *first, int *code)
{
	struct opt_parser p;
	int rc = opt_parse(&p, cmd, argc, argv);
	if (!rc && p.help) {
		opt_usage(stdout, cmd);
		*code = fflush(stdout) ? EXIT_OUTPUT : EXIT_OK;
		return 1;
	}
	if (rc) {
		if (p.err[0]) {
			const char *name = cmd->name ? cmd->name : argv[0];
			error("%s: %s", name, p.err);
			fprintf(stderr, "hint: 'rbscope %s --help' lists its options\n", name);
		}
		*code = rc;
		return 1;
	}
	*first = p.next;
	return 0;
}

int builtin_no_args(int argc, char **argv, int first)
{
	if (first < argc)
		return error("%s: unexpected argument '%s'", argv[0], argv[first]), EXIT_USAGE;
	return 0;
}

int builtin_need_pid(int pid)
{
	if (!pid)
		return error("which process? give -p PID"), EXIT_USAGE;
	return 0;
}

struct ruby_attach_opts builtin_attach_opts;

int builtin_report_attach(int err, int pid, const char *fmt, ...)
{
	char what[256], why[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (err != -EPERM && err != -EACCES)
		return err_report(err, "%s", what);
	task_access_why("/proc", pid, why, sizeof(why));
	return err_report_hint(err, why, "%s", what);
}

/* Errors of a Ruby process caught as it starts: its libruby not mapped yet, its VM not made, its memory moving. */
static int starting_err(int err)
{
	return err == ERR_NO_VM || err == ERR_NOT_RUBY || err == -EFAULT || err == ERR_TORN;
}

#define YOUNG_MS 3000    /* a process younger than this may still be starting its VM */
#define START_WAIT_MS 2000 /* how long to wait for it to finish */

int builtin_attach(struct ruby_target *t, int pid)
{
	const char *asked = builtin_attach_opts.version;
	int err = ruby_target_attach(t, pid, &builtin_attach_opts);
	uint64_t age;
	if (err && starting_err(err) && (err != ERR_NOT_RUBY || ruby_process_likely(pid)) && !task_age_ms(pid, &age) &&
	    age < YOUNG_MS) {
		/* Just started (a worker forked a moment ago, a command started by a script): wait for its VM. */
		for (int waited = 0; err && starting_err(err) && waited < START_WAIT_MS && !builtin_stop; waited += 10) {
			ruby_target_detach(t);
			struct timespec ts = { 0, 10 * 1000 * 1000 };
			nanosleep(&ts, NULL);
			err = ruby_target_attach(t, pid, &builtin_attach_opts);
		}
	}
	if (!err) {
		if (t->layout_match == LAYOUT_NEWER)
			fprintf(stderr, "rbscope: note: process %d runs Ruby %s, newer than any %lld.%lld release known here: "
				"read with the table of %s\n", pid, asked ? asked : t->version,
				(long long)t->L->api_major, (long long)t->L->api_minor, t->L->version);
		return 0;
	}
	if (err == ERR_USAGE && asked) {
		error("no layout table for Ruby '%s' (--ruby-version): tables exist for %s", asked, ruby_layout_series());
	} else if (err == ERR_UNSUPPORTED) {
		err_report(err, "process %d runs Ruby %s", pid, t->version);
		fprintf(stderr, "hint: rbscope has tables for Ruby %s and reads any Ruby whose libruby has DWARF; "
			"--ruby-version X.Y.Z reads it with another release's table\n", ruby_layout_series());
	} else {
		builtin_report_attach(err, pid, "cannot attach to process %d", pid);
	}
	ruby_target_detach(t);
	return err_exit_code(err);
}

void builtin_hint_children(int pid, const char *remedy)
{
	pid_t kids[256];
	int n = task_descendants(pid, kids, 256), shown = 0, total = 0;
	char list[512] = "";
	for (int i = 0; i < n; i++) {
		if (!ruby_process_likely(kids[i]))
			continue;
		if (++total > 6)
			continue;
		char cmd[64] = "";
		task_cmdline(kids[i], cmd, sizeof(cmd));
		size_t len = strlen(list);
		snprintf(list + len, sizeof(list) - len, "%s%d %s", shown++ ? ", " : "", (int)kids[i], cmd);
	}
	if (total)
		fprintf(stderr, "hint: process %d has %d Ruby child process%s (%s%s), not read: %s\n", pid, total,
			total == 1 ? "" : "es", list, total > shown ? ", ..." : "", remedy);
}

const char *const builtin_modes[] = { "wall", "cpu", "gvl", NULL };
_Static_assert(SAMPLER_WALL == 0 && SAMPLER_CPU == 1 && SAMPLER_GVL == 2, "builtin_modes: the order of enum sampler_mode");

int builtin_open_core(struct core *c, struct ruby_target *t, const char *path, const char *sysroot)
{
	const char *why = NULL;
	int err = core_open(c, path, sysroot, &why);
	if (err) {
		if (why)
			error("'%s' is not a usable core file: %s", path, why);
		else if (err == ERR_BAD_FILE)
			error("'%s' is not an x86-64 ELF core file", path);
		else
			return err_report(err, "cannot read '%s'", path);
		core_close(c);
		return EXIT_BAD_INPUT;
	}
	err = ruby_target_open_core(t, c, &builtin_attach_opts);
	if (!err)
		return 0;
	if (err == ERR_USAGE && builtin_attach_opts.version) {
		error("no layout table for Ruby '%s' (--ruby-version): tables exist for %s", builtin_attach_opts.version,
		      ruby_layout_series());
	} else if (t->missing && err != ERR_NOT_RUBY) {
		char host[8192];
		core_host_path(c, t->missing, host, sizeof(host));
		int why_err = c->bad_file && !strcmp(c->bad_file, t->missing) ? c->bad_file_err : err;
		error("core '%s' needs '%s' (as '%s'): %s", path, t->missing, host, err_message(why_err));
		fprintf(stderr, "hint: %s\n", why_err == ERR_FILE_CHANGED ?
			"the file was replaced since the core was written: point --sysroot at a copy of the old one" :
			"point --sysroot at the root the process saw (a container's or chroot's), or name its Ruby "
			"with --ruby-version X.Y.Z to read it from the core alone");
		err = why_err == ERR_FILE_CHANGED ? ERR_FILE_CHANGED : ERR_BAD_FILE;
	} else if (err == ERR_UNSUPPORTED) {
		err_report(err, "core '%s' is of Ruby %s", path, t->version);
		fprintf(stderr, "hint: rbscope has tables for Ruby %s; --ruby-version X.Y.Z reads it with another "
			"release's table\n", ruby_layout_series());
	} else {
		err_report(err, "cannot read the Ruby in core '%s' (process %d, %s)", path, (int)c->pid, c->comm);
	}
	ruby_target_detach(t);
	core_close(c);
	return err_exit_code(err);
}
