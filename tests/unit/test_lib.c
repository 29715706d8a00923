/* test_lib.c: the capped buffer, the growable array, the hash map, the string table, the text writers and HTTP parsing. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "lib/buf.h"
#include "lib/http.h"
#include "lib/map.h"
#include "lib/strtab.h"
#include "lib/utf8.h"
#include "lib/vec.h"
#include "lib/json.h"
#include "lib/xml.h"
#include "proc/maps.h"
#include "proc/task.h"

static void test_vec_grow(void **state)
{
	(void)state;
	int *v = NULL;
	size_t cap = 0;
	for (size_t n = 0; n < 1000; n++) {
		int *g = vec_grow(v, n, &cap, sizeof(*g));
		assert_non_null(g);
		v = g;
		v[n] = (int)n;
		assert_true(cap > n);
	}
	assert_int_equal(cap, 1024); /* 16 doubled */
	for (size_t n = 0; n < 1000; n++)
		assert_int_equal(v[n], (int)n);
	/* room for an index far ahead: at least that, in one step */
	int *g = vec_grow(v, 5000, &cap, sizeof(*g));
	assert_non_null(g);
	v = g;
	assert_true(cap > 5000);
	assert_int_equal(v[999], 999);
	/* a size that would overflow: NULL, the array and its capacity as they were */
	size_t before = cap;
	assert_null(vec_grow(v, SIZE_MAX / 2, &cap, sizeof(*v)));
	assert_int_equal(cap, before);
	free(v);
}

static void test_buf_cap(void **state)
{
	(void)state;
	struct buf b = BUF_INIT(16);
	assert_int_equal(buf_adds(&b, "0123456789"), 0);
	assert_int_equal(buf_addf(&b, "%d", 12345), 0);
	assert_string_equal(buf_str(&b), "012345678912345");
	assert_int_equal(buf_adds(&b, "xy"), -ENOSPC); /* past the cap: refused whole */
	assert_int_equal(b.len, 15);
	assert_int_equal(buf_grow(&b, SIZE_MAX), -ENOSPC);
	buf_free(&b);
}

static void test_map(void **state)
{
	(void)state;
	struct map m;
	map_init(&m);
	for (uint64_t i = 0; i < 10000; i++)
		assert_int_equal(map_put(&m, i * 4096, i), 0);
	for (uint64_t i = 0; i < 10000; i++)
		assert_int_equal(*map_get(&m, i * 4096), i);
	assert_null(map_get(&m, 1));
	/* all ones, the free-slot marker, is a key like any other: kept through growth, cleared, iterated */
	assert_null(map_get(&m, MAP_EMPTY));
	assert_int_equal(map_put(&m, MAP_EMPTY, 7), 0);
	assert_int_equal(map_put(&m, MAP_EMPTY, 8), 0);
	assert_int_equal(m.len, 10001);
	for (uint64_t i = 10000; i < 20000; i++)
		assert_int_equal(map_put(&m, i * 4096, i), 0);
	assert_int_equal(*map_get(&m, MAP_EMPTY), 8);
	size_t it = 0, seen = 0, ones = 0;
	uint64_t k, v;
	while (map_next(&m, &it, &k, &v)) {
		seen++;
		ones += k == MAP_EMPTY && v == 8;
		assert_true(k == MAP_EMPTY || v * 4096 == k);
	}
	assert_int_equal(seen, 20001);
	assert_int_equal(ones, 1);
	map_clear(&m);
	assert_null(map_get(&m, MAP_EMPTY));
	assert_int_equal(m.len, 0);
	map_free(&m);
}

static void test_strtab(void **state)
{
	(void)state;
	struct strtab t;
	assert_int_equal(strtab_init(&t), 0);
	int64_t a = strtab_intern(&t, "Foo#bar", 7), b = strtab_intern(&t, "Hash#key?", 9);
	assert_true(a > 0 && b > 0 && a != b);
	assert_int_equal(strtab_intern(&t, "Foo#bar", 7), a);
	assert_int_equal(strtab_intern(&t, "", 0), 0);
	assert_string_equal(strtab_get(&t, (uint32_t)b), "Hash#key?");
	strtab_free(&t);
}

