/* heapdump.c: `rbscope heapdump -p PID [--inject [--agent DIRS]] -o FILE`: ObjectSpace.dump_all of a running process, written by a forked child of it into our file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "../agent/proto.h"
#include "../builtin.h"
#include "../lib/err.h"
#include "../lib/opt.h"
#include "agent_helpers.h"

int cmd_heapdump(int argc, char **argv)
{
	int pid = 0, first, code;
	const char *out = NULL;
	const struct opt opts[] = {
		OPT_PID(&pid, "the Ruby process"), AGENT_CLI_OPT_INJECT,
		OPT_STRING('o', "output", &out, "FILE", "where to write the dump"),
		OPT_END(),
	};
	const struct opt_cmd cmd = {
		.usage = "rbscope heapdump -p PID [--inject [--agent DIRS]] -o FILE",
		.about = "Write PID's heap (ObjectSpace.dump_all, JSON lines) to FILE. The agent forks and the child\n"
			 "writes the dump, so the app is paused only for the fork. FILE is opened here, by rbscope,\n"
			 "and handed to the process: it may be anywhere rbscope can write.\n"
			 "Analyse it with `rbscope heap summary FILE`.",
		.opts = opts,
	};
	if (builtin_parse(&cmd, argc, argv, &first, &code))
		return code;
	if ((code = builtin_no_args(argc, argv, first)) || (code = builtin_need_pid(pid)))
		return code;
	if (!out)
		return error("where to? give -o FILE"), EXIT_USAGE;
	int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return err_report(-errno, "cannot open '%s'", out) == EXIT_PERMISSION ? EXIT_PERMISSION : EXIT_OUTPUT;
	code = agent_cli_simple(pid, AGENT_HEAPDUMP, "", 0, fd, stderr);
	close(fd);
	if (code)
		unlink(out); /* no half dump left behind to be mistaken for a whole one */
	return code;
}
