/* hijack.c: borrow one parked thread of another process for a few system calls and one call, and give it back as it was. */
#include "hijack.h"

#include <elf.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../lib/err.h"
#include "mem.h"

#define SYSCALL_STOP (SIGTRAP | 0x80) /* PTRACE_O_TRACESYSGOOD */

static int read_remote(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec l = { buf, len }, r = { (void *)(uintptr_t)addr, len };
	return process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

/* Wait for tid's next stop: its status, or a negative code (the thread is gone). */
static int wait_stop(pid_t tid, int timeout_ms, int *status)
{
	struct timespec nap = { 0, 200000 };
	for (int waited_us = 0, polls = 0;;) {
		pid_t r = waitpid(tid, status, __WALL | (timeout_ms < 0 ? 0 : WNOHANG));
		if (r == tid) {
			if (WIFEXITED(*status) || WIFSIGNALED(*status))
				return ERR_GONE;
			return 0;
		}
		if (r < 0)
			return errno == ECHILD ? ERR_GONE : -errno;
		if (waited_us >= timeout_ms * 1000)
			return -ETIMEDOUT;
		/* a stop usually comes within microseconds: yield first, sleep only when it does not */
		if (++polls < 200) {
			sched_yield();
			continue;
		}
		nanosleep(&nap, NULL);
		waited_us += 200;
	}
}

/* A signal-delivery stop: keep the signal to send again later, and go on without it. */
static void hold_signal(struct hijack *h, int sig)
{
	for (int i = 0; i < h->nsigs; i++)
		if (h->sigs[i] == sig)
			return; /* a standard signal pending twice is delivered once anyway */
	if (h->nsigs < (int)(sizeof(h->sigs) / sizeof(h->sigs[0])))
		h->sigs[h->nsigs++] = sig;
}

static int is_fault(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE;
}

int hijack_seize(struct hijack *h, pid_t pid, pid_t tid)
{
	memset(h, 0, sizeof(*h));
	h->pid = pid;
	h->tid = tid;
	if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)(uintptr_t)PTRACE_O_TRACESYSGOOD) < 0)
		return errno == ESRCH ? ERR_GONE : errno == EPERM ? -EPERM : -errno;
	h->seized = 1;
	int status, err;
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0) {
		err = errno == ESRCH ? ERR_GONE : -errno;
		goto fail;
	}
	/* The interrupt stop; a signal that was on its way may come first (held back). */
	for (;;) {
		if ((err = wait_stop(tid, 2000, &status)))
			goto fail;
		if (!WIFSTOPPED(status)) {
			err = ERR_GONE;
			goto fail;
		}
		if (status >> 16 == PTRACE_EVENT_STOP)
			break;
		hold_signal(h, WSTOPSIG(status));
		if (ptrace(PTRACE_CONT, tid, NULL, NULL) < 0 || ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0) {
			err = ERR_GONE;
			goto fail;
		}
	}
	if (ptrace(PTRACE_GETREGS, tid, NULL, &h->saved) < 0) {
		err = -errno;
		goto fail;
	}
	struct iovec xs = { h->xstate, sizeof(h->xstate) };
	if (ptrace(PTRACE_GETREGSET, tid, (void *)(uintptr_t)NT_X86_XSTATE, &xs) == 0)
		h->xstate_len = xs.iov_len;
	else if (ptrace(PTRACE_GETFPREGS, tid, NULL, &h->fp) < 0) {
		err = -errno;
		goto fail;
	}
	/* In a system call: orig_rax holds its number and the two bytes before rip are a syscall instruction. */
	unsigned char insn[2];
	h->syscall_insn = h->saved.rip - 2;
	if ((long)h->saved.orig_rax < 0 || read_remote(pid, h->syscall_insn, insn, 2) || insn[0] != 0x0f ||
	    insn[1] != 0x05) {
		err = -EAGAIN;
		goto fail;
	}
	return 0;
fail:
	hijack_release(h, 0);
	return err;
}

static int at_marker(const struct hijack *h, const struct user_regs_struct *r, void *arg);

/*
 * Resume with PTRACE_SYSCALL until a syscall stop for which done() says so,
 * holding back signals; a fault stops it all. 0 with the registers of that
 * stop in *regs, or a negative code.
 */
