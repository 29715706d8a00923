/* pprof_read.h: a pprof profile (profile.proto, gzip'd or not) read into a profile, for report --diff. */
#ifndef RBSCOPE_PPROF_READ_H
#define RBSCOPE_PPROF_READ_H

#include <stdio.h>

#include "profile.h"

/*
 * Read the pprof profile in f into p (initialised here): each sample's
 * locations, root first, each line of a location a frame (name, file, line);
 * its first value the stack's weight. A profile whose first sample type is
 * alloc_objects or inuse_objects is an allocation profile, its second value
 * the bytes. Frames in parentheses are states or the GC, frames of a mapping
 * native. 0; ERR_BAD_FILE for a file that is not one (not protobuf, cut
 * short, negative values: a difference already), or another negative code.
 */
int profile_read_pprof(struct profile *p, FILE *f);

#endif
