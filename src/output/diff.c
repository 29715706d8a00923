/* diff.c: report --diff's writers of their own: the largest changes as a table, and differential folded stacks. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/map.h"
#include "output.h"

#define DIFF_ROWS 15        /* functions listed that grew, and that shrank */
#define DIFF_MIN_PP 0.05    /* changes smaller than this are not */

struct change {
	uint32_t frame;
	uint64_t self[2], total[2]; /* BASE's, NEW's */
	double dself, dtotal;       /* in percentage points */
	/*
	 * Its place: its self grew (4), only its total did (3: the change is in
	 * what it calls), neither changed (2), only its total shrank (1), its
	 * self shrank (0); within one, by that change.
	 */
	int group;
	double key;
};

/* Growth in self first, the largest first; shrinking self last, the largest last. */
static int by_change(const void *a, const void *b)
{
	const struct change *x = a, *y = b;
	if (x->group != y->group)
		return x->group < y->group ? 1 : -1;
	return x->key < y->key ? 1 : x->key > y->key ? -1 : 0;
}

static void print_change(const struct profile_diff *d, const struct change *c, FILE *f)
{
	char label[1024];
	output_frame_label(&d->p, c->frame, 0, label, sizeof(label));
	double sb = d->base_total ? 100.0 * (double)c->self[0] / (double)d->base_total : 0;
	double sn = d->new_total ? 100.0 * (double)c->self[1] / (double)d->new_total : 0;
	double tb = d->base_total ? 100.0 * (double)c->total[0] / (double)d->base_total : 0;
	double tn = d->new_total ? 100.0 * (double)c->total[1] / (double)d->new_total : 0;
	fprintf(f, "%+6.2f pp %+6.2f pp  %6.2f%% -> %6.2f%%  %6.2f%% -> %6.2f%%  %s\n", c->dself, c->dtotal, sb, sn, tb,
		tn, label);
}

/* d's profile with BASE's weights: the same frames and stacks, another count (the caller frees stacks). */
static int base_view(const struct profile_diff *d, struct profile *v)
{
	*v = d->p;
	v->stacks = malloc((d->p.nstacks + 1) * sizeof(*v->stacks));
	if (!v->stacks)
		return -ENOMEM;
	for (uint32_t i = 0; i < d->p.nstacks; i++) {
		v->stacks[i] = d->p.stacks[i];
		v->stacks[i].count = v->stacks[i].bytes = d->base[i];
	}
	v->kind = d->p.kind; /* (allocations: weight = count or bytes, interval 1: both hold BASE's weight) */
	return 0;
}

