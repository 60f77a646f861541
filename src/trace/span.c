/* Spans: construction and the public accessors. */
#include <string.h>
#include <stdlib.h>
#include <time.h>

#include "trace/span.h"
#include "dexagents/errors.h"

dexa_span *dexa__span_new(const char *name) {
  dexa_span *s = malloc(sizeof *s);
  if (!s) return NULL;
  memset(s, 0, offsetof(dexa_span, attrs));
  s->kind = DEXA_SPAN_INTERNAL;
  s->text[0] = '\0';
  s->text_used = 1; /* offset 0 is "" */
  s->status_msg = 0;
  s->name = 0;
  if (name) {
    size_t n = strlen(name);
    dexa__span_str(s, NULL, name, n); /* NULL key: just stores the text */
  }
  return s;
}

void dexa__span_free(dexa_span *s) { free(s); }

/* n cut to at most max bytes, not inside a UTF-8 sequence. */
static size_t cut_utf8(const char *v, size_t n, size_t max) {
  if (n <= max) return n;
  n = max;
  while (n > 0 && ((unsigned char)v[n] & 0xC0) == 0x80) n--;
  return n;
}

/* Copies n bytes plus a NUL into the text area; returns the offset, or -1. */
static int put_text(dexa_span *s, const char *v, size_t n) {
  if ((size_t)s->text_used + n + 1 > sizeof s->text) return -1;
  int off = s->text_used;
  memcpy(s->text + off, v, n);
  s->text[off + n] = '\0';
  s->text_used = (uint16_t)(off + n + 1);
  return off;
}

static dexa__span_attr *add_attr(dexa_span *s, const char *key, int type) {
  if (s->attr_count == DEXA__SPAN_MAX_ATTRS) {
    s->dropped_attrs++;
    return NULL;
  }
  int k = put_text(s, key, strlen(key));
  if (k < 0) {
    s->dropped_attrs++;
    return NULL;
  }
  dexa__span_attr *a = &s->attrs[s->attr_count++];
  memset(a, 0, sizeof *a);
  a->key = (uint16_t)k;
  a->type = (int16_t)type;
  return a;
}

static void add_str(dexa_span *s, const char *key, const char *v, size_t n, int type) {
  if (!v) v = "", n = 0;
  n = cut_utf8(v, n, DEXA__SPAN_VALUE_MAX);
  if (!key) { /* the name */
    int off = put_text(s, v, n);
    s->name = off < 0 ? 0 : (uint16_t)off;
    return;
  }
  uint16_t mark = s->text_used, count = s->attr_count;
  dexa__span_attr *a = add_attr(s, key, type);
  if (!a) return;
  int off = put_text(s, v, n);
  if (off < 0) { /* undo the key */
    s->text_used = mark;
    s->attr_count = count;
    s->dropped_attrs++;
    return;
  }
  a->str = (uint16_t)off;
  a->str_len = (uint16_t)n;
}

void dexa__span_str(dexa_span *s, const char *key, const char *v, size_t n) {
  if (s) add_str(s, key, v, n, DEXA_TRACE_STRING);
}

void dexa__span_cstr(dexa_span *s, const char *key, const char *v) {
  dexa__span_str(s, key, v, v ? strlen(v) : 0);
}

void dexa__span_int(dexa_span *s, const char *key, int64_t v) {
  dexa__span_attr *a = s ? add_attr(s, key, DEXA_TRACE_INT) : NULL;
  if (a) a->i = v;
}

void dexa__span_double(dexa_span *s, const char *key, double v) {
  dexa__span_attr *a = s ? add_attr(s, key, DEXA_TRACE_DOUBLE) : NULL;
  if (a) a->d = v;
}

void dexa__span_bool(dexa_span *s, const char *key, int v) {
  dexa__span_attr *a = s ? add_attr(s, key, DEXA_TRACE_BOOL) : NULL;
  if (a) a->i = v ? 1 : 0;
}

void dexa__span_str_array(dexa_span *s, const char *key, const char *json, size_t n) {
  if (!s) return;
  if (n > DEXA__SPAN_VALUE_MAX) { /* a cut array is no array */
    s->dropped_attrs++;
    return;
  }
  add_str(s, key, json, n, DEXA_TRACE_STRING_ARRAY);
}

void dexa__span_set_status(dexa_span *s, int32_t status, const char *message) {
  if (!s) return;
  s->status = status;
  s->status_msg = 0;
  if (message && *message) {
    int off = put_text(s, message, cut_utf8(message, strlen(message), DEXA__SPAN_VALUE_MAX));
    if (off > 0) s->status_msg = (uint16_t)off;
  }
}

const char *dexa__span_text(const dexa_span *s, uint16_t off) { return s->text + off; }

int64_t dexa__span_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void dexa__span_hex(const uint8_t *b, size_t n, char *out) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = digits[b[i] >> 4];
    out[2 * i + 1] = digits[b[i] & 15];
  }
  out[2 * n] = '\0';
}

/* ---- the public accessors ------------------------------------------------ */

DEXA_EXTERN const char *dexa_span_name(const dexa_span *span) {
  return span ? span->text + span->name : "";
}

DEXA_EXTERN int dexa_span_ids(const dexa_span *span, uint8_t *trace_id, uint8_t *span_id,
                              uint8_t *parent_span_id) {
  if (!span) return DEXA_E_INVALID_ARG;
  if (trace_id) memcpy(trace_id, span->trace_id, 16);
  if (span_id) memcpy(span_id, span->span_id, 8);
  if (parent_span_id) memcpy(parent_span_id, span->parent_id, 8);
  return DEXA_OK;
}

DEXA_EXTERN int dexa_span_times(const dexa_span *span, int64_t *start_ns, int64_t *end_ns) {
  if (!span) return DEXA_E_INVALID_ARG;
  if (start_ns) *start_ns = span->start_ns;
  if (end_ns) *end_ns = span->end_ns;
  return DEXA_OK;
}

DEXA_EXTERN int32_t dexa_span_kind_of(const dexa_span *span) {
  return span ? span->kind : DEXA_SPAN_INTERNAL;
}

DEXA_EXTERN int32_t dexa_span_status_of(const dexa_span *span, const char **message) {
  if (message) *message = span ? span->text + span->status_msg : "";
  return span ? span->status : DEXA_SPAN_UNSET;
}

DEXA_EXTERN size_t dexa_span_attr_count(const dexa_span *span) {
  return span ? span->attr_count : 0;
}

DEXA_EXTERN int dexa_span_attr_at(const dexa_span *span, size_t index, const char **key,
                                  int32_t *type, const char **text, size_t *text_len,
                                  int64_t *int_value, double *double_value) {
  if (!span || index >= span->attr_count) return DEXA_E_INVALID_ARG;
  const dexa__span_attr *a = &span->attrs[index];
  int str = a->type == DEXA_TRACE_STRING || a->type == DEXA_TRACE_STRING_ARRAY;
  if (key) *key = span->text + a->key;
  if (type) *type = a->type;
  if (text) *text = str ? span->text + a->str : NULL;
  if (text_len) *text_len = str ? a->str_len : 0;
  if (int_value) *int_value = a->i;
  if (double_value) *double_value = a->d;
  return DEXA_OK;
}
