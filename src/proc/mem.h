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
	/* the buffer of a fake source */
	uint64_t base;
	const void *data;
	size_t len;
};

/* Largest single read the walker asks for; bigger lengths are treated as corrupt. */
#define MEM_MAX_READ (16u << 20)

void mem_open_pid(struct mem *m, pid_t pid);
/* A fake source over len bytes at buf, seen at address base (for tests). */
void mem_open_buffer(struct mem *m, uint64_t base, const void *buf, size_t len);

static inline int mem_read(struct mem *m, uint64_t addr, void *buf, size_t len)
{
	return m->read(m, addr, buf, len);
}
int mem_read_u64(struct mem *m, uint64_t addr, uint64_t *out);
int mem_read_u32(struct mem *m, uint64_t addr, uint32_t *out);
/* Read a NUL-terminated string of at most cap-1 bytes; 0 if one was found. */
int mem_read_cstr(struct mem *m, uint64_t addr, char *out, size_t cap);

#endif
