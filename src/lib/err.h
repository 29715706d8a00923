/* err.h: rbscope's error codes, their messages and hints, and the exit codes they map to. */
#ifndef RBSCOPE_ERR_H
#define RBSCOPE_ERR_H

/*
 * Library code returns 0 or a negative code: either -errno or one of these.
 * Only builtins print; they use err_message(), err_hint() and err_exit_code().
 */
enum {
	ERR_BASE = 10000,
	ERR_NO_PROCESS = -(ERR_BASE + 1),  /* no such pid */
	ERR_NOT_RUBY = -(ERR_BASE + 2),    /* no libruby or ruby binary in its maps */
	ERR_UNSUPPORTED = -(ERR_BASE + 3), /* a Ruby version with no layout */
	ERR_NO_VM = -(ERR_BASE + 4),       /* the VM could not be found or validated */
	ERR_GONE = -(ERR_BASE + 5),        /* the target exited */
	ERR_TORN = -(ERR_BASE + 6),        /* memory changed under a read */
	ERR_CORRUPT = -(ERR_BASE + 7),     /* data that does not validate */
	ERR_BAD_FILE = -(ERR_BASE + 8),    /* a file that is not what it should be */
	ERR_USAGE = -(ERR_BASE + 9),
	ERR_NOT_FOUND = -(ERR_BASE + 10),   /* what was asked for is not in the input (heap path's address) */
	ERR_UNREACHABLE = -(ERR_BASE + 11), /* in the heap dump, but no root reaches it */
	ERR_FILE_CHANGED = -(ERR_BASE + 12),/* a file differs from the copy of it a core file holds */
	ERR_NO_AGENT = -(ERR_BASE + 20),    /* no agent socket for the process */
	ERR_AGENT_SILENT = -(ERR_BASE + 21),/* the agent's socket accepted but nothing answered in time */
	ERR_AGENT = -(ERR_BASE + 22),       /* the agent answered with an error (its text says which) */
	ERR_INJECT = -(ERR_BASE + 23),      /* --inject did not load the agent (its message says why) */
};

/* Documented exit codes (README "Exit codes"). */
enum {
	EXIT_OK = 0,
	EXIT_FAILURE_ = 1,
	EXIT_USAGE = 2,
	EXIT_NO_PROCESS = 3,
	EXIT_PERMISSION = 4,
	EXIT_NOT_RUBY = 5,
	EXIT_UNSUPPORTED = 6,
	EXIT_GONE = 7,
	EXIT_BAD_INPUT = 8,
	EXIT_OUTPUT = 9,
	EXIT_UNREACHABLE = 10,
	EXIT_NO_AGENT = 11,
	EXIT_AGENT = 12,
	EXIT_INJECT = 13,
	EXIT_LISTEN = 14,
};

const char *err_message(int err);
/* A hint for the user, or NULL. */
const char *err_hint(int err);
int err_exit_code(int err);
/* Print "rbscope: <what>: <message>" and a hint line to stderr; returns the exit code. */
int err_report(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* err_report with hint (or err_hint(err) when NULL) on its second line. */
int err_report_hint(int err, const char *hint, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Print "rbscope: <message>" to stderr and return -1, for `return error(...)`. */
int error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
