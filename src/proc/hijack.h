/* hijack.h: borrow one thread of another process, parked in a system call, to make a few calls there, and give it back as it was (x86-64). */
#ifndef RBSCOPE_HIJACK_H
#define RBSCOPE_HIJACK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

/*
 * Only the borrowed thread stops (PTRACE_SEIZE and PTRACE_INTERRUPT: no
 * SIGSTOP, no group stop); every other thread runs on. Its registers and
 * extended (FPU/SSE/AVX) state are saved at the stop and written back at the
 * end, so its system call restarts as the kernel restarts one after a signal
 * (or, if asked, returns EINTR to its caller). Nothing in the process's code
 * is ever written: a system call is made with the thread's own syscall
 * instruction, a call returns into code the caller placed in memory it
 * mapped (hijack_call).
 *
 * Signals that reach the thread meanwhile are held back and sent again when
 * it is released. If rbscope dies, the kernel lets the thread go: between
 * the steps its registers are its own; during a remote system call (a few
 * microseconds each) they are not, the one window where a dying rbscope
 * leaves the thread in a state it did not expect.
 */
struct hijack {
	pid_t pid, tid;
	struct user_regs_struct saved;
	unsigned char xstate[8192];
	size_t xstate_len;     /* 0: not saved (the kernel has no NT_X86_XSTATE): FP state via PTRACE_GETFPREGS */
	struct user_fpregs_struct fp;
	uint64_t syscall_insn; /* the thread's own syscall instruction (saved.rip - 2) */
	int sigs[16], nsigs;   /* signals held back, to send again */
	int seized;
	int die_in_call;       /* tests only: rbscope kills itself at the first stop inside hijack_call */
};

/*
 * Seize thread tid of pid and stop it; it must be in a system call (its
 * syscall instruction is then what hijack_syscall uses). 0, -EPERM (ptrace
 * not allowed), ERR_GONE, -EBUSY (traced by someone else), -EAGAIN (not in a
 * system call now), or another negative code; on error nothing is left
 * attached.
 */
int hijack_seize(struct hijack *h, pid_t pid, pid_t tid);
/* Make system call nr with up to six arguments in the thread; *ret its result (a -errno on failure). 0 or a negative code. */
int hijack_syscall(struct hijack *h, long nr, const uint64_t args[6], long *ret);
/*
 * Call fn(arg) in the thread on the stack ending at stack_top (16-byte
 * aligned, in memory the caller mapped), returning into ret_addr: code that
 * first makes the system call marker_nr (the stop rbscope waits for; the
 * call's result is in rdi there) and, should rbscope be gone, restores the
 * thread itself (see hijack_trampoline). Waits at most timeout_ms: then the
 * thread is let go inside the call (it returns through the trampoline by
 * itself) and -ETIMEDOUT is returned. *ret: fn's result.
 */
int hijack_call(struct hijack *h, uint64_t fn, uint64_t arg, uint64_t stack_top, uint64_t ret_addr, long marker_nr,
		int timeout_ms, long *ret);
/*
 * The trampoline hijack_call returns into, written to buf (at least
 * HIJACK_TRAMPOLINE_SIZE bytes) for placement at address at: it makes
 * system call marker_nr, then (rbscope gone) puts back the saved registers
 * and returns -EINTR from the thread's interrupted system call. Its size.
 */
#define HIJACK_TRAMPOLINE_SIZE 512
size_t hijack_trampoline(const struct hijack *h, unsigned char *buf, uint64_t at, long marker_nr);
/*
 * Give the thread back: its registers and FP state as saved, its system call
 * restarted (or failing with EINTR when eintr is set, so that the caller's
 * wait loop looks around), the signals held back sent again, detached.
 */
void hijack_release(struct hijack *h, int eintr);

#endif
