/* backtraces.c: `rbscope backtraces -p PID`: every Ruby thread's backtrace, as Ruby itself reports it, through the agent. */
#include <getopt.h>
#include <stdio.h>

#include "../agent/proto.h"
#include "../builtin.h"
#include "../lib/err.h"
#include "agent_helpers.h"

const char usage_backtraces[] =
	"usage: rbscope backtraces -p PID\n"
	"\n"
	"Ask the agent in PID (the rbscope gem) for every thread's backtrace: name, kernel tid,\n"
	"status and Thread#backtrace. For a process without the gem, use `rbscope snapshot`.\n"
	"\n"
	"  -p, --pid PID   the Ruby process\n";

int cmd_backtraces(int argc, char **argv)
{
	static const struct option opts[] = { { "pid", required_argument, NULL, 'p' }, { 0 } };
	const char *p = NULL;
	int c, pid;
	while ((c = getopt_long(argc, argv, "p:", opts, NULL)) != -1) {
		if (c != 'p')
			return fputs(usage_backtraces, stderr), EXIT_USAGE;
		p = optarg;
	}
	if (optind < argc)
		return error("unexpected argument '%s'", argv[optind]), EXIT_USAGE;
	int code = agent_cli_pid_arg(p, &pid);
	return code ? code : agent_cli_simple(pid, AGENT_BACKTRACES, "", 0, -1, stdout);
}
