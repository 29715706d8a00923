/* inject.c: `--inject`: the agent into a Ruby process that never required it (docs/agent.md, "Loading it into a running process"). */
#include "inject.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "../agent/client.h"
#include "../elf/elfsym.h"
#include "../lib/buf.h"
#include "../lib/clock.h"
#include "../lib/err.h"
#include "../proc/hijack.h"
#include "../proc/root.h"
#include "../proc/task.h"
#include "../ruby/target.h"
#include "../ruby/walk.h"
#include "agents.h"
#include "boot.h"
#include "boot_blob.h"

/* The mapping placed in the target: code and trampoline, then struct boot and its Ruby code, then a stack. */
#define MAP_LEN (64 * 1024)
#define CODE_OFF 0
#define TRAMP_OFF 2048
#define BOOT_OFF 4096
#define NAME_OFF (BOOT_OFF - 64)
#define MARKER_NR SYS_getpid

/* snprintf for paths and names: a result cut short is an empty string (so it names nothing). */
static int pathf(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int pathf(char *buf, size_t cap, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, cap, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= cap) {
		buf[0] = '\0';
		return -1;
	}
	return n;
}


/* Does path exist in the target's filesystem (root), resolved as the target resolves it (proc/root.h)? */
static int exists(const char *root, const char *path)
{
	int fd = root_open(root, path, O_RDONLY);
	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

/*
 * What an agent extension was built for: the libruby soname it links
 * ("libruby-3.1.so.3.1", "" when none: built for a static Ruby) and the Ruby
 * API version its .rbscope.ruby section holds ("3.1", "" when it has none).
 */
static int agent_built_for(const char *root, const char *path, char *lib, size_t libcap, char *ver, size_t vercap)
{
	lib[0] = ver[0] = '\0';
	int fd = root_open(root, path, O_RDONLY);
	if (fd < 0)
		return fd;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	size_t shstrndx = 0;
	if (e && elf_getshdrstrndx(e, &shstrndx))
		shstrndx = 0;
	Elf_Scn *scn = NULL;
	while (e && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		const char *name = shstrndx ? elf_strptr(e, shstrndx, sh.sh_name) : NULL;
		if (name && !strcmp(name, ".rbscope.ruby") && sh.sh_type == SHT_PROGBITS) {
			Elf_Data *d = elf_getdata(scn, NULL);
			if (d && d->d_buf && d->d_size > 0 && d->d_size < vercap && memchr(d->d_buf, '\0', d->d_size))
				pathf(ver, vercap, "%s", (const char *)d->d_buf);
			continue;
		}
		if (sh.sh_type != SHT_DYNAMIC)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / (sh.sh_entsize ? sh.sh_entsize : 1); i++) {
			GElf_Dyn dyn;
			if (!gelf_getdyn(d, (int)i, &dyn) || dyn.d_tag != DT_NEEDED)
				continue;
			const char *s = elf_strptr(e, sh.sh_link, dyn.d_un.d_val);
			if (s && !strncmp(s, "libruby", 7))
				pathf(lib, libcap, "%s", s);
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return 0;
}

/* Compare versions, numbers as numbers ("0.3.0" < "0.10.0"). */
static int version_cmp(const char *a, const char *b)
{
	while (*a && *b) {
		if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
			char *ea, *eb;
			long x = strtol(a, &ea, 10), y = strtol(b, &eb, 10);
			if (x != y)
				return x < y ? -1 : 1;
			a = ea, b = eb;
		} else {
			if (*a != *b)
				return (unsigned char)*a - (unsigned char)*b;
			a++, b++;
		}
	}
	return (unsigned char)*a - (unsigned char)*b;
}

struct agent_dirs {
	char lib[PATH_MAX], ext[PATH_MAX]; /* as the target sees them; ext "" when the extension sits in lib */
	char so[PATH_MAX];                 /* the extension, as the target sees it */
	char version[32];
};

/* The newest rbscope gem under gem directory dir (the target's view) whose extension exists. 0 or -ENOENT. */
static int gem_in(const char *root, const char *dir, const char *api, struct agent_dirs *out)
{
	char path[PATH_MAX * 2];
	pathf(path, sizeof(path), "%s/gems", dir);
	int dfd = root_open_dir(root, path);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return -ENOENT;
	}
	struct dirent *de;
	int found = -ENOENT;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "rbscope-", 8) || (!found && version_cmp(de->d_name + 8, out->version) <= 0))
			continue;
		struct agent_dirs a = { 0 };
		pathf(a.version, sizeof(a.version), "%s", de->d_name + 8);
		pathf(a.lib, sizeof(a.lib), "%s/gems/%s/lib", dir, de->d_name);
		char rb[PATH_MAX + 64];
		pathf(rb, sizeof(rb), "%s/rbscope.rb", a.lib);
		if (!exists(root, rb))
			continue;
		/* RubyGems builds the extension into extensions/PLATFORM/API/NAME (and copies it into lib) */
		pathf(a.ext, sizeof(a.ext), "%s/extensions/x86_64-linux/%s/%s", dir, api, de->d_name);
		pathf(rb, sizeof(rb), "%s/rbscope/rbscope.so", a.ext);
		if (!exists(root, rb)) {
			a.ext[0] = '\0';
			pathf(rb, sizeof(rb), "%s/rbscope/rbscope.so", a.lib);
			if (!exists(root, rb))
				continue;
		}
		pathf(a.so, sizeof(a.so), "%s", rb);
		*out = a;
		found = 0;
	}
	closedir(d);
	return found;
}

