/* tick.c: the bench's baseline: wake up RATE times a second for SECS seconds and do nothing else. */
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	double rate = argc > 1 ? atof(argv[1]) : 1000, secs = argc > 2 ? atof(argv[2]) : 5;
	long step = (long)(1e9 / rate), n = (long)(rate * secs);
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	for (long i = 0; i < n; i++) {
		t.tv_nsec += step;
		while (t.tv_nsec >= 1000000000L) {
			t.tv_nsec -= 1000000000L;
			t.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
	}
	return 0;
}