static int run_to(struct hijack *h, int timeout_ms, int (*done)(const struct hijack *, const struct user_regs_struct *, void *),
		  void *arg, struct user_regs_struct *regs)
{
	for (;;) {
		if (ptrace(PTRACE_SYSCALL, h->tid, NULL, NULL) < 0)
			return errno == ESRCH ? ERR_GONE : -errno;
		int status, err = wait_stop(h->tid, timeout_ms, &status);
		if (err)
			return err;
		if (WSTOPSIG(status) == SYSCALL_STOP) {
			if (h->die_in_call && done == at_marker)
				kill(getpid(), SIGKILL); /* tests: what a killed rbscope leaves behind, mid-call */
			if (ptrace(PTRACE_GETREGS, h->tid, NULL, regs) < 0)
				return -errno;
			if (done(h, regs, arg))
				return 0;
			continue;
		}
		if (status >> 16) /* an event stop (PTRACE_EVENT_STOP from a group stop): go on */
			continue;
		int sig = WSTOPSIG(status);
		if (is_fault(sig))
			return -EFAULT;
		hold_signal(h, sig);
	}
}

/* A remote system call is done at its exit stop: the second syscall stop. */
static int second_stop(const struct hijack *h, const struct user_regs_struct *r, void *arg)
{
	(void)h;
	(void)r;
	return ++*(int *)arg == 2;
}

int hijack_syscall(struct hijack *h, long nr, const uint64_t a[6], long *ret)
{
	struct user_regs_struct r = h->saved;
	r.rip = h->syscall_insn;
	r.rax = (uint64_t)nr;
	r.orig_rax = (uint64_t)-1; /* not a system call to restart: rip must stay where it is set */
	r.rdi = a[0], r.rsi = a[1], r.rdx = a[2], r.r10 = a[3], r.r8 = a[4], r.r9 = a[5];
	if (ptrace(PTRACE_SETREGS, h->tid, NULL, &r) < 0)
		return -errno;
	int stops = 0;
	int err = run_to(h, 2000, second_stop, &stops, &r);
	/* Its own registers back at once: between steps the thread is as it was. */
	if (ptrace(PTRACE_SETREGS, h->tid, NULL, &h->saved) < 0 && !err)
		err = -errno;
	if (!err)
		*ret = (long)r.rax;
	return err;
}

struct marker {
	uint64_t lo, hi; /* the trampoline */
	long nr;
};

static int at_marker(const struct hijack *h, const struct user_regs_struct *r, void *arg)
{
	(void)h;
	const struct marker *m = arg;
	return (long)r->orig_rax == m->nr && r->rip >= m->lo && r->rip < m->hi;
}

int hijack_call(struct hijack *h, uint64_t fn, uint64_t arg, uint64_t stack_top, uint64_t ret_addr, long marker_nr,
		int timeout_ms, long *ret)
{
	uint64_t sp = (stack_top & ~(uint64_t)15) - 8;
	struct iovec l = { &ret_addr, 8 }, rv = { (void *)(uintptr_t)sp, 8 };
	if (process_vm_writev(h->pid, &l, 1, &rv, 1, 0) != 8)
		return -errno;
	struct user_regs_struct r = h->saved;
	r.rip = fn;
	r.rsp = sp;
	r.rdi = arg;
	r.rax = 0;
	r.orig_rax = (uint64_t)-1;
	r.eflags &= ~(uint64_t)0x400; /* DF clear, as the ABI wants at a call */
	if (ptrace(PTRACE_SETREGS, h->tid, NULL, &r) < 0)
		return -errno;
	struct marker m = { ret_addr, ret_addr + HIJACK_TRAMPOLINE_SIZE, marker_nr };
	int err = run_to(h, timeout_ms, at_marker, &m, &r);
	if (err == -ETIMEDOUT) {
		/*
		 * Still inside (waiting for a lock, say): stop it where it is and let it
		 * finish on its own; the trampoline then gives the thread back itself.
		 */
		int status;
		ptrace(PTRACE_INTERRUPT, h->tid, NULL, NULL);
		wait_stop(h->tid, 2000, &status);
		ptrace(PTRACE_DETACH, h->tid, NULL, NULL);
		h->seized = 0;
		for (int i = 0; i < h->nsigs; i++)
			syscall(__NR_tgkill, h->pid, h->tid, h->sigs[i]);
		return err;
	}
	if (!err)
		*ret = (long)r.rdi;
	if (ptrace(PTRACE_SETREGS, h->tid, NULL, &h->saved) < 0 && !err)
		err = -errno;
	return err;
}