/*
 * Where the agent for this Ruby is: --agent's directories, or the rbscope gem
 * in the gem directories the target's Ruby searches (GEM_HOME, GEM_PATH,
 * Debian's and RubyGems' defaults, the user's). Its extension must be built
 * for this Ruby's libruby. 0, or ERR_INJECT with why.
 */
static int find_agent(const struct ruby_target *t, const struct inject_opts *o, struct agent_dirs *a, char *msg,
		      size_t cap)
{
	memset(a, 0, sizeof(*a));
	int major = 0, minor = 0;
	sscanf(t->version, "%d.%d", &major, &minor);
	char api[16];
	pathf(api, sizeof(api), "%d.%d.0", major, minor);
	if (o->agent) {
		/* colon-separated; the one holding rbscope.rb is lib, the one holding rbscope/rbscope.so the extension */
		char *dirs = strdup(o->agent), *save = NULL, cwd[PATH_MAX], abs[PATH_MAX * 2];
		if (!getcwd(cwd, sizeof(cwd)))
			cwd[0] = '\0';
		for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
			if (d[0] != '/' && cwd[0]) { /* relative: to rbscope's own directory */
				pathf(abs, sizeof(abs), "%s/%s", cwd, d);
				d = abs;
			}
			char p[PATH_MAX + 32];
			pathf(p, sizeof(p), "%s/rbscope.rb", d);
			if (exists(t->root, p))
				pathf(a->lib, sizeof(a->lib), "%s", d);
			pathf(p, sizeof(p), "%s/rbscope/rbscope.so", d);
			if (exists(t->root, p)) {
				pathf(a->so, sizeof(a->so), "%s", p);
				if (strcmp(d, a->lib))
					pathf(a->ext, sizeof(a->ext), "%s", d);
			}
		}
		free(dirs);
		if (!a->lib[0] || !a->so[0])
			return inject_fail(msg, cap, ERR_INJECT, "--agent %s: no rbscope.rb and rbscope/rbscope.so there (as process %d sees its files)",
				    o->agent, (int)t->pid);
		if (!strcmp(a->ext, a->lib))
			a->ext[0] = '\0';
	} else {
		char home[PATH_MAX], env[4096], dir[PATH_MAX];
		const char *candidates[16];
		int n = 0;
		static char bufs[6][PATH_MAX];
		if (!task_environ(t->pid, "GEM_HOME", bufs[0], sizeof(bufs[0])))
			candidates[n++] = bufs[0];
		if (!task_environ(t->pid, "GEM_PATH", env, sizeof(env))) {
			char *save = NULL;
			for (char *d = strtok_r(env, ":", &save); d && n < 4; d = strtok_r(NULL, ":", &save)) {
				pathf(bufs[n], sizeof(bufs[n]), "%s", d);
				candidates[n] = bufs[n];
				n++;
			}
		}
		static char defaults[6][PATH_MAX];
		int k = 0;
		pathf(defaults[k++], PATH_MAX, "/var/lib/gems/%s", api);
		pathf(defaults[k++], PATH_MAX, "/usr/local/lib/ruby/gems/%s", api);
		pathf(defaults[k++], PATH_MAX, "/usr/lib/ruby/gems/%s", api);
		if (!task_environ(t->pid, "HOME", home, sizeof(home))) {
			pathf(defaults[k++], PATH_MAX, "%s/.local/share/gem/ruby/%s", home, api);
			pathf(defaults[k++], PATH_MAX, "%s/.gem/ruby/%s", home, api);
		}
		for (int i = 0; i < k; i++)
			candidates[n++] = defaults[i];
		for (int i = 0; i < n; i++) {
			pathf(dir, sizeof(dir), "%s", candidates[i]);
			struct agent_dirs g = { 0 };
			if (!gem_in(t->root, dir, api, &g) && (!a->lib[0] || version_cmp(g.version, a->version) > 0))
				*a = g;
		}
		if (!a->lib[0]) {
			/* no gem: the agent rbscope carries for this Ruby, placed in the target's filesystem */
			char mm[16], carried[256];
			pathf(mm, sizeof(mm), "%d.%d", major, minor);
			int rc = agents_place(t, mm, a->lib, sizeof(a->lib), msg, cap);
			if (rc && rc != -ENOENT)
				return rc;
			if (rc) {
				agents_list(carried, sizeof(carried));
				return inject_fail(msg, cap, ERR_INJECT,
					    "no rbscope gem installed for Ruby %d.%d in process %d's gem directories, and "
					    "rbscope carries no agent for it (%s%s; gem install rbscope with that Ruby, or "
					    "give --agent DIR)",
					    major, minor, (int)t->pid, *carried ? "it has: " : "none", carried);
			}
			pathf(a->so, sizeof(a->so), "%s/rbscope/rbscope.so", a->lib);
			pathf(a->version, sizeof(a->version), "%s", RBSCOPE_VERSION);
		}
	}
	char rb[PATH_MAX + 32];
	pathf(rb, sizeof(rb), "%s/rbscope/inject.rb", a->lib);
	if (!exists(t->root, rb))
		return inject_fail(msg, cap, ERR_INJECT, "the agent in %s is older than --inject (no rbscope/inject.rb): install "
			    "this version's gem", a->lib);
	/* The extension links the libruby it was built for: it must be this one. */
	char want[128], built[16];
	if (agent_built_for(t->root, a->so, want, sizeof(want), built, sizeof(built)))
		return inject_fail(msg, cap, ERR_INJECT, "cannot read the agent at %s", a->so);
	if (want[0]) {
		const char *base = strrchr(t->lib_path, '/');
		base = base ? base + 1 : t->lib_path;
		size_t stem = strcspn(want, "."); /* "libruby-3" of "libruby-3.1.so.3.1": compare up to ".so" */
		const char *so = strstr(want, ".so");
		if (so)
			stem = (size_t)(so - want);
		if (strncmp(base, want, stem) || (base[stem] != '.' && base[stem] != '\0'))
			return inject_fail(msg, cap, ERR_INJECT, "the agent at %s is built for %s, and process %d runs %s (Ruby %s)",
				    a->so, want, (int)t->pid, base, t->version);
	}
	/* ... and says which Ruby it was built for (the one thing a build for a static Ruby can say). */
	char api_mm[16];
	pathf(api_mm, sizeof(api_mm), "%d.%d", major, minor);
	if (!built[0] && !want[0])
		return inject_fail(msg, cap, ERR_INJECT, "the agent at %s does not say which Ruby it is built for (no "
			    ".rbscope.ruby section, no libruby): build it with this version's gem", a->so);
	if (built[0] && strcmp(built, api_mm))
		return inject_fail(msg, cap, ERR_INJECT, "the agent at %s is built for Ruby %s, and process %d runs Ruby %s",
			    a->so, built, (int)t->pid, t->version);
	return 0;
}