static void test_maps_parse(void **state)
{
	(void)state;
	const char *text = "55d0-55e0 r--p 00000000 fe:00 123 /usr/bin/ruby\n"
			   "7f00-7f10 rw-p 00000000 00:00 0 \n"
			   "7f10-7f20 r-xp 00001000 fe:00 99 /usr/lib/libruby-3.1.so.3.1.2 (deleted)\n";
	struct maps m;
	assert_int_equal(maps_parse(text, &m), 0);
	assert_int_equal(m.n, 3);
	assert_string_equal(m.v[1].path, ""); /* anonymous mappings are kept */
	assert_string_equal(m.v[0].path, "/usr/bin/ruby");
	assert_non_null(maps_find(&m, 0x7f05));
	assert_true(maps_readable(&m, 0x7f00, 0x10));
	assert_false(maps_readable(&m, 0x7f00, 0x11));
	assert_null(maps_find(&m, 0x7f20));
	maps_free(&m);
}

static void test_maps_objects(void **state)
{
	(void)state;
	const char *text = "1000-2000 r--p 00000000 fe:00 1 /usr/lib/libz.so\n"
			   "2000-5000 r-xp 00001000 fe:00 1 /usr/lib/libz.so\n"
			   "5000-6000 rw-p 00000000 00:00 0 \n"
			   "6000-7000 r--p 00000000 fe:00 2 /memfd:probes (deleted)\n"
			   "7000-8000 rw-p 00000000 00:00 0 [heap]\n"
			   "9000-a000 r--p 00004000 fe:00 1 /usr/lib/libz.so\n";
	struct maps m;
	struct maps_object *o;
	int n;
	assert_int_equal(maps_parse(text, &m), 0);
	assert_int_equal(maps_objects(&m, &o, &n), 0);
	/* each file once, in order, spanning its first to its last mapping; no anonymous or [heap] */
	assert_int_equal(n, 2);
	assert_string_equal(o[0].path, "/usr/lib/libz.so");
	assert_int_equal(o[0].first, 0);
	assert_int_equal(o[0].last, 5);
	assert_string_equal(o[1].path, "/memfd:probes (deleted)");
	/* file offsets to addresses through whichever mapping holds them */
	assert_int_equal(maps_object_addr(&m, &o[0], 0x10), 0x1010);
	assert_int_equal(maps_object_addr(&m, &o[0], 0x1800), 0x2800);
	assert_int_equal(maps_object_addr(&m, &o[0], 0x4010), 0x9010);
	assert_int_equal(maps_object_addr(&m, &o[0], 0x5000), 0);
	free(o);
	maps_free(&m);
}

static void test_utf8(void **state)
{
	(void)state;
	assert_int_equal(utf8_len((const unsigned char *)"a"), 1);
	assert_int_equal(utf8_len((const unsigned char *)"\xc3\xa9"), 2);      /* é */
	assert_int_equal(utf8_len((const unsigned char *)"\xe2\x80\x94"), 3);  /* — */
	assert_int_equal(utf8_len((const unsigned char *)"\xf0\x9f\x92\x8e"), 4);
	assert_int_equal(utf8_len((const unsigned char *)"\xc0\xaf"), 0);      /* overlong */
	assert_int_equal(utf8_len((const unsigned char *)"\xed\xa0\x80"), 0);  /* surrogate */
	assert_int_equal(utf8_len((const unsigned char *)"\xf5\x80\x80\x80"), 0); /* no such lead byte */
	assert_int_equal(utf8_len((const unsigned char *)"\xe2\x80"), 0);      /* cut short by the NUL */
}

/* What a writer prints for s, as a string. */
static char *written(size_t (*xml)(FILE *, const char *, size_t), const char *s, size_t max)
{
	static char out[256];
	FILE *f = fmemopen(out, sizeof(out), "w");
	if (xml)
		xml(f, s, max);
	else
		json_write_string(f, s);
	fclose(f);
	return out;
}

static void test_escapers(void **state)
{
	(void)state;
	assert_string_equal(written(xml_write_text, "a<b>&\"c\x01", 100), "a&lt;b&gt;&amp;&quot;c");
	assert_string_equal(written(xml_write_text, "x\xffy", 100), "x&#xFFFD;y");
	/* with 4 bytes allowed the dash (bytes 2..4) does not fit: it is left out whole, not cut */
	assert_string_equal(written(xml_write_text, "ab\xe2\x80\x94" "c", 4), "ab");
	assert_string_equal(written(xml_write_text, "ab\xe2\x80\x94" "c", 5), "ab\xe2\x80\x94");
	assert_string_equal(written(NULL, "q\"\\\n\xff\xc3\xa9", 0), "\"q\\\"\\\\\\n\\ufffd\xc3\xa9\"");
}

