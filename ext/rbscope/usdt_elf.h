/* usdt_elf.h: build, in memory, an x86-64 ELF shared object holding USDT probe stubs, their .note.stapsdt notes and semaphores. */
#ifndef RBSCOPE_USDT_ELF_H
#define RBSCOPE_USDT_ELF_H

/*
 * Pure C and libc only (no Ruby), so that it can be tested on its own.
 *
 * The object has one stub per probe in .text ("nop; ret": the probe's
 * address is the nop, where the kernel plants its breakpoint), one 16-bit
 * semaphore per probe in .probes (the kernel's uprobe reference counter
 * raises it while a tracer is attached), a SystemTap v3 note per probe in
 * .note.stapsdt, and a .dynsym naming both (PROVIDER_NAME and
 * PROVIDER_NAME_semaphore), so that dlopen, readelf, bpftrace and
 * `rbscope probes` all read it. Virtual addresses equal file offsets.
 */
#include <stddef.h>
#include <stdint.h>

#define USDT_MAX_ARGS 6
#define USDT_NAME_MAX 128

enum usdt_arg {
	USDT_ARG_INT64 = 1, /* signed 64-bit: "-8@%reg" */
	USDT_ARG_STRING,    /* a pointer to a NUL-terminated string: "8@%reg" */
};

struct usdt_elf_probe {
	const char *name;
	int nargs;
	enum usdt_arg args[USDT_MAX_ARGS];
	/* Filled in by usdt_elf_build: offsets of the stub and the semaphore in the object. */
	uint64_t stub_off, sem_off;
};

struct usdt_elf_image {
	unsigned char *data; /* malloc'ed */
	size_t size;
};

/* A C identifier of at most USDT_NAME_MAX - 1 bytes? */
int usdt_valid_name(const char *s);

/*
 * Build the object for provider and its n probes (names already valid).
 * 0, or -EINVAL (a bad name or argument count) or -ENOMEM.
 */
int usdt_elf_build(const char *provider, struct usdt_elf_probe *probes, int n, struct usdt_elf_image *out);
void usdt_elf_free(struct usdt_elf_image *img);

#endif
