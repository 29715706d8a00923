/* mem.c: process_vm_readv-backed and buffer-backed (plain or scripted) memory sources. */
#include "mem.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/uio.h>

#include "../lib/err.h"

#define IOV_BATCH 64

static int pid_errno(struct mem *m, int e)
{
	if (e == ESRCH)
		return ERR_GONE;
	if (e == EPERM || e == EACCES)
		return -EPERM;
	if (e == EFAULT && kill(m->pid, 0) < 0 && errno == ESRCH)
		return ERR_GONE;
	return -e;
}

static int pid_readv(struct mem *m, const struct mem_iov *iov, int n)
{
	struct iovec local[IOV_BATCH], remote[IOV_BATCH];
	for (int done = 0; done < n;) {
		int k = n - done < IOV_BATCH ? n - done : IOV_BATCH;
		size_t want = 0;
		for (int i = 0; i < k; i++) {
			const struct mem_iov *v = &iov[done + i];
			if (v->len > MEM_MAX_READ)
				return -EFAULT;
			local[i].iov_base = v->buf;
			local[i].iov_len = v->len;
			remote[i].iov_base = (void *)(uintptr_t)v->addr;
			remote[i].iov_len = v->len;
			want += v->len;
		}
		m->calls++;
		ssize_t got = process_vm_readv(m->pid, local, (unsigned long)k, remote, (unsigned long)k, 0);
		if (got < 0)
			return pid_errno(m, errno);
		m->bytes += (uint64_t)got;
		if ((size_t)got != want)
			return -EFAULT;
		done += k;
	}
	return 0;
}

static int pid_read(struct mem *m, uint64_t addr, void *buf, size_t len)
{
	struct mem_iov v = { addr, buf, len };
	return pid_readv(m, &v, 1);
}

void mem_open_pid(struct mem *m, pid_t pid)
{
	memset(m, 0, sizeof(*m));
	m->read = pid_read;
	m->readv = pid_readv;
	m->pid = pid;
}

static int buffer_read(struct mem *m, uint64_t addr, void *buf, size_t len)
{
	int err = m->hook ? m->hook(m, m->calls, addr, len, m->hook_arg) : 0;
	m->calls++;
	if (err)
		return err;
	if (len > MEM_MAX_READ || addr < m->base || addr - m->base > m->len || len > m->len - (addr - m->base))
		return -EFAULT;
	memcpy(buf, (const unsigned char *)m->data + (addr - m->base), len);
	return 0;
}

static int buffer_readv(struct mem *m, const struct mem_iov *iov, int n)
{
	for (int i = 0; i < n; i++) {
		int err = buffer_read(m, iov[i].addr, iov[i].buf, iov[i].len);
		if (err)
			return err;
	}
	return 0;
}

void mem_open_buffer(struct mem *m, uint64_t base, const void *buf, size_t len)
{
	memset(m, 0, sizeof(*m));
	m->base = base;
	m->data = buf;
	m->len = len;
	m->read = buffer_read;
	m->readv = buffer_readv;
}

void mem_open_script(struct mem *m, uint64_t base, const void *buf, size_t len, mem_hook_fn hook, void *arg)
{
	mem_open_buffer(m, base, buf, len);
	m->hook = hook;
	m->hook_arg = arg;
}

int mem_read_u64(struct mem *m, uint64_t addr, uint64_t *out)
{
	return m->read(m, addr, out, sizeof(*out));
}

int mem_read_u32(struct mem *m, uint64_t addr, uint32_t *out)
{
	return m->read(m, addr, out, sizeof(*out));
}

int mem_read_cstr(struct mem *m, uint64_t addr, char *out, size_t cap)
{
	if (!cap)
		return -EINVAL;
	/* Read what is left of the page first: a string can end just before unmapped memory. */
	size_t page = 4096 - (addr & 4095), got = 0;
	while (got < cap - 1) {
		size_t n = cap - 1 - got < page ? cap - 1 - got : page;
		int err = m->read(m, addr + got, out + got, n);
		if (err)
			return err;
		void *nul = memchr(out + got, '\0', n);
		if (nul)
			return 0;
		got += n;
		page = 4096;
	}
	out[cap - 1] = '\0';
	return -ENAMETOOLONG;
}
