/* task.h: the kernel's view of a process's threads, from /proc/PID/task. */
#ifndef RBSCOPE_TASK_H
#define RBSCOPE_TASK_H

#include <sys/types.h>

/* The state letter of a thread (R, S, D, T, Z...), or '?' if it is gone. */
char task_state(pid_t pid, pid_t tid);
/* Does pid exist? 0 yes, ERR_NO_PROCESS, or -EPERM. */
int task_exists(pid_t pid);
/* The command line of pid, spaces between arguments, into out. */
int task_cmdline(pid_t pid, char *out, size_t cap);
/* Children of pid, their children and so on (from every /proc/N/stat); returns the count stored. */
int task_descendants(pid_t pid, pid_t *out, int cap);
/* pthread_t -> kernel tid, for Rubies that keep only the pthread_t (glibc's struct pthread). */
#define TASK_GLIBC_PTHREAD_TID_OFFSET 0x2d0

#endif
