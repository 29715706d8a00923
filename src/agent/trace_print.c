/* trace_print.c: the agent's event ring read and printed as text: calls with their values and durations, GCs, callers. */
#include "trace_print.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../lib/vec.h"

/* Calls held back for their returns: past this many threads with one each, the oldest is printed. */
#define MAX_PENDING 256

void trace_printer_init(struct trace_printer *p, FILE *out, int slow_cpu)
{
	memset(p, 0, sizeof(*p));
	p->out = out;
	p->slow_cpu = slow_cpu;
	p->last_tid = UINT32_MAX;
}

void trace_printer_free(struct trace_printer *p)
{
	for (uint32_t i = 0; i < p->nnames; i++)
		free(p->names[i]);
	free(p->names);
	for (size_t i = 0; i < p->npending; i++)
		buf_free(&p->pending[i].args);
	free(p->pending);
	memset(p, 0, sizeof(*p));
}

static const char *name_of(struct trace_printer *p, uint32_t id)
{
	return id < p->nnames && p->names[id] ? p->names[id] : "?";
}

static void thread_line(struct trace_printer *p, uint32_t tid)
{
	if (tid != p->last_tid)
		fprintf(p->out, "-- thread %u\n", tid);
	p->last_tid = tid;
}

/* "  Klass#meth" indented by depth, with "(values)" when there are some. */
static void call_line(struct trace_printer *p, const struct ring_call *c, const char *args, size_t n)
{
	static const char spaces[200] = { [0 ... 199] = ' ' };
	thread_line(p, c->tid);
	fwrite_unlocked(spaces, 1, c->depth * 2 % 200, p->out);
	fputs_unlocked(name_of(p, c->id), p->out);
	if (n) {
		fputc_unlocked('(', p->out);
		fwrite_unlocked(args, 1, n, p->out);
		fputc_unlocked(')', p->out);
	}
}

static struct trace_pending *pending_of(struct trace_printer *p, uint32_t tid)
{
	for (size_t i = 0; i < p->npending; i++)
		if (p->pending[i].used && p->pending[i].call.tid == tid)
			return &p->pending[i];
	return NULL;
}

static void print_pending(struct trace_printer *p, struct trace_pending *t)
{
	t->used = 0;
	call_line(p, &t->call, t->args.data, t->args.len);
	fputc_unlocked('\n', p->out);
}

void trace_printer_flush_older(struct trace_printer *p, uint64_t before_ns)
{
	for (;;) {
		struct trace_pending *oldest = NULL;
		for (size_t i = 0; i < p->npending; i++)
			if (p->pending[i].used && p->pending[i].call.ts < before_ns &&
			    (!oldest || p->pending[i].call.ts < oldest->call.ts))
				oldest = &p->pending[i];
		if (!oldest)
			return;
		print_pending(p, oldest);
	}
}

void trace_printer_flush(struct trace_printer *p)
{
	trace_printer_flush_older(p, UINT64_MAX);
}

/* A slot for thread tid's pending call: a free one, or a new one, or the oldest printed to make room. */
static struct trace_pending *new_pending(struct trace_printer *p)
{
	struct trace_pending *oldest = NULL;
	for (size_t i = 0; i < p->npending; i++) {
		if (!p->pending[i].used)
			return &p->pending[i];
		if (!oldest || p->pending[i].call.ts < oldest->call.ts)
			oldest = &p->pending[i];
	}
	if (p->npending < MAX_PENDING) {
		struct trace_pending *v = vec_grow(p->pending, p->npending, &p->cap_pending, sizeof(*v));
		if (v) {
			p->pending = v;
			struct trace_pending *t = &v[p->npending++];
			memset(t, 0, sizeof(*t));
			buf_init(&t->args, 1 << 20);
			return t;
		}
	}
	if (oldest)
		print_pending(p, oldest);
	return oldest;
}

/*
 * ns as seconds with six decimals, rounded like printf's %.6f, into b: the printer's hot spot was
 * formatting floating point (two thirds of its time at millions of calls a second).
 */
static size_t fmt_secs(char *b, uint64_t ns)
{
	uint64_t us = ns / 1000 + (ns % 1000 >= 500), sec = us / 1000000, frac = us % 1000000;
	char digits[24];
	size_t n = 0, k = 0;
	do {
		digits[n++] = (char)('0' + sec % 10);
		sec /= 10;
	} while (sec);
	while (n)
		b[k++] = digits[--n];
	b[k++] = '.';
	for (int i = 5; i >= 0; i--, frac /= 10)
		b[k + (size_t)i] = (char)('0' + frac % 10);
	return k + 6;
}

static void print_dur(struct trace_printer *p, const struct ring_call *c)
{
	char b[96];
	size_t k = 0;
	b[k++] = ' ';
	b[k++] = '<';
	k += fmt_secs(b + k, c->dur);
	if (p->slow_cpu) {
		memcpy(b + k, " wall, ", 7);
		k += 7;
		k += fmt_secs(b + k, c->cpu);
		memcpy(b + k, " cpu", 4);
		k += 4;
	}
	b[k++] = '>';
	b[k++] = '\n';
	fwrite_unlocked(b, 1, k, p->out);
}

