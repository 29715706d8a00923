/* parts.c: reading several dumps at once on every core: each plain file cut into parts at line starts. */
#include "parts.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/err.h"
#include "../lib/vec.h"

#define MAX_THREADS 8
#define MIN_PART (1u << 20) /* below this, a thread costs more than it saves */

/* The CPUs this process may run on (taskset and cgroups' cpusets narrow it), at most MAX_THREADS. */
static int usable_cpus(void)
{
	cpu_set_t set;
	int n = sched_getaffinity(0, sizeof(set), &set) ? 1 : CPU_COUNT(&set);
	return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : n;
}

static int add_part(struct heap_parts *ps, int file, uint64_t start, uint64_t end)
{
	struct heap_part *v = vec_grow(ps->v, (size_t)ps->n, &ps->cap, sizeof(*v));
	if (!v)
		return -ENOMEM;
	ps->v = v;
	v[ps->n++] = (struct heap_part){ .file = file, .start = start, .end = end };
	return 0;
}

int heap_parts_open(struct heap_parts *ps, const char *const *paths, int npaths, uint64_t part_size)
{
	memset(ps, 0, sizeof(*ps));
	ps->threads = usable_cpus();
	for (int i = 0; i < HEAP_PARTS_MAX_FILES; i++)
		ps->fd[i] = -1;
	if (npaths > HEAP_PARTS_MAX_FILES)
		return -EINVAL;
	ps->npaths = npaths;
	for (int i = 0; i < npaths; i++) {
		int fd = heap_open(paths[i], &ps->plain[i], &ps->size[i]);
		if (fd < 0)
			ps->open_err[i] = fd;
		else
			ps->fd[i] = fd;
		/* Standard input is read from where it stands, so as one stream even when it is a file. */
		ps->split[i] = fd >= 0 && ps->plain[i] && strcmp(paths[i], "-") && (ps->threads > 1 || part_size);
		uint64_t size = ps->size[i], step = part_size ? part_size : size / ((uint64_t)ps->threads * 4);
		if (!part_size && step < MIN_PART)
			step = MIN_PART;
		if (!ps->split[i] || step >= size) {
			ps->split[i] = 0;
			if (add_part(ps, i, 0, size))
				return -ENOMEM;
			continue;
		}
		for (uint64_t at = 0; at < size; at += step)
			if (add_part(ps, i, at, size - at > step ? at + step : size))
				return -ENOMEM;
	}
	return 0;
}

struct run {
	struct heap_parts *ps;
	const int *todo; /* part indices */
	int ntodo;
	int next;        /* the next todo to claim, atomically */
	heap_fn fn;
};

static void read_one(struct heap_parts *ps, struct heap_part *p, heap_fn fn)
{
	int f = p->file;
	if (ps->open_err[f]) {
		p->err = ps->open_err[f];
	} else if (ps->split[f]) {
		p->err = heap_read_part(ps->fd[f], p->start, p->end, fn, p->arg, &p->st);
	} else {
		p->err = heap_read_fd(ps->fd[f], ps->plain[f], ps->size[f], fn, p->arg, &p->st);
		ps->fd[f] = -1; /* closed by heap_read_fd */
	}
}

static void *worker(void *arg)
{
	struct run *r = arg;
	int i;
	while ((i = __atomic_fetch_add(&r->next, 1, __ATOMIC_RELAXED)) < r->ntodo)
		read_one(r->ps, &r->ps->v[r->todo[i]], r->fn);
	return NULL;
}

void heap_parts_read(struct heap_parts *ps, unsigned files, heap_fn fn)
{
	int *todo = malloc((size_t)(ps->n ? ps->n : 1) * sizeof(*todo)), ntodo = 0;
	struct run r = { .ps = ps, .todo = todo, .fn = fn };
	if (!todo) { /* no list to share: read them here, in order */
		for (int i = 0; i < ps->n; i++)
			if (files & (1u << ps->v[i].file))
				read_one(ps, &ps->v[i], fn);
		return;
	}
	for (int i = 0; i < ps->n; i++)
		if (files & (1u << ps->v[i].file))
			todo[ntodo++] = i;
	r.ntodo = ntodo;
	pthread_t tid[MAX_THREADS];
	int nt = 0;
	while (nt + 1 < ps->threads && nt + 1 < ntodo && !pthread_create(&tid[nt], NULL, worker, &r))
		nt++;
	worker(&r); /* this thread reads too: one fewer to start */
	for (int i = 0; i < nt; i++)
		pthread_join(tid[i], NULL);
	free(todo);
}

int heap_parts_result(const struct heap_parts *ps, int file, struct heap_stats *st)
{
	memset(st, 0, sizeof(*st));
	int err = 0, k = 0;
	for (int i = 0; i < ps->n; i++) {
		const struct heap_part *p = &ps->v[i];
		if (p->file != file)
			continue;
		for (int j = 0; j < 3 && p->st.first_bad_line[j] && k < 3; j++)
			st->first_bad_line[k++] = st->lines + p->st.first_bad_line[j];
		st->lines += p->st.lines;
		st->records += p->st.records;
		st->bad += p->st.bad;
		st->bytes += p->st.bytes;
		st->cut |= p->st.cut;
		if (!err)
			err = p->err;
	}
	return err ? err : st->records ? 0 : ERR_BAD_FILE;
}

void heap_parts_close(struct heap_parts *ps)
{
	for (int i = 0; i < HEAP_PARTS_MAX_FILES; i++) {
		if (ps->fd[i] >= 0)
			close(ps->fd[i]);
		ps->fd[i] = -1;
	}
	free(ps->v);
	ps->v = NULL;
	ps->n = 0;
}
