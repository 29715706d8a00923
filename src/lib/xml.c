/* xml.c: writing text into the flame graph's SVG and the HTML report. */
#include "xml.h"

#include "utf8.h"

size_t xml_write_text(FILE *f, const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	while (p[i] && i < max) {
		switch (p[i]) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		default:
			if (p[i] >= 0x80) {
				int n = utf8_len(p + i);
				if (n && i + (size_t)n > max)
					return i; /* the character does not fit whole */
				if (n)
					fwrite(p + i, 1, (size_t)n, f);
				else
					fputs("&#xFFFD;", f);
				i += n ? (size_t)n : 1;
				continue;
			}
			if (p[i] >= 0x20 || p[i] == '\t')
				fputc(p[i], f);
		}
		i++;
	}
	return i;
}
