/* mem.h: reading another process's memory, through a source that tests can fake. */
#ifndef RBSCOPE_MEM_H
#define RBSCOPE_MEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct mem_iov {
	uint64_t addr;
	void *buf;
	size_t len;
};

struct mem;
/* Called before each read of a scripted fake source (mem_open_script). */
typedef int (*mem_hook_fn)(struct mem *m, uint64_t i, uint64_t addr, size_t len, void *arg);

/*
 * A memory source. read() fills buf with len bytes at addr or fails whole:
 * 0, -EFAULT (unmapped), ERR_GONE (the process exited) or -EPERM.
 * readv() does n reads in one go (one syscall for a live process) with the
 * same all-or-nothing rule. calls counts the system calls made.
 */
struct mem {
	int (*read)(struct mem *m, uint64_t addr, void *buf, size_t len);
	int (*readv)(struct mem *m, const struct mem_iov *iov, int n);
	pid_t pid;
	uint64_t calls;
	uint64_t bytes;
	/* the buffer of a fake source, and a scripted one's hook (mem_open_script) */
	uint64_t base;
	const void *data;
	size_t len;
	mem_hook_fn hook;
	void *hook_arg;
};

/* Largest single read the walker asks for; bigger lengths are treated as corrupt. */
#define MEM_MAX_READ (16u << 20)

void mem_open_pid(struct mem *m, pid_t pid);
/* A fake source over len bytes at buf, seen at address base (for tests). */
void mem_open_buffer(struct mem *m, uint64_t base, const void *buf, size_t len);
/*
 * The same, scripted (for tests of what the walker makes of memory that
 * changes while it reads): hook(m, i, addr, len, arg) is called before the
 * i-th read (from 0; each part of a readv is one) of len bytes at addr, and
 * may change the buffer, as the target would between two reads or two parts
 * of one process_vm_readv. It returns 0 for the read to go on, or the error
 * the read fails with (-EFAULT: memory freed and unmapped meanwhile).
 */
void mem_open_script(struct mem *m, uint64_t base, const void *buf, size_t len, mem_hook_fn hook, void *arg);

static inline int mem_read(struct mem *m, uint64_t addr, void *buf, size_t len)
{
	return m->read(m, addr, buf, len);
}
int mem_read_u64(struct mem *m, uint64_t addr, uint64_t *out);
int mem_read_u32(struct mem *m, uint64_t addr, uint32_t *out);
/* Read a NUL-terminated string of at most cap-1 bytes; 0 if one was found. */
int mem_read_cstr(struct mem *m, uint64_t addr, char *out, size_t cap);

#endif