int output_diff_summary(const struct profile_diff *d, FILE *f)
{
	struct profile b;
	struct summary_row *rows[2] = { NULL, NULL };
	uint32_t n[2] = { 0, 0 };
	uint64_t total[2];
	struct map at;
	map_init(&at);
	int err = base_view(d, &b);
	err = err ?: summary_rows(&b, 0, &rows[0], &n[0], &total[0]);
	err = err ?: summary_rows(&d->p, 0, &rows[1], &n[1], &total[1]);
	struct change *c = err ? NULL : calloc((size_t)n[0] + n[1] + 1, sizeof(*c));
	if (!err && !c)
		err = -ENOMEM;
	uint32_t nc = 0;
	for (int w = 0; w < 2 && !err; w++) {
		for (uint32_t i = 0; i < n[w]; i++) {
			uint64_t *hit = map_get(&at, rows[w][i].frame);
			uint32_t k = hit ? (uint32_t)*hit : nc;
			if (!hit) {
				c[nc++].frame = rows[w][i].frame;
				if (map_put(&at, rows[w][i].frame, k)) {
					err = -ENOMEM;
					break;
				}
			}
			c[k].self[w] = rows[w][i].self;
			c[k].total[w] = rows[w][i].total;
		}
	}
	for (uint32_t k = 0; k < nc; k++) {
		c[k].dself = profile_diff_pp(d, c[k].self[1], c[k].self[0]);
		c[k].dtotal = profile_diff_pp(d, c[k].total[1], c[k].total[0]);
		int self = fabs(c[k].dself) >= DIFF_MIN_PP, total = fabs(c[k].dtotal) >= DIFF_MIN_PP;
		c[k].key = self ? c[k].dself : c[k].dtotal;
		c[k].group = self ? (c[k].dself > 0 ? 4 : 0) : total ? (c[k].dtotal > 0 ? 3 : 1) : 2;
	}
	if (!err) {
		qsort(c, nc, sizeof(*c), by_change);
		const char *unit = profile_unit(&d->p);
		fprintf(f, "BASE: %llu %s, NEW: %llu %s; each function's share of its profile's total, NEW minus BASE\n",
			(unsigned long long)d->base_total, unit, (unsigned long long)d->new_total, unit);
		uint32_t grew = 0, shrank = 0;
		while (grew < nc && c[grew].group > 2)
			grew++;
		while (shrank < nc - grew && c[nc - 1 - shrank].group < 2)
			shrank++;
		if (!grew && !shrank)
			fprintf(f, "(no function's share changed by %.2f pp or more)\n", DIFF_MIN_PP);
		if (grew)
			fprintf(f, "\nGrew%s:\n%9s %9s  %17s  %17s  %s\n", grew > DIFF_ROWS ? " (the most)" : "", "self",
				"total", "self BASE -> NEW", "total BASE -> NEW", "function");
		for (uint32_t k = 0; k < grew && k < DIFF_ROWS; k++)
			print_change(d, &c[k], f);
		if (shrank)
			fprintf(f, "\nShrank%s:\n%9s %9s  %17s  %17s  %s\n", shrank > DIFF_ROWS ? " (the most)" : "",
				"self", "total", "self BASE -> NEW", "total BASE -> NEW", "function");
		for (uint32_t k = 0; k < shrank && k < DIFF_ROWS; k++)
			print_change(d, &c[nc - 1 - k], f);
	}
	map_free(&at);
	free(c);
	free(rows[0]);
	free(rows[1]);
	free(b.stacks);
	return err;
}

int output_diff_collapsed(const struct profile_diff *d, FILE *f)
{
	const struct profile *p = &d->p;
	for (uint32_t i = 0; i < p->nstacks; i++) {
		const struct profile_stack *s = &p->stacks[i];
		uint64_t w = profile_stack_weight(p, i);
		if (!w && !d->base[i])
			continue;
		for (uint32_t j = 0; j < s->len; j++) {
			char label[1024];
			output_frame_label(p, p->pool[s->start + j], 1, label, sizeof(label));
			for (char *q = label; *q; q++)
				if (*q == ';')
					*q = ':'; /* (the separator of frames) */
			fprintf(f, "%s%s", j ? ";" : "", label);
		}
		fprintf(f, " %llu %llu\n", (unsigned long long)d->base[i], (unsigned long long)w);
	}
	return ferror(f) ? -(errno ?: EIO) : 0;
}

/* The writers of a diff's formats: each takes output_options.diff, whose profile p is. */
static const struct profile_diff *diff_of(const struct profile *p)
{
	return output_options.diff && &output_options.diff->p == p ? output_options.diff : NULL;
}

static int write_summary(const struct profile *p, FILE *f)
{
	const struct profile_diff *d = diff_of(p);
	return d ? output_diff_summary(d, f) : -EINVAL;
}

static int write_collapsed(const struct profile *p, FILE *f)
{
	const struct profile_diff *d = diff_of(p);
	return d ? output_diff_collapsed(d, f) : -EINVAL;
}

static int write_pprof(const struct profile *p, FILE *f)
{
	struct pprof_options o = { .diff = diff_of(p) };
	return o.diff ? output_pprof_with(p, f, &o) : -EINVAL;
}

static const struct output_format diff_formats[] = {
	{ "summary", "the functions whose share changed most, in percentage points", write_summary, 0, 0 },
	{ "flamegraph", "NEW's flame graph, each frame red where its share grew, blue where it shrank", output_flamegraph, 0, 0 },
	{ "pprof", "NEW's samples and BASE's negated, for go tool pprof to show the difference", write_pprof, 0, 1 },
	{ "collapsed", "folded stacks with BASE's and NEW's weights (difffolded.pl's)", write_collapsed, 0, 0 },
	{ NULL, NULL, NULL, 0, 0 },
};

const struct output_format *output_diff_format(const char *name)
{
	for (const struct output_format *o = diff_formats; o->name; o++)
		if (!strcmp(o->name, name))
			return o;
	return NULL;
}
