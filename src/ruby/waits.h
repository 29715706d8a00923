/* waits.h: Ruby methods the walker treats apart, by their names (waits.c). */
#ifndef RBSCOPE_WAITS_H
#define RBSCOPE_WAITS_H

/* Is name ("Kernel#sleep", "Thread::Queue#pop"...) a method that waits: sleep, locks, queues, I/O readiness, children? */
int ruby_wait_method(const char *name);
/* Does name switch fibers (Fiber#resume, Fiber.yield, Enumerator#next...)? Nothing runs above it in its context. */
int ruby_switch_method(const char *name);

#endif
