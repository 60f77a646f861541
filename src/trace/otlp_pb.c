/* A small protobuf writer (varints, fixed-width and length-delimited
 * fields) and the OTLP ExportTraceServiceRequest in protobuf, field numbers
 * from opentelemetry-proto (collector/trace/v1, trace/v1, common/v1,
 * resource/v1). */
#include <cjson/cJSON.h>
#include <string.h>

#include "dexagents/errors.h"
#include "dexagents/version.h"
#include "trace/otlp.h"

void dexa__pb_varint(dexa__buf *b, uint64_t v) {
  char tmp[10];
  size_t n = 0;
  do {
    tmp[n++] = (char)((v & 0x7F) | (v > 0x7F ? 0x80 : 0));
    v >>= 7;
  } while (v);
  dexa__buf_append(b, tmp, n);
}

void dexa__pb_tag(dexa__buf *b, uint32_t field, int wire) {
  dexa__pb_varint(b, ((uint64_t)field << 3) | (uint64_t)wire);
}

void dexa__pb_uint(dexa__buf *b, uint32_t field, uint64_t v) {
  dexa__pb_tag(b, field, DEXA__PB_VARINT);
  dexa__pb_varint(b, v);
}

void dexa__pb_int(dexa__buf *b, uint32_t field, int64_t v) {
  dexa__pb_uint(b, field, (uint64_t)v);
}

void dexa__pb_fixed64(dexa__buf *b, uint32_t field, uint64_t v) {
  char tmp[8];
  for (int i = 0; i < 8; i++) tmp[i] = (char)(v >> (8 * i)); /* little-endian */
  dexa__pb_tag(b, field, DEXA__PB_I64);
  dexa__buf_append(b, tmp, 8);
}

void dexa__pb_double(dexa__buf *b, uint32_t field, double v) {
  uint64_t u;
  memcpy(&u, &v, sizeof u);
  dexa__pb_fixed64(b, field, u);
}

void dexa__pb_bytes(dexa__buf *b, uint32_t field, const void *p, size_t n) {
  dexa__pb_tag(b, field, DEXA__PB_LEN);
  dexa__pb_varint(b, n);
  dexa__buf_append(b, p, n);
}

void dexa__pb_string(dexa__buf *b, uint32_t field, const char *s) {
  dexa__pb_bytes(b, field, s, strlen(s));
}

/* The length is unknown until the message is written: room for the
 * longest varint a buffer length needs (5 bytes: < 4 GiB) is reserved, and
 * the content moved back over what the real length does not use. */
#define LEN_ROOM 5

size_t dexa__pb_begin(dexa__buf *b, uint32_t field) {
  dexa__pb_tag(b, field, DEXA__PB_LEN);
  static const char room[LEN_ROOM] = {0};
  dexa__buf_append(b, room, LEN_ROOM);
  return b->len;
}

void dexa__pb_end(dexa__buf *b, size_t mark) {
  if (b->oom || mark < LEN_ROOM || mark > b->len) return;
  size_t n = b->len - mark;
  char tmp[10];
  size_t k = 0;
  uint64_t v = n;
  do {
    tmp[k++] = (char)((v & 0x7F) | (v > 0x7F ? 0x80 : 0));
    v >>= 7;
  } while (v);
  if (k > LEN_ROOM) { /* a message of 32 GiB: cannot happen with our bounds */
    b->oom = 1;
    return;
  }
  char *start = b->data + mark - LEN_ROOM;
  memcpy(start, tmp, k);
  memmove(start + k, b->data + mark, n);
  b->len -= LEN_ROOM - k;
  b->data[b->len] = '\0';
}

/* ---- OTLP ----------------------------------------------------------------- */

/* AnyValue: string 1, bool 2, int 3, double 4, array 5 (ArrayValue.values 1). */
static void any_string(dexa__buf *b, uint32_t field, const char *s, size_t n) {
  size_t m = dexa__pb_begin(b, field);
  dexa__pb_bytes(b, 1, s, n);
  dexa__pb_end(b, m);
}

static void string_array(dexa__buf *b, const char *json, size_t n) {
  size_t arr = dexa__pb_begin(b, 5);
  cJSON *a = cJSON_ParseWithLength(json, n);
  const cJSON *it;
  const cJSON *list = cJSON_IsArray(a) ? a : NULL;
    cJSON_ArrayForEach(it, list) {
    if (cJSON_IsString(it)) any_string(b, 1, it->valuestring, strlen(it->valuestring));
  }
  cJSON_Delete(a);
  dexa__pb_end(b, arr);
}

