/* heapdump.c: `rbscope heapdump -p PID -o FILE`: ObjectSpace.dump_all of a running process, written by a forked child of it into our file. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../agent/proto.h"
#include "../builtin.h"
#include "../lib/err.h"
#include "agent_helpers.h"

const char usage_heapdump[] =
	"usage: rbscope heapdump -p PID -o FILE\n"
	"\n"
	"Write PID's heap (ObjectSpace.dump_all, JSON lines) to FILE. The agent forks and the child\n"
	"writes the dump, so the app is paused only for the fork. FILE is opened here, by rbscope,\n"
	"and handed to the process: it may be anywhere rbscope can write.\n"
	"Analyse it with `rbscope heap summary FILE`.\n"
	"\n"
	"  -p, --pid PID       the Ruby process\n"
	"  -o, --output FILE   where to write the dump\n";

int cmd_heapdump(int argc, char **argv)
{
	static const struct option opts[] = { { "pid", required_argument, NULL, 'p' },
					      { "output", required_argument, NULL, 'o' }, { 0 } };
	const char *p = NULL, *out = NULL;
	int c, pid;
	while ((c = getopt_long(argc, argv, "p:o:", opts, NULL)) != -1) {
		if (c == 'p')
			p = optarg;
		else if (c == 'o')
			out = optarg;
		else
			return fputs(usage_heapdump, stderr), EXIT_USAGE;
	}
	if (optind < argc)
		return error("unexpected argument '%s'", argv[optind]), EXIT_USAGE;
	int code = agent_cli_pid_arg(p, &pid);
	if (code)
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
