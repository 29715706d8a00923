/* test_heap.c: the heap-dump line parser on what real Rubies write, and the dominator tree against brute force. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "heap/dominators.h"
#include "heap/dump.h"
#include "heap/graph.h"

static int parse(const char *line, struct heap_rec *r)
{
	return heap_parse_line(line, strlen(line), r);
}

static void assert_span(struct span s, const char *want)
{
	assert_int_equal(s.n, strlen(want));
	assert_memory_equal(s.p, want, s.n);
}

static void test_parse_record(void **state)
{
	(void)state;
	struct heap_rec r;
	assert_int_equal(parse("{\"address\":\"0x7f3afc1b4f48\", \"type\":\"STRING\", \"shape_id\":0, \"slot_size\":40, "
			       "\"class\":\"0x7f3afc1bffd8\", \"bytesize\":5, \"value\":\"a\\\"b\\\\c\", \"encoding\":\"UTF-8\", "
			       "\"file\":\"/app/x.rb\", \"line\":12, \"generation\":7, \"memsize\":40, "
			       "\"flags\":{\"wb_protected\":true}}", &r), 0);
	assert_int_equal(r.address, 0x7f3afc1b4f48);
	assert_span(r.type, "STRING");
	assert_int_equal(r.class_addr, 0x7f3afc1bffd8);
	assert_span(r.value, "a\\\"b\\\\c");
	assert_span(r.file, "/app/x.rb");
	assert_int_equal(r.line, 12);
	assert_int_equal(r.memsize, 40);
	assert_false(r.shared);
	assert_int_equal(parse("{\"address\":\"0x10\", \"type\":\"STRING\", \"shared\":true, \"references\":[\"0x20\"]}", &r), 0);
	assert_true(r.shared);
	assert_span(r.refs, "\"0x20\"");
	/* Ruby 3.3: shapes */
	assert_int_equal(parse("{\"address\":\"0x7f3afac00028\", \"type\":\"SHAPE\", \"id\":1, \"parent_id\":0, \"depth\":1, "
			       "\"shape_type\":\"IVAR\", \"edge_name\":\"@i\", \"edges\":3, \"memsize\":128}", &r), 0);
	assert_span(r.type, "SHAPE");
	assert_int_equal(r.memsize, 128);
}

/* Ruby writes "file" (and class names before 3.2) without escaping them. */
static void test_parse_unescaped(void **state)
{
	(void)state;
	struct heap_rec r;
	assert_int_equal(parse("{\"address\":\"0x10\", \"type\":\"OBJECT\", \"file\":\"/tmp/a\"b.rb\", \"line\":3, \"memsize\":40}", &r), 0);
	assert_span(r.file, "/tmp/a\"b.rb");
	assert_int_equal(r.line, 3);
	assert_int_equal(r.memsize, 40);
	assert_int_equal(parse("{\"address\":\"0x10\", \"type\":\"OBJECT\", \"file\":\"C:\\dir\\\", \"line\":4, \"memsize\":8}", &r), 0);
	assert_span(r.file, "C:\\dir\\");
	assert_int_equal(r.line, 4);
	assert_int_equal(parse("{\"address\":\"0x10\", \"type\":\"CLASS\", \"name\":\"We\"ird\"}", &r), 0);
	assert_span(r.name, "We\"ird");
	assert_int_equal(parse("{\"address\":\"0x10\", \"type\":\"OBJECT\", \"file\":\"/x\\\"}", &r), 0);
	assert_span(r.file, "/x\\");
}