/* A symbol to resolve and where its runtime address goes (0 when the file has no such symbol). */
struct sym {
	const char *name;
	uint64_t *addr;
};

/*
 * The runtime addresses of syms in the target's file path (its maps path),
 * the file opened once: loaded at bias, or, when start is not 0, with its
 * first page mapped at start. 0, or -1 when the file does not open.
 */
static int resolve(const struct ruby_target *t, const char *path, uint64_t start, uint64_t bias, const struct sym *syms,
		   int n)
{
	struct elf_file ef;
	if (ruby_target_open_elf(t, path, &ef))
		return -1;
	if (start)
		bias = start - ef.base_vaddr;
	for (int i = 0; i < n; i++) {
		uint64_t value = 0, size;
		*syms[i].addr = !elf_lookup(&ef, syms[i].name, &value, &size) && value ? value + bias : 0;
	}
	elf_close(&ef);
	return 0;
}

/* The first page's mapping of the first object whose file name starts with one of prefixes, or NULL. */
static const struct map_entry *mapped(const struct ruby_target *t, const char *const *prefixes)
{
	for (int i = 0; i < t->maps.n; i++) {
		const struct map_entry *m = &t->maps.v[i];
		const char *base = strrchr(m->path, '/');
		if (!base || m->offset)
			continue;
		for (const char *const *p = prefixes; *p; p++)
			if (!strncmp(base + 1, *p, strlen(*p)))
				return m;
	}
	return NULL;
}

