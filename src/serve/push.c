/* push.c: --push: profiles sent to Grafana Pyroscope's /ingest by a thread of their own, so no push blocks sampling. */
#include "push.h"

#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "../lib/err.h"
#include "../lib/http.h"

#define BOUNDARY "rbscope-profile-boundary-7d1f"
#define IO_TIMEOUT_S 5

int pusher_start(struct pusher *p, const char *url)
{
	memset(p, 0, sizeof(*p));
	if (strncmp(url, "http://", 7))
		return ERR_USAGE; /* https needs a TLS library: put a local proxy (Alloy) in between */
	const char *hp = url + 7, *slash = strchr(hp, '/');
	size_t hlen = slash ? (size_t)(slash - hp) : strlen(hp);
	char hostport[256];
	if (!hlen || hlen >= sizeof(hostport))
		return ERR_USAGE;
	memcpy(hostport, hp, hlen);
	hostport[hlen] = 0;
	if (hostport[0] == '[' || strchr(hostport, ':')) {
		if (http_split_hostport(hostport, p->host, sizeof(p->host), &p->port) || !p->port || !*p->host)
			return ERR_USAGE;
	} else {
		snprintf(p->host, sizeof(p->host), "%s", hostport);
		p->port = 80;
	}
	/* The path Pyroscope takes pushes on, under any prefix the URL gives. */
	const char *base = slash ? slash : "";
	size_t blen = strlen(base);
	while (blen && base[blen - 1] == '/')
		blen--;
	if (blen + 8 >= sizeof(p->path))
		return ERR_USAGE;
	memcpy(p->path, base, blen);
	strcpy(p->path + blen, "/ingest");
	if (gethostname(p->hostname, sizeof(p->hostname)))
		strcpy(p->hostname, "localhost");
	p->hostname[sizeof(p->hostname) - 1] = 0;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	return 0;
}

/* Query-encode s into b (unreserved characters as they are). */
static void add_encoded(struct buf *b, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("-_.~", c))
			buf_addch(b, (char)c);
		else
			buf_addf(b, "%%%02X", c);
	}
}

/* A Pyroscope application name: letters, digits and ._- only (the rest as '_'). */
static void clean_name(char *out, size_t cap, const char *s)
{
	size_t n = 0;
	for (; *s && *s != ' ' && n + 1 < cap; s++)
		out[n++] = (isalnum((unsigned char)*s) || strchr("._-", *s)) ? *s : '_';
	out[n] = 0;
}

static int send_all(int fd, const char *data, size_t len)
{
	while (len) {
		ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
		if (n <= 0)
			return -1;
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

/* POST one item; 0 when the server answered 2xx. */
static int post(struct pusher *p, const struct push_item *it)
{
	char port[16];
	snprintf(port, sizeof(port), "%d", p->port);
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
	if (getaddrinfo(p->host, port, &hints, &ai))
		return -1;
	int fd = -1;
	for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0)
			continue;
		struct timeval tv = { IO_TIMEOUT_S, 0 };
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		if (connect(fd, a->ai_addr, a->ai_addrlen)) {
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(ai);
	if (fd < 0)
		return -1;
	char head[2048];
	int n = snprintf(head, sizeof(head),
			 "POST %s?%s HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: rbscope/" RBSCOPE_VERSION "\r\n"
			 "Content-Type: multipart/form-data; boundary=" BOUNDARY "\r\nContent-Length: %zu\r\n"
			 "Connection: close\r\n\r\n",
			 p->path, it->query, p->host, p->port, it->len);
	int rc = -1;
	if (n > 0 && (size_t)n < sizeof(head) && !send_all(fd, head, (size_t)n) && !send_all(fd, it->body, it->len)) {
		char resp[64] = "";
		ssize_t got = recv(fd, resp, sizeof(resp) - 1, 0);
		if (got > 12 && !strncmp(resp, "HTTP/1.", 7) && resp[9] == '2')
			rc = 0;
	}
	close(fd);
	return rc;
}

static void item_free(struct push_item *it)
{
	free(it->query);
	free(it->body);
	memset(it, 0, sizeof(*it));
}

static void *run(void *arg)
{
	struct pusher *p = arg;
	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->n && !p->stop)
			pthread_cond_wait(&p->wake, &p->lock);
		if (!p->n)
			break;
		struct push_item it = p->q[p->head];
		memset(&p->q[p->head], 0, sizeof(it));
		p->head = (p->head + 1) % PUSH_QUEUE;
		p->n--;
		pthread_mutex_unlock(&p->lock);
		int rc = post(p, &it);
		item_free(&it);
		pthread_mutex_lock(&p->lock);
		if (rc)
			p->failed++;
		else
			p->ok++;
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

void pusher_add(struct pusher *p, const struct proc_entry *e, const char *service, uint64_t from, uint64_t until,
		struct buf *body)
{
	char name[128];
	clean_name(name, sizeof(name), service && *service ? service : *e->service ? e->service : e->command);
	if (!*name)
		strcpy(name, "ruby");
	/* name=SERVICE{host=...,pid=...}: Pyroscope's application name with its labels (the profile's type,
	   process_cpu, it takes from the pprof's sample types) */
	struct buf q = BUF_INIT(8192), b = BUF_INIT(body->len + 1024);
	char labels[512];
	snprintf(labels, sizeof(labels), "%s{host=%s,pid=%d%s%s}", name, p->hostname, (int)e->pid,
		 *e->container ? ",container_id=" : "", e->container);
	buf_adds(&q, "name=");
	add_encoded(&q, labels);
	buf_addf(&q, "&from=%llu&until=%llu&format=pprof&spyName=rbscope&sampleRate=%u", (unsigned long long)from,
		 (unsigned long long)until, e->s.profile ? e->s.profile->rate_hz : 0);
	buf_adds(&b, "--" BOUNDARY "\r\nContent-Disposition: form-data; name=\"profile\"; filename=\"profile.pprof\"\r\n"
		     "Content-Type: application/octet-stream\r\n\r\n");
	buf_add(&b, body->data, body->len);
	int err = buf_adds(&b, "\r\n--" BOUNDARY "--\r\n");
	pthread_mutex_lock(&p->lock);
	if (!p->started) {
		if (pthread_create(&p->thread, NULL, run, p))
			err = -1;
		else
			p->started = 1;
	}
	if (!err && p->n == PUSH_QUEUE) { /* the server is behind: the oldest goes */
		item_free(&p->q[p->head]);
		p->head = (p->head + 1) % PUSH_QUEUE;
		p->n--;
		p->failed++;
	}
	if (err) {
		p->failed++;
		buf_free(&b);
		buf_free(&q);
	} else {
		struct push_item *it = &p->q[(p->head + p->n++) % PUSH_QUEUE];
		it->query = q.data;
		it->body = b.data;
		it->len = b.len;
		pthread_cond_signal(&p->wake);
	}
	pthread_mutex_unlock(&p->lock);
}

void pusher_counts(struct pusher *p, uint64_t *ok, uint64_t *failed)
{
	pthread_mutex_lock(&p->lock);
	*ok = p->ok;
	*failed = p->failed;
	pthread_mutex_unlock(&p->lock);
}

void pusher_stop(struct pusher *p)
{
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	pthread_cond_signal(&p->wake);
	int started = p->started;
	pthread_mutex_unlock(&p->lock);
	if (started)
		pthread_join(p->thread, NULL);
	for (int i = 0; i < PUSH_QUEUE; i++)
		item_free(&p->q[i]);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->wake);
}
