/* profile.h: a recording of stack samples: interned frames and stacks, and every sample in order. */
#ifndef RBSCOPE_PROFILE_H
#define RBSCOPE_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../lib/map.h"
#include "../lib/strtab.h"

/* What a frame is, for colours, categories and filters. The numbers are those of --raw files. */
enum profile_frame_kind {
	PROFILE_FRAME_RUBY = 0,
	PROFILE_FRAME_CFUNC = 1,
	PROFILE_FRAME_TRUNCATED = 2, /* "(truncated)": the outer frames of a deeper stack left out */
	PROFILE_FRAME_GC = 3,        /* the VM collecting garbage, a pseudo-frame over the frame that triggered it */
	PROFILE_FRAME_WAIT = 4,      /* a method known to wait: sleep, Mutex#lock, Queue#pop, IO.select... */
	PROFILE_FRAME_STATE = 5,     /* the thread's state over its stack: "(waiting for GVL)", "(blocked: read)"... */
	PROFILE_FRAME_NATIVE = 6,    /* --native: a native function over the C method that called it; path is its file */
	PROFILE_FRAME_CLASS = 7,     /* an allocation profile's leaf: the class of the objects allocated ("String") */
	PROFILE_FRAME_LABEL = 8,     /* the request a sample's thread served ("GET /orders/:id"), over its Ruby frames;
				        a --label's value ("tenant=acme", its path the name "tenant") beside it: pprof
				        writes them as labels, the others leave them out (profile_without_labels) */
	PROFILE_FRAME_THREAD = 16,   /* --threads and --subprocesses roots */
};
/*
 * A Ruby frame's line when it ran JIT code whose pc the JIT had not saved:
 * its method is known, its line is not ("path:?" in text, no line in JSON
 * formats, 0 in pprof). Kept in --raw files as it is.
 */
#define PROFILE_LINE_UNKNOWN (-2)

/*
 * What a thread was doing in a sample, as its stack shows it: a state frame at
 * the top (waiting for the GVL, blocked), the GC's frame, a method that waits
 * (idle), or none of these (running Ruby or C code).
 */
enum profile_state {
	PROFILE_STATE_RUNNING,
	PROFILE_STATE_GVL,     /* runnable, waiting for the GVL */
	PROFILE_STATE_BLOCKED, /* in a system call or C code without the GVL, not a known wait */
	PROFILE_STATE_IDLE,    /* in a known wait: sleep, Queue#pop, IO.select, Mutex#lock, join... */
	PROFILE_STATE_GC,
	PROFILE_STATES
};


struct profile_frame {
	uint32_t name, path; /* ids in the profile's own strtab */
	int32_t line;
	uint32_t kind;       /* enum profile_frame_kind */
};

struct profile_stack {
	uint32_t start, len; /* frame ids in pool[start .. start+len), root first */
	uint64_t count;
	uint32_t state;      /* what it shows (enum profile_state), known when it is interned */
	uint64_t bytes;      /* an allocation profile's: the sizes of its sampled objects, summed */
};

/*
 * What a profile's samples are: threads seen at ticks (time), or objects
 * sampled at their allocation, one in alloc_interval on average, each with
 * its size (allocations; its stacks end in a PROFILE_FRAME_CLASS frame).
 */
enum profile_kind {
	PROFILE_TIME = 0,
	PROFILE_ALLOCS = 1,
};

struct profile_sample {
	uint64_t t_ns; /* since the start of the recording */
	int32_t tid;
	uint32_t stack;
};

/* A thread seen in the recording (for per-thread timelines and labels). */
struct profile_thread {
	int32_t tid;
	uint32_t name; /* strtab id of Thread#name, or "main" for the main thread, 0 if unnamed */
};

/*
 * Everything a writer needs, and all that a --raw file holds: any output
 * format can be made later from the same data (rbscope report).
 */
