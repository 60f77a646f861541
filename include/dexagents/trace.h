/* libdexagents: tracing.
 *
 * The embedded runtime reports what it runs as spans: one trace per turn of
 * a session (its id derived from the session id and the turn, so the Steps
 * of one turn share a trace whichever worker or process ran them), a span
 * per Step method, a model span under each RunModel (the GenAI semantic
 * conventions: gen_ai.request.model, gen_ai.usage.input_tokens, ...) and a
 * tool span under each tool Step. A host sees them through the span
 * callbacks of dexa_runtime_options; the built-in exporter sends them over
 * OTLP/HTTP when the OTEL_* variables ask for it. See dexagents-tracing(7).
 *
 * A span is borrowed: valid only during the callback that receives it. */
#ifndef DEXAGENTS_TRACE_H
#define DEXAGENTS_TRACE_H

#include "common.h"

DEXA_BEGIN_DECLS

typedef struct dexa_span dexa_span;

/* Called on the thread that runs the Step, at the start and at the end of
 * a span; it must return quickly (it is on the Step's path). */
typedef void (*dexa_span_fn)(void *user_data, const dexa_span *span);

typedef enum dexa_span_kind {
  DEXA_SPAN_INTERNAL = 1, /* the OTLP numbers */
  DEXA_SPAN_CLIENT = 3
} dexa_span_kind;

typedef enum dexa_span_status {
  DEXA_SPAN_UNSET = 0,
  DEXA_SPAN_OK = 1,
  DEXA_SPAN_ERROR = 2
} dexa_span_status;

typedef enum dexa_trace_value_type {
  DEXA_TRACE_STRING = 1,
  DEXA_TRACE_BOOL = 2,
  DEXA_TRACE_INT = 3,
  DEXA_TRACE_DOUBLE = 4,
  DEXA_TRACE_STRING_ARRAY = 5 /* the value is a JSON array of strings */
} dexa_trace_value_type;

/* The span's name ("RunModel", "chat dex", "execute_tool clock"). */
DEXA_EXTERN const char *dexa_span_name(const dexa_span *span);

/* Copies the 16-byte trace id, the 8-byte span id and the parent's span
 * id (all zero for a root span) into the arrays that are not NULL.
 * Returns DEXA_OK or DEXA_E_INVALID_ARG. */
DEXA_EXTERN int dexa_span_ids(const dexa_span *span, uint8_t *trace_id, uint8_t *span_id,
                              uint8_t *parent_span_id);

/* Start and end in ns since the Unix epoch (end 0 while it runs). Returns
 * DEXA_OK or DEXA_E_INVALID_ARG. */
DEXA_EXTERN int dexa_span_times(const dexa_span *span, int64_t *start_ns, int64_t *end_ns);

/* A dexa_span_kind. */
DEXA_EXTERN int32_t dexa_span_kind_of(const dexa_span *span);

/* A dexa_span_status; *message (optional) receives its description ("" when
 * none), borrowed like the span. */
DEXA_EXTERN int32_t dexa_span_status_of(const dexa_span *span, const char **message);

/* The number of attributes, and one of them: its key, its
 * dexa_trace_value_type, and the value in the member that type names
 * (text for DEXA_TRACE_STRING and DEXA_TRACE_STRING_ARRAY, 0/1 in
 * *int_value for DEXA_TRACE_BOOL). Every output pointer is optional.
 * Returns DEXA_OK or DEXA_E_INVALID_ARG (index out of range). */
DEXA_EXTERN size_t dexa_span_attr_count(const dexa_span *span);
DEXA_EXTERN int dexa_span_attr_at(const dexa_span *span, size_t index, const char **key,
                                  int32_t *type, const char **text, size_t *text_len,
                                  int64_t *int_value, double *double_value);

/* Writes to *out a new JSON document about the built-in exporter (free with
 * dexa_free):
 *   {"exporter":"otlp"|"none","reason":"..","endpoint":"..","protocol":"..",
 *    "queued":N,"exported":N,"dropped":N,"failed":N,"retries":N}
 * "dropped" counts spans lost because the queue was full, "failed" spans
 * of batches the collector did not take after the retries. Returns
 * DEXA_OK, DEXA_E_INVALID_ARG or DEXA_E_NOMEM. */
DEXA_EXTERN int dexa_runtime_trace_stats(const dexa_runtime *runtime, char **out, size_t *out_len);

DEXA_END_DECLS

#endif
