/* maps.h: the memory mappings of a process, from /proc/PID/maps. */
#ifndef RBSCOPE_MAPS_H
#define RBSCOPE_MAPS_H

#include <stdint.h>
#include <sys/types.h>

struct map_entry {
	uint64_t start, end, offset;
	char perms[5];
	char *path; /* "" for anonymous mappings */
};

struct maps {
	struct map_entry *v;
	int n;
};

/* 0, ERR_NO_PROCESS or -errno. */
int maps_read(pid_t pid, struct maps *out);
/* Parse the text of a maps file (for tests); 0 or -ENOMEM. */
int maps_parse(const char *text, struct maps *out);
void maps_free(struct maps *m);
/* The mapping that holds addr, or NULL. */
const struct map_entry *maps_find(const struct maps *m, uint64_t addr);
/* Is [addr, addr+len) inside one readable mapping? */
int maps_readable(const struct maps *m, uint64_t addr, uint64_t len);

/* A mapped file: its path as maps shows it, and the first and last of its mappings. */
struct maps_object {
	const char *path; /* points into the maps list */
	int first, last;
};

/*
 * The distinct files mapped (anonymous and [special] mappings left out), in
 * the order of their first mapping: *out (free() it) and *n. 0 or -ENOMEM.
 */
int maps_objects(const struct maps *m, struct maps_object **out, int *n);
/*
 * A path that opens object o of process pid: the file through the process's
 * root (another mount namespace, a chroot), else its map_files entry, else
 * an fd the process holds open on it (a memfd). 0, or -1 if none opens.
 */
int maps_object_path(pid_t pid, const struct maps *m, const struct maps_object *o, char *buf, size_t cap);
/* Where file offset off of object o is mapped in the process, or 0 if no mapping of it holds that offset. */
uint64_t maps_object_addr(const struct maps *m, const struct maps_object *o, uint64_t off);

#endif
