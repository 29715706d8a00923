/* agents.c: the agents rbscope carries, found in its bundle or beside it, and placed in a target's filesystem. */
#include "agents.h"

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
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../elf/elfsym.h"
#include "../lib/err.h"
#include "../proc/root.h"
#include "../ruby/target.h"

/* The bundle linked into the binary (agents_obj.S): empty but for its magic and end in a build without agents. */
extern const unsigned char rbscope_agents[], rbscope_agents_end[];

#define BUNDLE_MAGIC "RBSAGT1\n"
#define MAX_FILE (64u << 20)

struct afile {
	char path[256]; /* under the API's directory: "rbscope.rb", "rbscope/rbscope.so" */
	unsigned mode;
	unsigned char *bytes;
	size_t len;
};

struct agent {
	struct afile *v;
	int n, cap;
	char api[16];
};

static void agent_free(struct agent *a)
{
	for (int i = 0; i < a->n; i++)
		free(a->v[i].bytes);
	free(a->v);
	memset(a, 0, sizeof(*a));
}

static int agent_add(struct agent *a, const char *path, unsigned mode, const unsigned char *bytes, size_t len)
{
	if (strlen(path) >= sizeof(a->v[0].path) || strstr(path, "..") || path[0] == '/')
		return ERR_CORRUPT;
	if (a->n == a->cap) {
		int cap = a->cap ? a->cap * 2 : 16;
		struct afile *v = realloc(a->v, (size_t)cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		a->v = v, a->cap = cap;
	}
	struct afile *f = &a->v[a->n];
	snprintf(f->path, sizeof(f->path), "%s", path);
	f->mode = mode & 0755;
	f->len = len;
	if (!(f->bytes = malloc(len ? len : 1)))
		return -ENOMEM;
	memcpy(f->bytes, bytes, len);
	a->n++;
	return 0;
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int agents_bundle_each(const unsigned char *p, size_t n,
		       int (*fn)(const char *path, unsigned mode, const unsigned char *bytes, size_t len, void *arg),
		       void *arg)
{
	size_t off = sizeof(BUNDLE_MAGIC) - 1;
	if (n < off + 4 || memcmp(p, BUNDLE_MAGIC, off))
		return ERR_CORRUPT;
	for (;;) {
		if (n - off < 4)
			return ERR_CORRUPT;
		uint32_t plen = le32(p + off);
		off += 4;
		if (!plen)
			return 0;
		if (plen >= 256 || n - off < (size_t)plen + 12)
			return ERR_CORRUPT;
		char path[256];
		memcpy(path, p + off, plen);
		path[plen] = '\0';
		off += plen;
		uint32_t mode = le32(p + off), size = le32(p + off + 4), zsize = le32(p + off + 8);
		off += 12;
		if (n - off < zsize || size > MAX_FILE || memchr(path, '\0', plen))
			return ERR_CORRUPT;
		unsigned char *bytes = malloc(size ? size : 1);
		if (!bytes)
			return -ENOMEM;
		uLongf got = size;
		if (uncompress(bytes, &got, p + off, zsize) != Z_OK || got != size) {
			free(bytes);
			return ERR_CORRUPT;
		}
		off += zsize;
		int rc = fn(path, mode, bytes, size, arg);
		free(bytes);
		if (rc)
			return rc;
	}
}

static int from_bundle(const char *path, unsigned mode, const unsigned char *bytes, size_t len, void *arg)
{
	struct agent *a = arg;
	size_t k = strlen(a->api);
	if (strncmp(path, a->api, k) || path[k] != '/')
		return 0;
	return agent_add(a, path + k + 1, mode, bytes, len);
}

static int list_bundle(const char *path, unsigned mode, const unsigned char *bytes, size_t len, void *arg)
{
	(void)mode, (void)bytes, (void)len;
	char *buf = arg; /* "API " once each, in the bundle's (sorted) order */
	const char *slash = strchr(path, '/');
	if (!slash || slash - path > 15)
		return 0;
	char api[17];
	snprintf(api, sizeof(api), "%.*s ", (int)(slash - path), path);
	if (!strstr(buf, api) && strlen(buf) + strlen(api) < 256)
		strcat(buf, api);
	return 0;
}

/* Where `make install` put the agents: PREFIX/lib/rbscope/agents, PREFIX being the binary's bin/'s parent. */
static int installed_dir(char *buf, size_t cap)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -ENOENT;
	exe[n] = '\0';
	for (int i = 0; i < 2; i++) {
		char *slash = strrchr(exe, '/');
		if (!slash)
			return -ENOENT;
		*slash = '\0';
	}
	if ((size_t)snprintf(buf, cap, "%s/lib/rbscope/agents", exe) >= cap)
		return -ENAMETOOLONG;
	return 0;
}

/* The regular files under dir (depth <= 2) into a, their paths from base. */
static int read_tree(struct agent *a, const char *dir, const char *rel, int depth)
{
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	struct dirent *e;
	int rc = 0;
	while (!rc && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char p[PATH_MAX], r[256];
		if ((size_t)snprintf(p, sizeof(p), "%s/%s", dir, e->d_name) >= sizeof(p) ||
		    (size_t)snprintf(r, sizeof(r), "%s%s%s", rel, *rel ? "/" : "", e->d_name) >= sizeof(r))
			continue;
		struct stat st;
		if (lstat(p, &st))
			continue;
		if (S_ISDIR(st.st_mode)) {
			if (depth < 2)
				rc = read_tree(a, p, r, depth + 1);
			continue;
		}
		if (!S_ISREG(st.st_mode) || st.st_size > MAX_FILE)
			continue;
		FILE *f = fopen(p, "rb");
		if (!f) {
			rc = -errno;
			break;
		}
		unsigned char *bytes = malloc(st.st_size ? (size_t)st.st_size : 1);
		size_t got = bytes ? fread(bytes, 1, (size_t)st.st_size, f) : 0;
		fclose(f);
		rc = !bytes ? -ENOMEM : got != (size_t)st.st_size ? -EIO : agent_add(a, r, st.st_mode, bytes, got);
		free(bytes);
	}
	closedir(d);
	return rc;
}

/* The agent carried for api: the bundle's, else the installed one. 0, -ENOENT, or an error. */
static int agent_load(struct agent *a, const char *api)
{
	memset(a, 0, sizeof(*a));
	snprintf(a->api, sizeof(a->api), "%s", api);
	int rc = agents_bundle_each(rbscope_agents, (size_t)(rbscope_agents_end - rbscope_agents), from_bundle, a);
	if (!rc && !a->n) {
		char dir[PATH_MAX];
		if (!installed_dir(dir, sizeof(dir) - 32)) {
			strcat(dir, "/");
			strcat(dir, api);
			rc = read_tree(a, dir, "", 0);
			if (rc == -ENOENT)
				rc = 0;
		}
	}
	int have_rb = 0, have_so = 0;
	for (int i = 0; i < a->n; i++) {
		have_rb |= !strcmp(a->v[i].path, "rbscope.rb");
		have_so |= !strcmp(a->v[i].path, "rbscope/rbscope.so");
	}
	if (!rc && (!have_rb || !have_so))
		rc = -ENOENT;
	if (rc)
		agent_free(a);
	return rc;
}

static int by_version(const void *a, const void *b)
{
	return strverscmp((const char *)a, (const char *)b);
}

void agents_list(char *buf, size_t cap)
{
	char all[256] = "";
	agents_bundle_each(rbscope_agents, (size_t)(rbscope_agents_end - rbscope_agents), list_bundle, all);
	char dir[PATH_MAX];
	DIR *d = !all[0] && !installed_dir(dir, sizeof(dir)) ? opendir(dir) : NULL;
	if (d) {
		/* sorted by version, as the bundle is */
		char names[32][16];
		int n = 0;
		struct dirent *e;
		while ((e = readdir(d)) && n < 32) {
			size_t len = strlen(e->d_name);
			if (e->d_name[0] >= '0' && e->d_name[0] <= '9' && len < sizeof(names[0]))
				memcpy(names[n++], e->d_name, len + 1);
		}
		closedir(d);
		qsort(names, (size_t)n, sizeof(names[0]), by_version);
		for (int i = 0; i < n; i++)
			if (strlen(all) + strlen(names[i]) + 2 < sizeof(all))
				strcat(strcat(all, names[i]), " ");
	}
	size_t k = strlen(all);
	if (k)
		all[k - 1] = '\0';
	snprintf(buf, cap, "%s", all);
}

/* "GLIBC_2.34" as 2034; 0 for other names (GLIBC_PRIVATE, another library's). */
static int glibc_version(const char *name)
{
	unsigned x, y;
	char end;
	if (!name || sscanf(name, "GLIBC_%u.%u%c", &x, &y, &end) != 2 || x > 9 || y > 999)
		return 0;
	return (int)(x * 1000 + y);
}

/* The highest GLIBC_ version of e's version needs (defs == 0) or definitions (defs == 1); -1 when not ELF. */
static int glibc_versions(Elf *e, int defs)
{
	int best = e && elf_kind(e) == ELF_K_ELF ? 0 : -1;
	Elf_Scn *scn = NULL;
	while (best >= 0 && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != (defs ? SHT_GNU_verdef : SHT_GNU_verneed))
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		/* both lists are chained by offsets; sh_info counts the entries (bounded here against a loop) */
		int off = 0;
		for (unsigned i = 0; i < sh.sh_info && i < 4096; i++) {
			if (defs) {
				GElf_Verdef vd;
				GElf_Verdaux va;
				if (!gelf_getverdef(d, off, &vd))
					break;
				if (vd.vd_cnt && gelf_getverdaux(d, off + (int)vd.vd_aux, &va)) {
					int v = glibc_version(elf_strptr(e, sh.sh_link, va.vda_name));
					best = v > best ? v : best;
				}
				if (!vd.vd_next)
					break;
				off += (int)vd.vd_next;
			} else {
				GElf_Verneed vn;
				if (!gelf_getverneed(d, off, &vn))
					break;
				int aoff = off + (int)vn.vn_aux;
				for (unsigned j = 0; j < vn.vn_cnt && j < 4096; j++) {
					GElf_Vernaux va;
					if (!gelf_getvernaux(d, aoff, &va))
						break;
					int v = glibc_version(elf_strptr(e, sh.sh_link, va.vna_name));
					best = v > best ? v : best;
					if (!va.vna_next)
						break;
					aoff += (int)va.vna_next;
				}
				if (!vn.vn_next)
					break;
				off += (int)vn.vn_next;
			}
		}
	}
	return best;
}

