/* agent_helpers.h: shared by the commands that talk to the in-process agent. */
#ifndef RBSCOPE_AGENT_HELPERS_H
#define RBSCOPE_AGENT_HELPERS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define AGENT_CLI_TIMEOUT_MS 10000
#define AGENT_CLI_STOP_MS 2000 /* how long a command waits for the agent to stop (agent_stop) */

#include "../inject/inject.h"
#include "../lib/opt.h"

struct agent_conn;

/* --inject and --agent, the same on every command that talks to the agent. */
extern int agent_cli_inject;
extern struct inject_opts agent_cli_inject_opts;
#define AGENT_CLI_OPT_INJECT \
	OPT_FLAG(0, "inject", &agent_cli_inject, \
		 "load the agent into the process now if it has none (ptrace: see docs/agent.md)"), \
	OPT_STRING(0, "agent", &agent_cli_inject_opts.agent, "DIRS", \
		   "with --inject: the agent's lib and extension directories, as the process\n" \
		   "sees them (colon-separated; default: the rbscope gem for its Ruby)")
/*
 * Connect to pid's agent (with --inject, after loading it if it has none); 0, or prints a one-line error
 * (and hint) and returns the exit code.
 */
int agent_cli_connect(struct agent_conn *c, int pid);
/*
 * agent_request(), with its failures reported: 0 with *reply (malloc'ed, the AGENT_OK text, its length in
 * *reply_len and a passed descriptor in *fd_got when those are not NULL); else prints the one-line error
 * (the agent's own text, or why the exchange failed), frees the reply and returns the exit code.
 */
int agent_cli_ask(struct agent_conn *c, int pid, unsigned type, const char *body, size_t len, int fd_pass,
		  int timeout_ms, char **reply, size_t *reply_len, int *fd_got);
/* A profile made through c's agent: its pid, command line and Ruby version (from the agent's hello). */
struct profile;
void agent_cli_profile_meta(struct profile *p, const struct agent_conn *c);
/*
 * Ask c's agent to sample allocations, one in interval (flags: alloc/alloc.h's ALLOC_*), and
 * make r read its ring into p (whose metadata it sets); says what the agent does on stderr. 0, or prints
 * why and returns the exit code (p is the caller's to free either way).
 */
struct alloc_reader;
int agent_cli_allocs(struct agent_conn *c, int pid, uint64_t interval, unsigned flags, struct profile *p,
		     struct alloc_reader *r, int threads_root);
/* One request, its answer printed to out; returns the exit code. */
int agent_cli_simple(int pid, unsigned type, const char *body, size_t len, int fd_pass, FILE *out);

#endif
