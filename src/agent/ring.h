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
#define RING_VERSION 1

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
	RING_CALL = 2,   /* ring_call */
	RING_RETURN = 3, /* ring_call; dur/cpu set */
	RING_GC = 4,     /* ring_gc */
	RING_TEXT = 5,   /* ring_text: expression values after a CALL, a slow call's callers, notes */
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
	uint32_t pad;
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

enum { RING_TEXT_ARGS = 1, RING_TEXT_CALLERS = 2, RING_TEXT_NOTE = 3 };

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
 * Producer: a pointer to len bytes (aligned) for a record of this type, or
 * NULL when full (counted in dropped). ring_commit() publishes it.
 */
static inline void *ring_reserve(struct ring_hdr *h, uint32_t len, uint16_t type)
{
	char *data = (char *)h + h->data_off;
	uint64_t head = h->head; /* only we write it */
	uint64_t tail = __atomic_load_n(&h->tail, __ATOMIC_ACQUIRE);
	uint64_t pos = head & (h->size - 1);
	uint64_t room_to_end = h->size - pos;
	len = (uint32_t)ring_align(len);
	uint64_t need = len <= room_to_end ? len : room_to_end + len;
	if (len > h->size / 2 || head + need - tail > h->size) {
		__atomic_store_n(&h->dropped, h->dropped + 1, __ATOMIC_RELAXED);
		return NULL;
	}
	if (len > room_to_end) {
		struct ring_rec *pad = (struct ring_rec *)(data + pos);
		pad->len = (uint32_t)room_to_end;
		pad->type = RING_PAD;
		head += room_to_end;
		__atomic_store_n(&h->head, head, __ATOMIC_RELEASE);
		pos = 0;
	}
	struct ring_rec *r = (struct ring_rec *)(data + pos);
	r->len = len;
	r->type = type;
	r->flags = 0;
	return r;
}

static inline void ring_commit(struct ring_hdr *h, void *rec)
{
	__atomic_store_n(&h->head, h->head + ((struct ring_rec *)rec)->len, __ATOMIC_RELEASE);
}

/*
 * Consumer: the next record or NULL when empty. The record stays valid
 * until ring_release(). A record whose len makes no sense returns NULL and
 * sets *bad (the ring is then unusable).
 */
static inline const struct ring_rec *ring_peek(struct ring_hdr *h, int *bad)
{
	const char *data = (const char *)h + h->data_off;
	for (;;) {
		uint64_t tail = h->tail;
		uint64_t head = __atomic_load_n(&h->head, __ATOMIC_ACQUIRE);
		if (tail == head)
			return NULL;
		uint64_t pos = tail & (h->size - 1);
		const struct ring_rec *r = (const struct ring_rec *)(data + pos);
		if (r->len < sizeof(*r) || r->len % 8 || r->len > h->size - pos || r->len > head - tail) {
			*bad = 1;
			return NULL;
		}
		if (r->type != RING_PAD)
			return r;
		__atomic_store_n(&h->tail, tail + r->len, __ATOMIC_RELEASE);
	}
}

static inline void ring_release(struct ring_hdr *h, const struct ring_rec *r)
{
	__atomic_store_n(&h->tail, h->tail + r->len, __ATOMIC_RELEASE);
}

#endif
