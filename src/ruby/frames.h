/* frames.h: naming a thread's frames from its control frames and their env words (walk.c reads them). */
#ifndef RBSCOPE_FRAMES_H
#define RBSCOPE_FRAMES_H

#include <stdint.h>

#include "target.h"
#include "sample.h"

#define EP_WORDS 3 /* ep[-2] (method entry or cref), ep[-1] (specval), ep[0] (flags) */

/* The id of s in t's string table (0 when it cannot be added). */
uint32_t ruby_intern(struct ruby_target *t, const char *s);
/*
 * Name n frames (innermost first) from their control frames (cfps, the
 * layout's cfp_size apart) and env words into out; skip > 0 adds a
 * "(truncated)" frame for the outer frames left out. A method's class comes
 * from its method entry, believed only when it names the iseq's own method;
 * a block is named after the method its env chain ends in; a C method after
 * its method entry; methods that wait become FRAME_WAIT, and frames above a
 * method that switches fibers are left out. trusted: the read was
 * consistent, so "no class" may be cached. *dropped counts the frames left
 * out because they did not read as frames. at, unless NULL, gets where each
 * frame written lives. jit_ip: where the thread ran JIT code for the innermost
 * frame as these frames were taken (0: not known), for that frame's line
 * (ruby_jit_line). Returns the frames written.
 */
int ruby_name_frames(struct ruby_target *t, const unsigned char *cfps, uint64_t (*eps)[EP_WORDS], int n, int skip,
		     int trusted, uint64_t jit_ip, struct ruby_frame *out, struct ruby_frame_at *at, int *dropped);

#endif
