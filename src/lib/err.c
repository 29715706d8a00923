/* err.c: rbscope's error messages, hints and exit codes. */
#include "err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *err_message(int err)
{
	switch (err) {
	case ERR_NO_PROCESS: return "no such process";
	case ERR_NOT_RUBY: return "not a Ruby process";
	case ERR_UNSUPPORTED: return "unsupported Ruby version";
	case ERR_NO_VM: return "cannot find the Ruby VM in the process";
	case ERR_GONE: return "the process exited";
	case ERR_TORN: return "memory changed while it was read";
	case ERR_CORRUPT: return "inconsistent data";
	case ERR_BAD_FILE: return "not a valid file of that kind";
	case ERR_USAGE: return "bad usage";
	case ERR_NOT_FOUND: return "not found";
	case ERR_UNREACHABLE: return "not reachable from any root";
	case ERR_FILE_CHANGED: return "the file differs from the one the core was written with";
	case ERR_NO_AGENT: return "no rbscope agent in the process";
	case ERR_AGENT_SILENT: return "the agent did not answer";
	case ERR_AGENT: return "the agent reported an error";
	case ERR_INJECT: return "--inject could not load the agent";
	}
	if (err < 0 && err > -ERR_BASE)
		return strerror(-err);
	return "unknown error";
}

const char *err_hint(int err)
{
	switch (err) {
	case -EPERM:
	case -EACCES:
		return "run as root, as the process's user, or with CAP_SYS_PTRACE";
	case ERR_NOT_RUBY:
		return "rbscope reads CRuby (MRI) processes: is this the ruby process and not a wrapper?";
	case ERR_NO_PROCESS:
		return "check the pid with `ps`";
	case ERR_NO_AGENT:
		return "add --inject to load it into the running process now, or load it from boot: `require \"rbscope\"`, "
		       "RUBYOPT=-rrbscope (under bundle exec: RUBYOPT=-r/usr/local/share/rbscope/preload); see docs/agent.md";
	case ERR_AGENT_SILENT:
		return "its main thread may be stuck in C code that never checks for interrupts";
	}
	return NULL;
}

int err_exit_code(int err)
{
	switch (err) {
	case 0: return EXIT_OK;
	case ERR_NO_PROCESS:
	case -ESRCH: return EXIT_NO_PROCESS;
	case -EPERM:
	case -EACCES: return EXIT_PERMISSION;
	case ERR_NOT_RUBY: return EXIT_NOT_RUBY;
	case ERR_UNSUPPORTED:
	case ERR_NO_VM: return EXIT_UNSUPPORTED;
	case ERR_GONE: return EXIT_GONE;
	case ERR_BAD_FILE:
	case ERR_CORRUPT:
	case ERR_NOT_FOUND:
	case ERR_FILE_CHANGED: return EXIT_BAD_INPUT;
	case ERR_UNREACHABLE: return EXIT_UNREACHABLE;
	case ERR_NO_AGENT:
	case ERR_AGENT_SILENT: return EXIT_NO_AGENT;
	case ERR_AGENT: return EXIT_AGENT;
	case ERR_INJECT: return EXIT_INJECT;
	case ERR_USAGE: return EXIT_USAGE;
	case -EPIPE:
	case -ENOSPC:
	case -EIO: return EXIT_OUTPUT;
	}
	return EXIT_FAILURE_;
}

static int report(int err, const char *hint, const char *fmt, va_list ap)
{
	fputs("rbscope: ", stderr);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, ": %s\n", err_message(err));
	if (!hint)
		hint = err_hint(err);
	if (hint)
		fprintf(stderr, "hint: %s\n", hint);
	return err_exit_code(err);
}

int err_report(int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int code = report(err, NULL, fmt, ap);
	va_end(ap);
	return code;
}

int err_report_hint(int err, const char *hint, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int code = report(err, hint, fmt, ap);
	va_end(ap);
	return code;
}

int error(const char *fmt, ...)
{
	va_list ap;
	fputs("rbscope: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -1;
}
