/* test_opt.c: the option parser: kinds, spellings, ranges, argument order and the usage it writes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lib/err.h"
#include "lib/opt.h"

struct vals {
	int pid, flag, other, n;
	double rate;
	const char *out;
	char words[256];
	int sort;
};

static int words_cb(struct opt_parser *p, void *data, const char *arg)
{
	struct vals *v = data;
	strcat(v->words, arg);
	for (const char *w; (w = opt_next_word(p));) {
		strcat(v->words, ",");
		strcat(v->words, w);
	}
	return 0;
}

/* Parse the words of line (split at spaces) with a fixed table; the return code, *v and *next. */
static const char *const sorts[] = { "self", "total", "name", NULL };

static int parse(const char *line, int flags, struct vals *v, int *next, char ***argv_out, struct opt_parser *p)
{
	static char buf[512];
	static char *argv[32];
	int argc = 0;
	snprintf(buf, sizeof(buf), "cmd %s", line);
	for (char *s = strtok(buf, " "); s; s = strtok(NULL, " "))
		argv[argc++] = s;
	argv[argc] = NULL;
	memset(v, 0, sizeof(*v));
	v->n = -1;
	const struct opt opts[] = {
		OPT_PID(&v->pid, "the process"),
		OPT_FLAG('s', "subprocesses", &v->flag, "a flag"),
		OPT_FLAG(0, "subtle", &v->other, "another flag sharing a prefix"),
		OPT_DOUBLE('r', "rate", &v->rate, "HZ", "a rate", 1, 100, "a rate from 1 to 100"),
		OPT_INT('n', "count", &v->n, "N", "a count", 0, 10, "a count from 0 to 10"),
		OPT_STRING('o', "output", &v->out, "FILE", "where"),
		OPT_CALL('m', "methods", v, "SEL", "words", words_cb),
		OPT_CHOICE(0, "sort", &v->sort, "BY", "an order", sorts),
		OPT_END(),
	};
	const struct opt_cmd cmd = { .usage = "cmd", .opts = opts, .flags = flags };
	struct opt_parser local;
	if (!p)
		p = &local;
	int rc = opt_parse(p, &cmd, argc, argv);
	*next = p->next;
	if (argv_out)
		*argv_out = argv;
	return rc;
}

static void test_opt_spellings(void **state)
{
	(void)state;
	struct vals v;
	int next;
	char **argv;
	assert_int_equal(parse("-p 42 -s --rate=50 -n3 --output x.svg", 0, &v, &next, NULL, NULL), 0);
	assert_int_equal(v.pid, 42);
	assert_int_equal(v.flag, 1);
	assert_true(v.rate == 50);
	assert_int_equal(v.n, 3);
	assert_string_equal(v.out, "x.svg");
	/* short flags bundled, the last taking the rest of the word; a long prefix that is unambiguous */
	assert_int_equal(parse("-sp7 --rat 2 --out=y", 0, &v, &next, NULL, NULL), 0);
	assert_int_equal(v.pid, 7);
	assert_int_equal(v.flag, 1);
	assert_true(v.rate == 2);
	assert_string_equal(v.out, "y");
	/* words after the options, in order, wherever they were; "--" ends the options */
	assert_int_equal(parse("a -p 1 b -- -c d", 0, &v, &next, &argv, NULL), 0);
	assert_int_equal(next, 4);
	assert_string_equal(argv[4], "a");
	assert_string_equal(argv[5], "b");
	assert_string_equal(argv[6], "-c");
	assert_string_equal(argv[7], "d");
	/* OPT_ARGS_FIRST: the first word ends the options (a command and its own options) */
	assert_int_equal(parse("-p 1 ruby -s x", OPT_ARGS_FIRST, &v, &next, &argv, NULL), 0);
	assert_int_equal(v.flag, 0);
	assert_string_equal(argv[next], "ruby");
	/* a callback that takes the words up to the next option */
	assert_int_equal(parse("-m A#b C.d e -s f", 0, &v, &next, &argv, NULL), 0);
	assert_string_equal(v.words, "A#b,C.d,e");
	assert_int_equal(v.flag, 1);
	assert_string_equal(argv[next], "f");
}

