/* agent_helpers.h: shared by the commands that talk to the in-process agent. */
#ifndef RBSCOPE_AGENT_HELPERS_H
#define RBSCOPE_AGENT_HELPERS_H

#include <stddef.h>
#include <stdio.h>

#define AGENT_CLI_TIMEOUT_MS 10000

struct agent_conn;
/* Connect to pid's agent; 0, or prints a one-line error (and hint) and returns the exit code. */
int agent_cli_connect(struct agent_conn *c, int pid);
/* One request, its answer printed to out; returns the exit code. */
int agent_cli_simple(int pid, unsigned type, const char *body, size_t len, int fd_pass, FILE *out);
/* -p was given and is a pid; 0 or EXIT_USAGE (after printing why). */
int agent_cli_pid_arg(const char *opt, int *pid);

#endif