struct profile {
	struct strtab strs;
	struct profile_frame *frames;
	uint32_t nframes;
	size_t frames_cap;
	uint32_t *pool;
	uint64_t pool_len;
	size_t pool_cap;
	struct profile_stack *stacks;
	uint32_t nstacks;
	size_t stacks_cap;
	struct profile_sample *samples;
	uint64_t nsamples;
	size_t samples_cap;
	struct map frame_index; /* hash of a frame -> id + 1 */
	struct map stack_index; /* hash of a stack -> id + 1 (collisions re-seed) */
	struct profile_thread *threads;
	uint32_t nthreads;
	size_t threads_cap;
	uint64_t (*thread_states)[PROFILE_STATES]; /* per thread (as threads): its samples by enum profile_state */
	struct map thread_index;                   /* tid -> index in threads + 1 */
	int32_t n_mn_threads;                      /* M:N threads given a key (profile_mn_thread) */
	/* metadata */
	uint32_t kind;           /* enum profile_kind */
	uint64_t alloc_interval; /* PROFILE_ALLOCS: allocations per sample, on average */
	uint64_t alloc_total;    /* PROFILE_ALLOCS: the VM's own count of allocations while it was recorded, 0 if unknown */
	int by_bytes;            /* PROFILE_ALLOCS: a writer of one value per stack writes bytes, not objects */
	int alloc_live;          /* PROFILE_ALLOCS: the samples are of objects still alive (heap live), not of all made */
	int pid;
	uint32_t rate_hz;
	uint64_t duration_ns;
	uint64_t start_ns;     /* wall clock at the start, ns since the epoch */
	uint32_t ruby_version; /* strtab id */
	uint32_t command;      /* strtab id */
	uint64_t errors, torn, dropped;
	int keep_samples;      /* record each sample, not only per-stack counts */
	int keep_samples_all;  /* and hold them all: a --raw writer drops what it wrote otherwise */
};

/*
 * A thread's samples carry a key (profile_sample.tid, profile_thread.tid):
 * its kernel tid, or for an M:N thread (Ruby 3.3+ with RUBY_MN_THREADS=1,
 * running on whichever native thread is free) a negative number of the
 * profile's own, which its sampler keeps for it: a new one here (-1, -2...).
 */
int32_t profile_mn_thread(struct profile *p);
/* How a thread's key reads: "tid 1234", or "M:N thread 3". */
void profile_thread_ref(int32_t tid, char *out, size_t cap);

int profile_init(struct profile *p);
void profile_free(struct profile *p);
/* Intern a frame with strings given as text; its id or negative. */
int64_t profile_frame(struct profile *p, const char *name, const char *path, int32_t line, uint32_t kind);
/* Intern a stack of frame ids (root first); its id or negative. */
int64_t profile_stack(struct profile *p, const uint32_t *frames, uint32_t n);
/* Count one sample of stack at t_ns for tid. */
int profile_add(struct profile *p, uint32_t stack, uint64_t t_ns, int32_t tid);
/* Count one sampled allocation of bytes bytes (an allocation profile's profile_add). */
int profile_add_alloc(struct profile *p, uint32_t stack, uint64_t t_ns, int32_t tid, uint64_t bytes);
/*
 * What a stack weighs in the writers that show one value: its samples; in an
 * allocation profile the objects, or with by_bytes the bytes, they stand for.
 */
uint64_t profile_stack_weight(const struct profile *p, uint32_t stack);
/* Its estimated objects and bytes (an allocation profile's), for writers that show both. */
uint64_t profile_stack_objects(const struct profile *p, uint32_t stack);
uint64_t profile_stack_bytes(const struct profile *p, uint32_t stack);
/* What profile_stack_weight counts: "samples", "objects" or "bytes". */
const char *profile_unit(const struct profile *p);
/* Note thread tid's name (a string, "" for none); the first name seen is kept unless it was "". */
int profile_thread(struct profile *p, int32_t tid, const char *name);
/* The index of thread tid in p->threads, added unnamed if new; negative on error. */
int64_t profile_thread_index(struct profile *p, int32_t tid);
/* Count n more samples of stack for thread tid in its states (profile_add does for the samples it adds). */
int profile_count_states(struct profile *p, int32_t tid, uint32_t stack, uint64_t n);
/* Thread i's (index in p->threads) samples, in all states. */
uint64_t profile_thread_samples(const struct profile *p, uint32_t i);
/* Work out what each stack shows (the stacks of a profile read from a file, checked). */
void profile_restate(struct profile *p);
/* The state a stack shows (enum profile_state). */
int profile_stack_state(const struct profile *p, uint32_t stack);
/* A blocked stack's "(blocked: read)" leaf frame when --syscalls named the call, else -1. */
int64_t profile_stack_syscall(const struct profile *p, uint32_t stack);
/*
 * The states' one table (profile.c), each state's: name in summaries
 * ("running", "GVL wait", "blocked", "idle", "GC"), label in metrics and keys
 * ("running", "gvl_wait", "blocked", "idle", "gc"), and the state frame over
 * a stack that says it, or NULL ("(running without GVL)", "(waiting for
 * GVL)", "(blocked" + ")" or ": read)", "(sleeping)").
 */
