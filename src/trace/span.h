/* Spans: what the runtime reports and the exporter sends. A span is one
 * allocation of a fixed size (attributes and their text inline, long text
 * cut), so a queue of N spans holds at most N * sizeof(dexa_span) bytes.
 *
 * Ownership: dexa__span_new returns a span its caller owns until it frees
 * it or hands it to the exporter (dexa__otlp_enqueue takes it). */
#ifndef DEXA_TRACE_SPAN_H
#define DEXA_TRACE_SPAN_H

#include <stddef.h>
#include <stdint.h>

#include "dexagents/trace.h"

#define DEXA__SPAN_MAX_ATTRS 24
#define DEXA__SPAN_TEXT_BYTES 2048 /* every string of a span, together */
#define DEXA__SPAN_VALUE_MAX 512   /* one attribute value or status message */

typedef struct dexa__span_attr {
  uint16_t key;  /* offset in text */
  uint16_t str;  /* offset in text (STRING, STRING_ARRAY) */
  uint16_t str_len;
  int16_t type;  /* dexa_trace_value_type */
  int64_t i;     /* INT, BOOL */
  double d;      /* DOUBLE */
} dexa__span_attr;

struct dexa_span {
  uint8_t trace_id[16];
  uint8_t span_id[8];
  uint8_t parent_id[8]; /* zero: a root span */
  int64_t start_ns, end_ns;
  int32_t kind;   /* dexa_span_kind */
  int32_t status; /* dexa_span_status */
  uint16_t name, status_msg; /* offsets in text */
  uint16_t attr_count;
  uint16_t dropped_attrs;   /* attributes that did not fit */
  uint16_t text_used;
  dexa__span_attr attrs[DEXA__SPAN_MAX_ATTRS];
  char text[DEXA__SPAN_TEXT_BYTES];
};

/* A new span named name (cut at DEXA__SPAN_VALUE_MAX), kind INTERNAL,
 * status UNSET, no ids; NULL when out of memory. */
dexa_span *dexa__span_new(const char *name);
void dexa__span_free(dexa_span *s);

/* Attributes: an attribute that does not fit is counted in dropped_attrs.
 * Text longer than DEXA__SPAN_VALUE_MAX is cut (at a UTF-8 boundary). */
void dexa__span_str(dexa_span *s, const char *key, const char *v, size_t n);
void dexa__span_cstr(dexa_span *s, const char *key, const char *v);
void dexa__span_int(dexa_span *s, const char *key, int64_t v);
void dexa__span_double(dexa_span *s, const char *key, double v);
void dexa__span_bool(dexa_span *s, const char *key, int v);
/* json: a JSON array of strings, kept as its text (cut arrays are dropped). */
void dexa__span_str_array(dexa_span *s, const char *key, const char *json, size_t n);
void dexa__span_set_status(dexa_span *s, int32_t status, const char *message);

/* Borrowed views of a span's strings. */
const char *dexa__span_text(const dexa_span *s, uint16_t off);

/* Real time in ns since the Unix epoch. */
int64_t dexa__span_now_ns(void);

/* Lowercase hex of n bytes into out (2n + 1 bytes). */
void dexa__span_hex(const uint8_t *b, size_t n, char *out);

#endif
