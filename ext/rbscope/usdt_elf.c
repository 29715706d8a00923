/* usdt_elf.c: write the USDT probe object (stubs, .note.stapsdt, .probes semaphores, .dynsym) into a memory buffer. */
#include "usdt_elf.h"

#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 4096u
#define STUB_SIZE 16u /* nop; ret; int3 padding: one cache-friendly slot per probe */
#define NPHDR 4
#define NSHDR 10

static const char *const arg_reg[USDT_MAX_ARGS] = { "rdi", "rsi", "rdx", "rcx", "r8", "r9" };

/*
 * Section order matters to readers: bcc (bpftrace's USDT reader) looks for the first executable section,
 * then .probes, then .note.stapsdt, each search going on from where the last stopped, as in gcc's output.
 */
enum { SH_HASH = 1, SH_DYNSYM, SH_DYNSTR, SH_TEXT, SH_BASE, SH_PROBES, SH_DYNAMIC, SH_NOTE, SH_SHSTRTAB };
static const char shstrtab[] = "\0.hash\0.dynsym\0.dynstr\0.text\0.stapsdt.base\0.note.stapsdt\0.probes\0.dynamic\0.shstrtab";

int usdt_valid_name(const char *s)
{
	size_t n = strlen(s);
	if (!n || n >= USDT_NAME_MAX || (s[0] >= '0' && s[0] <= '9'))
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
			return 0;
	}
	return 1;
}

static size_t align(size_t v, size_t a)
{
	return (v + a - 1) & ~(a - 1);
}

static uint32_t elf_hash(const char *name)
{
	uint32_t h = 0;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		h = (h << 4) + *p;
		uint32_t g = h & 0xf0000000u;
		if (g)
			h ^= g >> 24;
		h &= ~g;
	}
	return h;
}

/* The argument string of a note, e.g. "-8@%rdi 8@%rsi". */
static void arg_spec(const struct usdt_elf_probe *p, char *buf, size_t cap)
{
	size_t len = 0;
	buf[0] = '\0';
	for (int i = 0; i < p->nargs; i++)
		len += (size_t)snprintf(buf + len, cap - len, "%s%s@%%%s", i ? " " : "",
					p->args[i] == USDT_ARG_INT64 ? "-8" : "8", arg_reg[i]);
}

/* One note: header, "stapsdt", then pc, base, semaphore, provider, name, arguments; 4-byte aligned. */
static size_t note_size(const char *provider, const struct usdt_elf_probe *p)
{
	char spec[96];
	arg_spec(p, spec, sizeof(spec));
	size_t desc = 24 + strlen(provider) + 1 + strlen(p->name) + 1 + strlen(spec) + 1;
	return sizeof(Elf64_Nhdr) + 8 + align(desc, 4);
}

static size_t put_note(unsigned char *at, const char *provider, const struct usdt_elf_probe *p, uint64_t base)
{
	char spec[96];
	arg_spec(p, spec, sizeof(spec));
	size_t lp = strlen(provider) + 1, ln = strlen(p->name) + 1, ls = strlen(spec) + 1;
	Elf64_Nhdr nh = { .n_namesz = 8, .n_descsz = (Elf64_Word)(24 + lp + ln + ls), .n_type = 3 };
	memcpy(at, &nh, sizeof(nh));
	unsigned char *d = at + sizeof(nh);
	memcpy(d, "stapsdt", 8);
	d += 8;
	uint64_t addr[3] = { p->stub_off, base, p->sem_off };
	memcpy(d, addr, sizeof(addr));
	d += sizeof(addr);
	memcpy(d, provider, lp);
	memcpy(d + lp, p->name, ln);
	memcpy(d + lp + ln, spec, ls);
	return sizeof(nh) + 8 + align(nh.n_descsz, 4);
}

static void put_shdr(unsigned char *img, size_t sh_off, int i, const char *name, Elf64_Word type, Elf64_Xword flags,
		     size_t off, size_t size, Elf64_Word link, Elf64_Word info, size_t algn, size_t entsize)
{
	Elf64_Shdr sh = {
		.sh_name = (Elf64_Word)((const char *)memmem(shstrtab, sizeof(shstrtab), name, strlen(name) + 1) - shstrtab),
		.sh_type = type,
		.sh_flags = flags,
		.sh_addr = (flags & SHF_ALLOC) ? off : 0,
		.sh_offset = off,
		.sh_size = size,
		.sh_link = link,
		.sh_info = info,
		.sh_addralign = algn,
		.sh_entsize = entsize,
	};
	memcpy(img + sh_off + (size_t)i * sizeof(sh), &sh, sizeof(sh));
}

