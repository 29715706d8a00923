/* target.c: attaching to a Ruby process: libruby, version, layout, the VM and the symbol table. */
#include "target.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dwarf_layout.h"
#include "../elf/elfsym.h"
#include "../lib/err.h"
#include "../proc/core.h"
#include "../proc/task.h"

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
	char full[PATH_MAX * 2];
	if (t->core)
		core_host_path(t->core, t->lib_path, full, sizeof(full));
	else
		snprintf(full, sizeof(full), "%s%s", t->root, t->lib_path);
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

int ruby_target_open_elf(const struct ruby_target *t, const char *path, struct elf_file *ef)
{
	char full[PATH_MAX * 2];
	if (t->core)
		core_host_path(t->core, path, full, sizeof(full));
	else
		snprintf(full, sizeof(full), "%s%s", t->root, path);
	int err = elf_open(full, ef);
	if (err == -ENOENT && !t->core)
		err = elf_open(path, ef);
	return err;
}

/* The executable: /proc/PID/exe, or a core's lowest file mapping (where an executable is loaded). */
static int exe_path(struct ruby_target *t)
{
	if (t->core) {
		const struct map_entry *lowest = NULL;
		for (int i = 0; i < t->maps.n; i++)
			if (t->maps.v[i].path[0] == '/' && (!lowest || t->maps.v[i].start < lowest->start))
				lowest = &t->maps.v[i];
		if (!lowest)
			return ERR_NOT_RUBY;
		snprintf(t->lib_path, sizeof(t->lib_path), "%s", lowest->path);
		return 0;
	}
	char link[64];
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)t->pid);
	ssize_t n = readlink(link, t->lib_path, sizeof(t->lib_path) - 1);
	if (n < 0)
		return errno == EACCES || errno == EPERM ? -EPERM : ERR_NOT_RUBY;
	t->lib_path[n] = '\0';
	return 0;
}

/*
 * libruby, else the executable if it carries ruby_version (a static ruby).
 * *have_elf is 0 when the file cannot be opened but a core maps libruby
 * (the caller may go on with --ruby-version).
 */
static int find_ruby_image(struct ruby_target *t, struct elf_file *ef, int *have_elf)
{
	*have_elf = 0;
	for (int i = 0; i < t->maps.n; i++) {
		if (is_libruby(t->maps.v[i].path)) {
			snprintf(t->lib_path, sizeof(t->lib_path), "%s", t->maps.v[i].path);
			int err = ruby_target_open_elf(t, t->lib_path, ef);
			*have_elf = !err;
			return err;
		}
	}
	int err = exe_path(t);
	if (err)
		return err;
	if ((err = ruby_target_open_elf(t, t->lib_path, ef)))
		return err == -EACCES ? -EPERM : t->core ? err : ERR_NOT_RUBY;
	uint64_t v;
	if (elf_lookup(ef, "ruby_version", &v, NULL)) {
		elf_close(ef);
		return ERR_NOT_RUBY;
	}
	*have_elf = 1;
	return 0;
}

