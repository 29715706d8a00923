/* test_root.c: a path resolved inside another root: absolute links start again at it, ".." stops at it, loops end. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "proc/root.h"

static char top[64];

static void mk(const char *rel)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", top, rel);
	assert_int_equal(mkdir(p, 0755), 0);
}

static void ln(const char *target, const char *rel)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", top, rel);
	assert_int_equal(symlink(target, p), 0);
}

/* fd is the directory rel under top. */
static void same(int fd, const char *rel)
{
	char p[256];
	struct stat a, b;
	snprintf(p, sizeof(p), "%s/%s", top, rel);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(stat(p, &b), 0);
	assert_true(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
	close(fd);
}

static void test_resolved_inside_root(void **state)
{
	(void)state;
	snprintf(top, sizeof(top), "/tmp/rbscope-test-root-XXXXXX");
	assert_non_null(mkdtemp(top));
	char root[128];
	snprintf(root, sizeof(root), "%s/r", top);
	mk("r");
	mk("r/run");
	mk("r/run/tmp");
	mk("r/var");
	mk("r/var/lib");
	/* the container's /tmp -> /run/tmp (absolute: in its root, not ours) */
	ln("/run/tmp", "r/tmp");
	same(root_open_dir(root, "/tmp"), "r/run/tmp");
	/* relative links, and .. that stops at the root */
	ln("../run", "r/var/up");
	same(root_open_dir(root, "/var/up/tmp"), "r/run/tmp");
	same(root_open_dir(root, "/../../../var/lib"), "r/var/lib");
	ln("/../../..", "r/var/escape");
	same(root_open_dir(root, "/var/escape/run"), "r/run");
	/* a loop ends; a missing name is ENOENT; a file is not a directory */
	ln("/var/loop", "r/var/loop");
	assert_int_equal(root_open_dir(root, "/var/loop"), -ELOOP);
	assert_int_equal(root_open_dir(root, "/nothing"), -ENOENT);
	char f[256];
	snprintf(f, sizeof(f), "%s/r/run/tmp/file", top);
	FILE *fp = fopen(f, "w");
	assert_non_null(fp);
	fputs("x", fp);
	fclose(fp);
	assert_int_equal(root_open_dir(root, "/tmp/file"), -ENOTDIR);
	/* a file through links, its own name a link too */
	ln("/tmp/file", "r/var/lib/f");
	int fd = root_open(root, "/var/lib/f", O_RDONLY);
	assert_true(fd >= 0);
	char c = 0;
	assert_int_equal(read(fd, &c, 1), 1);
	assert_int_equal(c, 'x');
	close(fd);
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resolved_inside_root),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