static int parse(const char *text, struct http_request *r)
{
	return http_parse_request(text, strlen(text), r);
}

static void test_http_request(void **state)
{
	(void)state;
	static struct http_request r;
	const char *ok = "GET /debug/pprof/profile?seconds=3&pid=12 HTTP/1.1\r\nHost: x\r\nAuthorization:  Bearer abc \r\n\r\n";
	assert_int_equal(parse(ok, &r), (int)strlen(ok));
	assert_string_equal(r.method, "GET");
	assert_string_equal(r.path, "/debug/pprof/profile");
	assert_string_equal(r.query, "seconds=3&pid=12");
	char v[64];
	assert_int_equal(http_header(&r, "authorization", v, sizeof(v)), 1);
	assert_string_equal(v, "Bearer abc");
	assert_int_equal(http_header(&r, "X-None", v, sizeof(v)), 0);
	assert_int_equal(http_query(r.query, "pid", v, sizeof(v)), 1);
	assert_string_equal(v, "12");
	assert_int_equal(http_query(r.query, "seconds", v, sizeof(v)), 1);
	assert_string_equal(v, "3");
	assert_int_equal(http_query(r.query, "second", v, sizeof(v)), 0);
	assert_int_equal(http_query("a=%41%2b+b&c", "a", v, sizeof(v)), 1);
	assert_string_equal(v, "A+ b");
	assert_int_equal(http_query("a=%4", "a", v, sizeof(v)), -1);
	assert_int_equal(http_query("a=%00", "a", v, sizeof(v)), -1);
	/* Incomplete: more is needed; then what is wrong, by its status. */
	assert_int_equal(parse("GET / HTTP/1.1\r\nHost: x\r\n", &r), 0);
	assert_int_equal(parse("HEAD / HTTP/1.0\r\n\r\n", &r), (int)strlen("HEAD / HTTP/1.0\r\n\r\n"));
	assert_true(r.head_only);
	assert_int_equal(parse("GARBAGE\r\n\r\n", &r), -400);
	assert_int_equal(parse("GET nohost HTTP/1.1\r\n\r\n", &r), -400);
	assert_int_equal(parse("GET / HTTP/2.0\r\n\r\n", &r), -505);
	assert_int_equal(parse("POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\n", &r), -501);
	assert_int_equal(parse("GET / HTTP/1.1\r\nContent-Length: 3\r\n\r\n", &r), -413);
	assert_int_equal(parse("GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", &r), -411);
	assert_int_equal(parse("GET / HTTP/1.1\r\n folded\r\n\r\n", &r), -400);
	assert_int_equal(parse("GET / HTTP/1.1\r\nBad Name: x\r\n\r\n", &r), -400);
	assert_int_equal(parse("GET /%zz HTTP/1.1\r\n\r\n", &r), -400);
	assert_int_equal(parse("GET /a%00b HTTP/1.1\r\n\r\n", &r), -400);
	char big[HTTP_MAX_HEAD + 64];
	memset(big, 'a', sizeof(big));
	memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
	big[sizeof(big) - 1] = 0;
	assert_int_equal(parse(big, &r), -431);
	char longq[2100] = "GET /?";
	memset(longq + 6, 'q', 1500);
	strcpy(longq + 1506, " HTTP/1.1\r\n\r\n");
	assert_int_equal(parse(longq, &r), -414);
}

