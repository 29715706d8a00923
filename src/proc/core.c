/* core.c: reading an ELF core file: its segments, its notes, and process memory through it. */
#include "core.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../lib/err.h"
#include "../lib/vec.h"

#define PAGE 4096u
#define MAX_SEGS (1 << 20)
/* Offsets in the x86-64 kernel structures the notes carry. */
#define PRSTATUS_PID 32 /* struct elf_prstatus: elf_siginfo (12), cursig (2 + 2), sigpend, sighold (8 + 8) */
#define PRPSINFO_PID 24 /* struct elf_prpsinfo: state, sname, zomb, nice (4), pad (4), flag (8), uid, gid (8) */
#define PRPSINFO_FNAME 40

static int in_core(const struct core *c, uint64_t off, uint64_t len)
{
	return off <= c->size && len <= c->size - off;
}

/* NT_FILE: count, page size, count x {start, end, page offset}, then count NUL-terminated names. */
static int parse_files(struct core *c, const unsigned char *d, uint64_t len)
{
	uint64_t count, page;
	if (len < 16)
		return ERR_CORRUPT;
	memcpy(&count, d, 8);
	memcpy(&page, d + 8, 8);
	if (!count || count > len / 24 || !page || page > (1u << 30))
		return ERR_CORRUPT;
	c->files = calloc(count, sizeof(*c->files));
	if (!c->files)
		return -ENOMEM;
	const char *names = (const char *)d + 16 + count * 24, *end = (const char *)d + len;
	for (uint64_t i = 0; i < count; i++) {
		struct core_file_map *f = &c->files[c->nfiles];
		uint64_t w[3];
		memcpy(w, d + 16 + i * 24, sizeof(w));
		const char *nul = memchr(names, '\0', (size_t)(end - names));
		if (!nul)
			return ERR_CORRUPT;
		if (w[1] <= w[0] || w[2] > UINT64_MAX / page)
			return ERR_CORRUPT;
		f->start = w[0];
		f->end = w[1];
		f->offset = w[2] * page;
		f->fd = -1;
		if (!(f->path = strdup(names)))
			return -ENOMEM;
		c->nfiles++;
		names = nul + 1;
	}
	return 0;
}

static int add_tid(struct core *c, pid_t tid)
{
	pid_t *v = vec_grow(c->tids, (size_t)c->ntids, &c->tids_cap, sizeof(*v));
	if (!v)
		return -ENOMEM;
	c->tids = v;
	c->tids[c->ntids++] = tid;
	return 0;
}

static int parse_notes(struct core *c, const unsigned char *d, uint64_t len)
{
	uint64_t p = 0;
	while (p + 12 <= len) {
		uint32_t namesz, descsz, type;
		memcpy(&namesz, d + p, 4);
		memcpy(&descsz, d + p + 4, 4);
		memcpy(&type, d + p + 8, 4);
		uint64_t desc = p + 12 + (((uint64_t)namesz + 3) & ~3ULL), next = desc + (((uint64_t)descsz + 3) & ~3ULL);
		if (desc > len || descsz > len - desc)
			return ERR_CORRUPT;
		const unsigned char *dd = d + desc;
		int core_owner = namesz == 5 && !memcmp(d + p + 12, "CORE", 5);
		int err = 0;
		if (core_owner && type == NT_PRSTATUS && descsz >= PRSTATUS_PID + 4) {
			int32_t tid;
			memcpy(&tid, dd + PRSTATUS_PID, 4);
			err = add_tid(c, tid);
		} else if (core_owner && type == NT_PRPSINFO && descsz >= PRPSINFO_FNAME + 16) {
			int32_t pid;
			memcpy(&pid, dd + PRPSINFO_PID, 4);
			c->pid = pid;
			memcpy(c->comm, dd + PRPSINFO_FNAME, 16);
			c->comm[16] = '\0';
		} else if (core_owner && type == NT_FILE && !c->files) {
			err = parse_files(c, dd, descsz);
		}
		if (err)
			return err;
		p = next;
	}
	if (!c->pid && c->ntids)
		c->pid = c->tids[0];
	return 0;
}

