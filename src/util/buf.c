#include "util/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dexa__buf_init(dexa__buf *b) { memset(b, 0, sizeof *b); }

void dexa__buf_free(dexa__buf *b) {
  free(b->data);
  memset(b, 0, sizeof *b);
}

void dexa__buf_reset(dexa__buf *b) {
  b->len = 0;
  b->oom = 0;
  if (b->data) b->data[0] = '\0';
}

int dexa__buf_reserve(dexa__buf *b, size_t extra) {
  if (b->oom) return -1;
  if (extra > SIZE_MAX / 2 - b->len) goto fail;
  size_t need = b->len + extra + 1;
  if (need <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 64;
  while (cap < need) cap *= 2;
  char *p = realloc(b->data, cap);
  if (!p) goto fail;
  p[b->len] = '\0'; /* a fresh block is not terminated yet (cstr, steal read it) */
  b->data = p;
  b->cap = cap;
  return 0;
fail:
  b->oom = 1;
  return -1;
}

void dexa__buf_append(dexa__buf *b, const char *s, size_t n) {
  if (dexa__buf_reserve(b, n) != 0) return;
  if (n) memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = '\0';
}

void dexa__buf_puts(dexa__buf *b, const char *s) { dexa__buf_append(b, s, strlen(s)); }

void dexa__buf_putc(dexa__buf *b, char c) { dexa__buf_append(b, &c, 1); }

void dexa__buf_printf(dexa__buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char small[256];
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) {
    b->oom = 1;
    return;
  }
  if ((size_t)n < sizeof small) {
    dexa__buf_append(b, small, (size_t)n);
    return;
  }
  if (dexa__buf_reserve(b, (size_t)n) != 0) return;
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when invalid. */
static size_t utf8_seq_len(const unsigned char *s, size_t n) {
  unsigned char c = s[0];
  size_t len;
  uint32_t cp;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; }
  else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0F; }
  else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07; }
  else return 0;
  if (n < len) return 0;
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3F);
  }
  if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return 0;
  if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
  return len;
}

void dexa__buf_json_str(dexa__buf *b, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *p = (const unsigned char *)s;
  dexa__buf_putc(b, '"');
  size_t run = 0; /* start of the pending run of bytes copied as they are */
  size_t i = 0;
  while (i < n) {
    unsigned char c = p[i];
    const char *esc = NULL;
    char u[6];
    size_t step = 1;
    if (c == '"') esc = "\\\"";
    else if (c == '\\') esc = "\\\\";
    else if (c == '\n') esc = "\\n";
    else if (c == '\r') esc = "\\r";
    else if (c == '\t') esc = "\\t";
    else if (c < 0x20 || c == 0x7f) {
      u[0] = '\\'; u[1] = 'u'; u[2] = '0'; u[3] = '0';
      u[4] = hex[c >> 4]; u[5] = hex[c & 15];
    } else if (c >= 0x80) {
      step = utf8_seq_len(p + i, n - i);
      if (step) {
        i += step;
        continue;
      }
      esc = "\xEF\xBF\xBD";
      step = 1;
    } else {
      i++;
      continue;
    }
    dexa__buf_append(b, s + run, i - run);
    if (esc) dexa__buf_puts(b, esc);
    else dexa__buf_append(b, u, 6);
    i += step;
    run = i;
  }
  dexa__buf_append(b, s + run, n - run);
  dexa__buf_putc(b, '"');
}

void dexa__buf_json_cstr(dexa__buf *b, const char *s) {
  if (!s) {
    dexa__buf_puts(b, "null");
    return;
  }
  dexa__buf_json_str(b, s, strlen(s));
}

/* Digits by hand: printf's format parsing was a tenth of a RunModel
 * dispatch's CPU (the usage sums and message fields are mostly ints). */
void dexa__buf_json_i64(dexa__buf *b, int64_t v) {
  char tmp[24];
  size_t i = sizeof tmp;
  uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  do {
    tmp[--i] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0) tmp[--i] = '-';
  dexa__buf_append(b, tmp + i, sizeof tmp - i);
}

const char *dexa__buf_cstr(dexa__buf *b) {
  if (b->oom) return NULL;
  if (!b->data) return "";
  return b->data;
}

char *dexa__buf_steal(dexa__buf *b, size_t *len) {
  if (b->oom || (!b->data && dexa__buf_reserve(b, 0) != 0)) {
    dexa__buf_free(b); /* reset either way, as documented: nothing leaks */
    return NULL;
  }
  char *p = b->data;
  if (len) *len = b->len;
  memset(b, 0, sizeof *b);
  return p;
}

int dexa__grow_array(void *arr, size_t n, size_t *cap, size_t elem) {
  if (n < *cap) return 0;
  size_t c = *cap ? *cap * 2 : 8;
  if (c > SIZE_MAX / elem) return -1;
  /* arr points at a T *, not a void *: copy the pointer, not alias it. */
  void *old;
  memcpy(&old, arr, sizeof old);
  void *p = realloc(old, c * elem);
  if (!p) return -1;
  memcpy(arr, &p, sizeof p);
  *cap = c;
  return 0;
}

int dexa__grow(char **data, size_t *cap, size_t need) {
  if (need <= *cap) return 0;
  char *grown = realloc(*data, need);
  if (!grown) return -1;
  *data = grown;
  *cap = need;
  return 0;
}
