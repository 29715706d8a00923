/* utf8.h: telling valid UTF-8 from the other bytes a Ruby name may hold. */
#ifndef RBSCOPE_UTF8_H
#define RBSCOPE_UTF8_H

/*
 * Length of the valid UTF-8 sequence at p (1-4), or 0 if the bytes there
 * are not one (overlong, surrogate, beyond U+10FFFF, cut short). p must be
 * NUL-terminated: a NUL ends a sequence early and makes it invalid.
 */
int utf8_len(const unsigned char *p);

#endif
