/* target.h: a Ruby process under observation: its libruby, version, layout, VM and symbol table. */
#ifndef RBSCOPE_TARGET_H
#define RBSCOPE_TARGET_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "../lib/map.h"
#include "../lib/strtab.h"
#include "../proc/maps.h"
#include "../proc/mem.h"
#include "layout.h"

struct ruby_native_source;
struct ruby_target;
struct user_label;
#define RUBY_TARGET_CACHES 4
typedef void (*ruby_target_flush_fn)(struct ruby_target *t);

struct iseq_info;
struct walk_cache;
struct core;

/*
 * Everything found once at attach time, plus the caches that make a
 * steady-state sample cheap. A target is used by one thread at a time.
 */
struct label_envs;

struct ruby_target {
	pid_t pid;
	struct mem mem;
	struct maps maps;
	const struct ruby_layout *L;
	char version[32];
	char description[160];
	char lib_path[PATH_MAX]; /* libruby, or the ruby executable when static */
	char root[PATH_MAX];     /* where its files are seen from here: /proc/PID/root, or a core's sysroot */
	struct core *core;       /* read from this core file, not a live process */
	const char *missing;     /* a core's file that is needed and missing or changed (the core's path for it) */
	uint64_t bias;           /* load bias of lib_path */
	uint64_t vm;             /* rb_vm_t * */
	uint64_t symbols;        /* &ruby_global_symbols, 0 until found (object.c finds it the first time it names an ID) */
	uint64_t symbols_sym;    /* where libruby's ruby_global_symbols symbol says it is, 0 if it has none */
	uint64_t generic_ivtbl;  /* where variable.c's st_table * of generic instance variables is, 0 unknown (target.c) */
	int symbols_searched;    /* object.c looked for it */
	uint64_t shape_list;     /* 3.3+: the object shapes (rb_shape_tree_ptr's list), 0 until object.c has found it */
	int shape_list_searched;
	const char *vm_how;      /* "symbol" or "scan", for -v output */
	const char *layout_how;  /* "table", "DWARF" or "forced table" */
	enum layout_match layout_match; /* how the table matched the version (LAYOUT_NEWER: a newer patch release) */
	struct ruby_layout dwarf_layout; /* read from libruby's debug information, when it has some */
	size_t th_read_len;      /* bytes of rb_thread_t read per thread */

	/* caches: interned names (frames.c), instruction sequences (iseq.c), IDs (object.c) */
	struct strtab strs;
	struct map iseqs;   /* iseq address -> index in iseq_v + 1 */
	struct iseq_info *iseq_v;
	size_t iseq_n, iseq_cap;
	struct map ids;     /* ID -> string id + 1 */
	struct map classes; /* class VALUE -> string id + 1 (0 name: anonymous) */
	struct map mes;     /* method entry (and fallback label) -> name string id */
	struct map me_defs; /* method entry -> its def word when named (frames.c checks it once the GC has run) */
	uint64_t gc_count_seen; /* the latest GC count a sample read (0: unknown): a freed entry's address is reused
				   only after a GC, so a name is checked again once it changes */
	struct map waits;   /* name string id -> 1 + whether that method waits (ruby_wait_method) */
	struct map labels;  /* frame name string id -> what it says of the request served (label.c) */
	int other_pidns;    /* in a pid namespace other than ours: Ruby's tids are not the ones we see */
	struct map ns_tids; /* then: its tid -> ours (task_ns_tids), refreshed when a thread is not in it */
	uint64_t main_thread, main_ractor; /* read once, on the first sample */
	uint64_t objspace;                 /* the GC's state (rb_objspace), read once; 0 where the layout has none */
	uint64_t jit_flags[2];             /* &rb_yjit_enabled_p, &rb_zjit_enabled_p (bools) where symbols name them (jit.c) */
	int stopped;                       /* --blocking: its threads are stopped (ptrace) while it is read */
	struct {                           /* frames.c: innermost frames running JIT code named with where it ran: */
		uint64_t asked, found, spanning; /* all, their line from the JIT's tables, in a block over several lines */
	} jit_table;
	struct walk_cache *walk;           /* where each thread's stack was last time, see walk.c */
	uint64_t samples;                  /* samples ruby_sample_take has begun (a walker slot's age, a label's) */
	struct label_envs *label_envs;     /* the Rack envs label.c has read, by where they were */
	const struct user_label *user_labels; /* --label's (label.h), set by who samples: read with WALK_LABELS */
	int nuser_labels;
	uint64_t ivar_misses[256][2]; /* label.c: objects found without an --label's instance variable, and when */
	ruby_target_flush_fn caches[RUBY_TARGET_CACHES]; /* ruby_target_add_cache */
	int ncaches;
	const struct ruby_native_source *native_source; /* WALK_NATIVE: the kernel's samples of running threads (walk.h) */
	/* Told of each method label.c finds a request's env in (its iseq, and the env parameter's bytes below its
	   frame's ep; local 0), or --label's local (local 1), when set: the BPF capture takes that word as it
	   samples (ruby_capture_open) */
	void (*env_iseq_seen)(void *ctx, uint64_t iseq, uint64_t below, int local);
	void *env_iseq_ctx;
	uint64_t id_classpath, id_tmp_classpath, id_attached; /* learnt IDs, 0 until seen */
	int verbose;
};

