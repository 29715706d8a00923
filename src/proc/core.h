/* core.h: an ELF core file (gcore, the kernel, systemd-coredump) as a memory source and a process's description. */
#ifndef RBSCOPE_CORE_H
#define RBSCOPE_CORE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "maps.h"
#include "mem.h"

struct core_segment {
	uint64_t vaddr, memsz;  /* in the process */
	uint64_t offset, filesz; /* in the core: the first filesz bytes were written, the rest left out */
	unsigned flags;          /* PF_R | PF_W | PF_X */
};

/* One mapping of a file, from the NT_FILE note. */
struct core_file_map {
	uint64_t start, end, offset; /* offset: in the file, in bytes */
	char *path;                  /* as the process saw it */
	int fd;                      /* opened under the sysroot on first use; -1 before, -2 if it cannot be */
	int checked;                 /* 1 once its first page was compared with the core's copy */
};

struct core {
	const unsigned char *data; /* the whole core, mapped */
	size_t size;
	pid_t pid;                 /* from NT_PRPSINFO (else the first NT_PRSTATUS) */
	char comm[17];             /* the executable's name */
	struct core_segment *segs;
	int nsegs;
	struct core_file_map *files;
	int nfiles;
	pid_t *tids;               /* every thread, from NT_PRSTATUS, in note order */
	int ntids;
	size_t tids_cap;
	char sysroot[4096];        /* where the files the core names are found ("" for /) */
	const char *bad_file;      /* set when a read needed a file that is missing or differs: its path */
	int bad_file_err;          /* and why: -ENOENT, -EACCES..., or ERR_FILE_CHANGED */
};

/*
 * Open path as an x86-64 ELF core. Returns 0, -errno, ERR_BAD_FILE (not an
 * ELF core of this machine) or ERR_CORRUPT (cut short: *why says where, or
 * a note that does not parse). sysroot may be NULL or "/".
 */
int core_open(struct core *c, const char *path, const char *sysroot, const char **why);
void core_close(struct core *c);

/*
 * Read process memory from the core: what the core holds, else (a mapping the
 * core left out, such as read-only file text and data under the default dump
 * filter) the file the NT_FILE note names, under the sysroot, checked once
 * against the core's copy of its first page when the core has one. A missing
 * or changed file fails the read with -EFAULT and sets bad_file.
 */
void mem_open_core(struct mem *m, struct core *c);

/* The process's mappings as /proc/PID/maps would list them: NT_FILE's files, the rest anonymous. */
int core_maps(const struct core *c, struct maps *out);

/*
 * The file path of a mapping as seen from here into out: sysroot + path, or
 * path alone when it already lies under the sysroot (gdb writes what the
 * host sees of a chrooted process's maps; the kernel what the process saw).
 */
void core_host_path(const struct core *c, const char *path, char *out, size_t cap);

#endif