const char *profile_state_name(int state);
const char *profile_state_label(int state);
const char *profile_state_frame(int state);
/* The name of thread tid ("" if unknown). */
const char *profile_thread_name(const struct profile *p, int32_t tid);
/* The total samples counted. */
uint64_t profile_total(const struct profile *p);
/* The total of profile_stack_weight() over every stack. */
uint64_t profile_total_weight(const struct profile *p);
/* Add src's stacks and their counts to dst (frames interned by their text), and its threads' states; samples not copied. */
int profile_merge(struct profile *dst, const struct profile *src);
/* The request's label frame (PROFILE_FRAME_LABEL with no path) of stack, or -1 when it has none. */
int64_t profile_stack_label(const struct profile *p, uint32_t stack);
/*
 * The --label frames of stack (PROFILE_FRAME_LABEL whose path is the label's
 * name, named "name=value"): up to max ids into out, their count.
 */
int profile_stack_user_labels(const struct profile *p, uint32_t stack, uint32_t *out, int max);
/* Does a stack of p hold a label frame (PROFILE_FRAME_LABEL)? */
int profile_has_labels(const struct profile *p);
/*
 * dst (initialised here): src without its label frames, stacks that differed
 * only by them merged; samples, threads and what the writers read kept.
 */
int profile_without_labels(struct profile *dst, const struct profile *src);
/* The same for the stacks whose state (profile_stack_state) has its bit in states, 1u << state. */
int profile_merge_states(struct profile *dst, const struct profile *src, unsigned states);
#define PROFILE_ALL_STATES ((1u << PROFILE_STATES) - 1)
/*
 * Add src's samples [from, to) that keep (NULL: all) says to keep, given each
 * one's thread and state, to dst: their stacks interned by their frames' text,
 * their threads' names with them. dst needs keep_samples to hold them in order.
 */
int profile_copy_samples(struct profile *dst, const struct profile *src, uint64_t from, uint64_t to,
			 int (*keep)(void *ctx, int32_t tid, int state), void *ctx);
/*
 * Put samples [from, nsamples) in time order among all of them, each keeping
 * its place among samples of the same time (a stable merge): [0, from) must be
 * in order already. A tick of several processes adds each one's samples in
 * turn, a process's captures from its own CPU timed before the tick; the
 * sampling loops call this after each tick, the --raw reader on the whole file.
 * 0 or -ENOMEM (the samples as they were).
 */
int profile_order_samples(struct profile *p, uint64_t from);
/* The index of the first sample at or after t_ns (samples are in time order). */
uint64_t profile_sample_at(const struct profile *p, uint64_t t_ns);
/* Forget the first n samples (their stacks keep their counts). */
void profile_drop_samples(struct profile *p, uint64_t n);

/*
 * The --raw format, written as the recording goes (raw.c): start, then flush
 * now and then (what was interned and sampled since the last flush; samples
 * are dropped from memory unless keep_samples), finish at the end. A file
 * whose writer was stopped before finish() reads up to its last flush.
 */
struct raw_writer {
	FILE *f;
	uint64_t arena, pool, samples, samples_dropped;
	uint32_t frames, stacks, ruby_version, command;
	uint32_t *thread_names, threads_cap; /* each thread's name as last written (~0: not yet) */
	int meta;
	uint64_t *bytes;    /* an allocation profile's: each stack's bytes as written so far */
	uint32_t bytes_cap;
	int alloc_meta;     /* its 'A' record written */
	uint64_t alloc_interval; /* the alloc_interval it gave (in windows it changes as the counts come) */
};
int raw_writer_start(struct raw_writer *w, FILE *f, const struct profile *p);
int raw_writer_flush(struct raw_writer *w, struct profile *p, int keep_samples);
int raw_writer_finish(struct raw_writer *w, struct profile *p, int keep_samples);
void raw_writer_free(struct raw_writer *w);
/*
 * Read a --raw file; ERR_BAD_FILE for anything malformed; *cut_short when its writer never finished.
 * Without keep_samples, a version 3 file's samples are counted per stack as they are read, not held
 * (an hour at 1 kHz over many threads is gigabytes of samples); version 2 files are read whole.
 */
int profile_read_raw(struct profile *p, FILE *f, int keep_samples, int *cut_short);

#endif
