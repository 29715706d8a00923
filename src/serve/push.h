/* push.h: --push: profiles sent to Grafana Pyroscope's /ingest by a thread of their own, so no push blocks sampling. */
#ifndef RBSCOPE_PUSH_H
#define RBSCOPE_PUSH_H

#include <pthread.h>
#include <stdint.h>

#include "../lib/buf.h"
#include "../profile/procs.h"

#define PUSH_QUEUE 32 /* profiles waiting; past this the oldest is dropped (and counted as failed) */

struct push_item {
	char *query; /* the /ingest query string */
	char *body;  /* a multipart/form-data body holding the profile */
	size_t len;
};

struct pusher {
	char host[256], path[512]; /* host is shorter than any hostport that holds it */
	int port;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct push_item q[PUSH_QUEUE];
	int head, n, stop, started;
	uint64_t ok, failed;
	char hostname[128];
};

/* Check url (http://HOST[:PORT][/PATH]) and start the thread; 0, or ERR_USAGE for a URL it cannot push to. */
int pusher_start(struct pusher *p, const char *url);
/*
 * Queue e's pprof (body, taken over: *body is left empty) for [from, until)
 * (Unix seconds), named service (NULL: the process's own, else its command).
 */
void pusher_add(struct pusher *p, const struct proc_entry *e, const char *service, uint64_t from, uint64_t until,
		struct buf *body);
void pusher_counts(struct pusher *p, uint64_t *ok, uint64_t *failed);
/* Send what is queued (for at most a few seconds), then stop the thread. */
void pusher_stop(struct pusher *p);

#endif
