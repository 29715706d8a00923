/* serve.h: `rbscope serve`: an HTTP server that keeps sampling Ruby processes and answers pprof and Prometheus. */
#ifndef RBSCOPE_SERVE_H
#define RBSCOPE_SERVE_H

#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "../profile/sampling.h"

#define SERVE_MAX_SECONDS 300 /* the longest profile one request may ask for */

struct serve_options {
	struct sockaddr_storage addr; /* where to listen */
	socklen_t addr_len;
	const pid_t *pids; /* the processes to sample, or all set */
	int npids, all;
	double rate;
	const char *token;    /* requests must carry "Authorization: Bearer TOKEN" (NULL: none needed) */
	const char *push_url; /* Pyroscope's base URL (its /ingest), NULL for none */
	const char *service;  /* the name pushed profiles go by (NULL: each process's own) */
	double push_seconds;
	double census_seconds; /* a census of each process's heap this often, for /metrics (0: none) */
	double duration;      /* stop after this long (0: until a signal) */
	const struct user_label *labels; /* --label's (ruby/label.h), each a pprof label of the samples it is found in */
	int nlabels;
	int verbose;
	const struct ruby_attach_opts *attach;
	volatile sig_atomic_t *stop; /* set by a signal handler to end serve_run() */
};

/*
 * Listen on o->addr (the socket is made before anything else: a port in use
 * is reported at once), then sample and answer requests until *o->stop.
 * 0, or a negative code (the listening socket could not be made: -errno).
 */
int serve_listen(const struct serve_options *o);
int serve_run(const struct serve_options *o, int listen_fd);

/* A process's last heap census (--census), for /metrics: its objects and their bytes by type. */
#define SERVE_CENSUS_TYPES 32
struct serve_census {
	pid_t pid;
	uint64_t at_ns;        /* CLOCK_REALTIME when it was taken */
	double seconds;        /* how long it took (the sampler waited) */
	uint64_t slots, free, objects, bytes;
	uint64_t count[SERVE_CENSUS_TYPES], type_bytes[SERVE_CENSUS_TYPES];
	const char *type_name[SERVE_CENSUS_TYPES]; /* NULL: a type the layout does not name */
};

/* The Prometheus text exposition of the sampling's state and the server's counters, appended to b. */
struct serve_counters {
	uint64_t requests[6]; /* requests by class: 2xx, 400, 401, 404, 503, other */
	uint64_t pushes, push_failures;
	double build_s, build_max_s; /* making the last profile answered, and the longest since the last scrape */
	double cpu_s;            /* the server's own CPU time */
	uint64_t rss_bytes;
	const struct serve_census *census; /* the processes' last censuses */
	int ncensus;
};
struct buf;
int serve_metrics(struct buf *b, const struct sampling *sm, const struct serve_counters *c);

#endif
