/* A JSON scanner that finds value spans without building a tree, so stored
 * messages can be spliced into model requests and responses as the text they
 * arrived as. Nesting is capped (DEXA__JSON_MAX_DEPTH) against nesting bombs. */
#ifndef DEXA_UTIL_JSON_SPAN_H
#define DEXA_UTIL_JSON_SPAN_H

#include <stddef.h>
#include <stdint.h>

#define DEXA__JSON_MAX_DEPTH 128

/* Skips white space then one JSON value starting at *pos; on success *pos is
 * just past it. Returns 0, or -1 when the text is not valid JSON. */
int dexa__json_skip(const char *s, size_t n, size_t *pos);

/* 0 when s is exactly one JSON value (white space around it allowed). */
int dexa__json_validate(const char *s, size_t n);

/* Finds the value of key at the top level of the object s. Returns 0 and
 * sets the span, 1 when the key is absent, -1 when s is not an object. */
int dexa__json_get(const char *s, size_t n, const char *key, const char **val, size_t *vlen);

/* Reads a top-level integer member. Returns 0, 1 when absent, -1 otherwise. */
int dexa__json_get_i64(const char *s, size_t n, const char *key, int64_t *out);

/* Trims white space around a span. */
void dexa__json_trim(const char **s, size_t *n);

#endif
