/* agent.h: the parts of the in-process agent (channel, sessions, tracer) and how they call each other. */
#ifndef RBSCOPE_AGENT_H
#define RBSCOPE_AGENT_H

#include <ruby.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define AGENT_MAX_SESSIONS 16
#define AGENT_MAX_TRACERS 8

/*
 * channel.c: the listening socket and its native thread (not a Ruby
 * thread: it never shows in Thread.list and needs no GVL). It accepts,
 * checks the peer's uid, and queues the connection; then wakes the Ruby
 * side by sending the process the wake signal, whose Ruby trap starts the
 * serving thread (serve.c), or pokes that thread if it already runs.
 */
int channel_start(int wake_sig);
void channel_stop(void);   /* close and unlink (at exit, in the process that made it) */
void channel_forked(void); /* in a fork's child: forget the parent's channel */
const char *channel_path(void);
const char *channel_error(void); /* why channel_start failed */
/* The serving thread: take queued connections (-1 when none). */
int channel_take(void);
/* The serving thread is going away: returns 0 and clears the flag, or -1 if connections are waiting. */
int channel_serving_done(void);
/* For the trap: 1 if a serving thread has to be started (and marks it started). */
int channel_claim_serving(void);
/* The fd the serving thread polls to learn of new connections. */
int channel_notify_fd(void);
/* Pick a real-time signal nobody handles; -1 if none. */
int channel_free_signal(void);
/* eventfds, the agent's wake-ups (one fd each, where a pipe takes two) */
int event_new(void); /* -1 with errno */
void event_post(int fd);
void event_clear(int fd);

/* serve.c: the "rbscope" Ruby thread that answers requests while anyone is connected. */
VALUE serve_run(VALUE self);
void serve_forked(void);

/* trace.c: hooks and events of one traced connection. */
/* A memfd named name holding a ring (ring.h) of size bytes of data, mapped; NULL with errno on failure. */
struct ring_hdr;
struct ring_hdr *agent_ring_create(const char *name, uint64_t size, int *fd, size_t *map_size);
struct tracer;
/* Parse settings, resolve methods, install hooks. NULL and *err (a static or Ruby-owned message) on failure. */
struct tracer *tracer_start(const char *settings, int *ring_fd, VALUE *err);
void tracer_stop(struct tracer *t);
void tracer_forked(void);
void tracer_init(void);

/* alloc.c: `record --mode alloc`'s sampling of allocations (one recording per process). */
struct allocs;
/* Settings "interval=N buffer=BYTES"; installs the hook. NULL and *err on failure; else *err says what it does. */
struct allocs *allocs_start(const char *settings, int *ring_fd, VALUE *err);
void allocs_stop(struct allocs *a);
void allocs_forked(void);
void allocs_init(void);

/*
 * window.c: the windows in which the allocation hook is installed (alloc.c). A
 * native thread opens one for window_ns at random times, 1/den of the time on
 * average, and asks Ruby to run the job given to window_init, which reads
 * window_want and installs or removes the hook, then tells window_applied.
 */
#include <ruby/debug.h>
#include <time.h>
extern volatile int window_want;           /* the timer's wanted state: 1 open */
extern volatile uint64_t window_closed_ns; /* CLOCK_MONOTONIC when the last window ended */
void window_init(rb_postponed_job_func_t job);
/* Start the timer: 0, or an errno value. */
int window_start(uint64_t window_ns, uint32_t den, uint64_t seed);
void window_stop(void); /* (joins the timer: never waits for the GVL) */
void window_applied(int in);
/* Ask Ruby for the job (any thread: the timer's, or the hook's own when it sees a window has ended). */
void window_schedule(void);
void window_forked(void);

/* CLOCK_MONOTONIC in ns (alloc.c's sample times, window.c's timer). */
static inline uint64_t agent_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* xorshift64* on *state (never 0): cheap, and good enough to keep draws independent of the program. */
static inline uint64_t agent_random(uint64_t *state)
{
	uint64_t x = *state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/* A draw in (0, 1), never 0 or 1 (a log of it is finite). */
static inline double agent_unit(uint64_t *state)
{
	return ((double)(agent_random(state) >> 11) + 0.5) / 9007199254740992.0;
}

/* usdt.c: Rbscope::Provider and Rbscope::Probe, and `rbscope latency` subscriptions to their first argument. */
struct usdt_sub;
void usdt_init(VALUE mRbscope);
/* Feed arg0 of every enabled probe PROVIDER:PROBE into a new shared histogram; its memfd in *fd. NULL and *msg on failure. */
struct usdt_sub *usdt_subscribe(const char *spec, int *fd, VALUE *msg);
void usdt_unsubscribe(struct usdt_sub *s);
void usdt_forked(void);

/* Ruby-side helpers (rbscope.c). */
extern VALUE agent_module;
/* Call Rbscope::Agent.<meth>(args...) protected; *ok says if it raised. */
VALUE agent_call(int *ok, const char *meth, int argc, const VALUE *argv);

#endif
