/* buf.h: a growable byte buffer with a hard maximum size. */
#ifndef RBSCOPE_BUF_H
#define RBSCOPE_BUF_H

#include <stdarg.h>
#include <stddef.h>

/*
 * A buf always holds a NUL-terminated string of len bytes (data may be NULL
 * while len is 0). It never grows past max bytes: an append that would is
 * refused with -ENOSPC and leaves the buffer unchanged, so a corrupt length
 * read from another process cannot turn into a huge allocation.
 */
struct buf {
	char *data;
	size_t len;
	size_t alloc;
	size_t max;
};

#define BUF_INIT(maximum) { NULL, 0, 0, (maximum) }

void buf_init(struct buf *b, size_t max);
void buf_free(struct buf *b);
void buf_reset(struct buf *b);
/* Make room for extra more bytes; 0 or -ENOSPC/-ENOMEM. */
int buf_grow(struct buf *b, size_t extra);
int buf_add(struct buf *b, const void *data, size_t len);
int buf_adds(struct buf *b, const char *s);
int buf_addch(struct buf *b, char c);
int buf_addf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int buf_vaddf(struct buf *b, const char *fmt, va_list ap);
/* Text for the buffer that is never NULL. */
const char *buf_str(const struct buf *b);

#endif
