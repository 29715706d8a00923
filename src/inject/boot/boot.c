/*
 * boot.c: the code `--inject` places in a Ruby process that never loaded the agent (built as a flat, position-
 * independent blob: build/boot_blob.h). A borrowed thread calls boot_entry(); it only registers a postponed job
 * (async-signal-safe, like a signal handler) and, where asked, starts a helper thread that registers it too.
 * Ruby runs the job at its next interrupt check, holding the GVL; the job only starts a Ruby thread, and that
 * thread loads the Ruby file that requires the agent (lib/rbscope/inject.rb). No libc, no relocations: every outside function is
 * an address in struct boot.
 */
#include "../boot.h"

typedef unsigned long VALUE;

static long sys4(long nr, long a, long b, long c, long d)
{
	long ret;
	register long r10 __asm__("r10") = d;
	__asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
	return ret;
}

static long sys5(long nr, long a, long b, long c, long d, long e)
{
	long ret;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	__asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8) : "rcx", "r11", "memory");
	return ret;
}

static VALUE agent_main(void *data)
{
	struct boot *b = data;
	const char *params = (const char *)(b + 1), *path = params + b->path_off;
	int state = 0;
	b->stage = BOOT_THREAD;
	/* A thread started from C has no Ruby frame to eval from: the code is a file, loaded. */
	((VALUE(*)(const char *, VALUE))b->gv_set)(b->gvar, ((VALUE(*)(const char *))b->str_new_cstr)(params));
	((void (*)(VALUE, int, int *))b->load_protect)(((VALUE(*)(const char *))b->str_new_cstr)(path), 0, &state);
	b->state = state;
	b->stage = BOOT_FINISHED;
	return 0; /* Qfalse */
}

static void job(void *data)
{
	struct boot *b = data;
	if (__atomic_exchange_n(&b->done, 1, __ATOMIC_ACQ_REL))
		return;
	b->stage = BOOT_JOB;
	((VALUE(*)(VALUE(*)(void *), void *))b->thread_create)(agent_main, b);
}

static void register_job(struct boot *b)
{
	if (b->trigger) {
		((void (*)(uint32_t))b->trigger)(b->handle);
		b->reg = 0;
	} else {
		b->reg = ((int (*)(unsigned, void (*)(void *), void *))b->register_one)(0, job, b);
	}
	if (b->stage < BOOT_REGISTERED)
		b->stage = BOOT_REGISTERED;
}

/* A thread of no Ruby thread's: registering from it flags the thread that runs Ruby now. */
static void *helper(void *data)
{
	register_job(data);
	return 0;
}

long boot_entry(struct boot *b)
{
	b->stage = BOOT_CALLED;
	b->helper = -1;
	/* 0x53564d41 PR_SET_VMA, 0 PR_SET_VMA_ANON_NAME: name our mapping (kernels without it say EINVAL) */
	sys5(157, 0x53564d41, 0, (long)b->map_start, (long)b->map_len, (long)b->name);
	if (b->preregister) {
		b->handle = ((uint32_t (*)(unsigned, void (*)(void *), void *))b->preregister)(0, job, b);
		if (b->handle == 0xffffffffu)
			return -1; /* the table is full */
	}
	if (b->pthread_create) {
		/* The helper is born with every signal blocked: the app's handlers never run on it. */
		uint64_t all = ~0ull, old = 0;
		unsigned long th = 0;
		sys4(14, 2 /* SIG_SETMASK */, (long)&all, (long)&old, 8);
		b->helper = ((int (*)(unsigned long *, void *, void *(*)(void *), void *))b->pthread_create)(&th, 0, helper, b);
		if (!b->helper)
			((int (*)(unsigned long))b->pthread_detach)(th);
		sys4(14, 2, (long)&old, 0, 8);
	}
	if (b->own)
		register_job(b);
	return b->helper > 0 && !b->own ? -2 : 0;
}
