/* The OTLP ExportTraceServiceRequest in OTLP/JSON: the protobuf JSON mapping
 * with lowerCamelCase keys, trace and span ids as lowercase hex, 64-bit
 * integers as decimal strings and enums as numbers. */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dexagents/errors.h"
#include "dexagents/version.h"
#include "trace/otlp.h"

static void any_value(dexa__buf *b, const dexa_span *s, const dexa__span_attr *a) {
  switch (a->type) {
  case DEXA_TRACE_STRING:
    dexa__buf_puts(b, "{\"stringValue\":");
    dexa__buf_json_str(b, dexa__span_text(s, a->str), a->str_len);
    dexa__buf_putc(b, '}');
    break;
  case DEXA_TRACE_BOOL: dexa__buf_puts(b, a->i ? "{\"boolValue\":true}" : "{\"boolValue\":false}"); break;
  case DEXA_TRACE_INT: dexa__buf_printf(b, "{\"intValue\":\"%" PRId64 "\"}", a->i); break;
  case DEXA_TRACE_DOUBLE:
    if (isfinite(a->d))
      dexa__buf_printf(b, "{\"doubleValue\":%.17g}", a->d);
    else
      dexa__buf_puts(b, "{\"doubleValue\":\"NaN\"}");
    break;
  case DEXA_TRACE_STRING_ARRAY: {
    dexa__buf_puts(b, "{\"arrayValue\":{\"values\":[");
    cJSON *arr = cJSON_ParseWithLength(dexa__span_text(s, a->str), a->str_len);
    const cJSON *it;
    int first = 1;
    const cJSON *list = cJSON_IsArray(arr) ? arr : NULL;
    cJSON_ArrayForEach(it, list) {
      if (!cJSON_IsString(it)) continue;
      dexa__buf_puts(b, first ? "{\"stringValue\":" : ",{\"stringValue\":");
      dexa__buf_json_cstr(b, it->valuestring);
      dexa__buf_putc(b, '}');
      first = 0;
    }
    cJSON_Delete(arr);
    dexa__buf_puts(b, "]}}");
    break;
  }
  default: dexa__buf_puts(b, "{}"); break;
  }
}

static void hex_member(dexa__buf *b, const char *name, const uint8_t *id, size_t n) {
  char hex[33];
  dexa__span_hex(id, n, hex);
  dexa__buf_printf(b, ",\"%s\":\"%s\"", name, hex);
}

static void span_json(dexa__buf *b, const dexa_span *s) {
  static const uint8_t zero[8] = {0};
  char hex[33];
  dexa__span_hex(s->trace_id, 16, hex);
  dexa__buf_printf(b, "{\"traceId\":\"%s\"", hex);
  hex_member(b, "spanId", s->span_id, 8);
  if (memcmp(s->parent_id, zero, 8) != 0) hex_member(b, "parentSpanId", s->parent_id, 8);
  dexa__buf_puts(b, ",\"name\":");
  dexa__buf_json_cstr(b, dexa__span_text(s, s->name));
  dexa__buf_printf(b, ",\"kind\":%d,\"startTimeUnixNano\":\"%" PRId64 "\",\"endTimeUnixNano\":\"%" PRId64 "\"",
                   (int)s->kind, s->start_ns, s->end_ns);
  dexa__buf_puts(b, ",\"attributes\":[");
  for (size_t i = 0; i < s->attr_count; i++) {
    dexa__buf_puts(b, i ? ",{\"key\":" : "{\"key\":");
    dexa__buf_json_cstr(b, dexa__span_text(s, s->attrs[i].key));
    dexa__buf_puts(b, ",\"value\":");
    any_value(b, s, &s->attrs[i]);
    dexa__buf_putc(b, '}');
  }
  dexa__buf_putc(b, ']');
  if (s->dropped_attrs) dexa__buf_printf(b, ",\"droppedAttributesCount\":%u", (unsigned)s->dropped_attrs);
  dexa__buf_printf(b, ",\"status\":{\"code\":%d", (int)s->status);
  if (s->status_msg) {
    dexa__buf_puts(b, ",\"message\":");
    dexa__buf_json_cstr(b, dexa__span_text(s, s->status_msg));
  }
  dexa__buf_puts(b, "}}");
}

int dexa__otlp_encode_json(dexa__buf *out, const dexa__otlp_config *cfg, dexa_span *const *spans,
                           size_t n) {
  dexa__buf_puts(out, "{\"resourceSpans\":[{\"resource\":{\"attributes\":[");
  for (size_t i = 0; i < cfg->resource_count; i++) {
    dexa__buf_puts(out, i ? ",{\"key\":" : "{\"key\":");
    dexa__buf_json_cstr(out, cfg->resource[i].key);
    dexa__buf_puts(out, ",\"value\":{\"stringValue\":");
    dexa__buf_json_cstr(out, cfg->resource[i].value);
    dexa__buf_puts(out, "}}");
  }
  dexa__buf_puts(out, "]},\"scopeSpans\":[{\"scope\":{\"name\":\"libdexagents\",\"version\":\"" DEXA_VERSION_STRING "\"},\"spans\":[");
  for (size_t i = 0; i < n; i++) {
    if (i) dexa__buf_putc(out, ',');
    span_json(out, spans[i]);
  }
  dexa__buf_puts(out, "]}]}]}");
  return out->oom ? DEXA_E_NOMEM : DEXA_OK;
}