static void test_http_hostport(void **state)
{
	(void)state;
	char host[64];
	int port;
	assert_int_equal(http_split_hostport("127.0.0.1:6061", host, sizeof(host), &port), 0);
	assert_string_equal(host, "127.0.0.1");
	assert_int_equal(port, 6061);
	assert_int_equal(http_split_hostport("[::1]:80", host, sizeof(host), &port), 0);
	assert_string_equal(host, "::1");
	assert_int_equal(http_split_hostport(":9", host, sizeof(host), &port), 0);
	assert_string_equal(host, "");
	assert_int_equal(http_split_hostport("nonsense", host, sizeof(host), &port), -1);
	assert_int_equal(http_split_hostport("h:70000", host, sizeof(host), &port), -1);
	assert_int_equal(http_split_hostport("h:", host, sizeof(host), &port), -1);
	assert_int_equal(http_split_hostport("[::1]80", host, sizeof(host), &port), -1);
	struct buf b = BUF_INIT(4096);
	assert_int_equal(http_response_head(&b, 404, "text/plain", 3, "X-Go-Pprof: 1\r\n"), 0);
	assert_string_equal(buf_str(&b), "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n"
					 "Connection: close\r\nX-Go-Pprof: 1\r\n\r\n");
	buf_free(&b);
}

static void test_container_id(void **state)
{
	(void)state;
	const char *id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	char text[512], out[80];
	snprintf(text, sizeof(text), "0::/system.slice/docker-%s.scope\n", id);
	assert_int_equal(task_container_id_parse(text, out, sizeof(out)), 1);
	assert_string_equal(out, id);
	snprintf(text, sizeof(text), "12:cpu:/kubepods/besteffort/pod1/%s\n0::/\n", id);
	assert_int_equal(task_container_id_parse(text, out, sizeof(out)), 1);
	assert_string_equal(out, id);
	snprintf(text, sizeof(text), "0::/kubepods.slice/cri-containerd-%s.scope\n", id);
	assert_int_equal(task_container_id_parse(text, out, sizeof(out)), 1);
	assert_int_equal(task_container_id_parse("0::/user.slice/user-0.slice/session-3.scope\n", out, sizeof(out)), 0);
	/* 65 hex digits, or 64 inside a longer word: not an id. */
	snprintf(text, sizeof(text), "0::/docker/%sa\n", id);
	assert_int_equal(task_container_id_parse(text, out, sizeof(out)), 0);
	snprintf(text, sizeof(text), "0::/x%s\n", id);
	assert_int_equal(task_container_id_parse(text, out, sizeof(out)), 0);
	assert_int_equal(task_container_id_parse(text, out, 64), 0);
}

