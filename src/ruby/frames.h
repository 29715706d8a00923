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
 * frame written lives. jit (NULL: nothing known) tells the line of the
 * innermost frame when it ran JIT code. Returns the frames written.
 */
struct ruby_jit_at {
	uint64_t ip; /* where the thread ran that frame's JIT code as the frames were taken (0: not known), for
			ruby_jit_line */
	int asleep;  /* the thread sleeps (its status stopped: Thread::Queue#pop, sleep): it runs no JIT code, and
			the frame's pc is the one the JIT saved before the call it sleeps in */
};
int ruby_name_frames(struct ruby_target *t, const unsigned char *cfps, uint64_t (*eps)[EP_WORDS], int n, int skip,
		     int trusted, const struct ruby_jit_at *jit, struct ruby_frame *out, struct ruby_frame_at *at,
		     int *dropped);

#endif
