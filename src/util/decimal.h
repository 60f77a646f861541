/* Decimal numbers in keys and ids ("AgentMessages/00000000000000000042",
 * "m42"): parsed from a length, never past it, and never overflowing. */
#ifndef DEXA_UTIL_DECIMAL_H
#define DEXA_UTIL_DECIMAL_H

#include <stddef.h>
#include <stdint.h>

/* 0 and *out when s[0..n) is 1 to 20 decimal digits whose value fits in
 * int64_t (leading zeros allowed), else -1. */
int dexa__dec_i64(const char *s, size_t n, int64_t *out);

#endif
