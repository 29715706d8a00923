/* task.c: the kernel's view of a process's threads, from /proc/PID/task. */
#include "task.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../lib/err.h"
#include "../lib/map.h"
#include "../lib/vec.h"

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

/* The state letter and CPU of a thread from its stat file's text. */
static char parse_state_cpu(char *text, int *cpu)
{
	/* The command name may hold spaces and parens: the state (field 3) follows the last ')'. */
	char *p = strrchr(text, ')');
	if (!p || p[1] != ' ' || !p[2])
		return '?';
	/* field 39: the CPU */
	int field = 3;
	for (const char *q = p + 3; *q && field < 39; q++)
		if (*q == ' ' && ++field == 39)
			*cpu = atoi(q + 1);
	return p[2];
}

char task_state_cpu(pid_t pid, pid_t tid, int *cpu)
{
	char path[64], text[1024];
	*cpu = -1;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	if (read_file(path, text, sizeof(text)) <= 0)
		return '?';
	return parse_state_cpu(text, cpu);
}

int task_stat_open(pid_t pid, pid_t tid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

char task_state_cpu_fd(int fd, int *cpu)
{
	char text[1024];
	*cpu = -1;
	ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
	if (n <= 0)
		return '?';
	text[n] = '\0';
	return parse_state_cpu(text, cpu);
}

int task_fd_gone(int fd)
{
	char c;
	return pread(fd, &c, 1, 0) < 0 && errno == ESRCH;
}

char task_state(pid_t pid, pid_t tid)
{
	int cpu;
	return task_state_cpu(pid, tid, &cpu);
}

int task_cpu_ns(pid_t pid, pid_t tid, uint64_t *ns)
{
	char path[64], text[1024];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
	ssize_t n = read_file(path, text, sizeof(text));
	char *end;
	if (n > 0) {
		unsigned long long v = strtoull(text, &end, 10);
		if (end != text && *end == ' ') {
			*ns = v;
			return 0;
		}
	}
	/* Fields 14 and 15 (utime, stime), counted after the command's last ')'. */
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	if ((n = read_file(path, text, sizeof(text))) <= 0)
		return n < 0 ? (int)n : -ESRCH;
	char *p = strrchr(text, ')');
	for (int field = 2; p && field < 14; field++)
		p = strchr(p + 1, ' ');
	unsigned long long ut, st;
	if (!p || sscanf(p, " %llu %llu", &ut, &st) != 2)
		return -EINVAL;
	long hz = sysconf(_SC_CLK_TCK);
	*ns = (ut + st) * (uint64_t)(1000000000 / (hz > 0 ? hz : 100));
	return 0;
}

int task_syscall(pid_t pid, pid_t tid, int *nr, unsigned long long *sp, unsigned long long *pc)
{
	char path[64], text[256];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	ssize_t n = read_file(path, text, sizeof(text));
	if (n < 0)
		return (int)n;
	*sp = *pc = 0;
	if (!strncmp(text, "running", 7)) {
		*nr = TASK_ON_CPU;
		return 0;
	}
	/* "NR ARG1 .. ARG6 SP PC", or "-1 SP PC" in user space; in hex but for NR. */
	char *end, *field[9];
	long v = strtol(text, &end, 10);
	if (end == text || v < -1 || v > 100000)
		return -EINVAL;
	int nf = 0;
	for (char *save, *tok = strtok_r(end, " \n", &save); tok && nf < 9; tok = strtok_r(NULL, " \n", &save))
		field[nf++] = tok;
	if (nf < 2)
		return -EINVAL;
	*nr = (int)v;
	*sp = strtoull(field[nf - 2], NULL, 16);
	*pc = strtoull(field[nf - 1], NULL, 16);
	return 0;
}

/* The names, from the headers this was built with (syscall_names.h, made by scripts/syscall-names). */
#define SYSCALL(name) [__NR_##name] = #name,
static const char *const syscall_names[] = {
#include "syscall_names.h"
};
#undef SYSCALL

const char *task_syscall_name(int nr)
{
	return nr >= 0 && (size_t)nr < sizeof(syscall_names) / sizeof(*syscall_names) ? syscall_names[nr] : NULL;
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
	/* A process that set $0 pads it with spaces to the old length. */
	while (n > 0 && (out[n - 1] == ' ' || out[n - 1] == '\0'))
		out[--n] = '\0';
	return 0;
}

/* The parent of pid from its stat (the field after the state), or -1. */
static pid_t parent_of(const char *pid)
{
	char path[300], text[1024];
	snprintf(path, sizeof(path), "/proc/%s/stat", pid);
	if (read_file(path, text, sizeof(text)) <= 0)
		return -1;
	char *p = strrchr(text, ')');
	return p && p[1] == ' ' && p[2] && p[3] == ' ' ? (pid_t)atoi(p + 4) : -1;
}

int task_descendants(pid_t pid, pid_t *out, int cap)
{
	/* /proc/PID/task/TID/children needs CONFIG_PROC_CHILDREN: read every process's parent instead. */
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	pid_t *pids = NULL, *parents = NULL;
	size_t n = 0, pids_cap = 0, parents_cap = 0;
	for (struct dirent *de; (de = readdir(d));) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		pid_t *a = vec_grow(pids, n, &pids_cap, sizeof(*a)), *b = a ? vec_grow(parents, n, &parents_cap, sizeof(*b)) : NULL;
		if (a)
			pids = a;
		if (!a || !b)
			break;
		parents = b;
		pids[n] = (pid_t)atoi(de->d_name);
		parents[n++] = parent_of(de->d_name);
	}
	closedir(d);
	/* Breadth first from pid: out doubles as the queue. */
	int count = 0;
	for (int head = -1; head < count; head++) {
		pid_t from = head < 0 ? pid : out[head];
		for (size_t i = 0; i < n && count < cap; i++)
			if (parents[i] == from)
				out[count++] = pids[i];
	}
	free(pids);
	free(parents);
	return count;
}

