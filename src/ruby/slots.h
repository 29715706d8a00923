/* slots.h: the walker's memory of each thread between samples, and what the walker's parts share (slots.c). */
#ifndef RBSCOPE_SLOTS_H
#define RBSCOPE_SLOTS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../proc/mem.h"
#include "../proc/unwind.h"
#include "frames.h"
#include "label.h"
#include "sample.h"
#include "target.h"

/* The 8 bytes at off in a copy of the target's memory. */
static inline uint64_t walk_word(const unsigned char *p, int64_t off)
{
	uint64_t v;
	memcpy(&v, p + off, 8);
	return v;
}

/*
 * Per-thread memory of the previous sample: where the frames and the value
 * stack were. A steady-state sample reads a thread's rb_thread_t, its ec,
 * its frames and the top of its value stack in one readv, bracketed by two
 * reads of ec->cfp, so the frames are one near-instant picture of the stack.
 */
#define CACHE_SLOTS 256
#define SLOT_PROBES 16           /* slots a thread may take, from its hash on (walk_slot_of) */
#define SLACK_FRAMES 16          /* frames read beyond the last sample's innermost */
#define VS_SLACK 1024            /* value-stack bytes read beyond the last sample's top */
#define VS_MAX (64u << 10)       /* value-stack bytes read speculatively; deeper eps are read after */
#define HEAP_ENVS 4
#define AGAIN_FRAMES (2 * SLACK_FRAMES + 4) /* frames from the planned region's start read a second time */
#define VS_HEAD 2048             /* value-stack bytes below the planned top read with the innermost frames */
#define QUIET_FRAMES 512         /* deepest stack a slot remembers for quiet_read */

struct walk_slot {
	uint64_t th, ec;
	uint64_t stack, end; /* the ec's VM stack: value stack grows up from stack, frames down from end */
	struct ruby_call top; /* the call it was in at the last sample (top.cfp: its innermost frame) */
	uint64_t vs_top;     /* highest sp at the last sample */
	uint64_t name_val;   /* the Thread#name string last seen, and its strtab id */
	uint32_t name;
	/* env words of frames whose env escaped to the heap (a thread's block, TOPLEVEL_BINDING's env):
	   they sit at the outer end of the stack and stay put, so they are read once */
	struct heap_env {
		uint64_t ep, iseq, w[EP_WORDS];
	} heap[HEAP_ENVS];
	unsigned heap_next;
	/* The last clean read: its control frames as read and the frames named from them, for a thread whose
	   stack stays put (quiet_read); quiet when the two last reads found the same frames. */
	unsigned char *last_cfps;
	struct ruby_frame *last_frames;
	struct ruby_frame_at *last_at; /* and where each lived (WALK_LABELS) */
	int last_n, last_named, quiet;
	int last_cap; /* frames last_cfps and last_frames have room for */
	uint32_t label; /* WALK_LABELS: the request its last read in full served (a quiet read's frames are those) */
	int nulabels;   /* and --label's values then */
	struct ruby_label_value ulabels[USER_LABELS_MAX];
	struct label_words lwords; /* the words they were read from: a quiet read reads them again */
	/* --native, on its CPU without the GVL: the native frames of its last kernel sample, and of which call */
	struct native_frame *nat;
	int nat_n;
	struct ruby_call nat_call;
	uint64_t batch_gen; /* read the quiet way in batch number batch_gen, as its part batch_i */
	int batch_i;
	/* its tid where it is not in rb_thread_t (3.3+: in its native thread; 2.7: in glibc's pthread), kept
	   for quiet reads while that pointer stays, read again every TID_REREAD samples (vm_thread_tid) */
	uint64_t tid_key;
	int32_t tid;
	unsigned tid_uses;
	uint64_t used; /* the sample it was last asked for at (walk_slot_of's now) */
};

/* The parts of a quiet read of one thread (quiet_plan). */
struct quiet_parts {
	uint64_t e[3], me;
	uint64_t lw[LABEL_WORDS]; /* the slot's label words (lwords) */
	unsigned char *cfps; /* where its control frames are read to */
};

struct walk_cache {
	struct walk_slot slot[CACHE_SLOTS];
	uint64_t first_th; /* the thread heading the list at the last sample */
	uint64_t order[WALK_MAX_THREADS]; /* the threads in list order at the last sample that went through it */
	int norder;
	uint64_t batch_gen; /* batches of quiet reads taken (read_quiet_batch) */
	uint64_t gc_count;  /* the GC's count as this sample read it (gc_known), for labels (label.h) */
	int gc_known;
	struct ractor_name_seen { uint64_t val; uint32_t id; } ractor_names[8]; /* Ractor names read (String -> strtab id) */
	unsigned ractor_names_next;
	unsigned char *bth, *bcfps; /* a batch's rb_thread_t copies and control frames */
	size_t bcfps_cap;
	struct quiet_parts *bq;
	struct mem_iov *biov;
	unsigned char *buf; /* frames, then value stack */
	size_t cap;
	uint64_t (*eps)[EP_WORDS];
	struct mem_iov *iov;
	size_t n_cap;       /* entries in eps and iov */
	struct unwinder *unwind; /* WALK_NATIVE: opened on first use */
	int unwind_err;          /* why it could not be opened (then not tried again) */
	struct native_frame native[NATIVE_MAX];
	struct ruby_frame_at *at; /* WALK_LABELS: where each frame of a thread's read lives (WALK_MAX_FRAMES + 2) */
};

/* What stack_read_thread is asked for, and what it found. */
/* Reads a sample adds to its first thread's (the thread list, the GC's state and count, how many Ractors), at most. */
#define WALK_EXTRAS 4

struct thread_read {
	struct ruby_frame *out;       /* where the named frames go */
	struct ruby_frame_at *at;     /* and where each lives (NULL: not asked) */
	int no_quiet;                 /* every frame read again: no quiet read */
	int room;                     /* and how many fit */
	const struct mem_iov *extra;  /* read in the same call as the first try (the thread list, the GC's state) */
	int nextra;
	int nframes;
	int retried, salvaged, unchanged;
	int unreadable; /* every control frame read as zeros */
	int unstarted;  /* no VM stack yet: a thread created and not yet run (no frames) */
	const unsigned char *vs; /* the value stack [vs_lo, vs_hi) read with the frames (a full read's; else NULL) */
	uint64_t vs_lo, vs_hi;
};

/* Empty a slot (its thread gone, or the target flushed). */
void walk_slot_forget(struct walk_slot *w);
/* Free the walker's per-thread memory (registered with ruby_target_add_cache: flush and detach call it). */
void ruby_walk_free(struct ruby_target *t);
/*
 * The slot of thread th: its own from earlier samples, else a free one or
 * the longest unasked of the SLOT_PROBES from its hash on (that thread's
 * memory forgotten). Threads whose hashes meet keep a slot each. now: the
 * sample it is asked for at (target.h's samples), a slot's age.
 */
struct walk_slot *walk_slot_of(struct walk_cache *c, uint64_t th, uint64_t now);
/* Room in c's buffers for bytes of frames and value stack and n env reads: 0 or -ENOMEM. */
int walk_grow(struct walk_cache *c, size_t bytes, size_t n);

#endif
