/* Growable byte buffer with JSON writing helpers. A buffer owns its bytes;
 * after an allocation failure it stays failed (oom set) and every append is
 * a no-op, so callers check once at the end. */
#ifndef DEXA_UTIL_BUF_H
#define DEXA_UTIL_BUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct dexa__buf {
  char *data; /* NUL-terminated when len > 0 or after dexa__buf_cstr */
  size_t len;
  size_t cap;
  int oom;
} dexa__buf;

void dexa__buf_init(dexa__buf *b);
void dexa__buf_free(dexa__buf *b);
void dexa__buf_reset(dexa__buf *b);
int dexa__buf_reserve(dexa__buf *b, size_t extra);
void dexa__buf_append(dexa__buf *b, const char *s, size_t n);
void dexa__buf_puts(dexa__buf *b, const char *s);
void dexa__buf_putc(dexa__buf *b, char c);
void dexa__buf_printf(dexa__buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s as a JSON string literal, quotes included. Invalid UTF-8 bytes
 * become U+FFFD so the output is always valid JSON. */
void dexa__buf_json_str(dexa__buf *b, const char *s, size_t n);
void dexa__buf_json_cstr(dexa__buf *b, const char *s);
void dexa__buf_json_i64(dexa__buf *b, int64_t v);
/* Returns the NUL-terminated contents ("" when empty); NULL after oom. */
const char *dexa__buf_cstr(dexa__buf *b);
/* Hands the bytes over (NUL-terminated, malloc'd), or NULL after oom; the
 * buffer is reset (freed) either way. */
char *dexa__buf_steal(dexa__buf *b, size_t *len);

/* Grows a plain malloc'd buffer *data of *cap bytes to at least need
 * bytes (contents kept). 0, or -1 when out of memory (*data unchanged). */
int dexa__grow(char **data, size_t *cap, size_t need);
/* Makes room for one more element of elem bytes in the array *arr of n
 * elements and *cap capacity, doubling it (8 at first). 0, or -1 when out
 * of memory (*arr unchanged). */
int dexa__grow_array(void *arr, size_t n, size_t *cap, size_t elem);

#endif
