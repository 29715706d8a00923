/* target.c: attaching to a Ruby process: libruby, version, layout, the VM and the symbol table. */
#include "target.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../elf/dwarf.h"
#include "../elf/elfsym.h"
#include "../lib/err.h"
#include "../proc/task.h"
#include "iseq.h"
#include "object.h"
#include "walk.h"

#define SCAN_MAX (64u << 20)

static int is_libruby(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return !strncmp(base, "libruby", 7) && strstr(base, ".so");
}

/*
 * The layout: from libruby's own DWARF when it has the VM's structs (a Ruby
 * built from source keeps -g), so a version with no generated table works;
 * otherwise the table generated for its X.Y series.
 */
static int choose_layout(struct ruby_target *t, const char *forced)
{
	if (forced) {
		t->L = ruby_layout_find(forced, &t->layout_match);
		t->layout_how = "forced table";
		return t->L ? 0 : ERR_UNSUPPORTED;
	}
	const struct ruby_layout *table = ruby_layout_find(t->version, &t->layout_match);
	char full[PATH_MAX + 64];
	snprintf(full, sizeof(full), "/proc/%d/root%s", (int)t->pid, t->lib_path);
	struct ruby_layout *d = &t->dwarf_layout;
	int n = 0, major = 0, minor = 0, teeny = 0;
	if (!dwarf_layout_read(full, table ? table : ruby_layout_nearest(t->version), d, &n) &&
	    d->th_ec >= 0 && d->ec_cfp >= 0 && d->ec_vm_stack >= 0 && d->cfp_pc >= 0 && d->cfp_iseq >= 0 &&
	    d->cfp_ep >= 0 && d->iseq_body >= 0 && d->body_label >= 0 && d->body_pathobj >= 0 && d->th_lt_node >= 0) {
		sscanf(t->version, "%d.%d.%d", &major, &minor, &teeny);
		d->version = t->version;
		d->api_major = major;
		d->api_minor = minor;
		d->api_teeny = teeny;
		t->L = d;
		t->layout_how = "DWARF";
		t->layout_match = LAYOUT_EXACT;
		return 0;
	}
	t->L = table;
	t->layout_how = "table";
	return table ? 0 : ERR_UNSUPPORTED;
}

/* Open the target's view of path through /proc/PID/root, so a containerised Ruby works. */
static int open_target_elf(pid_t pid, const char *path, struct elf_file *ef)
{
	char full[PATH_MAX + 64];
	snprintf(full, sizeof(full), "/proc/%d/root%s", (int)pid, path);
	int err = elf_open(full, ef);
	if (err == -ENOENT)
		err = elf_open(path, ef);
	return err;
}

static int find_ruby_image(struct ruby_target *t, struct elf_file *ef)
{
	for (int i = 0; i < t->maps.n; i++) {
		if (is_libruby(t->maps.v[i].path)) {
			snprintf(t->lib_path, sizeof(t->lib_path), "%s", t->maps.v[i].path);
			return open_target_elf(t->pid, t->lib_path, ef);
		}
	}
	/* A statically linked ruby: the executable itself must carry ruby_version. */
	char link[64];
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)t->pid);
	ssize_t n = readlink(link, t->lib_path, sizeof(t->lib_path) - 1);
	if (n < 0)
		return errno == EACCES || errno == EPERM ? -EPERM : ERR_NOT_RUBY;
	t->lib_path[n] = '\0';
	int err = open_target_elf(t->pid, t->lib_path, ef);
	if (err)
		return err == -EACCES ? -EPERM : ERR_NOT_RUBY;
	uint64_t v;
	if (elf_lookup(ef, "ruby_version", &v, NULL)) {
		elf_close(ef);
		return ERR_NOT_RUBY;
	}
	return 0;
}

static int find_bias(struct ruby_target *t, const struct elf_file *ef)
{
	for (int i = 0; i < t->maps.n; i++) {
		const struct map_entry *e = &t->maps.v[i];
		if (e->offset == 0 && !strcmp(e->path, t->lib_path)) {
			t->bias = e->start - ef->base_vaddr;
			return 0;
		}
	}
	return ERR_NOT_RUBY;
}

static int read_symbol_string(struct ruby_target *t, struct elf_file *ef, const char *name, char *out, size_t cap)
{
	uint64_t v;
	if (elf_lookup(ef, name, &v, NULL))
		return -ENOENT;
	return mem_read_cstr(&t->mem, t->bias + v, out, cap);
}

static int vm_valid(struct ruby_target *t, uint64_t vm)
{
	const struct ruby_layout *L = t->L;
	uint64_t th, back, ractor, th_ractor;
	if (!vm || (vm & 7) || !maps_readable(&t->maps, vm, 64))
		return 0;
	if (mem_read_u64(&t->mem, vm + (uint64_t)L->vm_main_thread, &th) || !th || (th & 7) ||
	    mem_read_u64(&t->mem, th + (uint64_t)L->th_vm, &back) || back != vm)
		return 0;
	if (L->vm_main_ractor >= 0 &&
	    (mem_read_u64(&t->mem, vm + (uint64_t)L->vm_main_ractor, &ractor) ||
	     mem_read_u64(&t->mem, th + (uint64_t)L->th_ractor, &th_ractor) || ractor != th_ractor || !ractor))
		return 0;
	return 1;
}

/*
 * Scan libruby's writable segments (.data, .bss) for a word that passes
 * check(). Used where the build exports neither the VM pointer nor the
 * global symbol table (Debian's 3.3 exports neither; no Ruby exports the latter).
 */