/* A fake procfs: our status, process 42's, and Yama's scope when scope >= 0. */
static void fake_proc(const char *dir, const char *self_ids, const char *cap_eff, int seccomp, const char *target_ids,
		      int scope)
{
	char path[512];
	FILE *f;
	snprintf(path, sizeof(path), "%s/self", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/self/status", dir);
	assert_non_null(f = fopen(path, "w"));
	fprintf(f, "Name:\trbscope\n%s\nCapInh:\t0000000000000000\nCapEff:\t%s\nSeccomp:\t%d\n", self_ids, cap_eff, seccomp);
	fclose(f);
	snprintf(path, sizeof(path), "%s/42", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/42/status", dir);
	assert_non_null(f = fopen(path, "w"));
	fprintf(f, "Name:\truby\n%s\n", target_ids);
	fclose(f);
	snprintf(path, sizeof(path), "%s/sys/kernel/yama/ptrace_scope", dir);
	if (scope < 0) {
		unlink(path);
		return;
	}
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/sys/kernel/yama", dir);
	assert_int_equal(system(cmd), 0);
	assert_non_null(f = fopen(path, "w"));
	fprintf(f, "%d\n", scope);
	fclose(f);
}

static const char *access_why(const char *dir)
{
	static char why[512];
	task_access_why(dir, 42, why, sizeof(why));
	return why;
}

/* Why the kernel refused: the same reasons in the kernel's order, each with its own remedy. */
static void test_access_why(void **state)
{
	(void)state;
	char dir[] = "/tmp/rbscope-procfs-XXXXXX";
	assert_non_null(mkdtemp(dir));
	/* The test runs as root: the fake status files are root's, as a dumpable uid 0 process's are. */
	const char *root_ids = "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0";
	const char *no_cap = "0000000000000000", *all_caps = "000001ffffffffff";
	if (geteuid()) {
		skip();
		return;
	}
	fake_proc(dir, "Uid:\t1000\t1000\t1000\t1000\nGid:\t0\t0\t0\t0", no_cap, 0, root_ids, -1);
	assert_non_null(strstr(access_why(dir), "runs as uid 0, rbscope as uid 1000"));
	fake_proc(dir, "Uid:\t1000\t1000\t1000\t1000\nGid:\t0\t0\t0\t0", no_cap, 0,
		  "Uid:\t1000\t0\t0\t1000\nGid:\t0\t0\t0\t0", -1); /* a setuid program */
	assert_non_null(strstr(access_why(dir), "runs as uid 0, rbscope as uid 1000"));
	fake_proc(dir, "Uid:\t0\t0\t0\t0\nGid:\t100\t100\t100\t100", no_cap, 0, root_ids, -1);
	assert_non_null(strstr(access_why(dir), "with group 0, rbscope with group 100"));
	fake_proc(dir, "Uid:\t65534\t65534\t65534\t65534\nGid:\t0\t0\t0\t0", no_cap, 0,
		  "Uid:\t65534\t65534\t65534\t65534\nGid:\t0\t0\t0\t0", -1); /* its files root's: undumpable */
	assert_non_null(strstr(access_why(dir), "is not dumpable"));
	fake_proc(dir, root_ids, no_cap, 0, root_ids, 1);
	assert_non_null(strstr(access_why(dir), "kernel.yama.ptrace_scope is 1"));
	assert_non_null(strstr(access_why(dir), "sysctl kernel.yama.ptrace_scope=0"));
	fake_proc(dir, root_ids, no_cap, 0, root_ids, 2);
	assert_non_null(strstr(access_why(dir), "kernel.yama.ptrace_scope is 2"));
	fake_proc(dir, root_ids, all_caps, 0, root_ids, 2); /* CAP_SYS_PTRACE passes scope 2: something else */
	assert_non_null(strstr(access_why(dir), "security module"));
	fake_proc(dir, root_ids, all_caps, 0, root_ids, 3); /* scope 3 stops even CAP_SYS_PTRACE */
	assert_non_null(strstr(access_why(dir), "kernel.yama.ptrace_scope is 3"));
	fake_proc(dir, "Uid:\t1000\t1000\t1000\t1000\nGid:\t0\t0\t0\t0", all_caps, 0, root_ids, 1); /* the cap: any user */
	assert_non_null(strstr(access_why(dir), "security module"));
	fake_proc(dir, root_ids, no_cap, 2, root_ids, 0);
	assert_non_null(strstr(access_why(dir), "seccomp filter"));
	fake_proc(dir, root_ids, no_cap, 0, root_ids, 0); /* root without the capability: a container's */
	assert_non_null(strstr(access_why(dir), "runs as root without CAP_SYS_PTRACE (in a container?)"));
	fake_proc(dir, root_ids, no_cap, 0, root_ids, 1);
	assert_non_null(strstr(access_why(dir), "is 1: only a process's ancestors may attach: rbscope runs as root without"));
	/* A user's own dumpable process (its status file that user's, as the kernel makes it): Ubuntu's default
	   Yama scope 1 refuses it, and otherwise the general hint. */
	const char *user_ids = "Uid:\t1000\t1000\t1000\t1000\nGid:\t0\t0\t0\t0";
	char status[600];
	snprintf(status, sizeof(status), "%s/42/status", dir);
	fake_proc(dir, user_ids, no_cap, 0, user_ids, 1);
	assert_int_equal(chown(status, 1000, 0), 0);
	assert_non_null(strstr(access_why(dir), "kernel.yama.ptrace_scope is 1: only a process's ancestors may attach: "
						"run it as root or with CAP_SYS_PTRACE, or allow it"));
	fake_proc(dir, user_ids, no_cap, 0, user_ids, -1);
	assert_int_equal(chown(status, 1000, 0), 0);
	assert_non_null(strstr(access_why(dir), "run it as root, as the process's user, or with CAP_SYS_PTRACE"));
	/* No such process, no procfs: the general hint, no crash. */
	assert_non_null(strstr(access_why("/nonexistent"), "CAP_SYS_PTRACE"));
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buf_cap),
		cmocka_unit_test(test_vec_grow),
		cmocka_unit_test(test_map),
		cmocka_unit_test(test_strtab),
		cmocka_unit_test(test_maps_parse),
		cmocka_unit_test(test_maps_objects),
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_escapers),
		cmocka_unit_test(test_http_request),
		cmocka_unit_test(test_http_hostport),
		cmocka_unit_test(test_container_id),
		cmocka_unit_test(test_access_why),
	};
	return cmocka_run_group_tests_name("lib", tests, NULL, NULL);
}