int core_open(struct core *c, const char *path, const char *sysroot, const char **why)
{
	static char msg[160];
	memset(c, 0, sizeof(*c));
	*why = NULL;
	if (sysroot && strcmp(sysroot, "/"))
		snprintf(c->sysroot, sizeof(c->sysroot), "%s", sysroot);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		close(fd);
		return ERR_BAD_FILE;
	}
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return -errno;
	c->data = m;
	c->size = (size_t)st.st_size;
	Elf64_Ehdr eh;
	memcpy(&eh, c->data, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_type != ET_CORE || eh.e_machine != EM_X86_64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr))
		return ERR_BAD_FILE;
	/* More than 65534 program headers: the count is in the first section header's sh_info. */
	uint64_t phnum = eh.e_phnum;
	if (phnum == PN_XNUM) {
		Elf64_Shdr sh0;
		if (!eh.e_shoff || !in_core(c, eh.e_shoff, sizeof(sh0))) {
			*why = "its program header count is missing";
			return ERR_CORRUPT;
		}
		memcpy(&sh0, c->data + eh.e_shoff, sizeof(sh0));
		phnum = sh0.sh_info;
	}
	if (!in_core(c, eh.e_phoff, phnum * sizeof(Elf64_Phdr)) || phnum >= MAX_SEGS) {
		*why = "its program headers are missing";
		return ERR_CORRUPT;
	}
	c->segs = calloc(phnum ? phnum : 1, sizeof(*c->segs));
	if (!c->segs)
		return -ENOMEM;
	uint64_t need = 0;
	int notes = 0;
	for (uint64_t i = 0; i < phnum; i++) {
		Elf64_Phdr ph;
		memcpy(&ph, c->data + eh.e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_offset + ph.p_filesz > need)
			need = ph.p_offset + ph.p_filesz;
		if (ph.p_type == PT_NOTE) {
			if (!in_core(c, ph.p_offset, ph.p_filesz))
				continue;
			int err = parse_notes(c, c->data + ph.p_offset, ph.p_filesz);
			if (err) {
				*why = "a note does not parse";
				return err;
			}
			notes++;
		} else if (ph.p_type == PT_LOAD) {
			c->segs[c->nsegs++] = (struct core_segment){ ph.p_vaddr, ph.p_memsz, ph.p_offset, ph.p_filesz,
								     ph.p_flags };
		}
	}
	if (need > c->size) {
		snprintf(msg, sizeof(msg), "it is cut short: %zu of %llu bytes", c->size, (unsigned long long)need);
		*why = msg;
		return ERR_CORRUPT;
	}
	if (!notes || !c->ntids) {
		*why = "it has no thread notes (NT_PRSTATUS)";
		return ERR_CORRUPT;
	}
	return 0;
}

void core_close(struct core *c)
{
	for (int i = 0; i < c->nfiles; i++) {
		free(c->files[i].path);
		if (c->files[i].fd >= 0)
			close(c->files[i].fd);
	}
	free(c->files);
	free(c->segs);
	free(c->tids);
	if (c->data)
		munmap((void *)c->data, c->size);
	memset(c, 0, sizeof(*c));
}

void core_host_path(const struct core *c, const char *path, char *out, size_t cap)
{
	/* gdb writes the paths it reads in /proc/PID/maps: a chroot's files already under the sysroot. */
	size_t n = strlen(c->sysroot);
	if (n && !strncmp(path, c->sysroot, n) && path[n] == '/')
		snprintf(out, cap, "%s", path);
	else
		snprintf(out, cap, "%s%s", c->sysroot, path);
}

static const struct core_segment *seg_of(const struct core *c, uint64_t addr)
{
	for (int i = 0; i < c->nsegs; i++)
		if (addr >= c->segs[i].vaddr && addr - c->segs[i].vaddr < c->segs[i].memsz)
			return &c->segs[i];
	return NULL;
}

static struct core_file_map *file_of(struct core *c, uint64_t addr)
{
	for (int i = 0; i < c->nfiles; i++)
		if (addr >= c->files[i].start && addr < c->files[i].end)
			return &c->files[i];
	return NULL;
}

/* Open f under the sysroot and, once, compare its first page with the core's copy of that page. */
static int file_ready(struct core *c, struct core_file_map *f)
{
	if (f->fd >= 0)
		return 0;
	if (f->fd == -2)
		return -EFAULT;
	char host[PATH_MAX + 4096];
	core_host_path(c, f->path, host, sizeof(host));
	int err = 0;
	f->fd = open(host, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0)
		err = -errno;
	if (!err && !f->checked) {
		f->checked = 1;
		/* The kernel and gcore keep the first page of each mapped ELF file (the default dump filter). */
		for (int i = 0; i < c->nfiles && !err; i++) {
			const struct core_file_map *g = &c->files[i];
			const struct core_segment *s = seg_of(c, g->start);
			unsigned char page[PAGE];
			if (strcmp(g->path, f->path) || g->offset || !s || s->vaddr != g->start || s->filesz < PAGE ||
			    !in_core(c, s->offset, PAGE))
				continue;
			if (pread(f->fd, page, PAGE, 0) != (ssize_t)PAGE || memcmp(page, c->data + s->offset, PAGE))
				err = ERR_FILE_CHANGED;
		}
	}
	if (err) {
		if (f->fd >= 0)
			close(f->fd);
		f->fd = -2;
		if (!c->bad_file) {
			c->bad_file = f->path;
			c->bad_file_err = err;
		}
		return -EFAULT;
	}
	return 0;
}

