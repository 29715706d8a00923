/* eval.c: `rbscope eval -p PID [--inject [--agent DIRS]] CODE`: run Ruby code in a process that opted in, and print the result's inspect. */
#include <stdio.h>
#include <string.h>

#include "../agent/proto.h"
#include "../builtin.h"
#include "../lib/err.h"
#include "../lib/opt.h"
#include "agent_helpers.h"

int cmd_eval(int argc, char **argv)
{
	int pid = 0, first, code;
	const struct opt opts[] = { OPT_PID(&pid, "the Ruby process"), AGENT_CLI_OPT_INJECT, OPT_END() };
	const struct opt_cmd cmd = {
		.usage = "rbscope eval -p PID [--inject [--agent DIRS]] CODE",
		.about = "Evaluate CODE at the top level of PID, in the agent's own thread (the app keeps running),\n"
			 "and print the result's inspect, or the exception. Refused unless the process opted in:\n"
			 "RBSCOPE_ALLOW_EVAL=1 in its environment, or Rbscope.allow_eval! in its code.",
		.opts = opts,
		.flags = OPT_ARGS_FIRST, /* the code may look like an option: -1 */
	};
	if (builtin_parse(&cmd, argc, argv, &first, &code))
		return code;
	if (first + 1 != argc)
		return error("give the code to evaluate as one argument"), EXIT_USAGE;
	if ((code = builtin_need_pid(pid)))
		return code;
	return agent_cli_simple(pid, AGENT_EVAL, argv[first], strlen(argv[first]), -1, stdout);
}
