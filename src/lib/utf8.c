/* utf8.c: telling valid UTF-8 from the other bytes a Ruby name may hold. */
#include "utf8.h"

int utf8_len(const unsigned char *p)
{
	if (p[0] < 0x80)
		return 1;
	int n = p[0] >= 0xc2 && p[0] <= 0xdf ? 2 : p[0] >= 0xe0 && p[0] <= 0xef ? 3 : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : 0;
	for (int i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	if ((n == 3 && p[0] == 0xe0 && p[1] < 0xa0) || (n == 3 && p[0] == 0xed && p[1] >= 0xa0) ||
	    (n == 4 && p[0] == 0xf0 && p[1] < 0x90) || (n == 4 && p[0] == 0xf4 && p[1] >= 0x90))
		return 0; /* overlong, surrogate, or beyond U+10FFFF */
	return n;
}
