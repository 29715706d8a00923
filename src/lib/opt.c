/* opt.c: the option parser and usage writer of every command (see opt.h). */
#include "opt.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

#define USAGE_COLUMN 24 /* where the options' help starts */

int opt_fail(struct opt_parser *p, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->err, sizeof(p->err), fmt, ap);
	va_end(ap);
	return EXIT_USAGE;
}

int opt_pid(const char *s, int *pid)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (!*s || *end || errno || v <= 0 || v > 0x3fffffff)
		return -1;
	*pid = (int)v;
	return 0;
}

const char *opt_next_word(struct opt_parser *p)
{
	if (p->next >= p->argc || p->argv[p->next][0] == '-')
		return NULL;
	return p->argv[p->next++];
}

/* "--rate" or "-r": how the user named it, for messages */
static void named(const struct opt *o, int as_long, char *buf, size_t cap)
{
	if (as_long || !o->short_name)
		snprintf(buf, cap, "--%s", o->long_name);
	else
		snprintf(buf, cap, "-%c", o->short_name);
}

static int set_value(struct opt_parser *p, const struct opt *o, const char *arg, int as_long)
{
	char name[64], *end;
	named(o, as_long, name, sizeof(name));
	switch (o->kind) {
	case OPT_FLAG: *(int *)o->value = 1; return 0;
	case OPT_STRING: *(const char **)o->value = arg; return 0;
	case OPT_PID:
		if (opt_pid(arg, (int *)o->value))
			return opt_fail(p, "'%s' is not a process id", arg);
		return 0;
	case OPT_INT:
	case OPT_DOUBLE: {
		errno = 0;
		double v = o->kind == OPT_INT ? (double)strtol(arg, &end, 10) : strtod(arg, &end);
		int bad = !*arg || *end || errno || !isfinite(v) || ((o->flags & OPT_POSITIVE) && !(v > 0)) ||
			  (o->min < o->max && (v < o->min || v > o->max));
		if (bad)
			return opt_fail(p, "%s takes %s, not '%s'", name, o->what ? o->what : "a number", arg);
		if (o->kind == OPT_INT)
			*(int *)o->value = (int)v;
		else
			*(double *)o->value = v;
		return 0;
	}
	case OPT_CHOICE: {
		char list[256] = "";
		size_t n = 0;
		for (int i = 0; o->choices[i]; i++) {
			if (!strcmp(arg, o->choices[i])) {
				*(int *)o->value = i;
				return 0;
			}
			n += (size_t)snprintf(list + n, n < sizeof(list) ? sizeof(list) - n : 0, "%s%s",
					      !i ? "" : o->choices[i + 1] ? ", " : " or ", o->choices[i]);
			if (n >= sizeof(list))
				n = sizeof(list) - 1;
		}
		return opt_fail(p, "%s takes %s, not '%s'", name, list, arg);
	}
	case OPT_CALL: return o->fn(p, o->value, arg);
	case OPT_END:
	case OPT_TEXT: break;
	}
	return opt_fail(p, "%s: not an option", name);
}

static const struct opt *find_long(struct opt_parser *p, const struct opt *opts, const char *name, size_t len)
{
	const struct opt *found = NULL;
	int prefixes = 0;
	for (const struct opt *o = opts; o->kind != OPT_END; o++) {
		if (o->kind == OPT_TEXT || !o->long_name || strncmp(o->long_name, name, len))
			continue;
		if (strlen(o->long_name) == len)
			return o;
		found = o; /* an unambiguous prefix is the option, as getopt_long has it */
		prefixes++;
	}
	if (prefixes > 1) {
		opt_fail(p, "option '--%.*s' is ambiguous", (int)len, name);
		return NULL;
	}
	if (!found)
		opt_fail(p, "unknown option '--%.*s'", (int)len, name);
	return found;
}

static const struct opt *find_short(struct opt_parser *p, const struct opt *opts, char c)
{
	for (const struct opt *o = opts; o->kind != OPT_END; o++)
		if (o->kind != OPT_TEXT && o->short_name == c)
			return o;
	opt_fail(p, "unknown option '-%c'", c);
	return NULL;
}