/* How to read a target, beyond its pid (all optional). */
struct ruby_attach_opts {
	const char *version; /* read it with this release's table, whatever it says it runs (--ruby-version) */
};

/*
 * Attach to pid: find libruby (through /proc/PID/root, so containers work),
 * read the version from the target's memory, choose the layout, find the
 * VM (exported pointer or validated scan) and the global symbol table.
 * o may be NULL. Returns 0 or ERR_NO_PROCESS, -EPERM, ERR_NOT_RUBY,
 * ERR_UNSUPPORTED (t->version says which), ERR_NO_VM, or ERR_USAGE when
 * o->version names a release with no table. The target is not stopped.
 */
int ruby_target_attach(struct ruby_target *t, pid_t pid, const struct ruby_attach_opts *o);
/*
 * The same from a core file already opened (proc/core.h), whose files are
 * read under its sysroot; c must outlive t. Where libruby's file is missing
 * and o->version is given, reads on from the core alone (the VM and symbol
 * table found by scanning). Errors as above, with t->missing naming a file
 * the core needs that is missing (-ENOENT...) or changed (ERR_FILE_CHANGED).
 */
int ruby_target_open_core(struct ruby_target *t, struct core *c, const struct ruby_attach_opts *o);
void ruby_target_detach(struct ruby_target *t);
struct elf_file;
/*
 * Open a file of the target by its path in maps: through /proc/PID/root
 * (containers), else as it is (maps shows a chrooted process's files by
 * their path from our root), or under a core's sysroot. 0 or elf_open's error.
 */
int ruby_target_open_elf(const struct ruby_target *t, const char *path, struct elf_file *ef);
/* Does pid look like a Ruby (libruby mapped, or an executable named ruby*), without attaching? */
int ruby_process_likely(pid_t pid);
/* Drop every cache (after the target forks or execs, or to bound memory): each registered below. */
void ruby_target_flush(struct ruby_target *t);
/*
 * A part that keeps a cache in the target (the walker's per-thread memory,
 * the instruction sequences) registers what empties it, once: flush and
 * detach call each. 0, or -ENOSPC past RUBY_TARGET_CACHES.
 */
int ruby_target_add_cache(struct ruby_target *t, ruby_target_flush_fn flush);
/*
 * Scan libruby's writable data (its .data and .bss, as mapped) for a word
 * where check(t, addr, words) holds, stride words readable from there: for
 * what a build exports no symbol of. Its address, or 0.
 */
uint64_t ruby_target_scan(struct ruby_target *t, size_t stride,
			  int (*check)(struct ruby_target *t, uint64_t addr, const uint64_t *words));

#endif
