/* waits.c: the Ruby methods that wait (sleep, locks, queues, I/O readiness, children): idle, not work. */
#include <stdlib.h>
#include <string.h>

#include "walk.h"

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
