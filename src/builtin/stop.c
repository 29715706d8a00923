/* stop.c: how the live commands (record, top, trace, latency) learn of Ctrl-C and SIGTERM, to finish cleanly. */
#include <signal.h>

#include "../builtin.h"

volatile sig_atomic_t builtin_stop;

static void on_signal(int sig)
{
	(void)sig;
	builtin_stop = 1;
}

void builtin_catch_stop(void)
{
	/* No SA_RESTART: a sleep or poll in progress returns, and the loop sees builtin_stop at once. */
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}
