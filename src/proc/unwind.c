/* unwind.c: a thread's native stack, unwound from its registers with the target's own call-frame information. */
#include "unwind.h"

#include <elfutils/libdw.h>
#include <gelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/clock.h"
#include "../lib/err.h"
#include "pause.h"
#include "task.h"

#define STACK_FIRST (4u << 10)  /* bytes of stack read from sp at first: most unwinds need no other read */
#define STACK_COPY (64u << 10)  /* at most this much, read on as the unwind goes deeper */
#define DWARF_SP 7
#define DWARF_PC 16

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/*
 * libdwfl's callbacks, with where separate debug files are looked for: by
 * build id under the process's own /usr/lib/debug (a container's, through
 * /proc/PID/root), then the usual places (next to the file, .debug).
 */
struct callbacks {
	Dwfl_Callbacks cb;
	char *debuginfo_path;
};

static struct callbacks *callbacks_new(pid_t pid)
{
	struct callbacks *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	char path[96];
	snprintf(path, sizeof(path), ":.debug:/proc/%d/root/usr/lib/debug", (int)pid);
	if (!(c->debuginfo_path = strdup(path))) {
		free(c);
		return NULL;
	}
	c->cb.find_elf = dwfl_build_id_find_elf;
	c->cb.find_debuginfo = dwfl_standard_find_debuginfo;
	c->cb.debuginfo_path = &c->debuginfo_path;
	return c;
}

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	(void)dwfl, (void)arg, (void)thread_argp;
	return 0; /* threads are named one at a time (dwfl_getthread_frames) */
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	(void)dwfl, (void)tid;
	*thread_argp = arg;
	return true;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	(void)dwfl;
	struct unwinder *u = arg;
	if (addr >= u->stack_lo && addr - u->stack_lo + 8 > u->stack_len && u->stack_len &&
	    addr - u->stack_lo + 8 <= u->stack_max) {
		/* deeper than the copy so far: copy on to there, in one read (the mapping was checked) */
		uint64_t want = (addr - u->stack_lo + 8 + STACK_FIRST - 1) / STACK_FIRST * STACK_FIRST;
		if (want > u->stack_max)
			want = u->stack_max;
		if (!mem_read(u->mem, u->stack_lo + u->stack_len, u->stack + u->stack_len, want - u->stack_len))
			u->stack_len = want;
	}
	if (addr >= u->stack_lo && addr - u->stack_lo + 8 <= u->stack_len) {
		memcpy(result, u->stack + (addr - u->stack_lo), 8);
		return true;
	}
	if (u->sampled && addr >= u->stack_lo) { /* deeper than the copy taken with the registers: not to be had */
		const struct map_entry *e = maps_find(&u->maps, u->stack_lo);
		if (!e || addr < e->end)
			return false;
	}
	uint64_t v;
	if (mem_read_u64(u->mem, addr, &v))
		return false;
	*result = v;
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct unwinder *u = arg;
	if (u->nregs)
		return dwfl_thread_state_registers(thread, 0, 17, u->regs);
	/* Only the stack and instruction pointers: frames whose CFA needs another register end the walk. */
	dwfl_thread_state_register_pc(thread, u->regs[DWARF_PC]);
	return dwfl_thread_state_registers(thread, DWARF_SP, 1, &u->regs[DWARF_SP]);
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

/* Report every mapped ELF file to dwfl at the address of its first mapping. */
static int report_modules(struct unwinder *u, const char *libruby)
{
	struct maps_object *objs;
	int n, err = maps_objects(&u->maps, &objs, &n);
	if (err)
		return err;
	Dwfl *dwfl = u->dwfl;
	dwfl_report_begin(dwfl);
	for (int i = 0; i < n; i++) {
		char path[PATH_MAX];
		const struct map_entry *first = &u->maps.v[objs[i].first];
		if (first->offset || maps_object_path(u->pid, &u->maps, &objs[i], path, sizeof(path)))
			continue;
		/* named as the file was: a library deleted since it was loaded is still read, through map_files */
		char name[256];
		snprintf(name, sizeof(name), "%s", base_name(objs[i].path));
		char *deleted = strstr(name, " (deleted)");
		if (deleted && !deleted[10])
			*deleted = '\0';
		if (!dwfl_report_elf(dwfl, name, path, -1, first->start, false))
			continue; /* not an ELF file (a font, a locale archive) */
		if (libruby && !strcmp(base_name(objs[i].path), base_name(libruby))) {
			u->libruby_lo = first->start;
			u->libruby_hi = u->maps.v[objs[i].last].end;
		}
	}
	free(objs);
	dwfl_report_end(dwfl, NULL, NULL);
	return 0;
}