/* KeyValue: key 1, value 2. */
static void key_value(dexa__buf *b, uint32_t field, const dexa_span *s, const dexa__span_attr *a) {
  size_t kv = dexa__pb_begin(b, field);
  dexa__pb_string(b, 1, dexa__span_text(s, a->key));
  size_t v = dexa__pb_begin(b, 2);
  switch (a->type) {
  case DEXA_TRACE_STRING: dexa__pb_bytes(b, 1, dexa__span_text(s, a->str), a->str_len); break;
  case DEXA_TRACE_BOOL: dexa__pb_uint(b, 2, a->i ? 1 : 0); break;
  case DEXA_TRACE_INT: dexa__pb_int(b, 3, a->i); break;
  case DEXA_TRACE_DOUBLE: dexa__pb_double(b, 4, a->d); break;
  case DEXA_TRACE_STRING_ARRAY: string_array(b, dexa__span_text(s, a->str), a->str_len); break;
  default: break;
  }
  dexa__pb_end(b, v);
  dexa__pb_end(b, kv);
}

static void kv_string(dexa__buf *b, uint32_t field, const char *k, const char *v) {
  size_t kv = dexa__pb_begin(b, field);
  dexa__pb_string(b, 1, k);
  any_string(b, 2, v, strlen(v));
  dexa__pb_end(b, kv);
}

static int all_zero(const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i]) return 0;
  return 1;
}

/* Span: trace_id 1, span_id 2, parent_span_id 4, name 5, kind 6,
 * start 7, end 8 (fixed64), attributes 9, dropped_attributes_count 10,
 * status 15 (message 2, code 3), flags 16 (fixed32). */
static void span_pb(dexa__buf *b, const dexa_span *s) {
  size_t m = dexa__pb_begin(b, 2);
  dexa__pb_bytes(b, 1, s->trace_id, 16);
  dexa__pb_bytes(b, 2, s->span_id, 8);
  if (!all_zero(s->parent_id, 8)) dexa__pb_bytes(b, 4, s->parent_id, 8);
  dexa__pb_string(b, 5, dexa__span_text(s, s->name));
  dexa__pb_uint(b, 6, (uint64_t)s->kind);
  dexa__pb_fixed64(b, 7, (uint64_t)s->start_ns);
  dexa__pb_fixed64(b, 8, (uint64_t)s->end_ns);
  for (size_t i = 0; i < s->attr_count; i++) key_value(b, 9, s, &s->attrs[i]);
  if (s->dropped_attrs) dexa__pb_uint(b, 10, s->dropped_attrs);
  size_t st = dexa__pb_begin(b, 15);
  if (s->status_msg) dexa__pb_string(b, 2, dexa__span_text(s, s->status_msg));
  if (s->status) dexa__pb_uint(b, 3, (uint64_t)s->status);
  dexa__pb_end(b, st);
  dexa__pb_end(b, m);
}

/* ExportTraceServiceRequest.resource_spans 1 { resource 1 { attributes 1 },
 * scope_spans 2 { scope 1 { name 1, version 2 }, spans 2 } }. */
int dexa__otlp_encode_pb(dexa__buf *out, const dexa__otlp_config *cfg, dexa_span *const *spans,
                         size_t n) {
  size_t rs = dexa__pb_begin(out, 1);
  size_t res = dexa__pb_begin(out, 1);
  for (size_t i = 0; i < cfg->resource_count; i++)
    kv_string(out, 1, cfg->resource[i].key, cfg->resource[i].value);
  dexa__pb_end(out, res);
  size_t ss = dexa__pb_begin(out, 2);
  size_t scope = dexa__pb_begin(out, 1);
  dexa__pb_string(out, 1, "libdexagents");
  dexa__pb_string(out, 2, DEXA_VERSION_STRING);
  dexa__pb_end(out, scope);
  for (size_t i = 0; i < n; i++) span_pb(out, spans[i]);
  dexa__pb_end(out, ss);
  dexa__pb_end(out, rs);
  return out->oom ? DEXA_E_NOMEM : DEXA_OK;
}