int task_other_pidns(pid_t pid)
{
	char path[64], mine[64], theirs[64];
	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
	ssize_t a = readlink("/proc/self/ns/pid", mine, sizeof(mine) - 1), b = readlink(path, theirs, sizeof(theirs) - 1);
	if (a < 0 || b < 0)
		return -errno;
	return a != b || memcmp(mine, theirs, (size_t)a);
}

int task_ns_tids(pid_t pid, struct map *m)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	int found = 0;
	for (struct dirent *de; (de = readdir(d));) {
		char status[4096], spath[300];
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(spath, sizeof(spath), "/proc/%d/task/%s/status", (int)pid, de->d_name);
		if (read_file(spath, status, sizeof(status)) <= 0)
			continue;
		/* "NSpid:\t<ours>\t...\t<innermost>" */
		char *line = strstr(status, "\nNSpid:");
		if (!line)
			continue;
		char *end = strchr(line + 1, '\n'), *p = line + 7;
		if (end)
			*end = '\0';
		long outer = strtol(p, &p, 10), inner = outer;
		while (*p) {
			char *q;
			long v = strtol(p, &q, 10);
			if (q == p)
				break;
			inner = v;
			p = q;
		}
		if (outer > 0 && inner > 0 && !map_put(m, (uint64_t)inner, (uint64_t)outer))
			found++;
	}
	closedir(d);
	return found;
}

int task_environ(pid_t pid, const char *name, char *buf, size_t cap)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	size_t n = strlen(name);
	char *var = NULL;
	size_t vcap = 0;
	int found = -1;
	while (found && getdelim(&var, &vcap, '\0', f) > 0) {
		if (strncmp(var, name, n) || var[n] != '=')
			continue;
		size_t len = strlen(var + n + 1);
		if (len < cap) {
			memcpy(buf, var + n + 1, len + 1);
			found = 0;
		}
		break;
	}
	free(var);
	fclose(f);
	return found;
}

int task_start_time(pid_t pid, unsigned long long *ticks)
{
	char path[64], text[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	ssize_t n = read_file(path, text, sizeof(text));
	if (n < 0)
		return n == -ENOENT || n == -ESRCH ? ERR_NO_PROCESS : (int)n;
	/* After the command's closing parenthesis: state is field 3, starttime field 22. */
	char *p = strrchr(text, ')');
	if (!p)
		return ERR_CORRUPT;
	p++;
	for (int field = 2; field < 21 && p; field++)
		p = strchr(p + 1, ' ');
	if (!p)
		return ERR_CORRUPT;
	*ticks = strtoull(p + 1, NULL, 10);
	return 0;
}

int task_age_ms(pid_t pid, uint64_t *ms)
{
	unsigned long long start;
	char text[128];
	int err = task_start_time(pid, &start);
	if (err)
		return err;
	if (read_file("/proc/uptime", text, sizeof(text)) <= 0)
		return -EIO;
	double up = strtod(text, NULL);
	long hz = sysconf(_SC_CLK_TCK);
	double started = (double)start / (double)(hz > 0 ? hz : 100);
	*ms = up > started ? (uint64_t)((up - started) * 1000) : 0;
	return 0;
}

/* Is s[0..n) hexadecimal? */
static int all_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

int task_container_id_parse(const char *text, char *out, size_t cap)
{
	if (cap < 65)
		return 0;
	/*
	 * Docker, containerd, CRI-O and Podman name a container's cgroup after its
	 * 64-hex-digit id: /docker/ID, docker-ID.scope, cri-containerd-ID.scope,
	 * crio-ID.scope, libpod-ID.scope. The last such id wins.
	 */
	int found = 0;
	for (const char *s = text; *s; s++) {
		if ((s > text && s[-1] != '/' && s[-1] != '-') || !all_hex(s, 64) || all_hex(s + 64, 1))
			continue;
		memcpy(out, s, 64);
		out[64] = 0;
		found = 1;
		s += 63;
	}
	return found;
}

int task_container_id(pid_t pid, char *out, size_t cap)
{
	char path[64], text[4096];
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	if (read_file(path, text, sizeof(text)) < 0)
		return 0;
	return task_container_id_parse(text, out, cap);
}

/* The fields after "Key:" on a line of a /proc status file, or NULL. */
static const char *status_field(const char *status, const char *key)
{
	size_t n = strlen(key);
	for (const char *p = status; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, n) && p[n] == ':')
			return p + n + 1;
	return NULL;
}

