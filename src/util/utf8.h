/* UTF-8 validation, shared by the model stream decoders and the core's
 * check of client input. */
#ifndef DEXA_UTIL_UTF8_H
#define DEXA_UTIL_UTF8_H

#include <stddef.h>

/* 1 when s[0..n) is valid UTF-8 (no overlongs, no surrogates, <= U+10FFFF). */
int dexa__utf8_valid(const char *s, size_t n);

#endif