static void test_parse_bad(void **state)
{
	(void)state;
	struct heap_rec r;
	const char *bad[] = { "", "not json", "[1,2,3]", "{\"type\":\"STRING\"", "{\"type\":\"STRING\", \"value\":\"abc}",
			      "{\"address\":\"0x10\"}", "{\"type\":", "{\"references\":[\"0x1\"", "{\"type\":\"X\", 12}" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		assert_int_not_equal(parse(bad[i], &r), 0);
}

/* The GC flags end every record and are skipped whole; flags that do not end the record are walked. */
static void test_parse_flags(void **state)
{
	(void)state;
	struct heap_rec r;
	assert_int_equal(parse("{\"address\":\"0x10\", \"type\":\"OBJECT\", \"memsize\":40, "
			       "\"flags\":{\"wb_protected\":true, \"old\":true}}", &r), 0);
	assert_int_equal(r.memsize, 40);
	assert_int_equal(parse("{\"address\":\"0x10\", \"type\":\"OBJECT\", \"flags\":{\"a\":{\"b\":[\"}\"]}}, "
			       "\"memsize\":24, \"file\":\"x.rb\"}", &r), 0);
	assert_int_equal(r.memsize, 24);
	assert_span(r.file, "x.rb");
	assert_int_not_equal(parse("{\"address\":\"0x10\", \"type\":\"OBJECT\", \"flags\":{\"old\":true}", &r), 0);
	assert_int_not_equal(parse("{\"address\":\"0x10\", \"type\":\"OBJECT\", \"flags\":{\"old\":true} x", &r), 0);
	/* Strings of every length around the 16 bytes searched at once, with escapes on both sides of the edge. */
	for (int len = 0; len < 40; len++) {
		char v[64], line[160];
		for (int i = 0; i < len; i++)
			v[i] = (char)('a' + i % 26);
		v[len] = 0;
		if (len > 2) {
			v[len / 2] = '\\';
			v[len / 2 + 1] = '"';
		}
		snprintf(line, sizeof(line), "{\"type\":\"STRING\", \"value\":\"%s\", \"memsize\":%d}", v, len);
		assert_int_equal(parse(line, &r), 0);
		assert_span(r.value, v);
		assert_int_equal(r.memsize, len);
	}
}

static int truncate_it(const struct heap_rec *r, void *arg)
{
	(void)r;
	return ftruncate(*(int *)arg, 0);
}

/* A dump cut short under the reader (it maps the file) ends the process with one line and exit 8, not a crash. */
static void test_read_shrinking(void **state)
{
	(void)state;
	char path[] = "/tmp/rbscope-test-heap-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	for (int i = 0; i < 20000; i++)
		assert_true(dprintf(fd, "{\"address\":\"0x%x\", \"type\":\"OBJECT\", \"memsize\":40}\n", i + 16) > 0);
	pid_t pid = fork();
	if (!pid) {
		struct heap_stats st;
		int devnull = open("/dev/null", O_WRONLY);
		dup2(devnull, 2);
		signal(SIGBUS, SIG_DFL); /* as in rbscope itself: cmocka catches it */
		heap_read(path, truncate_it, &fd, &st);
		_exit(0);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	unlink(path);
	close(fd);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 8);
}

/*
 * Of shortest paths of one length, `heap path` takes the one through objects a user knows: here the
 * root's first reference is an inline cache (IMEMO) holding the Hash, its second the module whose
 * constant holds it; the path goes through the module. Without it, the IMEMO.
 */
static void test_path_prefers_user_objects(void **state)
{
	(void)state;
	char path[] = "/tmp/rbscope-test-path-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	const char *dump =
		"{\"type\":\"ROOT\", \"root\":\"vm\", \"references\":[\"0x10\", \"0x20\"]}\n"
		"{\"address\":\"0x10\", \"type\":\"IMEMO\", \"imemo_type\":\"constcache\", \"references\":[\"0x30\"], \"memsize\":40}\n"
		"{\"address\":\"0x20\", \"type\":\"MODULE\", \"name\":\"Holder\", \"references\":[\"0x30\"], \"memsize\":40}\n"
		"{\"address\":\"0x30\", \"type\":\"HASH\", \"references\":[\"0x40\"], \"memsize\":40}\n"
		"{\"address\":\"0x40\", \"type\":\"OBJECT\", \"memsize\":40}\n";
	assert_true(write(fd, dump, strlen(dump)) == (ssize_t)strlen(dump));
	close(fd);
	struct heap_graph g;
	struct heap_stats st;
	assert_int_equal(heap_graph_load(&g, path, &st), 0);
	uint32_t out[8];
	const char *root = NULL;
	assert_int_equal(heap_graph_path(&g, heap_graph_find(&g, 0x40), out, &root), 3);
	assert_int_equal(g.addr[out[0]], 0x20);
	assert_int_equal(g.addr[out[1]], 0x30);
	assert_string_equal(root, "vm");
	heap_graph_free(&g);
	/* The module gone, the inline cache is the only way. */
	fd = open(path, O_WRONLY | O_TRUNC);
	const char *second = strstr(dump, "{\"address\":\"0x20\"");
	const char *third = strstr(dump, "{\"address\":\"0x30\"");
	assert_true(write(fd, dump, (size_t)(second - dump)) > 0);
	assert_true(write(fd, third, strlen(third)) > 0);
	close(fd);
	assert_int_equal(heap_graph_load(&g, path, &st), 0);
	assert_int_equal(heap_graph_path(&g, heap_graph_find(&g, 0x40), out, &root), 3);
	assert_int_equal(g.addr[out[0]], 0x10);
	heap_graph_free(&g);
	unlink(path);
}

struct graph {
	uint32_t n, *eoff, *ecnt, *edges, *roots;
	size_t nroots;
};

static void random_graph(struct graph *g, uint32_t n, uint32_t m, uint32_t nroots, unsigned seed)
{
	srand(seed);
	g->n = n;
	g->eoff = calloc(n, 4);
	g->ecnt = calloc(n, 4);
	g->edges = calloc(m + 1, 4);
	g->roots = calloc(nroots + 1, 4);
	g->nroots = nroots;
	for (uint32_t i = 0; i < nroots; i++)
		g->roots[i] = (uint32_t)rand() % n;
	uint32_t e = 0;
	for (uint32_t v = 0; v < n; v++) { /* edges grouped by source, sources in random amounts */
		g->eoff[v] = e;
		uint32_t k = v == n - 1 ? m - e : (uint32_t)rand() % (2 * m / n + 1);
		for (uint32_t j = 0; j < k && e < m; j++)
			g->edges[e++] = (uint32_t)rand() % n;
		g->ecnt[v] = e - g->eoff[v];
	}
}

static void free_graph(struct graph *g)
{
	free(g->eoff);
	free(g->ecnt);
	free(g->edges);
	free(g->roots);
}

/* Which nodes the roots reach without going through `without` (UINT32_MAX: none). */
static void reach(const struct graph *g, uint32_t without, char *seen)
{
	uint32_t *queue = malloc(g->n * 4), head = 0, tail = 0;
	memset(seen, 0, g->n);
	for (size_t i = 0; i < g->nroots; i++)
		if (g->roots[i] != without && !seen[g->roots[i]]) {
			seen[g->roots[i]] = 1;
			queue[tail++] = g->roots[i];
		}
	while (head < tail) {
		uint32_t v = queue[head++];
		for (uint32_t i = 0; i < g->ecnt[v]; i++) {
			uint32_t w = g->edges[g->eoff[v] + i];
			if (w != without && !seen[w]) {
				seen[w] = 1;
				queue[tail++] = w;
			}
		}
	}
	free(queue);
}

/* Dominators by definition: u dominates v if v is unreachable without u; the immediate one has the most dominators. */
static void check_against_brute_force(const struct graph *g)
{
	struct heap_dom d;
	assert_int_equal(heap_dom_build(&d, g->n, g->eoff, g->ecnt, g->edges, g->roots, g->nroots), 0);
	char *all = malloc(g->n), *dom = calloc((size_t)g->n * g->n, 1), *seen = malloc(g->n);
	uint32_t *ndom = calloc(g->n, 4);
	reach(g, UINT32_MAX, all);
	for (uint32_t u = 0; u < g->n; u++) {
		reach(g, u, seen);
		for (uint32_t v = 0; v < g->n; v++)
			if (all[v] && v != u && !seen[v]) {
				dom[(size_t)v * g->n + u] = 1;
				ndom[v]++;
			}
	}
	for (uint32_t v = 0; v < g->n; v++) {
		assert_int_equal(!!d.num[v], all[v]);
		if (!all[v])
			continue;
		uint32_t best = UINT32_MAX;
		for (uint32_t u = 0; u < g->n; u++)
			if (dom[(size_t)v * g->n + u] && (best == UINT32_MAX || ndom[u] > ndom[best]))
				best = u;
		uint32_t want = best == UINT32_MAX ? 1 : d.num[best];
		assert_int_equal(d.idom[d.num[v]], want);
		assert_true(d.idom[d.num[v]] < d.num[v]);
		assert_int_equal(d.order[d.num[v]], v);
	}
	heap_dom_free(&d);
	free(all);
	free(dom);
	free(seen);
	free(ndom);
}

static void test_dominators_random(void **state)
{
	(void)state;
	for (unsigned seed = 1; seed <= 300; seed++) {
		struct graph g;
		uint32_t n = 2 + seed % 60;
		random_graph(&g, n, n * (1 + seed % 4), 1 + seed % 3, seed);
		check_against_brute_force(&g);
		free_graph(&g);
	}
}

/* A linked list of two million objects: no recursion anywhere, each dominated by the one before. */
static void test_dominators_deep(void **state)
{
	(void)state;
	uint32_t n = 2000000, root = 0;
	uint32_t *eoff = malloc(n * 4), *ecnt = malloc(n * 4), *edges = malloc(n * 4);
	for (uint32_t v = 0; v < n; v++) {
		eoff[v] = v;
		ecnt[v] = v + 1 < n;
		edges[v] = v + 1;
	}
	struct heap_dom d;
	assert_int_equal(heap_dom_build(&d, n, eoff, ecnt, edges, &root, 1), 0);
	assert_int_equal(d.count, n + 1);
	for (uint32_t a = 2; a <= d.count; a++)
		assert_true(d.idom[a] == a - 1 && d.order[a] == a - 2);
	heap_dom_free(&d);
	free(eoff);
	free(ecnt);
	free(edges);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_record),
		cmocka_unit_test(test_parse_unescaped),
		cmocka_unit_test(test_parse_bad),
		cmocka_unit_test(test_parse_flags),
		cmocka_unit_test(test_read_shrinking),
		cmocka_unit_test(test_path_prefers_user_objects),
		cmocka_unit_test(test_dominators_random),
		cmocka_unit_test(test_dominators_deep),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
