/* http_header: reading one response header line as libcurl hands it over. */
#ifndef DEXA_UTIL_HTTP_HEADER_H
#define DEXA_UTIL_HTTP_HEADER_H

#include <stddef.h>

/* The whole seconds of a "Retry-After:" line (len bytes, not
 * NUL-terminated, with its CRLF), 0 to max_s; -1 when line is another
 * header or the value is not such a number (an HTTP date is not read). */
long dexa__retry_after_seconds(const char *line, size_t len, long max_s);

#endif
