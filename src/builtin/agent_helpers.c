/* agent_helpers.c: what the agent-backed commands (backtraces, gcstat, eval, heapdump, trace, record --mode alloc) share: -p parsing, connecting, one-shot requests. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../agent/client.h"
#include "../agent/proto.h"
#include "../alloc/alloc.h"
#include "../builtin.h"
#include "../lib/err.h"
#include "../proc/task.h"
#include "../profile/profile.h"
#include "agent_helpers.h"

int agent_cli_inject;
struct inject_opts agent_cli_inject_opts;

int agent_cli_connect(struct agent_conn *c, int pid)
{
	int r = agent_connect(c, pid, AGENT_CLI_TIMEOUT_MS);
	if (!r)
		return 0;
	if (r == ERR_NO_AGENT && agent_cli_inject) {
		char why[512];
		int e = agent_inject(pid, &agent_cli_inject_opts, why, sizeof(why));
		if (e < 0) {
			error("process %d: --inject: %s", pid, why);
			if (e == -EPERM || e == -EACCES) {
				task_access_why("/proc", pid, why, sizeof(why));
				fprintf(stderr, "hint: %s\n", why);
			}
			return err_exit_code(e == -EPERM || e == -EACCES || e == ERR_GONE ? e : ERR_INJECT);
		}
		if (e == 0)
			fprintf(stderr, "rbscope: process %d: agent loaded (--inject: %s)\n", pid, why);
		r = agent_connect(c, pid, AGENT_CLI_TIMEOUT_MS);
		if (!r)
			return 0;
	}
	if (r == -EACCES && c->hello[0]) {
		error("process %d: the agent refused us: %s", pid, c->hello);
		return EXIT_PERMISSION;
	}
	if (r == ERR_AGENT_SILENT)
		return err_report(r, "process %d: no answer within %d s", pid, AGENT_CLI_TIMEOUT_MS / 1000);
	return builtin_report_attach(r, pid, "process %d", pid);
}

/* agent_request()'s failure r reported (reply: the agent's text, freed); the exit code. */
static int ask_failed(int pid, int r, char **reply)
{
	int code;
	if (r == ERR_AGENT) {
		error("process %d: %s", pid, *reply ? *reply : "error");
		code = strncmp(*reply ? *reply : "", "eval refused", 12) ? EXIT_AGENT : EXIT_PERMISSION;
	} else {
		code = err_report(r == -ECONNRESET ? ERR_GONE : r, "process %d", pid);
	}
	free(*reply);
	*reply = NULL;
	return code;
}

int agent_cli_ask(struct agent_conn *c, int pid, unsigned type, const char *body, size_t len, int fd_pass,
		  int timeout_ms, char **reply, size_t *reply_len, int *fd_got)
{
	*reply = NULL;
	int r = agent_request(c, type, body, len, fd_pass, timeout_ms, reply, reply_len, fd_got);
	return r ? ask_failed(pid, r, reply) : 0;
}

int agent_cli_simple(int pid, unsigned type, const char *body, size_t len, int fd_pass, FILE *out)
{
	struct agent_conn c;
	int code = agent_cli_connect(&c, pid);
	if (code)
		return code;
	char *reply;
	size_t n = 0;
	code = agent_cli_ask(&c, pid, type, body, len, fd_pass, -1, &reply, &n, NULL);
	agent_close(&c);
	if (code)
		return code;
	fwrite(reply, 1, n, out);
	if (n && reply[n - 1] != '\n')
		fputc('\n', out);
	if (fflush(out) || ferror(out))
		code = err_report(-EIO, "cannot write the answer");
	free(reply);
	return code;
}


void agent_cli_profile_meta(struct profile *p, const struct agent_conn *c)
{
	char cmdline[1024] = "";
	p->pid = c->pid;
	task_cmdline(c->pid, cmdline, sizeof(cmdline));
	p->command = (uint32_t)strtab_intern(&p->strs, cmdline, strlen(cmdline));
	const char *v = strstr(c->hello, "ruby ");
	if (v) {
		v += 5;
		p->ruby_version = (uint32_t)strtab_intern(&p->strs, v, strcspn(v, " \n"));
	}
}

int agent_cli_allocs(struct agent_conn *c, int pid, uint64_t interval, unsigned flags, struct profile *p,
		     struct alloc_reader *r, int threads_root)
{
	char *reply;
	int err = alloc_reader_open(r, p, c, interval, flags, threads_root, AGENT_CLI_TIMEOUT_MS, &reply);
	if (err == ERR_CORRUPT || err == -ENOMEM) {
		free(reply);
		return err == -ENOMEM ? err_report(err, "sampling allocations")
				      : (error("process %d: the agent's allocation ring is not usable", pid), EXIT_AGENT);
	}
	if (err)
		return ask_failed(pid, err, &reply);
	agent_cli_profile_meta(p, c);
	fprintf(stderr, "rbscope: process %d: %s (Ctrl-C to stop)\n", pid, reply ? reply : "");
	free(reply);
	return 0;
}
