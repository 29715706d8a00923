/*
 * capture.h: sampling the thread that holds the GVL on its own CPU, with a
 * BPF program on a task clock per native thread (bpf/capture.bpf.c), so a
 * short call is seen for as long as it runs; the other threads, whose stacks
 * stand still, are read from outside as ever (walk.c).
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
	uint64_t elsewhere; /* the program's samples of a thread new since the last follow that ran on another thread */
};

/*
 * Sample t's GVL holder in its own context for ticks at hz: a little more
 * often than that per second of its CPU time (a rate drawn at random, so a
 * tick nearly always finds a sample taken since the one before); with
 * native, its native frames too, unwound from the registers and stack the
 * kernel copies at each sample (no stop); with labels, each sample's request
 * (ruby_request_label). 0 with *out set, or a negative code with why set to
 * one line saying what is missing (privileges, the kernel's BPF, this Ruby's
 * layout).
 */
int ruby_capture_open(struct ruby_target *t, int hz, int native, int labels, struct ruby_capture **out, char *why,
		      size_t whylen);
void ruby_capture_close(struct ruby_capture *c);

/*
 * Follow the threads of sample s: a task clock for each native thread that
 * runs one, kept while that native thread lives (a Ruby's thread cache runs
 * the next Ruby thread there, sampled from its start). 0 or a negative code.
 */
int ruby_capture_follow(struct ruby_capture *c, const struct ruby_sample *s);

/* Is th followed: sampled on its own CPU while it holds the GVL? */
int ruby_capture_covers(const struct ruby_capture *c, uint64_t th);
/* c as the walker's source of the kernel's samples (walk.h), for the target's native_source while c is open. */
const struct ruby_native_source *ruby_capture_source(struct ruby_capture *c);

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
