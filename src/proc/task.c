/* task.c: the kernel's view of a process's threads, from /proc/PID/task. */
#include "task.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/err.h"

static ssize_t read_file(const char *path, char *out, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, out, cap - 1);
	int e = errno;
	close(fd);
	if (n < 0)
		return -e;
	out[n] = '\0';
	return n;
}

char task_state(pid_t pid, pid_t tid)
{
	char path[64], text[1024];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	if (read_file(path, text, sizeof(text)) <= 0)
		return '?';
	/* The command name may hold spaces and parens: the state follows the last ')'. */
	char *p = strrchr(text, ')');
	return p && p[1] == ' ' && p[2] ? p[2] : '?';
}

int task_exists(pid_t pid)
{
	if (pid <= 0)
		return ERR_NO_PROCESS;
	if (kill(pid, 0) == 0)
		return 0;
	return errno == ESRCH ? ERR_NO_PROCESS : errno == EPERM ? -EPERM : -errno;
}

int task_cmdline(pid_t pid, char *out, size_t cap)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	ssize_t n = read_file(path, out, cap);
	if (n < 0)
		return (int)n;
	for (ssize_t i = 0; i + 1 < n; i++)
		if (!out[i])
			out[i] = ' ';
	return 0;
}

int task_children(pid_t pid, pid_t *out, int cap)
{
	char path[64], text[4096];
	int count = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return 0;
	struct dirent *de;
	while ((de = readdir(d)) && count < cap) {
		if (de->d_name[0] == '.')
			continue;
		char cpath[300];
		snprintf(cpath, sizeof(cpath), "/proc/%d/task/%s/children", (int)pid, de->d_name);
		if (read_file(cpath, text, sizeof(text)) <= 0)
			continue;
		for (char *s = text, *end; count < cap; s = end) {
			long v = strtol(s, &end, 10);
			if (end == s)
				break;
			out[count++] = (pid_t)v;
		}
	}
	closedir(d);
	return count;
}
