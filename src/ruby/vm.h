/* vm.h: the VM's own words: the main thread and ractor, the thread list and the GVL's owner, each thread's state
   and tid, the GC's state word and its counters (vm.c). */
#ifndef RBSCOPE_VM_H
#define RBSCOPE_VM_H

#include <stdint.h>

#include "sample.h"
#include "slots.h"
#include "target.h"

/* The GC's own counters, as GC.stat gives them; each only where the layout knows where it is (have_*). */
struct ruby_gc_counts {
	int have_count, have_time, have_slots;
	uint64_t count, major;          /* GC.count and GC.stat(:major_gc_count) */
	uint64_t time_ns;               /* GC.stat(:time) in ns: what the VM measured collecting (Ruby 3.1+) */
	uint64_t live_slots, free_slots; /* GC.stat(:heap_live_slots) and (:heap_free_slots) */
};
/* Read them from the target's rb_objspace: 0, or a negative code (ERR_UNSUPPORTED: none known for this Ruby). */
int ruby_gc_counts(struct ruby_target *t, struct ruby_gc_counts *out);
/*
 * For sampling a thread on its own CPU (capture.c): where the GVL owner's
 * word is, and the GC's state word (0: unknown). 0, or a negative code.
 */
int ruby_capture_addrs(struct ruby_target *t, uint64_t *owner, uint64_t *gc);
/* The GC's frame for the state word gcw read from there: 1 with *f set while it collects, else 0. */
int ruby_gc_frame(struct ruby_target *t, uint32_t gcw, struct ruby_frame *f);

/* Where the thread list head and the GVL owner are: in the VM (2.7) or the main ractor (3.x). */
struct list_area {
	uint64_t base;
	int64_t hoff, ooff, lo, hi;
};

/* Read the main thread and ractor once (they live as long as the VM): 0 or a negative code. */
int vm_read_main(struct ruby_target *t);
/* Where the thread list and the GVL owner are, into a: 0 or a negative code. */
int vm_list_area(struct ruby_target *t, struct list_area *a);
/* From a read of that area (buf): the list's head, its first thread and the GVL's owner. */
void vm_list_parse(const struct list_area *a, const unsigned char *buf, uint64_t *head, uint64_t *first, uint64_t *owner);
/* The status word of rb_thread_t th (the layout's thread_runnable, thread_stopped, ...). */
unsigned vm_thread_status(const struct ruby_layout *L, const unsigned char *th);
/* A thread's state (enum thread_state) from its rb_thread_t th at thaddr, given the GVL's owner. */
int vm_thread_state(struct ruby_target *t, const unsigned char *th, uint64_t thaddr, uint64_t gvl_owner);
/*
 * Its kernel tid as the process sees it (0 if unknown). Where it is not in
 * rb_thread_t, slot w keeps it for a thread read the quiet way (parked, its
 * frames as before): a thread read in full may be a new one, whose
 * rb_thread_t and native thread reuse an ended one's memory, and is read
 * again.
 */
int32_t vm_thread_tid(struct ruby_target *t, struct walk_slot *w, const unsigned char *th, int quiet);
/* That tid as we see it (a process in another pid namespace). */
int32_t vm_host_tid(struct ruby_target *t, int32_t tid);
/*
 * The tid we see of the thread of slot w read into th (vm_thread_tid, then
 * vm_host_tid): the main thread's is the pid (a forked child's rb_thread_t
 * holds its parent's tid, and one in a pid namespace the inner one).
 */
int32_t vm_thread_host_tid(struct ruby_target *t, struct walk_slot *w, const unsigned char *th, int quiet);
/* The host tid of the thread whose rb_thread_t is at th, read from the target (the pid for the main thread); 0 if unknown. */
int32_t vm_thread_tid_at(struct ruby_target *t, uint64_t th);
/* Where the GC's state word is, or 0. */
uint64_t vm_gc_word_addr(const struct ruby_target *t);
/* What the GC is doing by that word (enum gc_phase). */
int vm_gc_phase(const struct ruby_layout *L, uint32_t w);
/* The GC's frame for phase (not GC_NONE). */
struct ruby_frame vm_gc_frame(struct ruby_target *t, int phase);

#endif
