/* layout.c: `rbscope layout`, show the struct layout rbscope uses for a process, or reads from a file's DWARF. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "../builtin.h"
#include "../elf/dwarf.h"
#include "../lib/err.h"
#include "../ruby/layout.h"
#include "../ruby/target.h"

const char usage_layout[] =
	"usage: rbscope layout (-p PID [--ruby-version X.Y.Z] | --dwarf FILE [--base X.Y])\n"
	"\n"
	"Print the VM struct layout rbscope reads a Ruby with: for a process, the one it chose (a generated\n"
	"table, or the DWARF of its libruby); with --dwarf, the one read from FILE's debug information,\n"
	"constants taken from the table of the Ruby series --base names (default: the newest).\n";

static void print_layout(const struct ruby_layout *L, const char *how)
{
	printf("/* Ruby %s layout, from %s */\n", L->version, how);
#define PRINT_FIELD(name) printf("\t.%s = %lld,\n", #name, (long long)L->name);
	RUBY_LAYOUT_FIELDS(PRINT_FIELD)
#undef PRINT_FIELD
}

int cmd_layout(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "dwarf", required_argument, NULL, 'D' },
		{ "base", required_argument, NULL, 'b' },
		{ "ruby-version", required_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c, pid = 0, rc;
	const char *file = NULL, *base_version = NULL;
	while ((c = getopt_long(argc, argv, "p:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if ((rc = parse_pid(optarg, &pid)))
				return rc;
			break;
		case 'D': file = optarg; break;
		case 'b': base_version = optarg; break;
		case 'V': builtin_attach.version = optarg; break;
		case 'h': fputs(usage_layout, stdout); return EXIT_OK;
		default: fputs(usage_layout, stderr); return EXIT_USAGE;
		}
	}
	if (!pid == !file || optind < argc) {
		fputs(usage_layout, stderr);
		return EXIT_USAGE;
	}
	if (pid) {
		struct ruby_target t;
		if ((rc = attach_or_report(&t, pid)))
			return rc;
		print_layout(t.L, t.layout_how);
		ruby_target_detach(&t);
		return EXIT_OK;
	}
	const struct ruby_layout *base = base_version ? ruby_layout_find(base_version, NULL) : ruby_layout_newest();
	if (!base)
		return error("no layout table for Ruby '%s'", base_version), EXIT_USAGE;
	struct ruby_layout L;
	int n = 0, err = dwarf_layout_read(file, base, &L, &n);
	if (err == -ENOENT)
		return error("'%s' has no DWARF with Ruby's VM structs (build Ruby with -g)", file), EXIT_UNSUPPORTED;
	if (err)
		return err_report(err, "cannot read '%s'", file);
	char how[512];
	snprintf(how, sizeof(how), "the DWARF of %s (%d fields), constants of %s", file, n, base->version);
	print_layout(&L, how);
	return EXIT_OK;
}
