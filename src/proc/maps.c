/* maps.c: the memory mappings of a process, from /proc/PID/maps. */
#include "maps.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "../lib/buf.h"
#include "../lib/err.h"
#include "../lib/vec.h"

int maps_parse(const char *text, struct maps *out)
{
	size_t cap = 0;
	out->v = NULL;
	out->n = 0;
	for (const char *line = text; *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		struct map_entry e = { 0 };
		int pathpos = 0;
		char perms[8] = "", one[4096 + 256];
		/* Parse a NUL-terminated copy: the %n after the last field must not skip into the next line. */
		size_t n = len < sizeof(one) - 1 ? len : sizeof(one) - 1;
		memcpy(one, line, n);
		one[n] = '\0';
		if (sscanf(one, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n", &e.start, &e.end, perms,
			   &e.offset, &pathpos) >= 4 && pathpos > 0 && (size_t)pathpos <= n) {
			memcpy(e.perms, perms, 4);
			e.path = strndup(one + pathpos, n - (size_t)pathpos);
			if (!e.path)
				goto oom;
			struct map_entry *v = vec_grow(out->v, (size_t)out->n, &cap, sizeof(*v));
			if (!v) {
				free(e.path);
				goto oom;
			}
			out->v = v;
			out->v[out->n++] = e;
		}
		line += len + (nl ? 1 : 0);
	}
	return 0;
oom:
	maps_free(out);
	return -ENOMEM;
}

int maps_read(pid_t pid, struct maps *out)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? ERR_NO_PROCESS : -errno;
	struct buf b = BUF_INIT(64u << 20);
	char chunk[65536];
	size_t n;
	int err = 0;
	while (!err && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		err = buf_add(&b, chunk, n);
	if (ferror(f) && !err)
		err = errno == ESRCH ? ERR_GONE : -errno;
	fclose(f);
	if (!err)
		err = maps_parse(buf_str(&b), out);
	buf_free(&b);
	return err;
}

void maps_free(struct maps *m)
{
	for (int i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

const struct map_entry *maps_find(const struct maps *m, uint64_t addr)
{
	int lo = 0, hi = m->n;
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (addr < m->v[mid].start)
			hi = mid;
		else if (addr >= m->v[mid].end)
			lo = mid + 1;
		else
			return &m->v[mid];
	}
	return NULL;
}

int maps_readable(const struct maps *m, uint64_t addr, uint64_t len)
{
	const struct map_entry *e = maps_find(m, addr);
	return e && e->perms[0] == 'r' && len <= e->end - addr;
}

int maps_objects(const struct maps *m, struct maps_object **out, int *n)
{
	struct maps_object *v = NULL;
	size_t cap = 0;
	int k = 0;
	for (int i = 0; i < m->n; i++) {
		const char *path = m->v[i].path;
		if (!path[0] || path[0] == '[')
			continue;
		int seen = 0;
		for (int j = 0; j < k && !seen; j++)
			seen = !strcmp(v[j].path, path);
		if (seen)
			continue;
		struct maps_object *w = vec_grow(v, (size_t)k, &cap, sizeof(*w));
		if (!w) {
			free(v);
			return -ENOMEM;
		}
		v = w;
		v[k] = (struct maps_object){ path, i, i };
		for (int j = i + 1; j < m->n; j++)
			if (!strcmp(m->v[j].path, path))
				v[k].last = j;
		k++;
	}
	*out = v;
	*n = k;
	return 0;
}

/* Does a path end in " (deleted)" (the file was removed or replaced since it was mapped)? */
static size_t deleted_len(const char *p, size_t l)
{
	return l > 10 && !strcmp(p + l - 10, " (deleted)") ? l - 10 : l;
}

int maps_object_path(pid_t pid, const struct maps *m, const struct maps_object *o, char *buf, size_t cap)
{
	const char *p = o->path;
	size_t l = strlen(p), kept = deleted_len(p, l);
	if (kept == l && p[0] == '/') {
		snprintf(buf, cap, "/proc/%d/root%s", (int)pid, p);
		if (!access(buf, R_OK))
			return 0;
	}
	const struct map_entry *e = &m->v[o->first];
	snprintf(buf, cap, "/proc/%d/map_files/%llx-%llx", (int)pid, (unsigned long long)e->start,
		 (unsigned long long)e->end);
	if (!access(buf, R_OK))
		return 0;
	/* A memfd (e.g. an Rbscope::Provider's object) is reachable through the fd that holds it open. */
	char dir[64], link[PATH_MAX];
	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	DIR *d = opendir(dir);
	struct dirent *de;
	int found = -1;
	while (d && found && (de = readdir(d))) {
		snprintf(buf, cap, "%s/%s", dir, de->d_name);
		ssize_t n = readlink(buf, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		size_t ll = deleted_len(link, (size_t)n);
		if (ll == kept && !memcmp(link, p, kept))
			found = 0;
	}
	if (d)
		closedir(d);
	return found;
}

uint64_t maps_object_addr(const struct maps *m, const struct maps_object *o, uint64_t off)
{
	for (int i = o->first; i <= o->last; i++) {
		const struct map_entry *e = &m->v[i];
		if (strcmp(e->path, o->path))
			continue;
		if (off >= e->offset && off < e->offset + (e->end - e->start))
			return e->start + (off - e->offset);
	}
	return 0;
}
