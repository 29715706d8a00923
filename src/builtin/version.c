/* version.c: `rbscope version`, rbscope's version, the Rubies whose layouts it has and the agents it carries. */
#include <stdio.h>

#include "../builtin.h"
#include "../lib/err.h"
#include "../inject/agents.h"
#include "../lib/opt.h"
#include "../ruby/layout.h"

int cmd_version(int argc, char **argv)
{
	int first, code;
	const struct opt opts[] = { OPT_END() };
	const struct opt_cmd cmd = { .usage = "rbscope version", .about = "Print rbscope's version, the Rubies it reads and the agents it carries.",
				     .opts = opts };
	if (argc && builtin_parse(&cmd, argc, argv, &first, &code))
		return code;
	if (argc && (code = builtin_no_args(argc, argv, first)))
		return code;
	printf("rbscope %s\nRubies (a table each; others through their DWARF):\n", RBSCOPE_VERSION);
	for (const struct ruby_layout_range *r = ruby_layout_ranges; r->layout; r++) {
		char range[32];
		snprintf(range, sizeof(range), "%d.%d.%d-%d.%d.%d", r->major, r->minor, r->first, r->major, r->minor, r->last);
		if (r->first == r->last)
			snprintf(range, sizeof(range), "%d.%d.%d", r->major, r->minor, r->first);
		printf("  %-15s table from %-6s %s\n", range, r->layout->version, r->source);
	}
	char agents[256];
	agents_list(agents, sizeof(agents));
	printf("Agents for --inject where a process has no rbscope gem: %s\n",
	       *agents ? agents : "none (make install, or make static, adds them)");
	return EXIT_OK;
}
