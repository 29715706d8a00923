/* buf.c: a growable byte buffer with a hard maximum size. */
#include "buf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void buf_init(struct buf *b, size_t max)
{
	b->data = NULL;
	b->len = b->alloc = 0;
	b->max = max;
}

void buf_free(struct buf *b)
{
	free(b->data);
	buf_init(b, b->max);
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

int buf_grow(struct buf *b, size_t extra)
{
	if (extra > b->max || b->len > b->max - extra)
		return -ENOSPC;
	size_t need = b->len + extra + 1;
	if (need <= b->alloc)
		return 0;
	size_t n = b->alloc ? b->alloc : 64;
	while (n < need)
		n *= 2;
	char *p = realloc(b->data, n);
	if (!p)
		return -ENOMEM;
	b->data = p;
	b->alloc = n;
	return 0;
}

int buf_add(struct buf *b, const void *data, size_t len)
{
	int err = buf_grow(b, len);
	if (err)
		return err;
	if (len)
		memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
	return 0;
}

int buf_adds(struct buf *b, const char *s)
{
	return buf_add(b, s, strlen(s));
}

int buf_addch(struct buf *b, char c)
{
	return buf_add(b, &c, 1);
}

int buf_vaddf(struct buf *b, const char *fmt, va_list ap)
{
	va_list cp;
	va_copy(cp, ap);
	int n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0)
		return -EINVAL;
	int err = buf_grow(b, (size_t)n);
	if (err)
		return err;
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int buf_addf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int err = buf_vaddf(b, fmt, ap);
	va_end(ap);
	return err;
}

const char *buf_str(const struct buf *b)
{
	return b->data ? b->data : "";
}
