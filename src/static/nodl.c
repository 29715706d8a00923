/* nodl.c: the static binary's dlopen, which loads nothing. */
/*
 * A statically linked glibc program that loads a shared library gets the host's
 * libraries built against another glibc, which is undefined behaviour. libdw
 * opens libdebuginfod that way when DEBUGINFOD_URLS is set (Debian sets it in
 * login shells); nothing else in rbscope loads code. Defined here, it is the one
 * the static link uses: debuginfod is not asked, and the unwinder reads the
 * files on the host as it does without it.
 */
#include <stddef.h>

void *dlopen(const char *file, int mode);

void *dlopen(const char *file, int mode)
{
	(void)file;
	(void)mode;
	return NULL;
}