static uint64_t scan_data(struct ruby_target *t, const struct elf_file *ef, size_t stride,
			  int (*check)(struct ruby_target *, uint64_t addr, const uint64_t *words))
{
	for (int s = 0; s < ef->nseg; s++) {
		if (!ef->seg[s].writable || ef->seg[s].memsz > SCAN_MAX)
			continue;
		uint64_t start = (t->bias + ef->seg[s].vaddr + 7) & ~7ULL, len = ef->seg[s].memsz & ~7ULL;
		uint64_t *words = malloc(len);
		if (!words)
			return 0;
		/* .bss may continue into an anonymous mapping: read mapping by mapping. */
		uint64_t got = 0;
		while (got < len) {
			const struct map_entry *e = maps_find(&t->maps, start + got);
			if (!e)
				break;
			uint64_t n = e->end - (start + got) < len - got ? e->end - (start + got) : len - got;
			if (mem_read(&t->mem, start + got, (char *)words + got, n))
				break;
			got += n;
		}
		for (uint64_t i = 0; i + stride <= got / 8; i++) {
			if (check(t, start + i * 8, words + i)) {
				uint64_t found = start + i * 8;
				free(words);
				return found;
			}
		}
		free(words);
	}
	return 0;
}

static int check_vm_ptr(struct ruby_target *t, uint64_t addr, const uint64_t *w)
{
	(void)addr;
	return maps_readable(&t->maps, w[0], 8) && vm_valid(t, w[0]);
}

static int check_symbols(struct ruby_target *t, uint64_t addr, const uint64_t *w)
{
	const struct ruby_layout *L = t->L;
	uint32_t last_id = (uint32_t)w[L->symbols_last_id / 8];
	uint64_t str_sym = w[L->symbols_str_sym / 8], ids = w[L->symbols_ids / 8];
	if (last_id < 100 || last_id > 100000000 || !str_sym || (str_sym & 7) || !ids || (ids & 7))
		return 0;
	if (!maps_readable(&t->maps, str_sym, 8) || !maps_readable(&t->maps, ids, 8))
		return 0;
	return ruby_symbols_valid(t, addr);
}

static int find_vm(struct ruby_target *t, struct elf_file *ef)
{
	uint64_t sym, vm;
	if (!elf_lookup(ef, "ruby_current_vm_ptr", &sym, NULL) && !mem_read_u64(&t->mem, t->bias + sym, &vm) &&
	    vm_valid(t, vm)) {
		t->vm = vm;
		t->vm_how = "symbol";
		return 0;
	}
	uint64_t at = scan_data(t, ef, 1, check_vm_ptr);
	if (!at || mem_read_u64(&t->mem, at, &t->vm))
		return ERR_NO_VM;
	t->vm_how = "scan";
	return 0;
}

static void find_symbols(struct ruby_target *t, struct elf_file *ef)
{
	uint64_t sym;
	if (!elf_lookup(ef, "ruby_global_symbols", &sym, NULL) && ruby_symbols_valid(t, t->bias + sym)) {
		t->symbols = t->bias + sym;
		return;
	}
	t->symbols = scan_data(t, ef, (size_t)(t->L->symbols_size / 8), check_symbols);
}

static void set_read_lengths(struct ruby_target *t)
{
	const struct ruby_layout *L = t->L;
	int64_t offs[] = { L->th_lt_node + 8, L->th_ec, L->th_name, L->th_status_byte, L->th_tid, L->th_nt,
			   L->th_thread_id, L->th_unblock_func, L->th_self };
	int64_t max = 0;
	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++)
		if (offs[i] > max)
			max = offs[i];
	t->th_read_len = (size_t)max + 8;
}

int ruby_target_attach(struct ruby_target *t, pid_t pid, const struct ruby_attach_opts *o)
{
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	mem_open_pid(&t->mem, pid);
	map_init(&t->iseqs);
	map_init(&t->ids);
	map_init(&t->classes);
	map_init(&t->mes);
	int err = strtab_init(&t->strs);
	if (!err)
		err = task_exists(pid);
	if (!err)
		err = maps_read(pid, &t->maps);
	if (err)
		return err;
	struct elf_file ef;
	if ((err = find_ruby_image(t, &ef)))
		return err;
	err = find_bias(t, &ef);
	if (!err)
		err = read_symbol_string(t, &ef, "ruby_version", t->version, sizeof(t->version));
	if (err == -ENOENT)
		err = ERR_NOT_RUBY;
	if (!err) {
		read_symbol_string(t, &ef, "ruby_description", t->description, sizeof(t->description));
		err = choose_layout(t, o ? o->version : NULL);
	}
	if (!err) {
		set_read_lengths(t);
		err = find_vm(t, &ef);
	}
	if (!err)
		find_symbols(t, &ef);
	elf_close(&ef);
	return err;
}

void ruby_target_flush(struct ruby_target *t)
{
	ruby_walk_free(t);
	for (size_t i = 0; i < t->iseq_n; i++)
		iseq_info_free(&t->iseq_v[i]);
	t->iseq_n = 0;
	map_clear(&t->iseqs);
	map_clear(&t->ids);
	map_clear(&t->classes);
	map_clear(&t->mes);
	t->main_thread = t->main_ractor = 0;
}

void ruby_target_detach(struct ruby_target *t)
{
	ruby_target_flush(t);
	free(t->iseq_v);
	map_free(&t->iseqs);
	map_free(&t->ids);
	map_free(&t->classes);
	map_free(&t->mes);
	strtab_free(&t->strs);
	maps_free(&t->maps);
}
