/* Size-versioned public structs: a caller compiled against a newer header
 * passes a struct_size larger than this library knows. That is accepted
 * only when every member it does not know is zero (unset); anything else
 * would be silently ignored, so it is refused with DEXA_E_STRUCT_SIZE. */
#ifndef DEXA_UTIL_STRUCT_SIZE_H
#define DEXA_UTIL_STRUCT_SIZE_H

#include <stddef.h>

/* No public struct comes near this: a larger struct_size is garbage (an
 * uninitialised structure), and is refused without reading past known. */
#define DEXA__STRUCT_SIZE_MAX 65536

/* 1 when size is at most known, or at most DEXA__STRUCT_SIZE_MAX with the
 * bytes of s from known to size all zero; else 0. */
int dexa__struct_tail_ok(const void *s, size_t size, size_t known);

#endif