enum wait_kind { WAIT_NONE, WAIT_IO, WAIT_SLEEP };

/* What kind of wait thread tid is in, from the system call it is blocked in. */
static enum wait_kind wait_of(pid_t pid, pid_t tid, long *nr)
{
	char path[64], line[256];
	pathf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return WAIT_NONE;
	int ok = fgets(line, sizeof(line), f) != NULL;
	fclose(f);
	char *end;
	*nr = ok ? strtol(line, &end, 10) : -1;
	if (!ok || end == line)
		return WAIT_NONE;
	switch (*nr) {
	case SYS_poll: case SYS_ppoll: case SYS_select: case SYS_pselect6: case SYS_epoll_wait: case SYS_epoll_pwait:
		return WAIT_IO;
	case SYS_futex: case SYS_nanosleep: case SYS_clock_nanosleep:
		return WAIT_SLEEP;
	}
	return WAIT_NONE;
}

/*
 * The thread to borrow: a Ruby thread parked in Ruby's own wait (never one
 * running Ruby code or in another system call). One waiting for I/O
 * readiness comes first: it registers the job for itself and is woken with
 * EINTR, so the job runs at once even when the whole process is idle.
 */
static pid_t choose_thread(struct ruby_target *t, enum wait_kind *kind, long *nr)
{
	static struct ruby_sample s;
	if (ruby_sample_take(t, &s, 0))
		return 0;
	pid_t best = 0;
	*kind = WAIT_NONE;
	for (int i = 0; i < s.nthreads; i++) {
		const struct ruby_thread_sample *th = &s.threads[i];
		if (th->tid <= 0 || th->state == THREAD_RUNNING || th->state == THREAD_KILLED)
			continue;
		long n;
		enum wait_kind k = wait_of(t->pid, th->tid, &n);
		/* A futex or a sleep is Ruby's own wait when the VM says it sleeps, or (a timed sleep, which
		   3.3 on marks blocked as it marks any C call without the GVL) when its top frame is a method
		   known to wait; a C call without the GVL waiting on its own lock is not. */
		if (k == WAIT_SLEEP && th->state != THREAD_SLEEPING && !(th->nframes && th->frames[0].kind == FRAME_WAIT))
			continue;
		if (k == WAIT_IO || (k == WAIT_SLEEP && *kind == WAIT_NONE)) {
			best = th->tid, *kind = k, *nr = n;
			if (k == WAIT_IO)
				break;
		}
	}
	return best;
}

