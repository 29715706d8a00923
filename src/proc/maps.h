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

#endif
