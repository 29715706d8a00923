/* http.c: the HTTP/1.1 requests `rbscope serve` takes and the responses it gives: parsing with hard limits. */
#include "http.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Percent-decode in[0..len) into out (with '+' as a space when plus); 0, or -1 when malformed or too long. */
static int decode(const char *in, size_t len, char *out, size_t cap, int plus)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i++) {
		int c = (unsigned char)in[i];
		if (c == '%') {
			if (i + 2 >= len)
				return -1;
			int hi = hexval(in[i + 1]);
			int lo = hexval(in[i + 2]);
			if (hi < 0 || lo < 0)
				return -1;
			c = hi << 4 | lo;
			i += 2;
		} else if (c == '+' && plus) {
			c = ' ';
		}
		if (!c || n + 1 >= cap)
			return -1;
		out[n++] = (char)c;
	}
	out[n] = 0;
	return 0;
}

/* Does head (header lines, each ending in CRLF) hold one named name? Its value in [*v, *v + *vlen). */
static int find_header(const char *head, const char *name, const char **v, size_t *vlen)
{
	size_t nlen = strlen(name);
	for (const char *line = head; *line;) {
		const char *end = strstr(line, "\r\n");
		if (!end)
			end = line + strlen(line);
		const char *colon = memchr(line, ':', (size_t)(end - line));
		if (colon && (size_t)(colon - line) == nlen && !strncasecmp(line, name, nlen)) {
			const char *s = colon + 1, *e = end;
			while (s < e && (*s == ' ' || *s == '\t'))
				s++;
			while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
				e--;
			*v = s;
			*vlen = (size_t)(e - s);
			return 1;
		}
		line = *end ? end + 2 : end;
	}
	return 0;
}

int http_parse_request(const char *in, size_t len, struct http_request *r)
{
	const char *end = NULL;
	for (size_t i = 0; i + 3 < len && i <= HTTP_MAX_HEAD; i++)
		if (in[i] == '\r' && in[i + 1] == '\n' && in[i + 2] == '\r' && in[i + 3] == '\n') {
			end = in + i;
			break;
		}
	if (!end)
		return len >= HTTP_MAX_HEAD ? -431 : 0;
	size_t head_len = (size_t)(end - in);
	if (head_len > HTTP_MAX_HEAD)
		return -431;
	memset(r, 0, sizeof(*r) - sizeof(r->head));
	const char *line_end = memchr(in, '\r', head_len + 1);
	/* Request line: METHOD SP TARGET SP HTTP/1.x */
	const char *sp1 = memchr(in, ' ', (size_t)(line_end - in));
	if (!sp1 || sp1 == in)
		return -400;
	const char *sp2 = memchr(sp1 + 1, ' ', (size_t)(line_end - sp1 - 1));
	if (!sp2 || sp2 == sp1 + 1)
		return -400;
	size_t mlen = (size_t)(sp1 - in);
	if (mlen >= sizeof(r->method))
		return -501;
	memcpy(r->method, in, mlen);
	for (size_t i = 0; i < mlen; i++)
		if (!isupper((unsigned char)r->method[i]))
			return -400;
	size_t vlen = (size_t)(line_end - sp2 - 1);
	if (vlen != 8 || strncmp(sp2 + 1, "HTTP/1.", 7) || !isdigit((unsigned char)sp2[8]))
		return strncmp(sp2 + 1, "HTTP/", 5) ? -400 : -505;
	for (const char *c = in; c < line_end; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return -400;
	const char *target = sp1 + 1;
	size_t tlen = (size_t)(sp2 - target);
	if (target[0] != '/')
		return -400;
	const char *q = memchr(target, '?', tlen);
	size_t plen = q ? (size_t)(q - target) : tlen;
	if (q) {
		size_t qlen = tlen - plen - 1;
		if (qlen >= sizeof(r->query))
			return -414;
		memcpy(r->query, q + 1, qlen);
		r->query[qlen] = 0;
	}
	if (plen >= sizeof(r->path))
		return -414;
	if (decode(target, plen, r->path, sizeof(r->path), 0))
		return -400;
	/* Header lines: NAME ":" VALUE, no control characters, no obsolete folding. */
	const char *h = line_end + 2, *hend = end + 2;
	size_t hlen = h < hend ? (size_t)(hend - h) : 0;
	memcpy(r->head, h, hlen);
	r->head[hlen] = 0;
	for (const char *line = r->head; *line;) {
		const char *e = strstr(line, "\r\n");
		if (!e)
			return -400;
		const char *colon = memchr(line, ':', (size_t)(e - line));
		if (!colon || colon == line || *line == ' ' || *line == '\t')
			return -400;
		for (const char *c = line; c < colon; c++)
			if (*c <= ' ' || *c == 0x7f)
				return -400;
		for (const char *c = colon + 1; c < e; c++)
			if (((unsigned char)*c < 0x20 && *c != '\t') || *c == 0x7f)
				return -400;
		line = e + 2;
	}
	if (!strcmp(r->method, "HEAD"))
		r->head_only = 1;
	else if (strcmp(r->method, "GET"))
		return -501;
	const char *v;
	size_t n;
	if (find_header(r->head, "Transfer-Encoding", &v, &n))
		return -411;
	if (find_header(r->head, "Content-Length", &v, &n) && !(n == 1 && *v == '0'))
		return -413;
	return (int)(head_len + 4);
}

int http_query(const char *query, const char *name, char *out, size_t cap)
{
	size_t nlen = strlen(name);
	for (const char *p = query; *p;) {
		const char *amp = strchr(p, '&');
		size_t len = amp ? (size_t)(amp - p) : strlen(p);
		const char *eq = memchr(p, '=', len);
		size_t klen = eq ? (size_t)(eq - p) : len;
		char key[64];
		if (klen < sizeof(key) && !decode(p, klen, key, sizeof(key), 1) && strlen(key) == nlen &&
		    !memcmp(key, name, nlen)) {
			if (!eq) {
				if (cap)
					out[0] = 0;
				return cap ? 1 : -1;
			}
			return decode(eq + 1, len - klen - 1, out, cap, 1) ? -1 : 1;
		}
		p += len;
		if (*p)
			p++;
	}
	return 0;
}

int http_header(const struct http_request *r, const char *name, char *out, size_t cap)
{
	const char *v;
	size_t n;
	if (!find_header(r->head, name, &v, &n))
		return 0;
	if (n >= cap)
		return -1;
	memcpy(out, v, n);
	out[n] = 0;
	return 1;
}

const char *http_reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 204: return "No Content";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 411: return "Length Required";
	case 413: return "Content Too Large";
	case 414: return "URI Too Long";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	default: return "Unknown";
	}
}

int http_response_head(struct buf *b, int status, const char *type, size_t length, const char *extra)
{
	return buf_addf(b, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n%s\r\n",
			status, http_reason(status), type, length, extra ? extra : "");
}

int http_split_hostport(const char *s, char *host, size_t cap, int *port)
{
	const char *colon;
	size_t hlen;
	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (!close || close[1] != ':')
			return -1;
		colon = close + 1;
		s++;
		hlen = (size_t)(close - s);
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return -1;
		hlen = (size_t)(colon - s);
	}
	if (hlen >= cap)
		return -1;
	char *end;
	long p = strtol(colon + 1, &end, 10);
	if (!colon[1] || *end || p < 0 || p > 65535)
		return -1;
	memcpy(host, s, hlen);
	host[hlen] = 0;
	*port = (int)p;
	return 0;
}
