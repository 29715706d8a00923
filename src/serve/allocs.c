/* allocs.c: serve's /debug/pprof/allocs and /debug/pprof/heap: a process's agent sampling its allocations for a request's seconds. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../agent/client.h"
#include "../agent/proto.h"
#include "../alloc/live.h"
#include "../lib/clock.h"
#include "../lib/err.h"
#include "../output/output.h"
#include "allocs.h"

#define AGENT_WAIT_MS 1000
#define AGENT_STOP_MS 300 /* (the sampling of every process waits meanwhile) */


struct serve_allocs {
	struct agent_conn conn;
	int connected, live;
	struct profile p;
	struct alloc_reader r;
	int reading;
	uint64_t t0;
};

int serve_allocs_start(struct serve_allocs **out, pid_t pid, int live, char *msg, size_t cap)
{
	struct serve_allocs *a = calloc(1, sizeof(*a));
	if (!a)
		return snprintf(msg, cap, "out of memory"), 500;
	a->live = live;
	int err = profile_init(&a->p);
	if (err) {
		free(a);
		return snprintf(msg, cap, "out of memory"), 500;
	}
	err = agent_connect(&a->conn, pid, AGENT_WAIT_MS);
	if (err) {
		snprintf(msg, cap, "process %d: %s%s", (int)pid, err_message(err),
			 err == ERR_NO_AGENT ? " (allocations are sampled by the rbscope gem in the process: load it, or "
					       "`rbscope eval -p PID --inject 1` once)" : "");
		serve_allocs_free(a);
		return 503;
	}
	a->connected = 1;
	char *reply;
	err = alloc_reader_open(&a->r, &a->p, &a->conn, ALLOC_INTERVAL, live ? ALLOC_LIVE : 0, 0, AGENT_WAIT_MS, &reply);
	if (err) {
		int ours = err == ERR_CORRUPT || err == -ENOMEM; /* (the agent answered; rbscope could not go on) */
		if (err == ERR_CORRUPT)
			snprintf(msg, cap, "process %d: the agent's allocation ring is not usable", (int)pid);
		else
			snprintf(msg, cap, "process %d: the agent %s", (int)pid,
				 err == ERR_AGENT && reply ? reply : err_message(err));
		free(reply);
		serve_allocs_free(a);
		return ours ? 500 : 503;
	}
	free(reply);
	a->reading = 1;
	a->p.pid = pid;
	struct timespec wall;
	clock_gettime(CLOCK_REALTIME, &wall);
	a->p.start_ns = (uint64_t)wall.tv_sec * 1000000000u + (uint64_t)wall.tv_nsec;
	a->t0 = clock_now_ns();
	*out = a;
	return 0;
}

int serve_allocs_drain(struct serve_allocs *a)
{
	if (alloc_reader_drain_all(&a->r) < 0)
		return -1;
	struct pollfd pf = { .fd = a->conn.fd, .events = POLLIN };
	return poll(&pf, 1, 0) > 0 ? -1 : 0; /* (the agent says nothing until asked: its end closed) */
}

int serve_allocs_finish(struct serve_allocs *a, struct buf *out)
{
	int gone = 0;
	if (agent_stop(&a->conn, AGENT_STOP_MS, alloc_reader_drain_ctx, &a->r, &gone) < 0 || alloc_reader_drain_all(&a->r) < 0)
		return ERR_CORRUPT;
	a->p.duration_ns = clock_now_ns() - a->t0;
	if (a->live)
		live_to_profile(&a->r);
	char comment[160];
	snprintf(comment, sizeof(comment), "rbscope serve: process %d's %s, one in " ALLOC_INTERVAL_TEXT " sampled by its agent", a->p.pid,
		 a->live ? "objects alive of those allocated while it sampled" : "allocations");
	struct pprof_options po = { .comment = comment };
	char *mem = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&mem, &len);
	int err = f ? output_pprof_with(&a->p, f, &po) : -errno;
	if (f && fclose(f) && !err)
		err = -EIO;
	if (!err)
		err = buf_add(out, mem, len);
	free(mem);
	return err;
}

void serve_allocs_free(struct serve_allocs *a)
{
	if (!a)
		return;
	if (a->reading)
		alloc_reader_free(&a->r);
	if (a->connected)
		agent_close(&a->conn);
	profile_free(&a->p);
	free(a);
}
