/* record_alloc.h: `rbscope record --mode alloc`: allocations sampled by the process's agent, written as a profile. */
#ifndef RBSCOPE_RECORD_ALLOC_H
#define RBSCOPE_RECORD_ALLOC_H

#include <stdint.h>

struct output_format;
struct outfile;

struct record_alloc_opts {
	int pid;
	double duration;
	uint64_t interval;
	int threads, by_bytes, no_windows;
	const struct output_format *format;
	const char *output;
	int output_made;
	const char *raw; /* --raw's name, raw_out its file */
};

/*
 * Record until Ctrl-C, the duration or the process's end, and write the profile to out (and as it goes to
 * raw_out, unless NULL); the exit code.
 */
int record_allocs(const struct record_alloc_opts *o, struct outfile *out, struct outfile *raw_out);

#endif
