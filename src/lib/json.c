/* json.c: writing JSON strings: escaped, and always valid UTF-8 whatever bytes Ruby names hold. */
#include "json.h"

#include <stdarg.h>

#include "utf8.h"

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
