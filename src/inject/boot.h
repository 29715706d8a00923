/* boot.h: what `--inject` hands the code it places in a Ruby process (src/inject/boot/boot.c): addresses there, and where it reports. */
#ifndef RBSCOPE_BOOT_H
#define RBSCOPE_BOOT_H

#include <stdint.h>

#define BOOT_MAGIC 0x746f6f6270637362ull /* "bscpboot" */

/*
 * One block in the target, written by the CLI before the call and read by it
 * afterwards (process_vm_readv). Addresses are the target's; a function the
 * Ruby in it does not have is 0.
 */
struct boot {
	uint64_t magic;
	/* Ruby's C API, resolved by the CLI from libruby's (or the ruby executable's) dynamic symbols */
	uint64_t register_one;        /* int rb_postponed_job_register_one(unsigned, void (*)(void *), void *), up to 3.2 */
	uint64_t preregister;         /* rb_postponed_job_handle_t rb_postponed_job_preregister(unsigned, func, void *), 3.3 on */
	uint64_t trigger;             /* void rb_postponed_job_trigger(rb_postponed_job_handle_t) */
	uint64_t thread_create;       /* VALUE rb_thread_create(VALUE (*)(void *), void *) */
	uint64_t str_new_cstr;        /* VALUE rb_str_new_cstr(const char *) */
	uint64_t gv_set;              /* VALUE rb_gv_set(const char *, VALUE) */
	uint64_t load_protect;        /* void rb_load_protect(VALUE path, int wrap, int *state) */
	/* libc: a helper thread, when the borrowed thread is not where the job should be flagged */
	uint64_t pthread_create, pthread_detach;
	uint64_t name;                /* "rbscope-inject": the mapping's name in /proc/PID/maps (PR_SET_VMA_ANON_NAME) */
	uint64_t map_start, map_len;  /* the mapping, for that name */
	uint32_t own;                 /* register the job from the borrowed thread itself (its own interrupt flag) */
	uint32_t handle;              /* preregister's handle */
	/* progress, for the CLI */
	int32_t stage;                /* BOOT_* reached */
	int32_t reg;                  /* the last registration's result */
	int32_t helper;               /* pthread_create's result, -1 if none was made */
	int32_t state;                /* rb_load_protect's: 0 when the file ran without raising */
	uint32_t done;                /* the job ran (once, however many times it was registered) */
	uint32_t path_off;            /* the file's path: after the parameters, this many bytes after the struct */
	char gvar[24];                /* "$rbscope_inject": the blob has no data of its own */
	/*
	 * then, NUL-terminated: the parameters (the new thread sets the global gvar to them) and the path of
	 * the Ruby file it loads (lib/rbscope/inject.rb, as the process sees it)
	 */
};

enum {
	BOOT_CALLED = 1,    /* the borrowed thread ran boot_entry */
	BOOT_REGISTERED = 2,/* the job is registered */
	BOOT_JOB = 3,       /* the job ran: Ruby had the GVL at a safe point */
	BOOT_THREAD = 4,    /* the Ruby thread it started is running the code */
	BOOT_FINISHED = 5,  /* the file was loaded (state says how) */
};

#endif
