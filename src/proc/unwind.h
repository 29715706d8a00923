/* unwind.h: a thread's native stack, unwound from its registers with the target's own call-frame information. */
#ifndef RBSCOPE_UNWIND_H
#define RBSCOPE_UNWIND_H

#include <stdint.h>
#include <sys/types.h>

#include "../lib/map.h"
#include "../lib/strtab.h"
#include "maps.h"
#include "mem.h"

/*
 * libdwfl over the process's mapped files (opened through /proc/PID/root or
 * map_files, so a container's libraries are its own), reading the stack
 * through a struct mem. Registers come from /proc/PID/task/TID/syscall for
 * a thread that is not on a CPU (its stack and instruction pointers, no
 * stop at all) or from a ptrace stop of that one thread when it is running.
 * Symbols are cached per address: the steady state re-reads nothing.
 */
struct unwinder {
	pid_t pid;
	struct mem *mem;
	void *dwfl;         /* Dwfl * */
	void *callbacks;    /* its callbacks (unwind.c), with the process's debug directory */
	struct maps maps;   /* as reported to dwfl */
	uint64_t libruby_lo, libruby_hi; /* where libruby's (or a static ruby's) code is, 0 if unknown */
	struct map names;   /* pc -> its function's and file's names (strtab ids) */
	uint32_t jit_module; /* the strtab id of "[jit]", the file of frames in JIT code, 0 until one is seen */
	struct strtab *strs; /* the caller's, where names are interned */
	/* the thread being unwound */
	uint64_t regs[17];  /* DWARF numbering: rax rdx rcx rbx rsi rdi rbp rsp r8-r15, then rip */
	int nregs;          /* 17, or 0 when only sp and pc are known */
	unsigned char *stack; /* a copy of its stack from sp on, to serve most reads */
	uint64_t stack_lo, stack_len, stack_max;
	int sampled;          /* the stack is a copy taken with the registers: none of the live one is read */
	int stale;           /* an address fell in no reported file: report them again (at most once a second) */
	uint64_t refreshed;  /* when, monotonic ns */
	int stop_in_libruby; /* when not 0: end an unwind at this many libruby frames in a row, or a first one */
	uint64_t stops, stop_ns; /* ptrace stops made and the time threads spent stopped */
	uint64_t left;           /* threads off a CPU that left their system call during their unwind */
};

/* One native frame: its instruction address and where it is. */
struct native_frame {
	uint64_t pc;
	uint32_t name;   /* strtab id: "deflate_slow", or "libz.so.1+0x5c3e" */
	uint32_t module; /* strtab id: the file's base name */
	int in_libruby;
	int jit;         /* in anonymous executable memory: a JIT's code ("(JIT code)", the unwind's last frame) */
};

/*
 * Prepare to unwind pid's threads: mem reads its memory, names go into strs,
 * frames in the file named like libruby_path (libruby, or a static ruby) are
 * marked in_libruby. 0, or a negative code.
 */
int unwind_open(struct unwinder *u, pid_t pid, struct mem *mem, const char *libruby_path, struct strtab *strs);
void unwind_close(struct unwinder *u);
/*
 * Thread tid's native frames, innermost first, into out (at most max). Off a
 * CPU, from the kernel's copy of its sp and pc, no stop; on a CPU, when
 * allow_stop, stopped (ptrace) for its registers and the unwind. still(arg),
 * if given, is asked once the frames are had, while the thread cannot have
 * moved (stopped, or checked to be in the same system call at the same
 * place): frames it says no to are not returned. The number of frames (0
 * when none could be had, or the thread is gone), or a negative code.
 * *syscall is what /proc/PID/task/TID/syscall said (task_syscall()'s nr),
 * TASK_SYSCALL_UNREAD when it could not be read.
 */
int unwind_thread(struct unwinder *u, pid_t tid, int allow_stop, struct native_frame *out, int max, int *syscall,
		  int (*still)(void *arg), void *arg);
/*
 * The same from registers given (17 in DWARF order, or nregs 0: only
 * regs[7] (sp) and regs[16] (pc) known), for tests over a fake memory source.
 */
int unwind_regs(struct unwinder *u, pid_t tid, const uint64_t *regs, int nregs, struct native_frame *out, int max);
/*
 * The same from the 17 registers and the copy of the stack from their sp on
 * (len bytes) that the kernel took together when it interrupted the thread
 * (a perf sample's): no stop, and nothing of the live stack is read (it has
 * moved on); other memory (the files' code and data) is read as ever.
 */
int unwind_sampled(struct unwinder *u, pid_t tid, const uint64_t *regs, const void *stack, size_t len,
		   struct native_frame *out, int max);

#endif
