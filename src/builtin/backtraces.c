/* backtraces.c: `rbscope backtraces -p PID [--inject [--agent DIRS]]`: every Ruby thread's backtrace, as Ruby itself reports it, through the agent. */
#include <stdio.h>

#include "../agent/proto.h"
#include "../builtin.h"
#include "../lib/opt.h"
#include "agent_helpers.h"

int cmd_backtraces(int argc, char **argv)
{
	int pid = 0, first, code;
	const struct opt opts[] = { OPT_PID(&pid, "the Ruby process"), AGENT_CLI_OPT_INJECT, OPT_END() };
	const struct opt_cmd cmd = {
		.usage = "rbscope backtraces -p PID [--inject [--agent DIRS]]",
		.about = "Ask the agent in PID (the rbscope gem) for every thread's backtrace: name, kernel tid,\n"
			 "status and Thread#backtrace. For a process without the gem, use `rbscope snapshot`.",
		.opts = opts,
	};
	if (builtin_parse(&cmd, argc, argv, &first, &code))
		return code;
	if ((code = builtin_no_args(argc, argv, first)) || (code = builtin_need_pid(pid)))
		return code;
	return agent_cli_simple(pid, AGENT_BACKTRACES, "", 0, -1, stdout);
}
