/* ring.h: the shared-memory ring that carries trace events from the agent to the CLI without ever blocking the traced program. */
#ifndef RBSCOPE_RING_H
#define RBSCOPE_RING_H

/*
 * The agent creates a memfd holding a ring_hdr and a power-of-two data area
 * after it, and passes the fd to the CLI, which maps it too. One producer
 * (the traced program; every hook runs holding the GVL) and one consumer.
 * head and tail count bytes ever written and read; a record never wraps:
 * where one would not fit before the end, a RING_PAD record fills the rest.
 * A record that does not fit in the free space is dropped and counted: the
 * program never waits for the CLI.
 */
#include <stddef.h>
#include <stdint.h>

#define RING_MAGIC 0x72627363u /* "rbsc" */
#define RING_VERSION 2
#define RING_AHEAD 2048 /* bytes ahead of the writer it prefetches */

struct ring_hdr {
	uint32_t magic, version;
	uint64_t size;       /* bytes of data, a power of two */
	uint64_t data_off;   /* where the data starts in the mapping */
	uint64_t head __attribute__((aligned(64)));    /* written by the producer */
	uint64_t dropped;    /* records the producer could not fit */
	uint64_t tail __attribute__((aligned(64)));    /* written by the consumer */
};

/* Every record starts with this; len includes it and is a multiple of 8. */
struct ring_rec {
	uint32_t len;
	uint16_t type;
	uint16_t flags;
};

enum ring_type {
	RING_PAD = 0,
	RING_NAME = 1,   /* ring_name: a method id's label, sent before its first use */
	RING_CALL = 2,   /* ring_call, maybe with the values of the method's expressions */
	RING_RETURN = 3, /* ring_call; dur/cpu set; with expression values under --slow */
	RING_GC = 4,     /* ring_gc */
	RING_TEXT = 5,   /* ring_text: a slow call's callers, notes */
	RING_RET = 6,    /* ring_ret: a RETURN with no CPU time nor text, the common case, in two thirds of the bytes */
	RING_FRAME = 7,  /* ring_frame: an allocation frame's id, kind, label and path, sent before its first use */
	RING_ALLOC = 8,  /* ring_alloc: one sampled allocation and the frames that made it */
	RING_ALLOCS = 9, /* ring_allocs: the allocation counts so far, at the start and the end */
	RING_FREE = 10,  /* ring_free: a sampled object followed since (heap live) was freed */
};

struct ring_name {
	struct ring_rec r;
	uint32_t id;
	uint32_t len;
	/* char name[len] */
};

struct ring_call {
	struct ring_rec r;
	uint32_t id;    /* method id (RING_NAME) */
	uint32_t tid;   /* kernel thread id */
	uint64_t ts;    /* CLOCK_MONOTONIC ns at call or return */
	uint64_t dur;   /* RETURN: wall ns since the call */
	uint64_t cpu;   /* RETURN: thread CPU ns since the call, when asked for */
	uint32_t depth; /* nesting among traced calls of this thread */
	uint32_t text;  /* bytes of text after the record: "name=value, ..." of a call's expressions (0: none) */
};

struct ring_ret {
	struct ring_rec r; /* flags: depth */
	uint32_t id;
	uint32_t tid;
	uint64_t ts;
	uint64_t dur;
};

/* One garbage collection, written when its sweep ends. */
struct ring_gc {
	struct ring_rec r;
	uint32_t major; /* 1 for a major (full) GC */
	uint32_t steps; /* how many times the program stopped for it (incremental marking, lazy sweeping) */
	uint64_t count; /* GC.count */
	uint64_t ts;    /* when it started */
	uint64_t mark;  /* ns from start to the end of marking */
	uint64_t total; /* ns from start to the end of sweeping */
	uint64_t pause; /* ns the program was stopped for it, all steps */
};

enum { RING_TEXT_CALLERS = 2, RING_TEXT_NOTE = 3 };

/*
 * `record --mode alloc`: the agent samples allocations at random by count
 * (ext/rbscope/alloc.c). Frames and classes are named once (RING_FRAME,
 * RING_NAME), from one id space.
 */
enum { RING_FRAME_RUBY = 0, RING_FRAME_CFUNC = 1 };

struct ring_frame {
	struct ring_rec r;
	uint32_t id;
	uint32_t kind;     /* RING_FRAME_* */
	uint32_t name_len; /* Ruby's label: "Foo#bar", "block in Foo#bar", "Array#map" */
	uint32_t path_len; /* its file; 0 for a C method */
	/* char name[name_len], path[path_len] */
};

struct ring_alloc_frame {
	uint32_t id;
	int32_t line; /* 0 for a C method */
};

struct ring_alloc {
	struct ring_rec r;
	uint32_t tid;     /* kernel thread id */
	uint32_t klass;   /* its class's name id (RING_NAME) */
	uint64_t ts;      /* CLOCK_MONOTONIC ns */
	uint64_t bytes;   /* its size (ObjectSpace.memsize_of) when the agent named it, soon after */
	uint32_t nframes; /* frames after the record, innermost first */
	uint32_t truncated; /* the stack had more frames than were sent */
	uint64_t id;      /* the sample's number, which its RING_FREE gives when the object is followed */
	/* struct ring_alloc_frame frames[nframes] */
};

struct ring_free {
	struct ring_rec r;
	uint64_t id;
};