static void test_opt_errors(void **state)
{
	(void)state;
	struct vals v;
	struct opt_parser p;
	int next;
	assert_int_equal(parse("--rate 0", 0, &v, &next, NULL, &p), EXIT_USAGE);
	assert_string_equal(p.err, "--rate takes a rate from 1 to 100, not '0'");
	assert_int_equal(parse("-r 1e3", 0, &v, &next, NULL, &p), EXIT_USAGE);
	assert_string_equal(p.err, "-r takes a rate from 1 to 100, not '1e3'");
	assert_int_equal(parse("-n 2x", 0, &v, &next, NULL, &p), EXIT_USAGE);
	assert_int_equal(parse("-r nan", 0, &v, &next, NULL, &p), EXIT_USAGE);
	assert_int_equal(parse("-p 0", 0, &v, &next, NULL, &p), EXIT_USAGE);
	assert_string_equal(p.err, "'0' is not a process id");
	assert_int_equal(parse("-p 99999999999", 0, &v, &next, NULL, &p), EXIT_USAGE);
	assert_int_equal(parse("--sub", 0, &v, &next, NULL, &p), EXIT_USAGE);
	assert_string_equal(p.err, "option '--sub' is ambiguous");
	assert_int_equal(parse("--nope", 0, &v, &next, NULL, &p), EXIT_USAGE);
	assert_string_equal(p.err, "unknown option '--nope'");
	assert_int_equal(parse("-x", 0, &v, &next, NULL, &p), EXIT_USAGE);
	assert_string_equal(p.err, "unknown option '-x'");
	assert_int_equal(parse("-o", 0, &v, &next, NULL, &p), EXIT_USAGE);
	assert_string_equal(p.err, "-o needs FILE");
	assert_int_equal(parse("--subprocesses=1", 0, &v, &next, NULL, &p), EXIT_USAGE);
	assert_string_equal(p.err, "--subprocesses takes no value");
	assert_int_equal(parse("--sort size", 0, &v, &next, NULL, &p), EXIT_USAGE);
	assert_string_equal(p.err, "--sort takes self, total or name, not 'size'");
	assert_int_equal(parse("--sort=total", 0, &v, &next, NULL, &p), 0);
	assert_int_equal(v.sort, 1);
	/* help stops the parse, whatever follows */
	assert_int_equal(parse("-s --help --nope", 0, &v, &next, NULL, &p), 0);
	assert_int_equal(p.help, 1);
	assert_int_equal(parse("-h", 0, &v, &next, NULL, &p), 0);
	assert_int_equal(p.help, 1);
}

static void test_opt_usage(void **state)
{
	(void)state;
	int flag = 0;
	const char *s = NULL;
	const struct opt opts[] = {
		OPT_FLAG('a', "all", &flag, "every one"),
		OPT_STRING(0, "a-very-long-option-name", &s, "VALUE", "two lines\nof help"),
		OPT_END(),
	};
	const struct opt_cmd cmd = { .usage = "cmd [-a]\n   or: cmd --x", .about = "What it does.", .opts = opts,
				     .after = "After." };
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	opt_usage(f, &cmd);
	fclose(f);
	assert_string_equal(text, "usage: cmd [-a]\n"
				  "   or: cmd --x\n"
				  "\n"
				  "What it does.\n"
				  "\n"
				  "  -a, --all             every one\n"
				  "      --a-very-long-option-name VALUE  two lines\n"
				  "                        of help\n"
				  "\n"
				  "After.\n");
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_opt_spellings),
		cmocka_unit_test(test_opt_errors),
		cmocka_unit_test(test_opt_usage),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
