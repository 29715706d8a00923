/* json.c: writing JSON strings: escaped, and always valid UTF-8 whatever bytes Ruby names hold. */
#include "json.h"

#include <stdarg.h>

/* Length of the valid UTF-8 sequence at p (1-4), or 0 if the bytes there are not one. */
static int utf8_len(const unsigned char *p)
{
	int n = p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 && p[0] < 0xe0 ? 2 : 0;
	for (int i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	if ((n == 3 && p[0] == 0xe0 && p[1] < 0xa0) || (n == 3 && p[0] == 0xed && p[1] >= 0xa0) ||
	    (n == 4 && p[0] == 0xf0 && p[1] < 0x90) || (n == 4 && p[0] == 0xf4 && p[1] >= 0x90))
		return 0; /* overlong, surrogate, or beyond U+10FFFF */
	return n;
}

void json_write_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\t': fputs("\\t", f); break;
		case '\r': fputs("\\r", f); break;
		default:
			if (*p < 0x20) {
				fprintf(f, "\\u%04x", *p);
			} else if (*p < 0x80) {
				fputc(*p, f);
			} else {
				int n = utf8_len(p);
				if (n) {
					fwrite(p, 1, (size_t)n, f);
					p += n - 1;
				} else {
					fputs("\\ufffd", f); /* a byte that is not UTF-8: the replacement character */
				}
			}
		}
	}
	fputc('"', f);
}

int json_write_stringf(FILE *f, struct buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	buf_reset(b);
	int err = buf_vaddf(b, fmt, ap);
	va_end(ap);
	if (!err)
		json_write_string(f, buf_str(b));
	return err;
}
