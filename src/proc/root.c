/* root.c: a directory of another process's filesystem, its path resolved inside that process's root. */
#include "root.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MAX_LINKS 40

int root_open_dir(const char *root, const char *path)
{
	int rfd = open(*root ? root : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return -errno;
	/* what is left to resolve, a name at a time; a link's target is put in front of the rest */
	char todo[PATH_MAX * 2], tmp[PATH_MAX * 2], target[PATH_MAX];
	if (snprintf(todo, sizeof(todo), "%s", path) >= (int)sizeof(todo)) {
		close(rfd);
		return -ENAMETOOLONG;
	}
	int fd = dup(rfd), links = 0, err = fd < 0 ? -errno : 0;
	/* the directories walked down, to go back up for ".." (never above root) */
	int up[128], depth = 0;
	char *p = todo;
	while (!err && *p) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		size_t n = strcspn(p, "/");
		char name[NAME_MAX + 1];
		if (n > NAME_MAX) {
			err = -ENAMETOOLONG;
			break;
		}
		memcpy(name, p, n);
		name[n] = '\0';
		p += n;
		if (!strcmp(name, "."))
			continue;
		if (!strcmp(name, "..")) {
			if (depth) {
				close(fd);
				fd = up[--depth];
			}
			continue;
		}
		ssize_t len = readlinkat(fd, name, target, sizeof(target) - 1);
		if (len >= 0) { /* a link: its target, then the rest */
			if (++links > MAX_LINKS) {
				err = -ELOOP;
				break;
			}
			target[len] = '\0';
			if (snprintf(tmp, sizeof(tmp), "%s/%s", target, p) >= (int)sizeof(tmp)) {
				err = -ENAMETOOLONG;
				break;
			}
			snprintf(todo, sizeof(todo), "%s", tmp);
			p = todo;
			if (target[0] == '/') { /* absolute: from the root again */
				while (depth)
					close(up[--depth]);
				close(fd);
				if ((fd = dup(rfd)) < 0)
					err = -errno;
			}
			continue;
		}
		int next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0) {
			err = -errno;
			break;
		}
		if (depth == (int)(sizeof(up) / sizeof(up[0]))) { /* (too deep to climb back: forget the top) */
			close(up[0]);
			memmove(up, up + 1, sizeof(up) - sizeof(up[0]));
			depth--;
		}
		up[depth++] = fd;
		fd = next;
	}
	while (depth)
		close(up[--depth]);
	close(rfd);
	if (err) {
		if (fd >= 0)
			close(fd);
		return err;
	}
	return fd;
}

int root_open(const char *root, const char *path, int flags)
{
	char p[PATH_MAX], target[PATH_MAX];
	if (snprintf(p, sizeof(p), "%s", path) >= (int)sizeof(p))
		return -ENAMETOOLONG;
	for (int links = 0; links <= MAX_LINKS; links++) {
		char *slash = strrchr(p, '/');
		const char *base = slash ? slash + 1 : p;
		char dir[PATH_MAX];
		snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - p) : 0, p);
		int dfd = root_open_dir(root, *dir ? dir : "/");
		if (dfd < 0)
			return dfd;
		ssize_t len = readlinkat(dfd, base, target, sizeof(target) - 1);
		if (len < 0) {
			int fd = openat(dfd, base, flags | O_NOFOLLOW | O_CLOEXEC);
			int e = errno;
			close(dfd);
			return fd < 0 ? -e : fd;
		}
		close(dfd);
		target[len] = '\0'; /* a link: its target, in root, from its directory when relative */
		char next[PATH_MAX * 2];
		int n = snprintf(next, sizeof(next), target[0] == '/' ? "%s%s" : "%s/%s", target[0] == '/' ? "" : dir, target);
		if (n < 0 || n >= (int)sizeof(p))
			return -ENAMETOOLONG;
		memcpy(p, next, (size_t)n + 1);
	}
	return -ELOOP;
}