static int find_bias(struct ruby_target *t, const struct elf_file *ef)
{
	for (int i = 0; i < t->maps.n; i++) {
		const struct map_entry *e = &t->maps.v[i];
		if (e->offset == 0 && !strcmp(e->path, t->lib_path)) {
			t->bias = e->start - (ef ? ef->base_vaddr : 0);
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
 * Scan libruby's writable mappings (.data, .bss and the anonymous mapping
 * .bss may continue into) for a word that passes check(). Used where the
 * build exports neither the VM pointer nor the global symbol table (Debian's
 * 3.3 exports neither; no Ruby exports the latter), and for a core whose
 * libruby file is not at hand. Works from the mappings alone: no ELF needed.
 */
uint64_t ruby_target_scan(struct ruby_target *t, size_t stride,
			  int (*check)(struct ruby_target *t, uint64_t addr, const uint64_t *words))
{
	for (int i = 0; i < t->maps.n; i++) {
		const struct map_entry *e = &t->maps.v[i];
		if (strcmp(e->path, t->lib_path) || e->perms[1] != 'w')
			continue;
		uint64_t start = e->start, end = e->end;
		if (i + 1 < t->maps.n && !t->maps.v[i + 1].path[0] && t->maps.v[i + 1].start == end &&
		    t->maps.v[i + 1].perms[1] == 'w')
			end = t->maps.v[i + 1].end; /* .bss beyond the file */
		if (end - start > SCAN_MAX)
			end = start + SCAN_MAX;
		uint64_t *words = malloc(end - start);
		if (!words)
			return 0;
		uint64_t got = 0, len = end - start;
		while (got < len) {
			const struct map_entry *m = maps_find(&t->maps, start + got);
			if (!m)
				break;
			uint64_t n = m->end - (start + got) < len - got ? m->end - (start + got) : len - got;
			if (mem_read(&t->mem, start + got, (char *)words + got, n))
				break;
			got += n;
		}
		for (uint64_t k = 0; k + stride <= got / 8; k++) {
			if (check(t, start + k * 8, words + k)) {
				free(words);
				return start + k * 8;
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

static int find_vm(struct ruby_target *t, struct elf_file *ef)
{
	uint64_t sym, vm;
	if (ef && !elf_lookup(ef, "ruby_current_vm_ptr", &sym, NULL) && !mem_read_u64(&t->mem, t->bias + sym, &vm) &&
	    vm_valid(t, vm)) {
		t->vm = vm;
		t->vm_how = "symbol";
		return 0;
	}
	uint64_t at = ruby_target_scan(t, 1, check_vm_ptr);
	if (!at || mem_read_u64(&t->mem, at, &t->vm))
		return ERR_NO_VM;
	t->vm_how = "scan";
	return 0;
}

/*
 * The address a RIP-relative load into %rdi (48 8b 3d disp32) in the
 * len bytes of code at vaddr reads, the first one into a writable segment
 * (a static variable); else 0.
 */
static uint64_t code_loads_rdi(struct elf_file *ef, uint64_t vaddr, const unsigned char *code, size_t len)
{
	for (size_t i = 0; i + 7 <= len; i++) {
		if (code[i] != 0x48 || code[i + 1] != 0x8b || code[i + 2] != 0x3d)
			continue;
		int32_t disp;
		memcpy(&disp, code + i + 3, 4);
		uint64_t at = vaddr + i + 7 + (uint64_t)(int64_t)disp;
		const struct elf_segment *s = elf_segment_of(ef, at);
		if (s && s->writable)
			return at;
	}
	return 0;
}

#define GENERIC_CODE 192 /* bytes of a function looked through */

/*
 * variable.c's table of the objects that have instance variables outside
 * their slot (generic_iv_tbl_, static: no symbol in a stripped libruby):
 * rb_mark_generic_ivar hands it to st_lookup, itself (3.4) or in the first
 * function it calls (2.7-3.3), loading it into the first argument's
 * register. object.c checks the table it points to when it reads it.
 */
static void find_generic_ivtbl(struct ruby_target *t, struct elf_file *ef)
{
	uint64_t sym, size, at = 0;
	unsigned char code[GENERIC_CODE], callee[GENERIC_CODE];
	if (!elf_lookup(ef, "generic_iv_tbl_", &sym, &size) || !elf_lookup(ef, "generic_iv_tbl", &sym, &size)) {
		t->generic_ivtbl = t->bias + sym; /* (a build with its symbol table) */
		return;
	}
	if (elf_lookup(ef, "rb_mark_generic_ivar", &sym, &size) || elf_read(ef, sym, code, sizeof(code)))
		return;
	if (!(at = code_loads_rdi(ef, sym, code, sizeof(code)))) {
		/* the calls it makes (e8 rel32), in order: the first into code of its own file that loads it */
		for (size_t i = 0; i + 5 <= sizeof(code) && !at; i++) {
			if (code[i] != 0xe8)
				continue;
			int32_t rel;
			memcpy(&rel, code + i + 1, 4);
			uint64_t to = sym + i + 5 + (uint64_t)(int64_t)rel;
			const struct elf_segment *s = elf_segment_of(ef, to);
			if (s && s->executable && !elf_read(ef, to, callee, sizeof(callee)))
				at = code_loads_rdi(ef, to, callee, sizeof(callee));
		}
	}
	if (at)
		t->generic_ivtbl = t->bias + at;
}

/* Where the ELF says the symbol table is (object.c checks it, or scans, when it first names an ID). */
static void find_symbols(struct ruby_target *t, struct elf_file *ef)
{
	uint64_t sym;
	if (ef && !elf_lookup(ef, "ruby_global_symbols", &sym, NULL))
		t->symbols_sym = t->bias + sym;
	if (ef && t->L->gen_ivtbl_ivptr >= 0)
		find_generic_ivtbl(t, ef);
	/* (and the JITs' enabled flags, bools since 3.2: 3.1's YJIT has a function, jit.c looks at its code) */
	const char *jits[] = { "rb_yjit_enabled_p", "rb_zjit_enabled_p" };
	uint64_t size;
	for (int i = 0; i < 2 && ef && t->L->api_major * 100 + t->L->api_minor >= 302; i++)
		if (!elf_lookup(ef, jits[i], &sym, &size) && size == 1)
			t->jit_flags[i] = t->bias + sym;
}

static void set_read_lengths(struct ruby_target *t)
{
	const struct ruby_layout *L = t->L;
	int64_t offs[] = { L->th_lt_node + 8, L->th_ec, L->th_name, L->th_status_byte, L->th_tid, L->th_nt,
			   L->th_thread_id, L->th_unblock_func, L->th_self, L->th_dedicated_byte };
	t->th_read_len = layout_span(offs, sizeof(offs) / sizeof(offs[0]));
}

static void init_target(struct ruby_target *t, pid_t pid)
{
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	map_init(&t->iseqs);
	map_init(&t->ids);
	map_init(&t->classes);
	map_init(&t->mes);
	map_init(&t->me_defs);
	map_init(&t->ns_tids);
	map_init(&t->waits);
	map_init(&t->labels);
}

/* Everything after the memory source and the mappings are set: image, version, layout, VM, symbols. */
static int attach_image(struct ruby_target *t, const struct ruby_attach_opts *o)
{
	const char *forced = o ? o->version : NULL;
	if (forced && !ruby_layout_find(forced, NULL))
		return ERR_USAGE; /* no table for the version asked for: nothing to try */
	struct elf_file ef;
	int have_elf = 0, err = find_ruby_image(t, &ef, &have_elf);
	if (err && !(t->core && forced && t->lib_path[0] && err != ERR_NOT_RUBY)) {
		if (t->core && err != ERR_NOT_RUBY)
			t->missing = t->lib_path;
		return err;
	}
	err = find_bias(t, have_elf ? &ef : NULL);
	if (!err && have_elf)
		err = read_symbol_string(t, &ef, "ruby_version", t->version, sizeof(t->version));
	if (err == -EFAULT && t->core && forced)
		err = 0; /* the core left the version string out and its file is not here: --ruby-version says */
	else if (err == -ENOENT)
		err = ERR_NOT_RUBY;
	if (!err && !t->version[0] && forced)
		snprintf(t->version, sizeof(t->version), "%s", forced);
	if (!err) {
		if (have_elf)
			read_symbol_string(t, &ef, "ruby_description", t->description, sizeof(t->description));
		err = choose_layout(t, forced);
	}
	if (!err) {
		set_read_lengths(t);
		err = find_vm(t, have_elf ? &ef : NULL);
	}
	if (!err)
		find_symbols(t, have_elf ? &ef : NULL);
	if (have_elf)
		elf_close(&ef);
	return err;
}

int ruby_target_attach(struct ruby_target *t, pid_t pid, const struct ruby_attach_opts *o)
{
	init_target(t, pid);
	mem_open_pid(&t->mem, pid);
	snprintf(t->root, sizeof(t->root), "/proc/%d/root", (int)pid);
	int err = strtab_init(&t->strs);
	if (!err)
		err = task_exists(pid);
	if (!err)
		err = maps_read(pid, &t->maps);
	if (!err)
		t->other_pidns = task_other_pidns(pid) == 1;
	return err ? err : attach_image(t, o);
}

int ruby_target_open_core(struct ruby_target *t, struct core *c, const struct ruby_attach_opts *o)
{
	init_target(t, c->pid);
	t->core = c;
	mem_open_core(&t->mem, c);
	snprintf(t->root, sizeof(t->root), "%s", c->sysroot);
	int err = strtab_init(&t->strs);
	if (!err)
		err = core_maps(c, &t->maps);
	if (!err)
		err = attach_image(t, o);
	if (err && c->bad_file && !t->missing)
		t->missing = c->bad_file;
	return err;
}

int ruby_process_likely(pid_t pid)
{
	char path[64], exe[PATH_MAX];
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	ssize_t n = readlink(path, exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		const char *base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
		if (!strncmp(base, "ruby", 4))
			return 1;
	}
	struct maps m;
	if (maps_read(pid, &m))
		return 0;
	int found = 0;
	for (int i = 0; i < m.n && !found; i++)
		found = is_libruby(m.v[i].path);
	maps_free(&m);
	return found;
}

int ruby_target_add_cache(struct ruby_target *t, ruby_target_flush_fn flush)
{
	for (int i = 0; i < t->ncaches; i++)
		if (t->caches[i] == flush)
			return 0;
	if (t->ncaches == RUBY_TARGET_CACHES)
		return -ENOSPC;
	t->caches[t->ncaches++] = flush;
	return 0;
}

void ruby_target_flush(struct ruby_target *t)
{
	for (int i = 0; i < t->ncaches; i++)
		t->caches[i](t);
	map_clear(&t->iseqs);
	map_clear(&t->ids);
	map_clear(&t->classes);
	map_clear(&t->mes);
	map_clear(&t->me_defs);
	map_clear(&t->ns_tids);
	map_clear(&t->waits);
	map_clear(&t->labels);
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
	map_free(&t->me_defs);
	map_free(&t->ns_tids);
	map_free(&t->waits);
	map_free(&t->labels);
	strtab_free(&t->strs);
	maps_free(&t->maps);
}
