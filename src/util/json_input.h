/* Client input as JSON text (RPC inputs, HTTP bodies): stricter than what
 * cJSON accepts, so that what is stored is what the client sent. */
#ifndef DEXA_UTIL_JSON_INPUT_H
#define DEXA_UTIL_JSON_INPUT_H

#include <stddef.h>

/* DEXA_OK when s[0..n) is exactly one JSON value (white space around it
 * allowed) in valid UTF-8; DEXA_E_INVALID_JSON when it is not (trailing
 * bytes, raw control characters in strings, bad UTF-8 included);
 * DEXA_E_INVALID_ARG when a string escapes U+0000, which C strings cannot
 * hold. */
int dexa__json_input_check(const char *s, size_t n);

#endif