static int write_remote(pid_t pid, uint64_t addr, const void *p, size_t n)
{
	struct iovec l = { (void *)p, n }, r = { (void *)(uintptr_t)addr, n };
	return process_vm_writev(pid, &l, 1, &r, 1, 0) == (ssize_t)n ? 0 : -errno;
}

static int read_boot(pid_t pid, uint64_t addr, struct boot *b)
{
	struct iovec l = { b, sizeof(*b) }, r = { (void *)(uintptr_t)addr, sizeof(*b) };
	return process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)sizeof(*b) ? 0 : -errno;
}

/* An earlier --inject's mapping, by its name in maps: its start, or 0. */
static uint64_t earlier_mapping(const struct ruby_target *t)
{
	for (int i = 0; i < t->maps.n; i++)
		if (strstr(t->maps.v[i].path, "[anon:rbscope-inject]"))
			return t->maps.v[i].start;
	return 0;
}

/*
 * Tests only: RBSCOPE_TEST_INJECT_KILL_AT=N makes rbscope kill itself at step
 * N (1 thread stopped, 2 mapping made, 3 code written, 4 code made executable,
 * 5 inside the call, 6 thread given back), to show what a killed CLI leaves.
 */
static int kill_at(void)
{
	const char *s = getenv("RBSCOPE_TEST_INJECT_KILL_AT");
	return s ? atoi(s) : 0;
}

static void step(int n)
{
	if (kill_at() == n)
		kill(getpid(), SIGKILL);
}


/* Wait until the agent answers, following the boot block's progress. 0, or ERR_INJECT with why. */
static int await_agent(pid_t pid, uint64_t boot_addr, int timeout_ms, char *msg, size_t cap)
{
	struct boot b = { 0 };
	uint64_t deadline = clock_now_ns() / 1000000 + (uint64_t)timeout_ms;
	for (;;) {
		struct agent_conn c;
		if (!agent_connect(&c, pid, 1000)) {
			agent_close(&c);
			return 0;
		}
		if (read_boot(pid, boot_addr, &b))
			return inject_fail(msg, cap, ERR_GONE, "process %d went away", (int)pid);
		if (b.stage == BOOT_FINISHED && b.state)
			return inject_fail(msg, cap, ERR_INJECT,
				    "the agent did not load in process %d (its stderr says why: a line starting \"rbscope: --inject\")",
				    (int)pid);
		if (clock_now_ns() / 1000000 > deadline)
			break;
		struct timespec nap = { 0, 20 * 1000000 };
		nanosleep(&nap, NULL);
	}
	if (b.stage < BOOT_JOB)
		return inject_fail(msg, cap, ERR_INJECT,
			    "the agent's loader is in place in process %d, but Ruby has not run it within %d s (no thread ran "
			    "Ruby code: the agent loads at the process's next Ruby activity; try again then)",
			    (int)pid, timeout_ms / 1000);
	return inject_fail(msg, cap, ERR_INJECT, "the agent is loading in process %d but did not answer within %d s", (int)pid,
		    timeout_ms / 1000);
}

