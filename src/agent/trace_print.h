/* trace_print.h: the agent's event ring (ring.h) read and printed as text, one line per traced call. */
#ifndef RBSCOPE_TRACE_PRINT_H
#define RBSCOPE_TRACE_PRINT_H

#include <stdint.h>
#include <stdio.h>

#include "../lib/buf.h"
#include "ring.h"

/* A call seen without its return yet, one per thread at most. */
struct trace_pending {
	struct ring_call call;
	struct buf args; /* the values of its expressions */
	int used;
};

/*
 * Turns records into lines. A call whose return follows on the same thread
 * goes on one line with its values and duration, even when other threads'
 * records come in between; a call with traced calls inside it gets a line of
 * its own first, indented by depth. "-- thread N" precedes a run of lines of
 * another thread.
 */
struct trace_printer {
	FILE *out;
	int slow_cpu;          /* durations as "wall, cpu" */
	char **names;          /* method labels by id (RING_NAME) */
	uint32_t nnames;
	uint32_t last_tid;     /* of the last line printed */
	struct trace_pending *pending;
	size_t npending, cap_pending;
	uint64_t events;       /* calls and returns and GCs printed */
};

void trace_printer_init(struct trace_printer *p, FILE *out, int slow_cpu);
void trace_printer_free(struct trace_printer *p);

/* One record; -1 if it makes no sense (too short for what it says it holds). Unknown types are skipped. */
int trace_printer_rec(struct trace_printer *p, const struct ring_rec *r);

/* Prints the calls still waiting for their returns, oldest first (at the end). */
void trace_printer_flush(struct trace_printer *p);
/*
 * The same for the calls made before before_ns (CLOCK_MONOTONIC, as the
 * records' ts): when the ring is idle, a long call is shown without waiting
 * for its return, while a short one in flight keeps its line whole.
 */
void trace_printer_flush_older(struct trace_printer *p, uint64_t before_ns);

#define TRACE_DRAIN_BATCH 65536

/* What the ring holds now, up to TRACE_DRAIN_BATCH records: how many, or -1 if a record is corrupt. */
long trace_drain(struct ring_cons *rc, struct trace_printer *p);

/* The ring of the memfd fd mapped read-write (the consumer writes its tail), its length in *len; NULL if not a ring. */
struct ring_hdr *trace_map_ring(int fd, size_t *len);

#endif
