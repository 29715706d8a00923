/* elfsym.h: symbols and loadable segments of an ELF file (libruby or a static ruby), via libelf. */
#ifndef RBSCOPE_ELFSYM_H
#define RBSCOPE_ELFSYM_H

#include <stddef.h>
#include <stdint.h>

struct elf_segment {
	uint64_t vaddr, memsz;
	uint64_t offset, filesz; /* where it lies in the file */
	int writable, executable;
};

struct elf_file {
	void *elf; /* Elf * */
	int fd;
	uint64_t base_vaddr; /* lowest PT_LOAD vaddr, page aligned */
	struct elf_segment seg[16];
	int nseg;
	int has_symtab;
};

/* Open path; 0, -errno or ERR_BAD_FILE. */
int elf_open(const char *path, struct elf_file *ef);
void elf_close(struct elf_file *ef);
/* Look name up in .dynsym, then .symtab; 0 and *value (unrelocated) or -ENOENT. */
int elf_lookup(struct elf_file *ef, const char *name, uint64_t *value, uint64_t *size);
/* The len bytes the file holds at vaddr (unrelocated), all in one loaded segment: 0, -ENOENT or -EIO. */
int elf_read(struct elf_file *ef, uint64_t vaddr, void *buf, size_t len);
/* The loaded segment vaddr lies in, or NULL. */
const struct elf_segment *elf_segment_of(const struct elf_file *ef, uint64_t vaddr);

#endif