static int keep_name(struct trace_printer *p, const struct ring_name *n)
{
	if (n->id > 1u << 24 || n->len > n->r.len - sizeof(*n))
		return -1;
	if (n->id >= p->nnames) {
		uint32_t cap = (n->id + 1) * 2;
		char **v = realloc(p->names, cap * sizeof(*v));
		if (!v)
			return -1;
		memset(v + p->nnames, 0, (cap - p->nnames) * sizeof(*v));
		p->names = v;
		p->nnames = cap;
	}
	free(p->names[n->id]);
	p->names[n->id] = strndup((const char *)(n + 1), n->len);
	return 0;
}

/* A CALL or RETURN record, or NULL if too short for itself and its text. */
static const struct ring_call *call_rec(const struct ring_rec *r)
{
	const struct ring_call *c = (const struct ring_call *)r;
	return r->len < sizeof(*c) || c->text > r->len - sizeof(*c) ? NULL : c;
}

static int print_call(struct trace_printer *p, const struct ring_call *c)
{
	struct trace_pending *t = pending_of(p, c->tid);
	if (t) /* the call before it on this thread has traced calls inside: a line of its own */
		print_pending(p, t);
	else if (!(t = new_pending(p)))
		return -1;
	t->call = *c;
	buf_reset(&t->args);
	if (buf_add(&t->args, c + 1, c->text) < 0)
		return -1;
	t->used = 1;
	p->events++;
	return 0;
}

/* A RETURN, with the text after it (c->text bytes). */
static void print_return(struct trace_printer *p, const struct ring_call *c, const char *text)
{
	struct trace_pending *t = pending_of(p, c->tid);
	p->events++;
	/* A call whose return comes next on its thread goes on one line, with its values. */
	if (t && t->call.id == c->id && t->call.depth == c->depth) {
		t->used = 0;
		call_line(p, c, t->args.data, t->args.len);
	} else {
		if (t)
			print_pending(p, t);
		call_line(p, c, text, c->text);
	}
	print_dur(p, c);
}

int trace_printer_rec(struct trace_printer *p, const struct ring_rec *r)
{
	const struct ring_call *c;
	switch (r->type) {
	case RING_NAME:
		return r->len < sizeof(struct ring_name) ? -1 : keep_name(p, (const struct ring_name *)r);
	case RING_CALL:
		return (c = call_rec(r)) ? print_call(p, c) : -1;
	case RING_RETURN:
		if (!(c = call_rec(r)))
			return -1;
		print_return(p, c, (const char *)(c + 1));
		return 0;
	case RING_RET: {
		if (r->len < sizeof(struct ring_ret))
			return -1;
		const struct ring_ret *s = (const struct ring_ret *)r;
		struct ring_call full = { .id = s->id, .tid = s->tid, .ts = s->ts, .dur = s->dur, .depth = r->flags };
		print_return(p, &full, NULL);
		return 0;
	}
	case RING_GC: {
		if (r->len < sizeof(struct ring_gc))
			return -1;
		const struct ring_gc *g = (const struct ring_gc *)r;
		p->events++;
		fprintf(p->out, "GC #%llu %s: paused %.3f ms in %u step%s; marked in %.3f ms, swept by %.3f ms\n",
			(unsigned long long)g->count, g->major ? "major" : "minor", g->pause / 1e6, g->steps,
			g->steps == 1 ? "" : "s", g->mark / 1e6, g->total / 1e6);
		return 0;
	}
	case RING_TEXT: {
		const struct ring_text *t = (const struct ring_text *)r;
		if (r->len < sizeof(*t) || t->len > r->len - sizeof(*t))
			return -1;
		struct trace_pending *held = pending_of(p, t->tid);
		if (held)
			print_pending(p, held);
		const char *s = (const char *)(t + 1), *e = s + t->len;
		while (s < e) {
			const char *nl = memchr(s, '\n', (size_t)(e - s));
			size_t n = nl ? (size_t)(nl - s) : (size_t)(e - s);
			fprintf(p->out, "%s%.*s\n", r->flags == RING_TEXT_CALLERS ? "    from " : "", (int)n, s);
			s += n + 1;
		}
		return 0;
	}
	}
	return 0; /* a newer agent's record: skip it */
}

long trace_drain(struct ring_cons *rc, struct trace_printer *p)
{
	long n = 0;
	int bad = 0;
	const struct ring_rec *r;
	while (n < TRACE_DRAIN_BATCH && (r = ring_peek(rc, &bad))) {
		if (trace_printer_rec(p, r) < 0)
			return -1;
		ring_release(rc, r);
		n++;
	}
	ring_publish(rc);
	return bad ? -1 : n;
}

struct ring_hdr *trace_map_ring(int fd, size_t *len)
{
	struct ring_hdr *h = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	if (h == MAP_FAILED)
		return NULL;
	uint64_t size = h->size;
	int ok = h->magic == RING_MAGIC && h->version == RING_VERSION && h->data_off == 4096 && size >= 4096 &&
		 size <= (1ull << 30) && !(size & (size - 1));
	munmap(h, 4096);
	if (!ok)
		return NULL;
	*len = ring_map_size(size);
	h = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	return h == MAP_FAILED ? NULL : h;
}
