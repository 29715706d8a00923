/* alloc.h: an allocation profile: the agent's ring of sampled allocations (ext/rbscope/alloc.c) read into a profile. */
#ifndef RBSCOPE_ALLOC_H
#define RBSCOPE_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "../agent/ring.h"
#include "../profile/profile.h"

/* An agent's name (RING_FRAME or RING_NAME) in the profile's strings. */
struct alloc_name {
	uint32_t name, path; /* strtab ids of p */
	uint32_t kind;       /* PROFILE_FRAME_RUBY, _CFUNC, or _CLASS for a class */
	uint32_t known;
};

/*
 * Reads the ring and adds each sample to the profile (PROFILE_ALLOCS) as the
 * stack that allocated it, root first, under a leaf naming its class; a C
 * method at its caller's line, as the walker shows it.
 */
struct alloc_reader {
	struct profile *p;
	struct ring_hdr *h;
	size_t map_len;
	struct ring_cons rc;
	struct alloc_name *names; /* by the agent's id */
	uint32_t nnames;
	struct map frames;        /* agent id << 32 | line -> the profile's frame id + 1 */
	uint32_t *stack;          /* frame ids being put together */
	uint32_t stack_cap;
	int threads_root;         /* a root frame per thread */
	uint64_t t0;              /* the agent's clock at the start (CLOCK_MONOTONIC) */
	int started, ended;       /* the first and last RING_ALLOCS seen */
	struct ring_allocs first, last;
	uint64_t samples, truncated, unnamed;
	/* heap live: the samples whose objects are alive, and by stack (grown with p's stacks) */
	int follow;
	struct map alive;         /* sample id -> index in followed + 1 (~0 once freed) */
	struct alloc_followed {
		uint32_t stack, born; /* born: the epoch it was read in; stack ~0 once freed */
		uint64_t bytes, id;
	} *followed;
	uint64_t nfollowed, followed_cap;
	uint32_t epoch;           /* bumped by the reader's user (heap live: at each look) */
	uint64_t *live, *live_bytes;
	uint32_t live_cap;
	uint64_t freed, free_unknown;
};

/*
 * Map the ring of memfd fd and make p an allocation profile. 0, or
 * ERR_AGENT (not a ring this rbscope reads) or -ENOMEM.
 */
int alloc_reader_init(struct alloc_reader *r, struct profile *p, int fd, int threads_root);
/*
 * The default mean allocations between two samples, for every command that samples them. The cost is
 * mostly the hook's time in (its windows), less the samples (docs/benchmarks.md: on a loop that only
 * allocates, the hook's time 0.55-0.75%, the samples at 1024 about 0.45%): dense enough that a site of 2%
 * of a 30 s recording's allocations has a couple of thousand samples.
 */
#define ALLOC_INTERVAL 1024
#define ALLOC_INTERVAL_TEXT "1024"
/* alloc_reader_open's flags */
enum {
	ALLOC_LIVE = 1,       /* follow each sampled object until it is freed (heap live) */
	ALLOC_NO_WINDOWS = 2, /* the hook in throughout, not in windows (ext/rbscope/alloc.c) */
};
/*
 * Ask c's agent to sample allocations, one in interval at random (flags: ALLOC_*), and init r on the ring it
 * passes (as alloc_reader_init, then alloc_reader_follow with ALLOC_LIVE).
 * 0 with *reply the agent's word of what it does (malloc'ed); else agent_request()'s error (ERR_AGENT: the
 * agent's reason in *reply), ERR_CORRUPT (no ring this rbscope reads) or -ENOMEM. *reply is freed by the
 * caller either way.
 */
struct agent_conn;
int alloc_reader_open(struct alloc_reader *r, struct profile *p, struct agent_conn *c, uint64_t interval,
		      unsigned flags, int threads_root, int timeout_ms, char **reply);
/*
 * What one sample stands for, in allocations, as of the counts now (first: at the start). With the hook
 * in throughout, the interval; in windows, the mean gap inside them scaled by all the VM's allocations over
 * those the hook saw (a ratio that corrects for windows the program's own pace opened late or long).
 */
uint64_t alloc_weight(const struct ring_allocs *first, const struct ring_allocs *now);
/* Follow the samples' objects (the agent asked for live=1): live[stack] and live_bytes[stack] say what is alive. */
void alloc_reader_follow(struct alloc_reader *r);
/* Forget the followed objects freed (when they are most of them); 0 or -ENOMEM. */
int alloc_reader_compact(struct alloc_reader *r);
void alloc_reader_free(struct alloc_reader *r);
#define ALLOC_DRAIN_BATCH 65536
/*
 * How often a reader drains the ring when a batch left it empty: 50 wake-ups a second (each costs the
 * machine 15-40 us of CPU, which on a busy host is the target's). The ring (8 MB) holds seconds of samples
 * at the default interval, and a full batch is read again at once.
 */
#define ALLOC_READ_MS 20
/* What the ring holds now, up to ALLOC_DRAIN_BATCH records: how many, or ERR_AGENT if a record is corrupt, -ENOMEM. */
long alloc_reader_drain(struct alloc_reader *r);
/* All the ring holds now, batch after batch: 0, ERR_CORRUPT or -ENOMEM. */
int alloc_reader_drain_all(struct alloc_reader *r);
/* The same as agent_stop() (agent/client.h) wants its reader: ctx the alloc_reader. */
int alloc_reader_drain_ctx(void *ctx);
/* Records the agent could not write, the ring being full (besides the samples it counted lost itself). */
uint64_t alloc_reader_dropped(const struct alloc_reader *r);

/*
 * The site of an allocation profile's stack st: the frame that allocated
 * (the innermost one under the class, *where) and the class frame (*klass).
 * 0, or -1 when the stack is not one of an allocation.
 */
int alloc_stack_site(const struct profile *p, uint32_t st, uint32_t *where, uint32_t *klass);
/* "path:line Class" of a site (the frame's own name when it has no file). */
void alloc_site_label(const struct profile *p, uint32_t where, uint32_t klass, char *out, size_t cap);

#endif
