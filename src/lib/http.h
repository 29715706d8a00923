/* http.h: the HTTP/1.1 requests `rbscope serve` takes and the responses it gives: parsing with hard limits. */
#ifndef RBSCOPE_HTTP_H
#define RBSCOPE_HTTP_H

#include <stddef.h>

#include "buf.h"

/* A request head (request line and headers) larger than this is refused with 431. */
#define HTTP_MAX_HEAD 8192

struct http_request {
	char method[8];
	char path[256];   /* the target before '?', percent-decoded */
	char query[1024]; /* after '?', as sent */
	char head[HTTP_MAX_HEAD + 1]; /* the header lines, NUL-terminated, for http_header() */
	int head_only;    /* HEAD: the response without its body */
};

/*
 * Parse the request head at the start of in[0..len): the number of bytes it
 * took (through the blank line) when it is whole, 0 when more must be read,
 * or minus the status to refuse it with: 400 (malformed), 414 (target too
 * long), 431 (head too large), 501 (a method other than GET or HEAD), 505
 * (not HTTP/1.x), 411/413 (a request with a body: nothing here takes one).
 */
int http_parse_request(const char *in, size_t len, struct http_request *r);

/*
 * The value of query parameter name, percent-decoded into out: 1 when it is
 * there, 0 when it is not, -1 when it does not decode or fit.
 */
int http_query(const char *query, const char *name, char *out, size_t cap);

/* The value of header name (any case), spaces trimmed, into out: 1, 0 when absent, -1 when it does not fit. */
int http_header(const struct http_request *r, const char *name, char *out, size_t cap);

/* "OK", "Not Found"...: the reason phrase of status. */
const char *http_reason(int status);

/*
 * Append a response head to b: status line, Content-Type, Content-Length,
 * Connection: close, the extra header lines given (each ending in "\r\n"
 * or NULL), and the blank line. 0 or a negative code.
 */
int http_response_head(struct buf *b, int status, const char *type, size_t length, const char *extra);

/* Parse "HOST:PORT", "[V6]:PORT" or ":PORT" (HOST then ""); 0 or -1. */
int http_split_hostport(const char *s, char *host, size_t cap, int *port);

#endif
