/* test_unwind.c: native unwinding: this process's own stack named to main, and corrupt stacks never a crash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>
#include <cmocka.h>

#include "proc/unwind.h"

/* This thread's registers now, in DWARF's x86-64 order. */
static void own_registers(uint64_t regs[17])
{
	ucontext_t uc;
	getcontext(&uc);
	const greg_t *g = uc.uc_mcontext.gregs;
	const int order[17] = { REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI, REG_RBP, REG_RSP, REG_R8,
				REG_R9,	 REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP };
	for (int i = 0; i < 17; i++)
		regs[i] = (uint64_t)g[order[i]];
}

static int has_frame(const struct strtab *s, const struct native_frame *f, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(strtab_get(s, f[i].name), name))
			return 1;
	return 0;
}

__attribute__((noinline)) static void unwind_here(int *found_main, int *found_self)
{
	struct unwinder u;
	struct mem m;
	struct strtab s;
	struct native_frame f[64];
	uint64_t regs[17];
	assert_int_equal(strtab_init(&s), 0);
	mem_open_pid(&m, getpid());
	assert_int_equal(unwind_open(&u, getpid(), &m, NULL, &s), 0);
	own_registers(regs);
	int n = unwind_regs(&u, (pid_t)syscall(SYS_gettid), regs, 17, f, 64);
	assert_true(n >= 3);
	*found_self = has_frame(&s, f, n, "unwind_here");
	*found_main = has_frame(&s, f, n, "main");
	unwind_close(&u);
	strtab_free(&s);
}

static void test_unwind_own_stack(void **state)
{
	(void)state;
	int found_main = 0, found_self = 0;
	unwind_here(&found_main, &found_self);
	assert_true(found_self);
	assert_true(found_main);
}

static uint64_t next_random(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Stacks of random words (some pointing into this program's code) from random registers: partial, never a crash. */
static void test_unwind_corrupt_stacks(void **state)
{
	(void)state;
	enum { WORDS = 4096 };
	static uint64_t stack[WORDS];
	const uint64_t base = 0x7f0000000000ULL, code = (uint64_t)(uintptr_t)&test_unwind_corrupt_stacks;
	struct unwinder u;
	struct mem m;
	struct strtab s;
	struct native_frame f[128];
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	int deeper = 0; /* rounds that got past the first frame: the CFI was followed through the garbage */
	assert_int_equal(strtab_init(&s), 0);
	mem_open_buffer(&m, base, stack, sizeof(stack));
	assert_int_equal(unwind_open(&u, getpid(), &m, NULL, &s), 0);
	for (int round = 0; round < 2000; round++) {
		for (int i = 0; i < WORDS; i++) {
			uint64_t r = next_random(&x);
			stack[i] = r % 3 == 0 ? code + r % 4096 : r % 3 == 1 ? base + r % sizeof(stack) : r;
		}
		uint64_t regs[17];
		for (int i = 0; i < 17; i++)
			regs[i] = next_random(&x) % 2 ? base + next_random(&x) % sizeof(stack) : next_random(&x);
		regs[16] = code + next_random(&x) % 4096; /* somewhere with CFI, or not */
		regs[7] = base + (next_random(&x) % (sizeof(stack) / 8)) * 8;
		int n = unwind_regs(&u, 1, regs, round % 2 ? 17 : 0, f, 128);
		assert_true(n >= 0 && n <= 128);
		deeper += n >= 2;
	}
	assert_true(deeper > 0);
	unwind_close(&u);
	strtab_free(&s);
}

/*
 * From registers and a copy of the stack taken with them (as the kernel's
 * perf sample gives them): the same functions as from the live stack; a copy
 * cut short gives fewer, never frames read past it.
 */
__attribute__((noinline)) static void unwind_copy_here(int *same, int *short_fewer)
{
	struct unwinder u;
	struct mem m;
	struct strtab s;
	struct native_frame live[64], copied[64], cut[64];
	uint64_t regs[17];
	static unsigned char copy[65536];
	assert_int_equal(strtab_init(&s), 0);
	mem_open_pid(&m, getpid());
	assert_int_equal(unwind_open(&u, getpid(), &m, NULL, &s), 0);
	own_registers(regs);
	size_t len = sizeof(copy);
	FILE *maps = fopen("/proc/self/maps", "r");
	unsigned long lo, hi;
	char line[512];
	while (maps && fgets(line, sizeof(line), maps))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && regs[7] >= lo && regs[7] < hi && hi - regs[7] < len)
			len = hi - regs[7]; /* (the stack's mapping ends before) */
	if (maps)
		fclose(maps);
	/* (through process_vm_readv, as from another process: a memcpy would cross ASan's redzones) */
	assert_int_equal(mem_read(&m, regs[7], copy, len), 0);
	pid_t tid = (pid_t)syscall(SYS_gettid);
	int n = unwind_regs(&u, tid, regs, 17, live, 64);
	int k = unwind_sampled(&u, tid, regs, copy, len, copied, 64);
	*same = n >= 3 && k == n && has_frame(&s, copied, k, "test_unwind_sampled_copy") && has_frame(&s, copied, k, "main");
	for (int i = 0; *same && i < n; i++) /* (the same functions: return addresses on the live stack have changed since) */
		*same = live[i].name == copied[i].name;
	int c = unwind_sampled(&u, tid, regs, copy, 16, cut, 64);
	*short_fewer = c >= 1 && c < n && !has_frame(&s, cut, c, "main");
	unwind_close(&u);
	strtab_free(&s);
}

static void test_unwind_sampled_copy(void **state)
{
	(void)state;
	int same = 0, short_fewer = 0;
	unwind_copy_here(&same, &short_fewer);
	assert_true(same);
	assert_true(short_fewer);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unwind_own_stack),
		cmocka_unit_test(test_unwind_corrupt_stacks),
		cmocka_unit_test(test_unwind_sampled_copy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
