/* elfsym.c: symbols and loadable segments of an ELF file, via libelf. */
#include "elfsym.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

#include "../lib/err.h"

int elf_open(const char *path, struct elf_file *ef)
{
	memset(ef, 0, sizeof(*ef));
	ef->fd = -1;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return ERR_BAD_FILE;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		if (e)
			elf_end(e);
		close(fd);
		return ERR_BAD_FILE;
	}
	ef->elf = e;
	ef->fd = fd;
	size_t nph = 0;
	elf_getphdrnum(e, &nph);
	int first = 1;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (first) {
			ef->base_vaddr = ph.p_vaddr & ~(uint64_t)0xfff;
			first = 0;
		}
		if (ef->nseg < (int)(sizeof(ef->seg) / sizeof(ef->seg[0]))) {
			ef->seg[ef->nseg].vaddr = ph.p_vaddr;
			ef->seg[ef->nseg].memsz = ph.p_memsz;
			ef->seg[ef->nseg].offset = ph.p_offset;
			ef->seg[ef->nseg].filesz = ph.p_filesz;
			ef->seg[ef->nseg].writable = !!(ph.p_flags & PF_W);
			ef->seg[ef->nseg].executable = !!(ph.p_flags & PF_X);
			ef->nseg++;
		}
	}
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
			ef->has_symtab = 1;
	}
	return 0;
}

void elf_close(struct elf_file *ef)
{
	if (ef->elf)
		elf_end(ef->elf);
	if (ef->fd >= 0)
		close(ef->fd);
	ef->elf = NULL;
	ef->fd = -1;
}

static int lookup_in(Elf *e, Elf64_Word type, const char *name, uint64_t *value, uint64_t *size)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type || !sh.sh_entsize)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		size_t n = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym sym;
			if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
				continue;
			const char *s = elf_strptr(e, sh.sh_link, sym.st_name);
			if (s && !strcmp(s, name)) {
				*value = sym.st_value;
				if (size)
					*size = sym.st_size;
				return 0;
			}
		}
	}
	return -ENOENT;
}

int elf_lookup(struct elf_file *ef, const char *name, uint64_t *value, uint64_t *size)
{
	if (!lookup_in(ef->elf, SHT_DYNSYM, name, value, size))
		return 0;
	return lookup_in(ef->elf, SHT_SYMTAB, name, value, size);
}

const struct elf_segment *elf_segment_of(const struct elf_file *ef, uint64_t vaddr)
{
	for (int i = 0; i < ef->nseg; i++)
		if (vaddr >= ef->seg[i].vaddr && vaddr - ef->seg[i].vaddr < ef->seg[i].memsz)
			return &ef->seg[i];
	return NULL;
}

int elf_read(struct elf_file *ef, uint64_t vaddr, void *buf, size_t len)
{
	const struct elf_segment *s = elf_segment_of(ef, vaddr);
	if (!s || vaddr - s->vaddr > s->filesz || len > s->filesz - (vaddr - s->vaddr))
		return -ENOENT;
	ssize_t got = pread(ef->fd, buf, len, (off_t)(s->offset + (vaddr - s->vaddr)));
	return got == (ssize_t)len ? 0 : -EIO;
}
