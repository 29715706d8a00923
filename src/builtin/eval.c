/* eval.c: `rbscope eval -p PID CODE`: run Ruby code in a process that opted in, and print the result's inspect. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "../agent/proto.h"
#include "../builtin.h"
#include "../lib/err.h"
#include "agent_helpers.h"

const char usage_eval[] =
	"usage: rbscope eval -p PID CODE\n"
	"\n"
	"Evaluate CODE at the top level of PID, in the agent's own thread (the app keeps running),\n"
	"and print the result's inspect, or the exception. Refused unless the process opted in:\n"
	"RBSCOPE_ALLOW_EVAL=1 in its environment, or Rbscope.allow_eval! in its code.\n"
	"\n"
	"  -p, --pid PID   the Ruby process\n";

int cmd_eval(int argc, char **argv)
{
	static const struct option opts[] = { { "pid", required_argument, NULL, 'p' }, { 0 } };
	const char *p = NULL;
	int c, pid;
	while ((c = getopt_long(argc, argv, "+p:", opts, NULL)) != -1) {
		if (c != 'p')
			return fputs(usage_eval, stderr), EXIT_USAGE;
		p = optarg;
	}
	if (optind + 1 != argc)
		return error("give the code to evaluate as one argument"), EXIT_USAGE;
	int code = agent_cli_pid_arg(p, &pid);
	const char *src = argv[optind];
	return code ? code : agent_cli_simple(pid, AGENT_EVAL, src, strlen(src), -1, stdout);
}
