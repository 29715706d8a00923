/* stapsdt.h: the USDT probes (SystemTap .note.stapsdt notes) of an ELF file, and where their addresses sit in the file. */
#ifndef RBSCOPE_STAPSDT_H
#define RBSCOPE_STAPSDT_H

#include <stdint.h>

#include "elfsym.h"

struct stapsdt_note {
	char *provider, *name, *args; /* point into the list's string storage */
	uint64_t pc;                  /* link-time address of the probe point (adjusted by .stapsdt.base) */
	uint64_t sem;                 /* link-time address of the semaphore, 0 if none */
};

struct stapsdt_list {
	struct stapsdt_note *v;
	int n;
	struct elf_segment seg[16]; /* the file's PT_LOAD segments: link-time address -> file offset */
	int nseg;
	char *strings;
};

/*
 * Read every stapsdt note of the ELF file at path (none is not an error).
 * 0, ERR_BAD_FILE (not ELF) or -errno.
 */
int stapsdt_read(const char *path, struct stapsdt_list *out);
void stapsdt_free(struct stapsdt_list *l);
/* The file offset of link-time address vaddr, or -1 if no segment holds it in the file. */
int64_t stapsdt_file_offset(const struct stapsdt_list *l, uint64_t vaddr);

#endif