/* The real, effective and saved ids of a "Uid:" or "Gid:" line into id[3]; 0, or -1. */
static int status_ids(const char *status, const char *key, unsigned long id[3])
{
	const char *f = status_field(status, key);
	return f && sscanf(f, "%lu %lu %lu", &id[0], &id[1], &id[2]) == 3 ? 0 : -1;
}

#define CAP_SYS_PTRACE_BIT 19

void task_access_why(const char *procfs, pid_t pid, char *why, size_t cap)
{
	char path[256], self[4096], target[4096], scope[16];
	snprintf(path, sizeof(path), "%s/self/status", procfs);
	int have_self = read_file(path, self, sizeof(self)) > 0;
	snprintf(path, sizeof(path), "%s/%d/status", procfs, (int)pid);
	int have_target = read_file(path, target, sizeof(target)) > 0;
	snprintf(path, sizeof(path), "%s/sys/kernel/yama/ptrace_scope", procfs);
	int yama = read_file(path, scope, sizeof(scope)) > 0 ? atoi(scope) : -1;

	const char *f = have_self ? status_field(self, "CapEff") : NULL;
	int ptrace_cap = f && (strtoull(f, NULL, 16) >> CAP_SYS_PTRACE_BIT & 1);
	f = have_self ? status_field(self, "Seccomp") : NULL;
	int seccomp = f ? atoi(f) : 0;
	unsigned long me[3], my_gid[3], uid[3], gid[3];
	int ids = have_self && have_target && !status_ids(self, "Uid", me) && !status_ids(self, "Gid", my_gid) &&
		  !status_ids(target, "Uid", uid) && !status_ids(target, "Gid", gid);

	/* The kernel's order (ptrace_may_access): same user, dumpable, then Yama and the other modules. */
	if (ids && !ptrace_cap && (uid[0] != me[0] || uid[1] != me[0] || uid[2] != me[0])) {
		snprintf(why, cap, "process %d runs as uid %lu, rbscope as uid %lu: run it as root, as that user, "
			 "or with CAP_SYS_PTRACE", (int)pid, uid[1] != me[0] ? uid[1] : uid[0] != me[0] ? uid[0] : uid[2],
			 me[0]);
		return;
	}
	if (ids && !ptrace_cap && (gid[0] != my_gid[0] || gid[1] != my_gid[0] || gid[2] != my_gid[0])) {
		snprintf(why, cap, "process %d runs with group %lu, rbscope with group %lu (a setgid program?): run it "
			 "as root or with CAP_SYS_PTRACE", (int)pid, gid[1] != my_gid[0] ? gid[1] : gid[0], my_gid[0]);
		return;
	}
	struct stat st;
	snprintf(path, sizeof(path), "%s/%d/status", procfs, (int)pid);
	if (ids && !ptrace_cap && !stat(path, &st) && st.st_uid != (uid_t)uid[1]) {
		/* The kernel gives an undumpable process's /proc files to root. */
		snprintf(why, cap, "process %d is not dumpable (prctl PR_SET_DUMPABLE 0, or it changed its "
			 "credentials): only root or CAP_SYS_PTRACE may read it", (int)pid);
		return;
	}
	/* Root without CAP_SYS_PTRACE is a container's root, most likely: the remedy is the capability. */
	int capless_root = ids && me[0] == 0 && !ptrace_cap;
	const char *remedy = capless_root ? "rbscope runs as root without CAP_SYS_PTRACE (in a container?): give it "
					    "the capability (docker run --cap-add SYS_PTRACE; Kubernetes: "
					    "securityContext.capabilities.add SYS_PTRACE)"
					  : "run it as root or with CAP_SYS_PTRACE";
	if (yama == 3)
		snprintf(why, cap, "kernel.yama.ptrace_scope is 3: no process may read another's memory, not even "
			 "root's, until the next boot");
	else if (yama == 2 && !ptrace_cap)
		snprintf(why, cap, "kernel.yama.ptrace_scope is 2: only CAP_SYS_PTRACE may attach: %s", remedy);
	else if (yama == 1 && !ptrace_cap)
		snprintf(why, cap, "kernel.yama.ptrace_scope is 1: only a process's ancestors may attach: %s, or allow "
			 "it to the process's user on this host with sysctl kernel.yama.ptrace_scope=0", remedy);
	else if (seccomp == 2)
		snprintf(why, cap, "rbscope runs under a seccomp filter (a container's default profile?) that may "
			 "forbid ptrace and process_vm_readv: give the container CAP_SYS_PTRACE "
			 "(docker run --cap-add SYS_PTRACE) or a profile that allows them");
	else if (capless_root)
		snprintf(why, cap, "%s", remedy);
	else if (!ptrace_cap)
		snprintf(why, cap, "run it as root, as the process's user, or with CAP_SYS_PTRACE");
	else
		snprintf(why, cap, "a security module (AppArmor, SELinux) or the container's settings forbid it even "
			 "with CAP_SYS_PTRACE: see the kernel's log (dmesg)");
}