/* The highest GLIBC_x.y the extension's bytes need, as x*1000+y (0: none); -1 when they are not ELF. */
static int glibc_needed(const unsigned char *bytes, size_t len)
{
	elf_version(EV_CURRENT);
	Elf *e = elf_memory((char *)bytes, len);
	int v = glibc_versions(e, 0);
	if (e)
		elf_end(e);
	return v;
}

/*
 * The highest GLIBC_x.y the target's C library at path (its maps path, opened
 * as target.c opens its files) defines (0: none, not glibc's); -1 unreadable.
 */
static int glibc_defined(const struct ruby_target *t, const char *path)
{
	struct elf_file ef;
	if (ruby_target_open_elf(t, path, &ef))
		return -1;
	int v = glibc_versions(ef.elf, 1);
	elf_close(&ef);
	return v;
}

int inject_fail(char *msg, size_t cap, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, cap, fmt, ap);
	va_end(ap);
	return err;
}

/* 1 when the mount holding dir (as pid sees it) is mounted noexec, per pid's mountinfo. */
static int noexec(pid_t pid, const char *dir)
{
	char path[64], line[4096];
	snprintf(path, sizeof(path), "/proc/%d/mountinfo", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t best = 0;
	int no = 0;
	while (fgets(line, sizeof(line), f)) {
		char mnt[PATH_MAX], opts[512];
		/* id parent major:minor root mount-point options ... */
		if (sscanf(line, "%*s %*s %*s %*s %4095s %511s", mnt, opts) != 2)
			continue;
		size_t k = strlen(mnt);
		int under = !strcmp(mnt, "/") || (!strncmp(dir, mnt, k) && (dir[k] == '/' || dir[k] == '\0'));
		if (under && k >= best) {
			best = k;
			no = strstr(opts, "noexec") != NULL;
		}
	}
	fclose(f);
	return no;
}

/* A directory of ours at dfd/name, made if missing: opened (O_PATH-free, for *at calls), or -1. */
static int own_dir(int dfd, const char *name)
{
	if (mkdirat(dfd, name, 0755) && errno != EEXIST)
		return -1;
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	/* ours and writable by us alone; a umask's 0700 would keep a target running as another user out */
	if (fd < 0 || fstat(fd, &st) || st.st_uid != geteuid() || (st.st_mode & 022) ||
	    ((st.st_mode & 0777) != 0755 && fchmod(fd, 0755))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* 1 when dfd/name holds exactly f's bytes. */
static int same_file(int dfd, const char *name, const struct afile *f)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct stat st;
	int same = !fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_uid == geteuid() && (size_t)st.st_size == f->len;
	unsigned char buf[65536];
	for (size_t off = 0; same && off < f->len;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n <= 0 || off + (size_t)n > f->len || memcmp(buf, f->bytes + off, (size_t)n))
			same = 0;
		else
			off += (size_t)n;
	}
	close(fd);
	return same;
}

/* f written to dfd/name through a new file renamed over it. 0 or -errno. */
static int write_file(int dfd, const char *name, const struct afile *f)
{
	if (same_file(dfd, name, f))
		return 0;
	char tmp[300];
	snprintf(tmp, sizeof(tmp), ".%s.%d", name, (int)getpid());
	unlinkat(dfd, tmp, 0);
	int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	int rc = fchmod(fd, f->mode & 0111 ? 0755 : 0644) ? -errno : 0;
	for (size_t off = 0; !rc && off < f->len;) {
		ssize_t n = write(fd, f->bytes + off, f->len - off);
		if (n <= 0)
			rc = n < 0 ? -errno : -EIO;
		else
			off += (size_t)n;
	}
	if (close(fd) && !rc)
		rc = -errno;
	if (!rc && renameat(dfd, tmp, dfd, name))
		rc = -errno;
	if (rc)
		unlinkat(dfd, tmp, 0);
	return rc;
}

/* The agent's files into root/base/name (root: the target's root seen from here). 0 or -errno. */
static int place_in(const char *root, const char *base, const char *name, const struct agent *a)
{
	int bfd = root_open_dir(root, base);
	if (bfd < 0)
		return bfd;
	int dfd = own_dir(bfd, name);
	int rc = dfd < 0 ? -EACCES : 0;
	close(bfd);
	for (int i = 0; !rc && i < a->n; i++) {
		const struct afile *f = &a->v[i];
		const char *slash = strchr(f->path, '/');
		if (!slash) {
			rc = write_file(dfd, f->path, f);
			continue;
		}
		char sub[256];
		snprintf(sub, sizeof(sub), "%.*s", (int)(slash - f->path), f->path);
		int sfd = strchr(slash + 1, '/') ? -1 : own_dir(dfd, sub);
		rc = sfd < 0 ? -EACCES : write_file(sfd, slash + 1, f);
		if (sfd >= 0)
			close(sfd);
	}
	if (dfd >= 0)
		close(dfd);
	return rc;
}

/* The target's C library: its path in maps, or NULL; *musl set when it is musl's. */
static const char *target_libc(const struct ruby_target *t, int *musl)
{
	*musl = 0;
	for (int i = 0; i < t->maps.n; i++) {
		const char *base = strrchr(t->maps.v[i].path, '/');
		if (!base)
			continue;
		base++;
		if (!strncmp(base, "ld-musl-", 8) || !strncmp(base, "libc.musl-", 10)) {
			*musl = 1;
			return t->maps.v[i].path;
		}
		if (!strcmp(base, "libc.so.6") || (!strncmp(base, "libc-2.", 7) && strstr(base, ".so")))
			return t->maps.v[i].path;
	}
	return NULL;
}

int agents_place(const struct ruby_target *t, const char *api, char *dir, size_t cap, char *msg, size_t mcap)
{
	struct agent a;
	int rc = agent_load(&a, api);
	if (rc == -ENOENT)
		return -ENOENT;
	if (rc)
		return inject_fail(msg, mcap, ERR_INJECT, "the agent rbscope carries for Ruby %s does not read (%s)", api,
			    rc == ERR_CORRUPT ? "its bundle is damaged" : strerror(-rc));
	/* its C library: the target's must define every version the extension needs */
	int need = -1;
	for (int i = 0; i < a.n; i++)
		if (!strcmp(a.v[i].path, "rbscope/rbscope.so"))
			need = glibc_needed(a.v[i].bytes, a.v[i].len);
	int musl;
	const char *libc = target_libc(t, &musl);
	int have = libc && !musl ? glibc_defined(t, libc) : 0;
	if (need < 0)
		rc = inject_fail(msg, mcap, ERR_INJECT, "the agent rbscope carries for Ruby %s does not read as ELF", api);
	else if (musl || !libc || have <= 0)
		rc = inject_fail(msg, mcap, ERR_INJECT,
			  "the agent rbscope carries for Ruby %s is built for glibc, and process %d uses %s: install the "
			  "rbscope gem with its Ruby", api, (int)t->pid, musl ? "musl" : "no glibc it can load it with");
	else if (need > have)
		rc = inject_fail(msg, mcap, ERR_INJECT,
			  "the agent rbscope carries for Ruby %s needs glibc %d.%d, and process %d has %d.%d: install the "
			  "rbscope gem with its Ruby", api, need / 1000, need % 1000, (int)t->pid, have / 1000, have % 1000);
	if (rc) {
		agent_free(&a);
		return rc;
	}
	/* named by its contents: another build's agent for this Ruby goes beside it, never over one in use */
	uint64_t h = 1469598103934665603ULL;
	for (int i = 0; i < a.n; i++) {
		for (const char *p = a.v[i].path; *p; p++)
			h = (h ^ (unsigned char)*p) * 1099511628211ULL;
		for (size_t k = 0; k < a.v[i].len; k++)
			h = (h ^ a.v[i].bytes[k]) * 1099511628211ULL;
	}
	char name[64];
	snprintf(name, sizeof(name), "rbscope-agent-%s-%012llx", api, (unsigned long long)(h & 0xffffffffffffULL));
	static const char *const bases[] = { "/tmp", "/var/tmp", "/dev/shm" };
	char why[256] = "";
	rc = -ENOENT;
	for (size_t i = 0; rc && i < sizeof(bases) / sizeof(bases[0]); i++) {
		if (noexec(t->pid, bases[i])) {
			snprintf(why + strlen(why), sizeof(why) - strlen(why), "%s%s: noexec", *why ? ", " : "", bases[i]);
			continue;
		}
		int e = place_in(t->root, bases[i], name, &a);
		if (e)
			snprintf(why + strlen(why), sizeof(why) - strlen(why), "%s%s: %s", *why ? ", " : "", bases[i],
				 strerror(-e));
		else {
			snprintf(dir, cap, "%s/%s", bases[i], name);
			rc = 0;
		}
	}
	agent_free(&a);
	if (rc)
		return inject_fail(msg, mcap, ERR_INJECT,
			    "no place in process %d's filesystem to put the agent rbscope carries for Ruby %s (%s)",
			    (int)t->pid, api, why);
	return 0;
}
