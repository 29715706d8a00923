/* stapsdt.c: read the SystemTap USDT notes (.note.stapsdt) and PT_LOAD segments of an ELF file, via libelf. */
#include "stapsdt.h"

#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/err.h"
#include "../lib/vec.h"

#define NT_STAPSDT 3

/* One note's descriptor: three addresses, then provider, name and arguments, each NUL-terminated. */
static int parse_note(const char *desc, size_t len, int is64, struct stapsdt_note *n, uint64_t *base, char *strs, size_t *used)
{
	size_t asz = is64 ? 8 : 4;
	if (len < 3 * asz)
		return -1;
	uint64_t a[3] = { 0, 0, 0 };
	for (int i = 0; i < 3; i++) {
		if (is64) {
			memcpy(&a[i], desc + 8 * i, 8);
		} else {
			uint32_t v;
			memcpy(&v, desc + 4 * i, 4);
			a[i] = v;
		}
	}
	const char *s = desc + 3 * asz, *end = desc + len;
	char *fields[3];
	for (int i = 0; i < 3; i++) {
		const char *z = memchr(s, '\0', (size_t)(end - s));
		if (!z)
			return -1;
		size_t l = (size_t)(z - s) + 1;
		fields[i] = strs + *used;
		memcpy(fields[i], s, l);
		*used += l;
		s = z + 1;
	}
	n->pc = a[0];
	n->sem = a[2];
	n->provider = fields[0];
	n->name = fields[1];
	n->args = fields[2];
	*base = a[1];
	return 0;
}

int stapsdt_read(const char *path, struct stapsdt_list *out)
{
	memset(out, 0, sizeof(*out));
	struct elf_file ef;
	int r = elf_open(path, &ef);
	if (r)
		return r;
	Elf *e = ef.elf;
	int is64 = gelf_getclass(e) == ELFCLASS64;
	size_t shstr = 0;
	_Static_assert(sizeof(out->seg) == sizeof(ef.seg), "the same PT_LOAD table");
	memcpy(out->seg, ef.seg, sizeof(ef.seg));
	out->nseg = ef.nseg;
	if (elf_getshdrstrndx(e, &shstr) != 0) {
		elf_close(&ef);
		return 0; /* no sections: no notes we can find */
	}
	/* Where .stapsdt.base really is; each note says where it was when written (prelink moves it). */
	uint64_t base = 0;
	int have_base = 0;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *nm;
		if (gelf_getshdr(scn, &sh) && (nm = elf_strptr(e, shstr, sh.sh_name)) && !strcmp(nm, ".stapsdt.base")) {
			base = sh.sh_addr;
			have_base = 1;
		}
	}
	size_t cap = 0, strcap = 0, used = 0;
	r = 0;
	while ((scn = elf_nextscn(e, scn)) && !r) {
		GElf_Shdr sh;
		const char *nm;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE || !(nm = elf_strptr(e, shstr, sh.sh_name)) ||
		    strcmp(nm, ".note.stapsdt"))
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf)
			continue;
		/* All strings of this section fit in its size: reserve that much once. */
		char *ns = realloc(out->strings, strcap + d->d_size);
		if (!ns) {
			r = -ENOMEM;
			break;
		}
		if (ns != out->strings) { /* rebase pointers into the moved storage */
			for (int i = 0; i < out->n; i++) {
				out->v[i].provider = ns + (out->v[i].provider - out->strings);
				out->v[i].name = ns + (out->v[i].name - out->strings);
				out->v[i].args = ns + (out->v[i].args - out->strings);
			}
			out->strings = ns;
		}
		strcap += d->d_size;
		size_t off = 0, name_off, desc_off;
		GElf_Nhdr nh;
		while ((off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type != NT_STAPSDT || nh.n_namesz != 8 || memcmp((char *)d->d_buf + name_off, "stapsdt", 8))
				continue;
			struct stapsdt_note *v = vec_grow(out->v, (size_t)out->n, &cap, sizeof(*v));
			if (!v) {
				r = -ENOMEM;
				break;
			}
			out->v = v;
			struct stapsdt_note *n = &out->v[out->n];
			uint64_t note_base;
			if (parse_note((char *)d->d_buf + desc_off, nh.n_descsz, is64, n, &note_base, out->strings, &used))
				continue;
			if (have_base && note_base)
				n->pc += base - note_base;
			out->n++;
		}
	}
	elf_close(&ef);
	if (r)
		stapsdt_free(out);
	return r;
}

void stapsdt_free(struct stapsdt_list *l)
{
	free(l->v);
	free(l->strings);
	memset(l, 0, sizeof(*l));
}

int64_t stapsdt_file_offset(const struct stapsdt_list *l, uint64_t vaddr)
{
	for (int i = 0; i < l->nseg; i++)
		if (vaddr >= l->seg[i].vaddr && vaddr < l->seg[i].vaddr + l->seg[i].filesz)
			return (int64_t)(vaddr - l->seg[i].vaddr + l->seg[i].offset);
	return -1;
}