int usdt_elf_build(const char *provider, struct usdt_elf_probe *probes, int n, struct usdt_elf_image *out)
{
	if (n < 0 || !usdt_valid_name(provider))
		return -EINVAL;
	for (int i = 0; i < n; i++)
		if (!usdt_valid_name(probes[i].name) || probes[i].nargs < 0 || probes[i].nargs > USDT_MAX_ARGS)
			return -EINVAL;

	/* The string table: "", the soname, then each probe's stub and semaphore names. */
	size_t lprov = strlen(provider);
	char soname[USDT_NAME_MAX + 32];
	snprintf(soname, sizeof(soname), "librbscope-usdt-%s.so", provider);
	size_t strsz = 1 + strlen(soname) + 1;
	for (int i = 0; i < n; i++)
		strsz += 2 * (lprov + 1 + strlen(probes[i].name)) + sizeof("_semaphore") + 1;
	size_t nsym = 1 + 2 * (size_t)n, nbucket = nsym | 1;
	size_t notesz = 0;
	for (int i = 0; i < n; i++)
		notesz += note_size(provider, &probes[i]);

	size_t hash_off = align(sizeof(Elf64_Ehdr) + NPHDR * sizeof(Elf64_Phdr), 8);
	size_t hash_sz = 4 * (2 + nbucket + nsym);
	size_t sym_off = align(hash_off + hash_sz, 8), sym_sz = nsym * sizeof(Elf64_Sym);
	size_t str_off = sym_off + sym_sz;
	size_t text_off = align(str_off + strsz, 16), text_sz = (size_t)n * STUB_SIZE;
	size_t base_off = text_off + text_sz;
	size_t end1 = base_off + 1;
	size_t rw_off = align(end1, PAGE);
	size_t probes_off = rw_off, probes_sz = align(2 * (size_t)n, 8);
	size_t dyn_off = probes_off + probes_sz, dyn_sz = 7 * sizeof(Elf64_Dyn);
	size_t end2 = dyn_off + dyn_sz;
	size_t note_off = end2; /* not loaded: only tools read it */
	size_t shstr_off = note_off + notesz;
	size_t sh_off = align(shstr_off + sizeof(shstrtab), 8);
	size_t total = sh_off + NSHDR * sizeof(Elf64_Shdr);

	unsigned char *img = calloc(1, total);
	if (!img)
		return -ENOMEM;

	Elf64_Ehdr eh = {
		.e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, ELFDATA2LSB, EV_CURRENT, ELFOSABI_SYSV },
		.e_type = ET_DYN,
		.e_machine = EM_X86_64,
		.e_version = EV_CURRENT,
		.e_phoff = sizeof(Elf64_Ehdr),
		.e_shoff = sh_off,
		.e_ehsize = sizeof(Elf64_Ehdr),
		.e_phentsize = sizeof(Elf64_Phdr),
		.e_phnum = NPHDR,
		.e_shentsize = sizeof(Elf64_Shdr),
		.e_shnum = NSHDR,
		.e_shstrndx = SH_SHSTRTAB,
	};
	memcpy(img, &eh, sizeof(eh));
	Elf64_Phdr ph[NPHDR] = {
		{ .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = 0, .p_vaddr = 0, .p_paddr = 0,
		  .p_filesz = end1, .p_memsz = end1, .p_align = PAGE },
		{ .p_type = PT_LOAD, .p_flags = PF_R | PF_W, .p_offset = rw_off, .p_vaddr = rw_off, .p_paddr = rw_off,
		  .p_filesz = end2 - rw_off, .p_memsz = end2 - rw_off, .p_align = PAGE },
		{ .p_type = PT_DYNAMIC, .p_flags = PF_R | PF_W, .p_offset = dyn_off, .p_vaddr = dyn_off, .p_paddr = dyn_off,
		  .p_filesz = dyn_sz, .p_memsz = dyn_sz, .p_align = 8 },
		/* Without it the loader would make every thread's stack executable. */
		{ .p_type = PT_GNU_STACK, .p_flags = PF_R | PF_W, .p_align = 16 },
	};
	memcpy(img + sizeof(eh), ph, sizeof(ph));

	/* Strings and symbols. */
	char *str = (char *)img + str_off;
	size_t spos = 1;
	size_t soname_at = spos;
	spos += (size_t)sprintf(str + spos, "%s", soname) + 1;
	Elf64_Sym *sym = (Elf64_Sym *)(img + sym_off);
	uint32_t *hash = (uint32_t *)(img + hash_off);
	uint32_t *bucket = hash + 2, *chain = bucket + nbucket;
	hash[0] = (uint32_t)nbucket;
	hash[1] = (uint32_t)nsym;
	for (int i = 0; i < n; i++) {
		struct usdt_elf_probe *p = &probes[i];
		p->stub_off = text_off + (size_t)i * STUB_SIZE;
		p->sem_off = probes_off + 2 * (size_t)i;
		unsigned char *stub = img + p->stub_off;
		memset(stub, 0xcc, STUB_SIZE);
		stub[0] = 0x90; /* nop: the probe point */
		stub[1] = 0xc3; /* ret */
		for (int k = 0; k < 2; k++) {
			size_t si = 1 + 2 * (size_t)i + (size_t)k;
			const char *name = str + spos;
			sym[si] = (Elf64_Sym){
				.st_name = (Elf64_Word)spos,
				.st_info = ELF64_ST_INFO(STB_GLOBAL, k ? STT_OBJECT : STT_FUNC),
				.st_other = STV_DEFAULT,
				.st_shndx = k ? SH_PROBES : SH_TEXT,
				.st_value = k ? p->sem_off : p->stub_off,
				.st_size = 2,
			};
			spos += (size_t)sprintf(str + spos, "%s_%s%s", provider, p->name, k ? "_semaphore" : "") + 1;
			uint32_t b = elf_hash(name) % (uint32_t)nbucket;
			chain[si] = bucket[b];
			bucket[b] = (uint32_t)si;
		}
	}
	img[base_off] = 0x90;
	size_t at = note_off;
	for (int i = 0; i < n; i++)
		at += put_note(img + at, provider, &probes[i], base_off);

	Elf64_Dyn dyn[7] = {
		{ .d_tag = DT_HASH, .d_un.d_ptr = hash_off },	{ .d_tag = DT_STRTAB, .d_un.d_ptr = str_off },
		{ .d_tag = DT_SYMTAB, .d_un.d_ptr = sym_off },	{ .d_tag = DT_STRSZ, .d_un.d_val = strsz },
		{ .d_tag = DT_SYMENT, .d_un.d_val = sizeof(Elf64_Sym) }, { .d_tag = DT_SONAME, .d_un.d_val = soname_at },
		{ .d_tag = DT_NULL },
	};
	memcpy(img + dyn_off, dyn, sizeof(dyn));
	memcpy(img + shstr_off, shstrtab, sizeof(shstrtab));

	put_shdr(img, sh_off, SH_HASH, ".hash", SHT_HASH, SHF_ALLOC, hash_off, hash_sz, SH_DYNSYM, 0, 8, 4);
	put_shdr(img, sh_off, SH_DYNSYM, ".dynsym", SHT_DYNSYM, SHF_ALLOC, sym_off, sym_sz, SH_DYNSTR, 1, 8, sizeof(Elf64_Sym));
	put_shdr(img, sh_off, SH_DYNSTR, ".dynstr", SHT_STRTAB, SHF_ALLOC, str_off, strsz, 0, 0, 1, 0);
	put_shdr(img, sh_off, SH_TEXT, ".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, text_off, text_sz, 0, 0, 16, 0);
	put_shdr(img, sh_off, SH_BASE, ".stapsdt.base", SHT_PROGBITS, SHF_ALLOC, base_off, 1, 0, 0, 1, 0);
	put_shdr(img, sh_off, SH_NOTE, ".note.stapsdt", SHT_NOTE, 0, note_off, notesz, 0, 0, 4, 0);
	put_shdr(img, sh_off, SH_PROBES, ".probes", SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, probes_off, probes_sz, 0, 0, 8, 0);
	put_shdr(img, sh_off, SH_DYNAMIC, ".dynamic", SHT_DYNAMIC, SHF_ALLOC | SHF_WRITE, dyn_off, dyn_sz, SH_DYNSTR, 0, 8,
		 sizeof(Elf64_Dyn));
	put_shdr(img, sh_off, SH_SHSTRTAB, ".shstrtab", SHT_STRTAB, 0, shstr_off, sizeof(shstrtab), 0, 0, 1, 0);

	out->data = img;
	out->size = total;
	return 0;
}

void usdt_elf_free(struct usdt_elf_image *img)
{
	free(img->data);
	img->data = NULL;
	img->size = 0;
}