/* One option word at p->next (consumed, with its argument); 0 or an exit code. */
static int one_option(struct opt_parser *p, const struct opt *opts)
{
	const char *w = p->argv[p->next++];
	if (w[1] == '-') {
		const char *name = w + 2, *eq = strchr(name, '=');
		size_t len = eq ? (size_t)(eq - name) : strlen(name);
		if (len == 4 && !strncmp(name, "help", 4)) {
			p->help = 1;
			return 0;
		}
		const struct opt *o = find_long(p, opts, name, len);
		if (!o)
			return EXIT_USAGE;
		if (!o->arg) {
			if (eq)
				return opt_fail(p, "--%s takes no value", o->long_name);
			return set_value(p, o, NULL, 1);
		}
		if (eq)
			return set_value(p, o, eq + 1, 1);
		if (p->next >= p->argc)
			return opt_fail(p, "--%s needs %s", o->long_name, o->arg);
		return set_value(p, o, p->argv[p->next++], 1);
	}
	/* -abc: flags, the last may take an argument (the rest of the word, or the next word) */
	for (const char *c = w + 1; *c; c++) {
		if (*c == 'h' && !find_short(&(struct opt_parser){ 0 }, opts, 'h')) {
			p->help = 1;
			continue;
		}
		const struct opt *o = find_short(p, opts, *c);
		if (!o)
			return EXIT_USAGE;
		if (!o->arg) {
			int rc = set_value(p, o, NULL, 0);
			if (rc)
				return rc;
			continue;
		}
		if (c[1])
			return set_value(p, o, c + 1, 0);
		if (p->next >= p->argc)
			return opt_fail(p, "-%c needs %s", *c, o->arg);
		return set_value(p, o, p->argv[p->next++], 0);
	}
	return 0;
}

int opt_parse(struct opt_parser *p, const struct opt_cmd *cmd, int argc, char **argv)
{
	memset(p, 0, sizeof(*p));
	p->argc = argc;
	p->argv = argv;
	p->next = 1;
	/* Words that are not options are moved after the options, in their order, as getopt_long does. */
	char **words = calloc((size_t)argc + 1, sizeof(*words));
	if (!words)
		return opt_fail(p, "out of memory");
	int nwords = 0, rc = 0;
	while (p->next < argc && !p->help) {
		const char *w = argv[p->next];
		if (!strcmp(w, "--")) {
			p->next++;
			break;
		}
		if (w[0] != '-' || !w[1]) {
			if (cmd->flags & OPT_ARGS_FIRST)
				break;
			words[nwords++] = argv[p->next++];
			continue;
		}
		if ((rc = one_option(p, cmd->opts)))
			break;
	}
	if (!rc) {
		/* argv: [0] options... words... the rest */
		int rest = argc - p->next, first = p->next - nwords;
		memmove(argv + first + nwords, argv + p->next, (size_t)rest * sizeof(*argv));
		memcpy(argv + first, words, (size_t)nwords * sizeof(*argv));
		p->next = first;
	}
	free(words);
	return rc;
}

/* Write text's lines, each after indent spaces but the first (already placed). */
static void lines(FILE *f, const char *text, int indent)
{
	for (const char *s = text; *s;) {
		const char *nl = strchr(s, '\n');
		size_t len = nl ? (size_t)(nl - s) : strlen(s);
		fprintf(f, "%.*s\n", (int)len, s);
		if (!nl)
			break;
		s = nl + 1;
		fprintf(f, "%*s", indent, "");
	}
}

void opt_usage(FILE *f, const struct opt_cmd *cmd)
{
	fputs("usage: ", f);
	lines(f, cmd->usage, 0);
	if (cmd->about) {
		fputc('\n', f);
		lines(f, cmd->about, 0);
	}
	int any = 0;
	for (const struct opt *o = cmd->opts; o && o->kind != OPT_END; o++) {
		if (o->flags & OPT_HIDDEN)
			continue;
		if (!any++)
			fputc('\n', f);
		if (o->kind == OPT_TEXT) {
			lines(f, o->help, 0);
			continue;
		}
		char left[96];
		int n = snprintf(left, sizeof(left), "  %s%c%s--%s%s%s", o->short_name ? "-" : " ",
				 o->short_name ? o->short_name : ' ', o->short_name ? ", " : "  ", o->long_name,
				 o->arg ? " " : "", o->arg ? o->arg : "");
		if (n > (int)sizeof(left) - 1)
			n = (int)sizeof(left) - 1;
		fputs(left, f);
		/* help at the column, or two spaces after a long left part */
		fprintf(f, "%*s", n < USAGE_COLUMN - 1 ? USAGE_COLUMN - n : 2, "");
		lines(f, o->help ? o->help : "", USAGE_COLUMN);
	}
	if (cmd->after) {
		fputc('\n', f);
		lines(f, cmd->after, 0);
	}
}