int agent_inject(pid_t pid, const struct inject_opts *o, char *msg, size_t cap)
{
	int timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 10000;
	msg[0] = '\0';
	struct agent_conn c;
	if (!agent_connect(&c, pid, 2000)) {
		agent_close(&c);
		return 1;
	}
	char v[64];
	if (!task_environ(pid, "RBSCOPE_DISABLE_ATTACH", v, sizeof(v)) && v[0] && strcmp(v, "0"))
		return inject_fail(msg, cap, ERR_INJECT, "process %d forbids it (RBSCOPE_DISABLE_ATTACH=%s in its environment)",
			    (int)pid, v);
	struct ruby_target t;
	int err = ruby_target_attach(&t, pid, NULL);
	if (err) {
		ruby_target_detach(&t); /* (what the attach had made: its mappings, its strings) */
		return inject_fail(msg, cap, err, "%s", err_message(err));
	}
	uint64_t earlier = earlier_mapping(&t);
	if (earlier) {
		ruby_target_detach(&t);
		return await_agent(pid, earlier + BOOT_OFF, timeout_ms, msg, cap);
	}
	struct agent_dirs a;
	if ((err = find_agent(&t, o, &a, msg, cap))) {
		ruby_target_detach(&t);
		return err;
	}
	/* Ruby's C API, and libc's pthread_create for a helper thread */
	struct boot b = { .magic = BOOT_MAGIC };
	const struct sym api[] = {
		{ "rb_postponed_job_preregister", &b.preregister }, { "rb_postponed_job_trigger", &b.trigger },
		{ "rb_postponed_job_register_one", &b.register_one }, { "rb_thread_create", &b.thread_create },
		{ "rb_str_new_cstr", &b.str_new_cstr }, { "rb_gv_set", &b.gv_set }, { "rb_load_protect", &b.load_protect },
	};
	resolve(&t, t.lib_path, 0, t.bias, api, (int)(sizeof(api) / sizeof(api[0])));
	if (!b.preregister || !b.trigger)
		b.preregister = b.trigger = 0;
	if ((!b.trigger && !b.register_one) || !b.thread_create || !b.str_new_cstr || !b.gv_set || !b.load_protect) {
		ruby_target_detach(&t);
		return inject_fail(msg, cap, ERR_INJECT, "%s does not export Ruby's postponed-job and thread functions",
			    t.lib_path);
	}
	enum wait_kind kind;
	long nr = -1;
	/* A thread between two waits (a loop of short sleeps, a server between requests), or a sample that
	   read torn as it moved: parked again soon. Looked for for up to a fifth of a second. */
	pid_t tid = 0;
	for (int i = 0; i < 20 && !(tid = choose_thread(&t, &kind, &nr)); i++)
		usleep(10000);
	if (!tid) {
		ruby_target_detach(&t);
		return inject_fail(msg, cap, ERR_INJECT,
			    "no Ruby thread of process %d is parked in a wait rbscope can borrow (in sleep, a queue, a "
			    "lock or I/O); every thread is running Ruby code or in another system call: try again",
			    (int)pid);
	}
	if (kind == WAIT_SLEEP) {
		/* Its own interrupt flag would wait for its wake-up: a helper thread flags the running thread's. */
		static const char *const libpthread[] = { "libpthread.so", "libpthread-", NULL };
		static const char *const libc[] = { "libc.so", "libc-", NULL };
		const struct sym threads[] = { { "pthread_create", &b.pthread_create }, { "pthread_detach", &b.pthread_detach } };
		const struct map_entry *m = mapped(&t, libpthread); /* glibc before 2.34 */
		if (m)
			resolve(&t, m->path, m->start, 0, threads, 2);
		if ((!b.pthread_create || !b.pthread_detach) && (m = mapped(&t, libc)))
			resolve(&t, m->path, m->start, 0, threads, 2);
		if (!b.pthread_create || !b.pthread_detach) {
			ruby_target_detach(&t);
			return inject_fail(msg, cap, ERR_INJECT, "process %d's libc exports no pthread_create", (int)pid);
		}
	}
	b.own = kind == WAIT_IO;
	/* What the new Ruby thread loads, lib/rbscope/inject.rb, and its parameters: "lib\next\nuid\npid". */
	struct buf code;
	buf_init(&code, 1 << 16);
	buf_addf(&code, "%s\n%s\n%d\n%d", a.lib, a.ext, (int)getuid(), (int)getpid());
	buf_add(&code, "", 1);
	b.path_off = (uint32_t)code.len;
	buf_addf(&code, "%s/rbscope/inject.rb", a.lib);
	buf_add(&code, "", 1);
	memcpy(b.gvar, "$rbscope_inject", sizeof("$rbscope_inject"));
	ruby_target_detach(&t);
	if (BOOT_OFF + sizeof(b) + code.len > MAP_LEN - 32 * 1024) {
		buf_free(&code);
		return inject_fail(msg, cap, ERR_INJECT, "the agent's path is too long");
	}

	struct hijack h;
	uint64_t t_stop = clock_now_ns() / 1000;
	if ((err = hijack_seize(&h, pid, tid))) {
		buf_free(&code);
		if (err == -EPERM)
			return inject_fail(msg, cap, -EPERM, "ptrace of process %d is not allowed", (int)pid);
		return inject_fail(msg, cap, ERR_INJECT, "could not stop thread %d of process %d (%s): try again", (int)tid,
			    (int)pid, err == -EAGAIN ? "it left its wait" : err_message(err));
	}
	step(1);
	long base = 0;
	uint64_t args[6] = { 0, MAP_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, (uint64_t)-1, 0 };
	err = hijack_syscall(&h, SYS_mmap, args, &base);
	if (!err && (base < 0 && base > -4096))
		err = (int)base;
	unsigned char tramp[HIJACK_TRAMPOLINE_SIZE];
	if (!err)
		step(2);
	if (!err) {
		b.map_start = (uint64_t)base;
		b.map_len = MAP_LEN;
		b.name = (uint64_t)base + NAME_OFF;
		size_t tn = hijack_trampoline(&h, tramp, (uint64_t)base + TRAMP_OFF, MARKER_NR);
		static const char name[] = "rbscope-inject";
		err = write_remote(pid, (uint64_t)base + CODE_OFF, boot_blob, sizeof(boot_blob));
		err = err ?: write_remote(pid, (uint64_t)base + TRAMP_OFF, tramp, tn);
		err = err ?: write_remote(pid, (uint64_t)base + NAME_OFF, name, sizeof(name));
		err = err ?: write_remote(pid, (uint64_t)base + BOOT_OFF, &b, sizeof(b));
		err = err ?: write_remote(pid, (uint64_t)base + BOOT_OFF + sizeof(b), code.data, code.len);
	}
	long r = 0;
	if (!err)
		step(3);
	if (!err) {
		uint64_t pa[6] = { (uint64_t)base, 4096, PROT_READ | PROT_EXEC, 0, 0, 0 };
		err = hijack_syscall(&h, SYS_mprotect, pa, &r);
		if (!err && r)
			err = (int)r;
	}
	buf_free(&code);
	if (!err) {
		step(4);
		h.die_in_call = kill_at() == 5;
		err = hijack_call(&h, (uint64_t)base + CODE_OFF + BOOT_BLOB_ENTRY, (uint64_t)base + BOOT_OFF,
				  (uint64_t)base + MAP_LEN, (uint64_t)base + TRAMP_OFF, MARKER_NR, 3000, &r);
		if (err == -ETIMEDOUT) /* the thread finishes the call and gives itself back */
			return await_agent(pid, (uint64_t)base + BOOT_OFF, timeout_ms, msg, cap);
	}
	/* On failure before the call, the mapping is left unnamed and unused: a later --inject makes its own. */
	hijack_release(&h, b.own && !err);
	uint64_t stopped_us = clock_now_ns() / 1000 - t_stop;
	step(6);
	if (err)
		return inject_fail(msg, cap, ERR_INJECT, "placing the agent's loader in process %d failed (%s); the process is "
			    "as it was", (int)pid, err_message(err));
	if (r == -1)
		return inject_fail(msg, cap, ERR_INJECT, "Ruby's postponed-job table in process %d is full", (int)pid);
	if (r == -2)
		return inject_fail(msg, cap, ERR_INJECT, "process %d could not start a thread for the agent's loader", (int)pid);
	err = await_agent(pid, (uint64_t)base + BOOT_OFF, timeout_ms, msg, cap);
	if (!err)
		pathf(msg, cap, "thread %d stopped for %llu us, %s", (int)tid, (unsigned long long)stopped_us,
		      b.own ? "its own job, woken" : "the job flagged by a helper thread");
	return err;
}
