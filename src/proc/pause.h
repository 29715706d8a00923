/* pause.h: --blocking: stop every thread of a process around a sample with ptrace, then let it run on. */
#ifndef RBSCOPE_PAUSE_H
#define RBSCOPE_PAUSE_H

#include <stdint.h>
#include <sys/types.h>

/*
 * The threads are seized (PTRACE_SEIZE: they keep running), stopped with
 * PTRACE_INTERRUPT for each sample and continued after it. Signals that
 * arrive meanwhile are passed on, threads born later are seized at the next
 * stop, and if rbscope dies the kernel detaches and they simply run on.
 * A job-control stop (SIGSTOP from elsewhere) during a recording is not
 * kept: the next resume continues the thread.
 */
struct pauser {
	pid_t pid;
	pid_t *tid;
	int n;
	size_t cap;
	int stopped;
};

/* Seize every thread of pid; 0, -EPERM, ERR_GONE or another negative code. */
int pauser_attach(struct pauser *pz, pid_t pid);
/* Stop every thread (new ones seized first); 0, ERR_GONE when none is left, or a negative code. */
int pauser_stop(struct pauser *pz);
int pauser_resume(struct pauser *pz);
/* Let every thread go for good. */
void pauser_detach(struct pauser *pz);

/*
 * Stop one thread (PTRACE_SEIZE, PTRACE_INTERRUPT) and copy its registers in
 * DWARF's x86-64 order (rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip). On 0 it
 * stays stopped until pause_thread_go(); ERR_GONE, -EPERM (another tracer
 * holds it) or another negative code leave it running.
 */
int pause_thread_stop(pid_t tid, uint64_t regs[17]);
void pause_thread_go(pid_t tid);
/* The registers (the same order) of a thread stopped by either: 0, or a negative code. */
int pause_thread_regs(pid_t tid, uint64_t regs[17]);

#endif
