/* glibc.c: what the static binary tells its own glibc: load no shared library, resolve host names by files and DNS. */
/*
 * A statically linked glibc program that loads a shared library gets a library
 * of the host's, built against another glibc: undefined behaviour. Two things
 * would: libdw opens libdebuginfod when DEBUGINFOD_URLS is set (Debian sets it
 * in login shells), and glibc's name service loads the modules nsswitch.conf
 * names besides the two it has built in ("mdns4_minimal", "myhostname",
 * "resolve" on many hosts). So dlopen here loads nothing (the unwinder reads
 * the host's files as it does without debuginfod), and host names (serve's
 * --listen, --push's server) are looked up in /etc/hosts, then DNS, whatever
 * nsswitch.conf says.
 */
#include <nss.h>
#include <stddef.h>

void *dlopen(const char *file, int mode);

void *dlopen(const char *file, int mode)
{
	(void)file;
	(void)mode;
	return NULL;
}

__attribute__((constructor)) static void hosts_by_files_and_dns(void)
{
	__nss_configure_lookup("hosts", "files dns");
}
