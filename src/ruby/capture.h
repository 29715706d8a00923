/*
 * capture.h: sampling the thread that holds the GVL on its own CPU, with a
 * BPF program on a task clock per thread (bpf/capture.bpf.c), so a short call
 * is seen for as long as it runs; the other threads, whose stacks stand
 * still, are read from outside as ever (walk.c).
 */
#ifndef RBSCOPE_CAPTURE_H
#define RBSCOPE_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include "target.h"
#include "walk.h"

struct ruby_capture;

/* Counts since opening: the program's (enum capture_stat's), and threads left without a clock. */
struct ruby_capture_stats {
	uint64_t fired, not_owner, lost, bad;
	uint64_t unfollowed; /* tries to give a thread a clock that failed (it was read from outside) */
	uint64_t native, native_missed; /* native: samples with native frames from the kernel's copy, and without */
};

/*
 * Sample t's GVL holder in its own context at hz (per second of its CPU time,
 * each period drawn at random around 1/hz); with native, its native frames
 * too, unwound from the registers and stack the kernel copies at each sample
 * (no stop); with labels, each sample's request (ruby_request_label). 0
 * with *out set, or a negative code with why set to one line saying what is
 * missing (privileges, the kernel's BPF, this Ruby's layout).
 */
int ruby_capture_open(struct ruby_target *t, int hz, int native, int labels, struct ruby_capture **out, char *why,
		      size_t whylen);
void ruby_capture_close(struct ruby_capture *c);

/* Follow the threads of sample s (a task clock for each new one, none for those gone). 0 or a negative code. */
int ruby_capture_follow(struct ruby_capture *c, const struct ruby_sample *s);

/* Is th followed: its time holding the GVL sampled here, not by reading it from outside? */
int ruby_capture_covers(const struct ruby_capture *c, uint64_t th);
/* c as the walker's source of the kernel's samples (walk.h), for the target's native_source while c is open. */
const struct ruby_native_source *ruby_capture_source(struct ruby_capture *c);

/*
 * Is thread th on its CPU now: 1, or 0 off it (preempted, throttled, or
 * blocked while it holds the GVL, when its clock stands still and nothing
 * samples it here); -1 if it is not followed. For the thread that holds the
 * GVL at a tick: off its CPU, the tick's sample is its stack read from
 * outside, which stands still then; on it, the clock's samples have its time.
 * One ready to run on the CPU the caller runs on is judged at random in the
 * proportion seen on other CPUs (see capture.c).
 */
int ruby_capture_on_cpu(struct ruby_capture *c, uint64_t th);
/*
 * How many samples the GVL holder th is owed at tick number tick (now_ns its
 * time) for its time off its CPU, where its clock stands still. Held at the
 * tick before too: the time passed since that tick less the CPU time its
 * clock counted, in periods of 1/hz, the rest carried on (exact however long
 * it holds the GVL, ticks missed or not). Not held then (a thread that holds
 * it a little at a time, as a Puma worker's do): per_tick if off_now
 * (ruby_capture_on_cpu found it off as its stack was read), else none: a
 * sample of the moment, as a tick takes any other thread's. 0 for a thread
 * not followed.
 */
int ruby_capture_owed(struct ruby_capture *c, uint64_t th, uint64_t tick, uint64_t now_ns, int off_now, int per_tick);

/*
 * native, a thread on its CPU without the GVL (its Ruby frames stand still,
 * read from outside): the kernel's sample taken at its latest sample since
 * the last call, if it was then in the call read now: its 17 registers
 * (DWARF order) and copy of the stack, valid until the next call. 1 if so;
 * 0 when it has had no sample since; -1 when that was of another call.
 */
int ruby_capture_native_of(struct ruby_capture *c, uint64_t th, const struct ruby_call *now, uint64_t *regs,
			   const unsigned char **stack, size_t *len);
/*
 * Hand each sample taken since the last call to fn, oldest first, as a
 * thread sample (state THREAD_RUNNING, its frames innermost first, the GC's
 * frame over them while it collects; salvaged when frames that did not read
 * as frames were left out) with its CLOCK_MONOTONIC time. A
 * non-zero return from fn stops the drain and is returned.
 */
typedef int (*ruby_capture_fn)(void *arg, const struct ruby_thread_sample *ts, uint64_t t_mono_ns);
int ruby_capture_drain(struct ruby_capture *c, ruby_capture_fn fn, void *arg);

void ruby_capture_stats(const struct ruby_capture *c, struct ruby_capture_stats *out);

#endif