/* Copy [addr, addr+len) that lies within one segment or one file mapping. */
static int read_piece(struct core *c, uint64_t addr, unsigned char *buf, size_t len, size_t *done)
{
	const struct core_segment *s = seg_of(c, addr);
	if (s && addr - s->vaddr < s->filesz) {
		uint64_t off = addr - s->vaddr, n = s->filesz - off < len ? s->filesz - off : len;
		if (!in_core(c, s->offset + off, n))
			return -EFAULT;
		memcpy(buf, c->data + s->offset + off, n);
		*done = (size_t)n;
		return 0;
	}
	/* Left out of the core: from the file mapped there, if any. */
	struct core_file_map *f = file_of(c, addr);
	if (!f)
		return -EFAULT;
	uint64_t n = f->end - addr < len ? f->end - addr : len;
	if (s && s->vaddr + s->memsz - addr < n)
		n = s->vaddr + s->memsz - addr;
	int err = file_ready(c, f);
	if (err)
		return err;
	ssize_t got = pread(f->fd, buf, (size_t)n, (off_t)(f->offset + (addr - f->start)));
	if (got != (ssize_t)n)
		return -EFAULT;
	*done = (size_t)n;
	return 0;
}

static int core_read(struct mem *m, uint64_t addr, void *buf, size_t len)
{
	struct core *c = (struct core *)m->data;
	m->calls++;
	if (len > MEM_MAX_READ || addr + len < addr)
		return -EFAULT;
	for (size_t at = 0; at < len;) {
		size_t done = 0;
		int err = read_piece(c, addr + at, (unsigned char *)buf + at, len - at, &done);
		if (err)
			return err;
		at += done;
	}
	m->bytes += len;
	return 0;
}

static int core_readv(struct mem *m, const struct mem_iov *iov, int n)
{
	for (int i = 0; i < n; i++) {
		int err = core_read(m, iov[i].addr, iov[i].buf, iov[i].len);
		if (err)
			return err;
	}
	return 0;
}

void mem_open_core(struct mem *m, struct core *c)
{
	memset(m, 0, sizeof(*m));
	m->read = core_read;
	m->readv = core_readv;
	m->pid = c->pid;
	m->data = c;
}

static int by_start(const void *a, const void *b)
{
	const struct map_entry *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

int core_maps(const struct core *c, struct maps *out)
{
	out->n = 0;
	out->v = calloc((size_t)(c->nsegs + c->nfiles) + 1, sizeof(*out->v));
	if (!out->v)
		return -ENOMEM;
	/* Every file mapping, with the permissions of the segment that covers it. */
	for (int i = 0; i < c->nfiles; i++) {
		const struct core_file_map *f = &c->files[i];
		const struct core_segment *s = seg_of(c, f->start);
		unsigned fl = s ? s->flags : PF_R;
		struct map_entry *e = &out->v[out->n];
		*e = (struct map_entry){ f->start, f->end, f->offset, "", strdup(f->path) };
		snprintf(e->perms, sizeof(e->perms), "%c%c%cp", fl & PF_R ? 'r' : '-', fl & PF_W ? 'w' : '-',
			 fl & PF_X ? 'x' : '-');
		if (!e->path)
			goto oom;
		out->n++;
	}
	/* Segments no file mapping covers: anonymous memory (heap, stacks, .bss beyond the file). */
	for (int i = 0; i < c->nsegs; i++) {
		const struct core_segment *s = &c->segs[i];
		int covered = 0;
		for (int j = 0; j < c->nfiles && !covered; j++)
			covered = s->vaddr >= c->files[j].start && s->vaddr < c->files[j].end;
		if (covered || !s->memsz)
			continue;
		struct map_entry *e = &out->v[out->n];
		*e = (struct map_entry){ s->vaddr, s->vaddr + s->memsz, 0, "", strdup("") };
		snprintf(e->perms, sizeof(e->perms), "%c%c%cp", s->flags & PF_R ? 'r' : '-', s->flags & PF_W ? 'w' : '-',
			 s->flags & PF_X ? 'x' : '-');
		if (!e->path)
			goto oom;
		out->n++;
	}
	qsort(out->v, (size_t)out->n, sizeof(*out->v), by_start);
	return 0;
oom:
	maps_free(out);
	return -ENOMEM;
}
