/* probes.c: `rbscope probes -p PID [PATTERN...]`: every USDT probe of a process's mapped objects, and whether each is enabled now. */
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../builtin.h"
#include "../lib/opt.h"
#include "../elf/stapsdt.h"
#include "../lib/err.h"
#include "../proc/maps.h"
#include "../proc/mem.h"
#include "agent_helpers.h"

/* One provider:name in one object: its sites share the semaphore. */
struct probe_row {
	const char *provider, *name, *args;
	uint64_t sem;
	int sites, attached;
	int sem_count; /* -1: no semaphore; -2: unreadable */
};

/* The address in the process of link-time address vaddr of object o, or 0. */
static uint64_t runtime_addr(const struct maps *m, const struct maps_object *o, const struct stapsdt_list *l,
			     uint64_t vaddr)
{
	int64_t off = stapsdt_file_offset(l, vaddr);
	return off < 0 ? 0 : maps_object_addr(m, o, (uint64_t)off);
}

static int matches(int npat, char **pat, const char *provider, const char *name)
{
	if (!npat)
		return 1;
	char full[512];
	snprintf(full, sizeof(full), "%s:%s", provider, name);
	for (int i = 0; i < npat; i++)
		if (!fnmatch(pat[i], full, 0) || !fnmatch(pat[i], provider, 0))
			return 1;
	return 0;
}

/* Rows of one object, in note order, one per provider:name. */
static int object_rows(struct mem *mem, const struct maps *m, const struct maps_object *o, const struct stapsdt_list *l,
		       int npat, char **pat, struct probe_row **rows, int *nrows)
{
	*rows = NULL;
	*nrows = 0;
	struct probe_row *v = calloc((size_t)l->n + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	int n = 0;
	for (int i = 0; i < l->n; i++) {
		const struct stapsdt_note *t = &l->v[i];
		if (!matches(npat, pat, t->provider, t->name))
			continue;
		struct probe_row *r = NULL;
		for (int k = 0; k < n && !r; k++)
			if (!strcmp(v[k].provider, t->provider) && !strcmp(v[k].name, t->name))
				r = &v[k];
		if (!r) {
			r = &v[n++];
			*r = (struct probe_row){ t->provider, t->name, t->args, t->sem, 0, 0, -1 };
			if (t->sem) {
				uint16_t c;
				uint64_t a = runtime_addr(m, o, l, t->sem);
				r->sem_count = a && !mem_read(mem, a, &c, sizeof(c)) ? c : -2;
			}
		}
		r->sites++;
		unsigned char op;
		uint64_t pc = runtime_addr(m, o, l, t->pc);
		if (pc && !mem_read(mem, pc, &op, 1) && op == 0xcc) /* int3: a uprobe sits there */
			r->attached++;
	}
	*rows = v;
	*nrows = n;
	return 0;
}

static void print_row(const struct probe_row *r, const char *obj)
{
	char state[32], sites[16];
	if (r->sem_count > 0)
		snprintf(state, sizeof(state), "enabled (%d)", r->sem_count);
	else if (r->sem_count == -1)
		snprintf(state, sizeof(state), r->attached ? "attached" : "off");
	else if (r->sem_count == -2)
		snprintf(state, sizeof(state), "unknown");
	else
		snprintf(state, sizeof(state), "off");
	snprintf(sites, sizeof(sites), "%d", r->sites);
	char full[300];
	snprintf(full, sizeof(full), "%s:%s", r->provider, r->name);
	printf("%-36s %-13s %-5s %-9s %s  [%s]\n", full, state, sites, r->sem ? "yes" : "no", obj, r->args);
}

int cmd_probes(int argc, char **argv)
{
	int pid = 0, first, code;
	const struct opt opts[] = { OPT_PID(&pid, "the process (any process, Ruby or not)"), OPT_END() };
	const struct opt_cmd cmd = {
		.usage = "rbscope probes -p PID [PATTERN...]",
		.about = "List the USDT probes of every object PID has mapped (its executable, libruby, other libraries,\n"
			 "and probes declared with Rbscope::Provider), with whether each is enabled now: its semaphore\n"
			 "count (raised by bpftrace, `rbscope latency` and other tracers), or for a probe without a\n"
			 "semaphore whether a breakpoint sits at its address. PATTERN filters PROVIDER:NAME (glob, e.g. 'myapp:*').",
		.opts = opts,
	};
	if (builtin_parse(&cmd, argc, argv, &first, &code))
		return code;
	if ((code = builtin_need_pid(pid)))
		return code;
	struct maps m;
	int r = maps_read(pid, &m);
	if (r)
		return err_report(r, "process %d", pid);
	struct mem mem;
	mem_open_pid(&mem, pid);
	int total = 0, unreadable = 0;
	struct maps_object *objs;
	int nobjs;
	if ((r = maps_objects(&m, &objs, &nobjs))) {
		maps_free(&m);
		return err_report(r, "process %d", pid);
	}
	printf("%-36s %-13s %-5s %-9s %s  [%s]\n", "PROBE", "STATE", "SITES", "SEMAPHORE", "OBJECT", "ARGUMENTS");
	for (int i = 0; i < nobjs; i++) {
		const struct maps_object *o = &objs[i];
		char file[PATH_MAX + 64];
		struct stapsdt_list l;
		if (maps_object_path(pid, &m, o, file, sizeof(file))) {
			unreadable++;
			continue;
		}
		if (stapsdt_read(file, &l))
			continue; /* not ELF (a data file, a font): no probes */
		struct probe_row *rows;
		int nrows;
		if (!object_rows(&mem, &m, o, &l, argc - first, argv + first, &rows, &nrows)) {
			for (int k = 0; k < nrows; k++)
				print_row(&rows[k], o->path);
			total += nrows;
			free(rows);
		}
		stapsdt_free(&l);
	}
	free(objs);
	maps_free(&m);
	if (fflush(stdout) == EOF)
		return err_report(-errno, "cannot write the list");
	fprintf(stderr, "rbscope: %d probe%s in process %d%s\n", total, total == 1 ? "" : "s", pid,
		unreadable ? " (some mapped files could not be opened: run as root to see them all)" : "");
	return EXIT_OK;
}
