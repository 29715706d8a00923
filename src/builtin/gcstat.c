/* gcstat.c: `rbscope gcstat -p PID [--inject [--agent DIRS]] [--json]`: GC.stat and object counts of a running process, through the agent. */
#include <stdio.h>

#include "../agent/proto.h"
#include "../builtin.h"
#include "../lib/opt.h"
#include "agent_helpers.h"

int cmd_gcstat(int argc, char **argv)
{
	int pid = 0, json = 0, first, code;
	const struct opt opts[] = {
		OPT_PID(&pid, "the Ruby process"), AGENT_CLI_OPT_INJECT,
		OPT_FLAG(0, "json", &json, "one JSON object {\"gc\": ..., \"objects\": ...}"),
		OPT_END(),
	};
	const struct opt_cmd cmd = {
		.usage = "rbscope gcstat -p PID [--inject [--agent DIRS]] [--json]",
		.about = "Print GC.stat and ObjectSpace.count_objects of PID (which runs the rbscope gem).",
		.opts = opts,
	};
	if (builtin_parse(&cmd, argc, argv, &first, &code))
		return code;
	if ((code = builtin_no_args(argc, argv, first)) || (code = builtin_need_pid(pid)))
		return code;
	return agent_cli_simple(pid, AGENT_GCSTAT, json ? "json" : "", json ? 4 : 0, -1, stdout);
}