/*
 * A libdwfl session over the process's mappings as they are now, into
 * u->dwfl and u->maps (whatever they held is the caller's). On an error, what
 * was made is left there for unwind_close() or the caller to free.
 */
static int new_session(struct unwinder *u, const char *libruby)
{
	u->dwfl = NULL;
	u->maps = (struct maps){ 0 }; /* maps_read() leaves it as it was when the process is gone */
	int err = maps_read(u->pid, &u->maps);
	if (err)
		return err;
	if (!(u->dwfl = dwfl_begin(&((struct callbacks *)u->callbacks)->cb)))
		return -ENOMEM;
	if ((err = report_modules(u, libruby)))
		return err;
	return dwfl_attach_state(u->dwfl, NULL, u->pid, &thread_callbacks, u) ? 0 : ERR_UNSUPPORTED;
}

int unwind_open(struct unwinder *u, pid_t pid, struct mem *mem, const char *libruby_path, struct strtab *strs)
{
	memset(u, 0, sizeof(*u));
	u->pid = pid;
	u->mem = mem;
	u->strs = strs;
	map_init(&u->names);
	if (!(u->callbacks = callbacks_new(pid)))
		return -ENOMEM;
	return new_session(u, libruby_path);
}

void unwind_close(struct unwinder *u)
{
	if (u->dwfl)
		dwfl_end(u->dwfl);
	maps_free(&u->maps);
	map_free(&u->names);
	free(u->stack);
	if (u->callbacks)
		free(((struct callbacks *)u->callbacks)->debuginfo_path);
	free(u->callbacks);
	memset(u, 0, sizeof(*u));
}

/*
 * Copy the stack from sp on for memory_read to serve: STACK_FIRST now, more
 * as the unwind reads deeper, up to STACK_COPY or the end of its mapping.
 */
static void copy_stack(struct unwinder *u)
{
	uint64_t sp = u->regs[DWARF_SP];
	u->stack_len = u->stack_max = 0;
	if (!u->stack && !(u->stack = malloc(STACK_COPY)))
		return;
	const struct map_entry *e = maps_find(&u->maps, sp);
	uint64_t max = STACK_COPY;
	if (e && e->end - sp < max)
		max = e->end - sp;
	uint64_t len = max < STACK_FIRST ? max : STACK_FIRST;
	if (!mem_read(u->mem, sp, u->stack, len)) {
		u->stack_lo = sp;
		u->stack_len = len;
		u->stack_max = max;
	}
}

struct walk {
	struct unwinder *u;
	struct native_frame *out;
	int n, max;
	int in_libruby; /* frames in libruby in a row, innermost last */
};

/*
 * Where the function holding vaddr starts, from .eh_frame_hdr's sorted table
 * of FDEs (the form every GNU and LLVM linker writes: a table of pairs of
 * 4-byte offsets from the section, datarel | sdata4). 0, or -1 if unknown.
 */
static int fde_start(Elf *elf, uint64_t vaddr, uint64_t *start)
{
	size_t shstrndx;
	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return -1;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		const char *name;
		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)) || strcmp(name, ".eh_frame_hdr"))
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		const unsigned char *b = d ? d->d_buf : NULL;
		/* version 1; eh_frame_ptr pcrel|sdata4; fde_count udata4; table datarel|sdata4 */
		if (!b || d->d_size < 12 || b[0] != 1 || b[1] != 0x1b || b[2] != 0x03 || b[3] != 0x3b)
			return -1;
		uint32_t count;
		memcpy(&count, b + 8, 4);
		if (count == 0 || (uint64_t)count * 8 > d->d_size - 12)
			return -1;
		const unsigned char *table = b + 12;
		int32_t loc;
		size_t lo = 0, hi = count; /* the last entry whose start is <= vaddr */
		while (hi - lo > 1) {
			size_t mid = lo + (hi - lo) / 2;
			memcpy(&loc, table + mid * 8, 4);
			if (sh.sh_addr + (uint64_t)(int64_t)loc <= vaddr)
				lo = mid;
			else
				hi = mid;
		}
		memcpy(&loc, table + lo * 8, 4);
		*start = sh.sh_addr + (uint64_t)(int64_t)loc;
		return *start <= vaddr ? 0 : -1;
	}
	return -1;
}

