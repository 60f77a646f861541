/* errmsg: the message a failing call writes into its caller's buffer. */
#ifndef DEXA_UTIL_ERRMSG_H
#define DEXA_UTIL_ERRMSG_H

#include <stddef.h>

/* Writes the formatted message into errmsg (n bytes; nothing when errmsg
 * is NULL or n is 0) and returns rc, so a failure reads
 * `return dexa__say(errmsg, n, DEXA_E_INVALID_ARG, "...", ...);`. */
int dexa__say(char *errmsg, size_t n, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
