/* window.c: when the allocation hook is installed: short windows at random times, a native thread's timer, a postponed job to apply it. */
#include "agent.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <ruby/debug.h>

/*
 * The timer is a native thread (never a Ruby thread: it needs no GVL, so it
 * cannot wait for one). It flips the wanted state: open for window_ns at a
 * time, closed for gaps drawn from an exponential law of mean window_ns *
 * (den - 1), so open 1/den of the time on average; it begins in that
 * alternation's equilibrium (open with probability 1/den, for a uniform part
 * of a window), so that at every instant the state is open with probability
 * 1/den whatever the program does. At each flip it asks Ruby to run the
 * caller's job, which installs or removes the hook. Ruby runs it at the next
 * interrupt check of the thread that holds the GVL, or of the last one that
 * did if none does (its main Ractor's running_ec): one woken from a wait
 * checks before it runs Ruby code again.
 * - 3.3+: rb_postponed_job_trigger, which any thread may call.
 * - Before: rb_postponed_job_register_one. Its write of the interrupt flag
 *   is what Ruby's own workqueue did from its JIT's thread; its job buffer is
 *   made for signal handlers, not for a second thread: should the holder run
 *   the jobs just as the timer takes a slot, the holder may run that slot's
 *   previous job once more and the timer's be lost. allocs_start fills the
 *   first slots with our own two jobs (which an extra run leaves as they
 *   were), and a lost window is asked for again.
 * A wanted window not yet applied is asked for again every RETRY_NS.
 */
#define RETRY_NS 2000000ull

#ifdef HAVE_RB_POSTPONED_JOB_PREREGISTER
static rb_postponed_job_handle_t job_handle;
#endif
static rb_postponed_job_func_t job_func;

static struct {
	pthread_t thread;
	int running;
	int stop_fd;
	uint64_t window_ns;
	uint32_t den;
	uint64_t rng;
	volatile int applied; /* the job's report: the hook is in */
} w;

volatile int window_want;
volatile uint64_t window_closed_ns;

static uint64_t gap_ns(void)
{
	return (uint64_t)(-log(agent_unit(&w.rng)) * (double)w.window_ns * (double)(w.den - 1));
}

/* Sleep until ns from now; 1 if asked to stop. */
static int nap(uint64_t ns)
{
	struct pollfd p = { .fd = w.stop_fd, .events = POLLIN };
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
	return ppoll(&p, 1, &ts, NULL) > 0;
}

static void *timer_main(void *arg)
{
	(void)arg;
	/* The equilibrium's start: open with probability 1/den, for a uniform part of a window. */
	int open = agent_unit(&w.rng) * w.den < 1.0;
	uint64_t left = open ? (uint64_t)(agent_unit(&w.rng) * (double)w.window_ns) : gap_ns();
	for (;;) {
		if (open) {
			__atomic_store_n(&window_want, 1, __ATOMIC_RELEASE);
		} else {
			__atomic_store_n(&window_closed_ns, agent_now_ns(), __ATOMIC_RELAXED);
			__atomic_store_n(&window_want, 0, __ATOMIC_RELEASE);
		}
		window_schedule();
		uint64_t end = agent_now_ns() + left;
		for (;;) {
			uint64_t now = agent_now_ns();
			if (now >= end)
				break;
			uint64_t step = end - now;
			if (open && !w.applied && step > RETRY_NS)
				step = RETRY_NS;
			if (nap(step))
				return NULL;
			if (open && !w.applied && agent_now_ns() < end)
				window_schedule();
		}
		open = !open;
		left = open ? w.window_ns : gap_ns();
	}
}

int window_start(uint64_t window_ns, uint32_t den, uint64_t seed)
{
	if (w.running || den < 2 || !window_ns)
		return EINVAL;
	if ((w.stop_fd = event_new()) < 0)
		return errno;
	w.window_ns = window_ns;
	w.den = den;
	w.rng = seed ? seed : 1;
	w.applied = 0;
	window_want = 0;
	/* The thread takes no signals: they belong to Ruby's threads. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int r = pthread_create(&w.thread, NULL, timer_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r) {
		close(w.stop_fd);
		return r;
	}
	w.running = 1;
	return 0;
}

void window_stop(void)
{
	if (!w.running)
		return;
	event_post(w.stop_fd);
	pthread_join(w.thread, NULL);
	close(w.stop_fd);
	w.running = 0;
	window_want = 0;
}

void window_applied(int in)
{
	__atomic_store_n(&w.applied, in, __ATOMIC_RELAXED);
}

void window_forked(void)
{
	/* The timer did not come along: the child's hook closes at its next allocation and stays out. */
	if (w.running)
		close(w.stop_fd);
	w.running = 0;
	window_want = 0;
}

/* On the thread running Ruby code now, or the last one that did (Ruby's main Ractor's running_ec). */
void window_schedule(void)
{
#ifdef HAVE_RB_POSTPONED_JOB_PREREGISTER
	rb_postponed_job_trigger(job_handle);
#else
	rb_postponed_job_register_one(0, job_func, NULL);
#endif
}

void window_init(rb_postponed_job_func_t job)
{
	job_func = job;
#ifdef HAVE_RB_POSTPONED_JOB_PREREGISTER
	job_handle = rb_postponed_job_preregister(0, job, NULL);
#endif
}