/* The name of the function at pc (a return address when !activation), cached. */
static void name_frame(struct unwinder *u, struct native_frame *f, int activation)
{
	uint64_t at = activation ? f->pc : f->pc - 1;
	uint64_t *hit = map_get(&u->names, at);
	f->in_libruby = at >= u->libruby_lo && at < u->libruby_hi;
	f->jit = 0;
	if (hit) {
		f->name = (uint32_t)(*hit >> 32);
		f->module = (uint32_t)*hit;
		f->jit = u->jit_module && f->module == u->jit_module;
		return;
	}
	Dwfl_Module *mod = dwfl_addrmodule(u->dwfl, at);
	const struct map_entry *e = mod ? NULL : maps_find(&u->maps, at);
	if (e && !e->path[0] && e->perms[2] == 'x') {
		/* Code in no file, executable: a JIT's (YJIT's). One frame; it has no CFI to unwind past. */
		int64_t name = strtab_intern(u->strs, "(JIT code)", 10), m = strtab_intern(u->strs, "[jit]", 5);
		f->name = name < 0 ? 0 : (uint32_t)name;
		f->module = u->jit_module = m < 0 ? 0 : (uint32_t)m;
		f->jit = 1;
		map_put(&u->names, at, (uint64_t)f->name << 32 | f->module);
		return;
	}
	if (!mod)
		u->stale = 1; /* a library loaded since? the mappings are read again before the next unwind */
	const char *mname = mod ? dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL) : NULL;
	const char *sym = mod ? dwfl_module_addrname(mod, at) : NULL;
	char buf[512];
	if (!sym) {
		/* No symbol (a stripped static function): named by where its code starts, as its FDE says,
		   so that every sample in it is one frame. */
		Dwarf_Addr bias = 0;
		Elf *elf = mod ? dwfl_module_getelf(mod, &bias) : NULL;
		uint64_t start;
		if (fde_start(elf, at - bias, &start))
			start = at - bias;
		snprintf(buf, sizeof(buf), "%s+0x%llx", mname ? mname : "?", (unsigned long long)start);
		sym = buf;
	}
	int64_t name = strtab_intern(u->strs, sym, strlen(sym));
	int64_t m = strtab_intern(u->strs, mname ? mname : "?", strlen(mname ? mname : "?"));
	f->name = name < 0 ? 0 : (uint32_t)name;
	f->module = m < 0 ? 0 : (uint32_t)m;
	map_put(&u->names, at, (uint64_t)f->name << 32 | f->module);
}