/* x86-64 encodings the trampoline is made of */
static size_t put(unsigned char *b, size_t k, const void *bytes, size_t n)
{
	memcpy(b + k, bytes, n);
	return k + n;
}

static size_t put_rel32(unsigned char *b, size_t k, uint64_t at, uint64_t target)
{
	/* rip-relative: from the end of the 4-byte displacement */
	int32_t d = (int32_t)(int64_t)(target - (at + k + 4));
	return put(b, k, &d, 4);
}

size_t hijack_trampoline(const struct hijack *h, unsigned char *b, uint64_t at, long marker_nr)
{
	const struct user_regs_struct *s = &h->saved;
	/* data: the registers to pop, in order, then rsp and rip */
	enum { FRAME = 128 };
	uint64_t frame[] = { s->r15, s->r14, s->r13, s->r12, s->rbp, s->rbx, s->r11, s->r10,
			     s->r9,  s->r8,  s->rcx, s->rdx, s->rsi, s->rdi, s->eflags, s->rsp, s->rip };
	memset(b, 0xcc, HIJACK_TRAMPOLINE_SIZE);
	size_t k = 0;
	k = put(b, k, "\x48\x89\xc7", 3); /* mov %rax,%rdi: the call's result, seen at the marker */
	unsigned char mov_eax[5] = { 0xb8 };
	int32_t nr = (int32_t)marker_nr;
	memcpy(mov_eax + 1, &nr, 4);
	k = put(b, k, mov_eax, 5);    /* mov $marker_nr,%eax */
	k = put(b, k, "\x0f\x05", 2); /* syscall: rbscope stops here and puts everything back itself */
	/* rbscope is gone: do it here. */
	k = put(b, k, "\x48\x8d\x25", 3); /* lea frame(%rip),%rsp */
	k = put_rel32(b, k, at, at + FRAME);
	k = put(b, k, "\x41\x5f\x41\x5e\x41\x5d\x41\x5c\x5d\x5b\x41\x5b\x41\x5a\x41\x59\x41\x58\x59\x5a\x5e\x5f\x9d", 23);
	k = put(b, k, "\x48\xc7\xc0\xfc\xff\xff\xff", 7); /* mov $-EINTR,%rax */
	k = put(b, k, "\x48\x8b\x25", 3);                 /* mov saved_rsp(%rip),%rsp */
	k = put_rel32(b, k, at, at + FRAME + 15 * 8);
	k = put(b, k, "\xff\x25", 2); /* jmp *saved_rip(%rip) */
	k = put_rel32(b, k, at, at + FRAME + 16 * 8);
	memcpy(b + FRAME, frame, sizeof(frame));
	return FRAME + sizeof(frame);
}

void hijack_release(struct hijack *h, int eintr)
{
	if (!h->seized)
		return;
	if (h->saved.rip) {
		struct user_regs_struct r = h->saved;
		if (eintr) { /* the interrupted call fails with EINTR instead of restarting */
			r.rax = (uint64_t)-EINTR;
			r.orig_rax = (uint64_t)-1;
		}
		ptrace(PTRACE_SETREGS, h->tid, NULL, &r);
		if (h->xstate_len) {
			struct iovec xs = { h->xstate, h->xstate_len };
			ptrace(PTRACE_SETREGSET, h->tid, (void *)(uintptr_t)NT_X86_XSTATE, &xs);
		} else {
			ptrace(PTRACE_SETFPREGS, h->tid, NULL, &h->fp);
		}
	}
	ptrace(PTRACE_DETACH, h->tid, NULL, NULL);
	h->seized = 0;
	for (int i = 0; i < h->nsigs; i++)
		syscall(__NR_tgkill, h->pid, h->tid, h->sigs[i]);
}
