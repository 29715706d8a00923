/* waits.c: Ruby methods the walker treats apart: those that wait (idle, not work), those that switch fibers. */
#include <stdlib.h>
#include <string.h>

#include "waits.h"

/*
 * A thread in one of these waits for something else: it shows as idle in
 * colours, summaries and --on-cpu. Reads and writes (IO#read, accept) are
 * not here: they may be busy copying; the kernel's state tells those apart.
 */
static const char *const WAITS[] = {
	"Kernel#sleep", "Thread::Mutex#lock", "Thread::Mutex#sleep", "Thread::Mutex#synchronize",
	"Thread::ConditionVariable#wait", "Thread::Queue#pop", "Thread::Queue#shift", "Thread::Queue#deq",
	"Thread::SizedQueue#pop", "Thread::SizedQueue#shift", "Thread::SizedQueue#deq", "Thread::SizedQueue#push",
	"Thread::SizedQueue#enq", "Thread::SizedQueue#<<", "Thread#join", "Thread#value", "Monitor#enter",
	"Monitor#synchronize", "Monitor#wait", "MonitorMixin::ConditionVariable#wait", "IO.select", "Kernel#select",
	"IO#wait", "IO#wait_readable", "IO#wait_writable", "IO#wait_priority", "NIO::Selector#select",
	"Process.wait", "Process.waitpid", "Process.wait2", "Process.waitall", "Process::Status.wait",
	"Kernel#gets", "Fiber.yield", "Fiber::Scheduler#block", "Thread.stop", "Kernel#trap", NULL,
};

static int cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int ruby_wait_method(const char *name)
{
	static const char *sorted[sizeof(WAITS) / sizeof(WAITS[0])];
	static size_t n;
	if (!n) {
		for (n = 0; WAITS[n]; n++)
			sorted[n] = WAITS[n];
		qsort(sorted, n, sizeof(*sorted), cmp);
	}
	return bsearch(&name, sorted, n, sizeof(*sorted), cmp) != NULL;
}

/*
 * A thread in one of these has left its execution context for another fiber's
 * (or, returning, came back into it): nothing runs above them in their own
 * context, so a frame read there is one the thread returned from before.
 */
static const char *const SWITCHES[] = {
	"Fiber#resume", "Fiber.yield", "Fiber#transfer", "Fiber#raise", "Fiber#kill", "Enumerator#next",
	"Enumerator#peek", "Enumerator#next_values", "Enumerator#peek_values", NULL,
};

int ruby_switch_method(const char *name)
{
	for (int i = 0; SWITCHES[i]; i++)
		if (!strcmp(name, SWITCHES[i]))
			return 1;
	return 0;
}
