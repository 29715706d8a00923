/* xml.h: writing text into the flame graph's SVG and the HTML report. */
#ifndef RBSCOPE_XML_H
#define RBSCOPE_XML_H

#include <stddef.h>
#include <stdio.h>

/*
 * Write at most max bytes of s as XML/HTML text: & < > " escaped, control
 * characters left out, bytes that are not UTF-8 written as U+FFFD, and a
 * multi-byte character never cut in two. Returns the bytes of s consumed.
 */
size_t xml_write_text(FILE *f, const char *s, size_t max);

#endif
