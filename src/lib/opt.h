/* opt.h: command-line options declared as data: one parser and one usage text for every command. */
#ifndef RBSCOPE_OPT_H
#define RBSCOPE_OPT_H

#include <stddef.h>
#include <stdio.h>

enum opt_kind {
	OPT_END = 0,
	OPT_FLAG,   /* no argument: *(int *)value = 1 */
	OPT_STRING, /* *(const char **)value = the argument (the last one given wins) */
	OPT_INT,    /* *(int *)value: a decimal integer, within [min, max] when min < max */
	OPT_DOUBLE, /* *(double *)value: a number, within [min, max] when min < max (see OPT_POSITIVE) */
	OPT_PID,    /* *(int *)value: a process id */
	OPT_CHOICE, /* *(int *)value: the index of the argument in choices (a NULL-terminated list) */
	OPT_CALL,   /* fn(p, data, argument): for anything else (repeatable options, lookups) */
	OPT_TEXT,   /* not an option: a line of text in the usage, between options */
};

/* flags of a numeric option */
#define OPT_POSITIVE 1 /* > 0 (a duration, a size) */
#define OPT_HIDDEN 2   /* parsed, left out of the usage */

struct opt_parser;

/*
 * One option. help's '\n's start continuation lines in the usage. For a
 * number, what says what it takes when it is out of range or not a number:
 * "--rate takes <what>".
 */
struct opt {
	enum opt_kind kind;
	char short_name; /* 0: long only */
	const char *long_name;
	void *value;
	const char *arg; /* the argument's name in the usage ("HZ"); NULL: no argument */
	const char *help;
	int flags;
	double min, max;
	const char *what;
	const char *const *choices; /* OPT_CHOICE */
	/* OPT_CALL: 0, or an exit code after printing why (a builtin's callback) or opt_fail() */
	int (*fn)(struct opt_parser *p, void *data, const char *arg);
};

#define OPT_FLAG(s, l, v, h) { .kind = OPT_FLAG, .short_name = (s), .long_name = (l), .value = (v), .help = (h) }
#define OPT_STRING(s, l, v, a, h) \
	{ .kind = OPT_STRING, .short_name = (s), .long_name = (l), .value = (v), .arg = (a), .help = (h) }
#define OPT_DOUBLE(s, l, v, a, h, lo, hi, w) \
	{ .kind = OPT_DOUBLE, .short_name = (s), .long_name = (l), .value = (v), .arg = (a), .help = (h), \
	  .min = (lo), .max = (hi), .what = (w) }
#define OPT_SECONDS(s, l, v, h) \
	{ .kind = OPT_DOUBLE, .short_name = (s), .long_name = (l), .value = (v), .arg = "SECS", .help = (h), \
	  .flags = OPT_POSITIVE, .what = "a positive number of seconds" }
#define OPT_INT(s, l, v, a, h, lo, hi, w) \
	{ .kind = OPT_INT, .short_name = (s), .long_name = (l), .value = (v), .arg = (a), .help = (h), \
	  .min = (lo), .max = (hi), .what = (w) }
#define OPT_CHOICE(s, l, v, a, h, c) \
	{ .kind = OPT_CHOICE, .short_name = (s), .long_name = (l), .value = (v), .arg = (a), .help = (h), .choices = (c) }
#define OPT_PID(v, h) { .kind = OPT_PID, .short_name = 'p', .long_name = "pid", .value = (v), .arg = "PID", .help = (h) }
#define OPT_CALL(s, l, d, a, h, f) \
	{ .kind = OPT_CALL, .short_name = (s), .long_name = (l), .value = (d), .arg = (a), .help = (h), .fn = (f) }
#define OPT_TEXT(h) { .kind = OPT_TEXT, .help = (h) }
#define OPT_END() { .kind = OPT_END }

/* flags of a command */
#define OPT_ARGS_FIRST 1 /* stop at the first word that is not an option ("-- COMMAND ARGS" and sub-commands) */

/* A command's options and what its usage says around them. */
struct opt_cmd {
	const char *name;  /* for messages ("heap summary"); NULL: argv[0] */
	const char *usage; /* the synopsis lines, after "usage: "; "\n" between alternatives */
	const char *about; /* a paragraph (or several) on what the command does */
	const struct opt *opts;
	const char *after; /* text after the options, or NULL */
	int flags;
};

struct opt_parser {
	int argc;
	char **argv;
	int next;         /* the next word to read */
	char err[256];    /* why parsing stopped, when it says so */
	int help;         /* -h or --help was given */
};

/*
 * Parse argv[1..] (argv[0] is the command's name) by cmd's options. Returns
 * 0 with p->next the first word left (the arguments); 0 with p->help set on
 * -h/--help; else an exit code (EXIT_USAGE for a malformed option), with
 * p->err saying why unless a callback printed it.
 */
int opt_parse(struct opt_parser *p, const struct opt_cmd *cmd, int argc, char **argv);
/* For callbacks: the next word, if it is not an option (and consume it); else NULL. */
const char *opt_next_word(struct opt_parser *p);
/* For callbacks: set p->err from a format and return EXIT_USAGE. */
int opt_fail(struct opt_parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Write cmd's usage: the synopsis, the paragraph, the options in two columns, the text after. */
void opt_usage(FILE *f, const struct opt_cmd *cmd);
/* Parse a process id: 0, or -1 when s is not one. */
int opt_pid(const char *s, int *pid);

#endif
