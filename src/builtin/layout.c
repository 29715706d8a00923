/* layout.c: `rbscope layout`, show the struct layout rbscope uses for a process, or reads from a file's DWARF. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../builtin.h"
#include "../ruby/dwarf_layout.h"
#include "../lib/err.h"
#include "../lib/opt.h"
#include "../ruby/layout.h"
#include "../ruby/target.h"

static void print_layout(const struct ruby_layout *L, const char *how)
{
	printf("/* Ruby %s layout, from %s */\n", L->version, how);
#define PRINT_FIELD(name) printf("\t.%s = %lld,\n", #name, (long long)L->name);
	RUBY_LAYOUT_FIELDS(PRINT_FIELD)
#undef PRINT_FIELD
}

int cmd_layout(int argc, char **argv)
{
	int pid = 0, first, rc;
	const char *file = NULL, *base_version = NULL;
	const struct opt opts[] = {
		OPT_PID(&pid, "the Ruby process"),
		OPT_STRING(0, "ruby-version", &builtin_attach_opts.version, "X.Y.Z",
			   "read it with that release's layout, whatever it says it runs"),
		OPT_STRING(0, "dwarf", &file, "FILE", "the layout FILE's DWARF gives (a libruby, or any object built\n"
			   "with Ruby's headers and -g)"),
		OPT_STRING(0, "base", &base_version, "X.Y", "with --dwarf: the Ruby series whose constants complete it\n"
			   "(default: the newest)"),
		OPT_END(),
	};
	const struct opt_cmd cmd = {
		.usage = "rbscope layout (-p PID [--ruby-version X.Y.Z] | --dwarf FILE [--base X.Y])",
		.about = "Print the VM struct layout rbscope reads a Ruby with: for a process, the one it chose (a generated\n"
			 "table, or the DWARF of its libruby); with --dwarf, the one read from FILE's debug information,\n"
			 "constants taken from the table of the Ruby series --base names (default: the newest).",
		.opts = opts,
	};
	if (builtin_parse(&cmd, argc, argv, &first, &rc))
		return rc;
	if ((rc = builtin_no_args(argc, argv, first)))
		return rc;
	if (!pid == !file)
		return error("give either -p PID or --dwarf FILE"), EXIT_USAGE;
	if (pid) {
		struct ruby_target t;
		if ((rc = builtin_attach(&t, pid)))
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
