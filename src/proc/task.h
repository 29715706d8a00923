/* task.h: the kernel's view of a process's threads, from /proc/PID/task. */
#ifndef RBSCOPE_TASK_H
#define RBSCOPE_TASK_H

#include <stdint.h>
#include <sys/types.h>

/* The state letter of a thread (R, S, D, T, Z...), or '?' if it is gone. */
char task_state(pid_t pid, pid_t tid);
/* task_state, and with *cpu the CPU it runs on or waits for (-1 if unread). */
char task_state_cpu(pid_t pid, pid_t tid, int *cpu);
/* The same, through a file descriptor task_stat_open gave (one read each time: for a thread asked often). */
int task_stat_open(pid_t pid, pid_t tid); /* the fd, or -errno */
char task_state_cpu_fd(int fd, int *cpu);
/* Has the task whose /proc file fd is (task_stat_open) ended? Its number may be given again: its file is not. */
int task_fd_gone(int fd);
/*
 * The CPU time thread tid has run, by the kernel's account: nanoseconds from
 * /proc/PID/task/TID/schedstat, or (a kernel without it) user and system
 * time from .../stat in clock ticks. 0 with *ns set, or -errno (gone).
 */
int task_cpu_ns(pid_t pid, pid_t tid, uint64_t *ns);
/*
 * What thread tid is doing in the kernel, from /proc/PID/task/TID/syscall
 * (no stop, one read): in system call *nr (>= 0), TASK_NO_SYSCALL (in user
 * space but not on a CPU) or TASK_ON_CPU; with *sp and *pc, its user stack
 * and instruction pointers, when it is not on a CPU. 0, or -errno.
 */
#define TASK_NO_SYSCALL (-1)
#define TASK_ON_CPU (-2)
#define TASK_SYSCALL_UNREAD (-3) /* for callers: the file could not be read */
int task_syscall(pid_t pid, pid_t tid, int *nr, unsigned long long *sp, unsigned long long *pc);
/* The name of system call nr on this machine ("read"), or NULL. */
const char *task_syscall_name(int nr);
/*
 * Why reading pid's memory or ptrace of it is not allowed, as one line with
 * what to do, from procfs ("/proc"): its user or group is not ours, it is
 * not dumpable, Yama's ptrace_scope, a seccomp filter on us, or otherwise
 * what is left (capabilities, a security module). Into why (cap bytes).
 */
void task_access_why(const char *procfs, pid_t pid, char *why, size_t cap);
/* Does pid exist? 0 yes, ERR_NO_PROCESS, or -EPERM. */
int task_exists(pid_t pid);
/* The command line of pid, spaces between arguments, into out. */
int task_cmdline(pid_t pid, char *out, size_t cap);
/*
 * The value of variable name in pid's environment (as it started), copied
 * into buf: 0, or -1 when it has no such variable or the value does not fit.
 */
int task_environ(pid_t pid, const char *name, char *buf, size_t cap);
/* Children of pid, their children and so on (from every /proc/N/stat); returns the count stored. */
int task_descendants(pid_t pid, pid_t *out, int cap);
/* Does pid live in a pid namespace other than ours (a container seen from the host)? 1, 0 or -errno. */
int task_other_pidns(pid_t pid);
/*
 * For such a process, each thread's tid as the process sees it (the
 * innermost NSpid) -> as we do (the first), from /proc/PID/task/TID/status,
 * added to m (a lib/map.h map). The number found, or -errno.
 */
struct map;
int task_ns_tids(pid_t pid, struct map *m);
/* When pid started (clock ticks after boot, /proc/PID/stat): a pid reused is another process. 0 or negative. */
int task_start_time(pid_t pid, unsigned long long *ticks);
/* How long ago pid started, in ms (its start time against /proc/uptime). 0 or negative. */
int task_age_ms(pid_t pid, uint64_t *ms);
/* The id of the container pid runs in (64 hex digits, from /proc/PID/cgroup) into out: 1, or 0 if none. */
int task_container_id(pid_t pid, char *out, size_t cap);
/* The same from the text of a cgroup file. */
int task_container_id_parse(const char *text, char *out, size_t cap);
/* pthread_t -> kernel tid, for Rubies that keep only the pthread_t (glibc's struct pthread). */
#define TASK_GLIBC_PTHREAD_TID_OFFSET 0x2d0

#endif
