/* path.c: `heap path`: the shortest chain of references from a root to one object of a dump. */
#include "path.h"

#include <errno.h>
#include <stdlib.h>

#include "../lib/err.h"
#include "graph.h"

static void print_step(const struct heap_graph *g, uint32_t v, FILE *out)
{
	char label[512];
	const char *loc = heap_graph_location(g, v);
	heap_graph_label(g, v, label, sizeof(label));
	fprintf(out, "  0x%-14llx %-8s %-32s %s\n", (unsigned long long)g->addr[v], heap_graph_type(g, v), label,
		*loc ? loc : "-");
}

int heap_path(const char *path, uint64_t addr, FILE *out, struct heap_stats *st)
{
	struct heap_graph g;
	int err = heap_graph_load(&g, path, st);
	uint32_t to = err ? HEAP_NONE : heap_graph_find(&g, addr), *steps = NULL;
	if (!err && (to == HEAP_NONE || !g.type[to]))
		err = ERR_NOT_FOUND;
	if (!err && !(steps = malloc((size_t)g.n * sizeof(*steps))))
		err = -ENOMEM;
	const char *root = "?";
	long len = err ? 0 : heap_graph_path(&g, to, steps, &root);
	if (len < 0)
		err = (int)len;
	else if (!err && !len)
		err = ERR_UNREACHABLE;
	if (!err) {
		fprintf(out, "0x%llx is %ld reference%s from the root \"%s\":\n\n", (unsigned long long)addr, len,
			len == 1 ? "" : "s", root);
		fprintf(out, "  %-16s %-8s %-32s %s\n", "address", "type", "class (of a class: its name)", "allocated at");
		fprintf(out, "  %-16s %-8s %-32s %s\n", "", "ROOT", root, "-");
		for (long i = 0; i < len; i++)
			print_step(&g, steps[i], out);
		if (fflush(out) || ferror(out))
			err = -(errno ?: EIO);
	}
	free(steps);
	heap_graph_free(&g);
	return err;
}
