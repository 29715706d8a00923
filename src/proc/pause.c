/* pause.c: --blocking: stop every thread of a process around a sample with ptrace, then let it run on. */
#include "pause.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>

#include "../lib/err.h"
#include "../lib/vec.h"

static int known(const struct pauser *pz, pid_t tid)
{
	for (int i = 0; i < pz->n; i++)
		if (pz->tid[i] == tid)
			return 1;
	return 0;
}

/* Seize threads that appeared since the last look. PTRACE_SEIZE does not stop them. */
static int seize_new(struct pauser *pz)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pz->pid);
	DIR *d = opendir(path);
	if (!d)
		return errno == ENOENT ? ERR_GONE : -errno;
	int err = 0;
	for (struct dirent *de; (de = readdir(d));) {
		pid_t tid = (pid_t)atoi(de->d_name);
		if (tid <= 0 || known(pz, tid))
			continue;
		pid_t *t = vec_grow(pz->tid, (size_t)pz->n, &pz->cap, sizeof(*t));
		if (!t) {
			err = -ENOMEM;
			break;
		}
		pz->tid = t;
		if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) < 0) {
			if (errno == ESRCH)
				continue; /* exited meanwhile */
			err = -errno;
			break;
		}
		pz->tid[pz->n++] = tid;
	}
	closedir(d);
	return err;
}

int pauser_attach(struct pauser *pz, pid_t pid)
{
	memset(pz, 0, sizeof(*pz));
	pz->pid = pid;
	int err = seize_new(pz);
	if (err)
		pauser_detach(pz);
	return err;
}

static void forget(struct pauser *pz, int i)
{
	pz->tid[i] = pz->tid[--pz->n];
}

/*
 * Wait until thread i is in a ptrace stop we asked for. A signal arriving
 * first is a signal-delivery stop: it is passed on at once (so the process
 * sees every signal it would have seen) and the wait goes on for ours.
 * Returns 0, or 1 if the thread exited.
 */
static int wait_tid_stopped(pid_t tid)
{
	for (;;) {
		int status;
		pid_t r = waitpid(tid, &status, __WALL);
		if (r < 0)
			return errno == ECHILD ? 1 : -errno;
		if (WIFEXITED(status) || WIFSIGNALED(status))
			return 1;
		if (!WIFSTOPPED(status))
			continue;
		if (status >> 16 == PTRACE_EVENT_STOP)
			return 0;
		/* A signal on its way to the thread: deliver it and wait for our stop. */
		if (ptrace(PTRACE_CONT, tid, NULL, (void *)(long)WSTOPSIG(status)) < 0)
			return errno == ESRCH ? 1 : -errno;
	}
}

static int wait_stopped(struct pauser *pz, int i)
{
	return wait_tid_stopped(pz->tid[i]);
}

int pause_thread_stop(pid_t tid, uint64_t regs[17])
{
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) < 0)
		return errno == ESRCH ? ERR_GONE : -errno;
	int err = ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0 ? -errno : 0;
	int r = err ? 0 : wait_tid_stopped(tid);
	if (!err && r == 0)
		err = pause_thread_regs(tid, regs);
	if (r == 0 && err)
		ptrace(PTRACE_DETACH, tid, NULL, NULL);
	return err ? err : r == 1 ? ERR_GONE : r;
}

int pause_thread_regs(pid_t tid, uint64_t regs[17])
{
	struct user_regs_struct u;
	if (ptrace(PTRACE_GETREGS, tid, NULL, &u) < 0)
		return -errno;
	/* DWARF's x86-64 register numbers */
	const uint64_t v[17] = { u.rax, u.rdx, u.rcx, u.rbx, u.rsi, u.rdi, u.rbp, u.rsp, u.r8, u.r9,
				 u.r10, u.r11, u.r12, u.r13, u.r14, u.r15, u.rip };
	memcpy(regs, v, sizeof(v));
	return 0;
}

void pause_thread_go(pid_t tid)
{
	ptrace(PTRACE_DETACH, tid, NULL, NULL);
}

int pauser_stop(struct pauser *pz)
{
	int err = seize_new(pz);
	if (err)
		return err;
	for (int i = 0; i < pz->n; i++)
		if (ptrace(PTRACE_INTERRUPT, pz->tid[i], NULL, NULL) < 0 && errno != ESRCH)
			return -errno;
	for (int i = 0; i < pz->n;) {
		int r = wait_stopped(pz, i);
		if (r < 0)
			return r;
		if (r == 1)
			forget(pz, i);
		else
			i++;
	}
	pz->stopped = 1;
	return pz->n ? 0 : ERR_GONE;
}

int pauser_resume(struct pauser *pz)
{
	int err = 0;
	for (int i = 0; i < pz->n; i++)
		if (ptrace(PTRACE_CONT, pz->tid[i], NULL, NULL) < 0 && errno != ESRCH && !err)
			err = -errno;
	pz->stopped = 0;
	return err;
}

void pauser_detach(struct pauser *pz)
{
	/* Detaching needs a stopped tracee; a seized thread that is running is interrupted first. */
	if (!pz->stopped && pz->n) {
		for (int i = 0; i < pz->n; i++)
			ptrace(PTRACE_INTERRUPT, pz->tid[i], NULL, NULL);
		for (int i = 0; i < pz->n;)
			if (wait_stopped(pz, i))
				forget(pz, i);
			else
				i++;
	}
	for (int i = 0; i < pz->n; i++)
		ptrace(PTRACE_DETACH, pz->tid[i], NULL, NULL);
	free(pz->tid);
	memset(pz, 0, sizeof(*pz));
}
