/* gcstat.c: `rbscope gcstat -p PID [--json]`: GC.stat and object counts of a running process, through the agent. */
#include <getopt.h>
#include <stdio.h>

#include "../agent/proto.h"
#include "../builtin.h"
#include "../lib/err.h"
#include "agent_helpers.h"

const char usage_gcstat[] =
	"usage: rbscope gcstat -p PID [--json]\n"
	"\n"
	"Print GC.stat and ObjectSpace.count_objects of PID (which runs the rbscope gem).\n"
	"\n"
	"  -p, --pid PID   the Ruby process\n"
	"      --json      one JSON object {\"gc\": ..., \"objects\": ...}\n";

int cmd_gcstat(int argc, char **argv)
{
	static const struct option opts[] = { { "pid", required_argument, NULL, 'p' }, { "json", no_argument, NULL, 'j' }, { 0 } };
	const char *p = NULL;
	int c, pid, json = 0;
	while ((c = getopt_long(argc, argv, "p:", opts, NULL)) != -1) {
		if (c == 'p')
			p = optarg;
		else if (c == 'j')
			json = 1;
		else
			return fputs(usage_gcstat, stderr), EXIT_USAGE;
	}
	if (optind < argc)
		return error("unexpected argument '%s'", argv[optind]), EXIT_USAGE;
	int code = agent_cli_pid_arg(p, &pid);
	return code ? code : agent_cli_simple(pid, AGENT_GCSTAT, json ? "json" : "", json ? 4 : 0, -1, stdout);
}