struct ring_allocs {
	struct ring_rec r; /* flags: 1 at the end (also sent between, when compactions changes) */
	uint64_t vm_total; /* GC.stat(:total_allocated_objects) */
	uint64_t seen;     /* allocations the hook saw since the start */
	uint64_t sampled;  /* samples taken */
	uint64_t lost;     /* samples taken but not sent (the ring full, or too many waiting to be named) */
	uint64_t interval; /* the mean allocations between samples */
	uint64_t ts;
	uint64_t live;     /* sampled objects followed and alive now (0 unless live) */
	uint64_t untracked; /* sampled objects not followed: the table was full */
	uint64_t frees_lost; /* frees of followed objects not sent (the ring full): alive for the reader, wrongly */
	uint64_t compactions; /* GC.compact runs since the start: objects it moved are no longer followed */
	uint64_t den;      /* 1: the hook in throughout; else in windows open 1/den of the time, sampling one in interval/den */
	uint64_t windows;  /* windows opened since the start (seen counts only the allocations inside them) */
	uint64_t hook_ns;  /* ns the hook was in since the start (all of it with den 1) */
};

struct ring_text {
	struct ring_rec r; /* flags: RING_TEXT_* */
	uint32_t tid;
	uint32_t len;
	/* char text[len] */
};

static inline size_t ring_align(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* Bytes to map for a ring with size bytes of data. */
static inline size_t ring_map_size(uint64_t size)
{
	return (size_t)(4096 + size);
}

/*
 * Each side keeps its own copy of the other's counter and re-reads the shared
 * one only when that copy says the ring is full (producer) or empty
 * (consumer), and the consumer publishes its tail once per batch: the two
 * cores then rarely touch the same cache line, which is most of the cost of
 * a naive shared ring.
 */
struct ring_prod {
	struct ring_hdr *h;
	char *data;
	uint64_t head, tail, mask, size;
};

struct ring_cons {
	struct ring_hdr *h;
	const char *data;
	uint64_t head, tail, mask, size;
};

static inline void ring_prod_init(struct ring_prod *p, struct ring_hdr *h)
{
	p->h = h;
	p->data = (char *)h + h->data_off;
	p->head = h->head;
	p->tail = __atomic_load_n(&h->tail, __ATOMIC_ACQUIRE);
	p->size = h->size;
	p->mask = h->size - 1;
}

static inline void ring_cons_init(struct ring_cons *c, struct ring_hdr *h)
{
	c->h = h;
	c->data = (const char *)h + h->data_off;
	c->tail = h->tail;
	c->head = __atomic_load_n(&h->head, __ATOMIC_ACQUIRE);
	c->size = h->size;
	c->mask = h->size - 1;
}

/*
 * Producer: a pointer to len bytes (aligned) for a record of this type, or
 * NULL when full (counted in dropped). ring_commit() publishes it.
 */
static inline void *ring_reserve(struct ring_prod *p, uint32_t len, uint16_t type)
{
	uint64_t pos = p->head & p->mask;
	uint64_t room_to_end = p->size - pos;
	len = (uint32_t)ring_align(len);
	uint64_t need = len <= room_to_end ? len : room_to_end + len;
	if (len > p->size / 2)
		goto full;
	if (p->head + need - p->tail > p->size) {
		p->tail = __atomic_load_n(&p->h->tail, __ATOMIC_ACQUIRE);
		if (p->head + need - p->tail > p->size)
			goto full;
	}
	if (len > room_to_end) {
		struct ring_rec *pad = (struct ring_rec *)(p->data + pos);
		pad->len = (uint32_t)room_to_end;
		pad->type = RING_PAD;
		p->head += room_to_end;
		pos = 0;
	}
	struct ring_rec *r = (struct ring_rec *)(p->data + pos);
	r->len = len;
	r->type = type;
	r->flags = 0;
	/*
	 * The line records about 2 KB on will use, fetched now: a record
	 * written to a line not in the cache waits for it, and with it
	 * the writes after it (on a loop that waits on memory, a third
	 * of what a traced call cost; bench/trace). Not when the ring is
	 * nearly full: that line may be the one the reader is reading.
	 */
	if (p->head + RING_AHEAD * 2 - p->tail <= p->size)
		__builtin_prefetch(p->data + ((pos + RING_AHEAD) & p->mask), 1, 3);
	return r;
full:
	__atomic_store_n(&p->h->dropped, p->h->dropped + 1, __ATOMIC_RELAXED);
	return NULL;
}

static inline void ring_commit(struct ring_prod *p, void *rec)
{
	p->head += ((struct ring_rec *)rec)->len;
	__atomic_store_n(&p->h->head, p->head, __ATOMIC_RELEASE);
}

/*
 * Consumer: the next record or NULL when empty. The record stays valid
 * until ring_release(). A record whose len makes no sense returns NULL and
 * sets *bad (the ring is then unusable). ring_publish() hands the space
 * read so far back to the producer: call it after a batch.
 */
static inline const struct ring_rec *ring_peek(struct ring_cons *c, int *bad)
{
	for (;;) {
		if (c->tail == c->head) {
			c->head = __atomic_load_n(&c->h->head, __ATOMIC_ACQUIRE);
			if (c->tail == c->head)
				return NULL;
		}
		uint64_t pos = c->tail & c->mask;
		const struct ring_rec *r = (const struct ring_rec *)(c->data + pos);
		if (r->len < sizeof(*r) || r->len % 8 || r->len > c->size - pos || r->len > c->head - c->tail) {
			*bad = 1;
			return NULL;
		}
		if (r->type != RING_PAD)
			return r;
		c->tail += r->len;
	}
}

static inline void ring_release(struct ring_cons *c, const struct ring_rec *r)
{
	c->tail += r->len;
}

static inline void ring_publish(struct ring_cons *c)
{
	__atomic_store_n(&c->h->tail, c->tail, __ATOMIC_RELEASE);
}

#endif