static int on_frame(Dwfl_Frame *state, void *arg)
{
	struct walk *w = arg;
	Dwarf_Addr pc;
	bool activation;
	if (!dwfl_frame_pc(state, &pc, &activation) || !pc)
		return DWARF_CB_ABORT;
	struct native_frame *f = &w->out[w->n++];
	f->pc = pc;
	name_frame(w->u, f, activation);
	/* Deep enough into libruby: what lies beyond is the VM's (see stop_in_libruby). */
	w->in_libruby = f->in_libruby ? w->in_libruby + 1 : 0;
	if (w->u->stop_in_libruby && (w->in_libruby >= w->u->stop_in_libruby || (w->n == 1 && f->in_libruby)))
		return DWARF_CB_ABORT;
	if (f->jit)
		return DWARF_CB_ABORT;
	return w->n < w->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

/* Unwind from the registers in u (and the stack in u->stack when copied, else read now). */
static int walk_frames(struct unwinder *u, pid_t tid, struct native_frame *out, int max, int copied)
{
	u->sampled = copied;
	if (!copied)
		copy_stack(u);
	struct walk w = { u, out, 0, max, 0 };
	/* Ends at the outermost frame, or where the CFI or the registers known run out: what was found stands. */
	dwfl_getthread_frames(u->dwfl, tid, on_frame, &w);
	return w.n;
}

/* Report the process's files again (a library it loaded since), at most once a second. */
static void refresh(struct unwinder *u)
{
	uint64_t now = clock_now_ns();
	if (now - u->refreshed < 1000000000ULL)
		return;
	u->refreshed = now;
	u->stale = 0;
	/* A new libdwfl session: one whose modules are reported again loses its process state. */
	Dwfl *old = u->dwfl;
	struct maps old_maps = u->maps;
	int err = new_session(u, NULL);
	Dwfl *gone = err ? u->dwfl : old; /* the session that is not kept */
	struct maps gone_maps = err ? u->maps : old_maps;
	if (err)
		u->dwfl = old, u->maps = old_maps;
	if (gone)
		dwfl_end(gone);
	maps_free(&gone_maps);
}

int unwind_thread(struct unwinder *u, pid_t tid, int allow_stop, struct native_frame *out, int max, int *syscall,
		  int (*still)(void *arg), void *arg)
{
	*syscall = TASK_SYSCALL_UNREAD;
	if (max <= 0)
		return 0;
	if (u->stale)
		refresh(u);
	int nr, again;
	unsigned long long sp, pc, sp2, pc2;
	int err = task_syscall(u->pid, tid, &nr, &sp, &pc);
	if (err)
		return err == -ENOENT || err == -ESRCH ? 0 : err; /* gone */
	*syscall = nr;
	if (nr != TASK_ON_CPU && sp && pc) {
		/* Off a CPU: the kernel's copy of its sp and pc, no stop. It must still be there, as it was,
		   once unwound (its stack as read is then the one those registers point into). */
		u->nregs = 0;
		u->regs[DWARF_SP] = sp;
		u->regs[DWARF_PC] = pc;
		int n = walk_frames(u, tid, out, max, 0);
		if (task_syscall(u->pid, tid, &again, &sp2, &pc2) || again != nr || sp2 != sp || pc2 != pc) {
			u->left++;
			return 0;
		}
		return still && !still(arg) ? 0 : n;
	}
	if (!allow_stop)
		return 0;
	/* On a CPU: stopped for its registers and the unwind (its stack cannot move meanwhile). */
	uint64_t t0 = clock_now_ns();
	if ((err = pause_thread_stop(tid, u->regs)))
		return err == ERR_GONE ? 0 : err;
	u->nregs = 17;
	int n = walk_frames(u, tid, out, max, 0);
	if (still && !still(arg))
		n = 0;
	pause_thread_go(tid);
	u->stops++;
	u->stop_ns += clock_now_ns() - t0;
	return n;
}

int unwind_regs(struct unwinder *u, pid_t tid, const uint64_t *regs, int nregs, struct native_frame *out, int max)
{
	if (max <= 0 || (nregs != 17 && nregs != 0))
		return max <= 0 ? 0 : -EINVAL;
	memcpy(u->regs, regs, sizeof(u->regs));
	u->nregs = nregs;
	return walk_frames(u, tid, out, max, 0);
}

int unwind_sampled(struct unwinder *u, pid_t tid, const uint64_t *regs, const void *stack, size_t len,
		   struct native_frame *out, int max)
{
	if (max <= 0)
		return 0;
	if (u->stale)
		refresh(u);
	if (!u->stack && !(u->stack = malloc(STACK_COPY)))
		return -ENOMEM;
	memcpy(u->regs, regs, sizeof(u->regs));
	u->nregs = 17;
	/* The stack as it was with those registers: the live one has moved on, so no more of it is read. */
	u->stack_lo = regs[DWARF_SP];
	u->stack_len = u->stack_max = len < STACK_COPY ? len : STACK_COPY;
	memcpy(u->stack, stack, u->stack_len);
	return walk_frames(u, tid, out, max, 1);
}
