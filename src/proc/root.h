/* root.h: a directory of another process's filesystem, its path resolved inside that process's root. */
#ifndef RBSCOPE_ROOT_H
#define RBSCOPE_ROOT_H

/*
 * Open the directory path (absolute, as the process sees it) under root
 * (/proc/PID/root, or "" for ours), resolving every symbolic link on the way
 * inside root as the process would: an absolute link starts again at root,
 * ".." never climbs above it. Through /proc/PID/root the kernel would resolve
 * an absolute link in our own filesystem instead (a container's /tmp ->
 * /run/tmp would be the host's /run/tmp). An O_RDONLY|O_DIRECTORY fd, or
 * -errno (-ELOOP past 40 links).
 */
int root_open_dir(const char *root, const char *path);
/* The file path under root, resolved the same way (its own name too, when a link), opened with flags. */
int root_open(const char *root, const char *path, int flags);

#endif
