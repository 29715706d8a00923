/* top_alloc.h: `rbscope top --mode alloc`, drawn by top.c's options. */
#ifndef RBSCOPE_TOP_ALLOC_H
#define RBSCOPE_TOP_ALLOC_H

#include <stdint.h>

struct top_alloc_view {
	int pid, tty, lines; /* lines: the terminal's */
	int rows, count;      /* as top's: the rows to show (-1: what fits, or all), tables (-1: no end) */
	double refresh, window;
	uint64_t interval;    /* one allocation in interval sampled */
	int by_bytes;
};

/* A table's end, either kind: "(N more)" of n rows when show were shown and not on a terminal, a blank line. 0 or -errno. */
int top_table_end(int tty, uint64_t n, uint64_t show);

/* Show the table every refresh until stopped, the count reached or the process gone: the exit code. */
int top_alloc_run(struct top_alloc_view *v);

#endif
