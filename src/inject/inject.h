/* inject.h: `--inject`: load the agent into a Ruby process that never required it, through one borrowed thread. */
#ifndef RBSCOPE_INJECT_H
#define RBSCOPE_INJECT_H

#include <stddef.h>
#include <sys/types.h>

struct inject_opts {
	const char *agent; /* directories (colon-separated, as the target sees them) holding rbscope.rb and its
			      extension; NULL: the rbscope gem installed for the target's Ruby */
	int timeout_ms;    /* how long to wait for the agent to answer (default 10 s) */
};

/*
 * Make the agent run in pid (see docs/agent.md, "Loading it into a running
 * process"): find the gem built for its Ruby, borrow one Ruby thread parked in
 * a wait, place a small piece of code in a new mapping, have that thread
 * register a postponed job, give it back, and wait until the job has started
 * a Ruby thread that requires the agent and its socket answers.
 *
 * Returns 0 (the agent answers; msg says which thread was stopped, for how
 * long), 1 (it already did: nothing was done), or a
 * negative code with why in msg: ERR_REFUSED (the process forbids it, or no
 * thread can be borrowed safely), ERR_NO_AGENT_BUILD (no agent for its Ruby),
 * -EPERM (ptrace not allowed), ERR_AGENT_PENDING (the code is in place but
 * Ruby has not run it: the process is idle), ERR_AGENT (it ran and the agent
 * did not load), or what attaching to a Ruby returns.
 */
int agent_inject(pid_t pid, const struct inject_opts *o, char *msg, size_t cap);

#endif
