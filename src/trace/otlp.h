/* The built-in OTLP/HTTP exporter, in four parts with one job each:
 *   otlp_env.c    its configuration from the standard OTEL_* variables;
 *   otlp_pb.c     a small protobuf writer and the ExportTraceServiceRequest
 *   otlp_json.c   encodings (http/protobuf, http/json), no dependency;
 *   otlp_batch.c  the bounded queue and the background thread that batches,
 *                 sends (through a sender), retries and counts;
 *   otlp_http.c   the sender on libcurl (the only file that needs it).
 * The runtime (src/runtime/trace.c) sees only dexa__otlp_* below.
 *
 * Threads: dexa__otlp_enqueue may be called from any thread and never
 * waits for the network: it takes a mutex held only to move pointers. */
#ifndef DEXA_TRACE_OTLP_H
#define DEXA_TRACE_OTLP_H

#include <stddef.h>
#include <stdint.h>

#include "trace/span.h"
#include "util/buf.h"

typedef struct dexa__otlp_kv {
  char *key;
  char *value;
} dexa__otlp_kv;

typedef struct dexa__otlp_config {
  char *endpoint;         /* the full URL of the traces endpoint */
  int json;               /* 1: http/json; 0: http/protobuf */
  dexa__otlp_kv *headers; /* extra request headers */
  size_t header_count;
  dexa__otlp_kv *resource; /* resource attributes, service.name first */
  size_t resource_count;
  int64_t timeout_ms;        /* one request (OTEL_EXPORTER_OTLP_TIMEOUT) */
  int64_t schedule_delay_ms; /* OTEL_BSP_SCHEDULE_DELAY */
  int64_t export_timeout_ms; /* OTEL_BSP_EXPORT_TIMEOUT: one export with its retries, a flush */
  size_t max_queue;          /* OTEL_BSP_MAX_QUEUE_SIZE */
  size_t max_batch;          /* OTEL_BSP_MAX_EXPORT_BATCH_SIZE */
  int max_attempts;          /* sends of one batch, retries included */
  int64_t initial_backoff_ms;
} dexa__otlp_config;

/* Reads the OTEL_* variables through getenv. Returns 1 with *cfg filled
 * (free with dexa__otlp_config_free) when the exporter should run, 0 when
 * it should not (why says so: no endpoint, OTEL_SDK_DISABLED, ...), or a
 * negative DEXA_E_* error (DEXA_E_NOMEM). */
int dexa__otlp_config_from_env(dexa__otlp_config *cfg, char *why, size_t why_size);
/* The defaults of every batch setting, no endpoint, no resource. */
void dexa__otlp_config_defaults(dexa__otlp_config *cfg);
void dexa__otlp_config_free(dexa__otlp_config *cfg);
/* Parses "k=v,k2=v2" (values percent-decoded, blanks trimmed) and appends
 * the pairs to *list; malformed items are skipped. Returns DEXA_OK or
 * DEXA_E_NOMEM. */
int dexa__otlp_parse_kv_list(const char *s, dexa__otlp_kv **list, size_t *count);

/* ---- protobuf writer (otlp_pb.c) ------------------------------------------ */
enum { DEXA__PB_VARINT = 0, DEXA__PB_I64 = 1, DEXA__PB_LEN = 2, DEXA__PB_I32 = 5 };
void dexa__pb_varint(dexa__buf *b, uint64_t v);
void dexa__pb_tag(dexa__buf *b, uint32_t field, int wire);
void dexa__pb_uint(dexa__buf *b, uint32_t field, uint64_t v);
void dexa__pb_int(dexa__buf *b, uint32_t field, int64_t v); /* int64: two's complement varint */
void dexa__pb_fixed64(dexa__buf *b, uint32_t field, uint64_t v);
void dexa__pb_double(dexa__buf *b, uint32_t field, double v);
void dexa__pb_bytes(dexa__buf *b, uint32_t field, const void *p, size_t n);
void dexa__pb_string(dexa__buf *b, uint32_t field, const char *s);
/* A nested message: dexa__pb_begin writes the tag and returns a mark;
 * dexa__pb_end writes the length of what was written since. */
size_t dexa__pb_begin(dexa__buf *b, uint32_t field);
void dexa__pb_end(dexa__buf *b, size_t mark);

/* Encodes spans as one ExportTraceServiceRequest (protobuf, or OTLP/JSON
 * when json) into out (appended). Returns DEXA_OK or DEXA_E_NOMEM. */
int dexa__otlp_encode_pb(dexa__buf *out, const dexa__otlp_config *cfg,
                         dexa_span *const *spans, size_t n);
int dexa__otlp_encode_json(dexa__buf *out, const dexa__otlp_config *cfg,
                           dexa_span *const *spans, size_t n);

/* ---- sending (otlp_http.c, or a test's fake) ------------------------------ */
/* Sends one body; *status receives the HTTP status (0: no response) and
 * *retry_after_ms a Retry-After (0: none). Returns DEXA_OK when a response
 * came (any status), DEXA_E_TRANSIENT when none did. */
typedef struct dexa__otlp_sender {
  int (*send)(void *ctx, const char *body, size_t len, int64_t timeout_ms, long *status,
              int64_t *retry_after_ms);
  void (*free)(void *ctx);
  void *ctx;
} dexa__otlp_sender;

/* The libcurl sender for cfg (endpoint, headers, content type). Returns
 * DEXA_OK, DEXA_E_NOMEM or DEXA_E_INTERNAL (libcurl did not initialise). */
int dexa__otlp_http_sender_new(dexa__otlp_sender *out, const dexa__otlp_config *cfg);

/* ---- the exporter (otlp_batch.c) ------------------------------------------ */
typedef struct dexa__otlp dexa__otlp;

typedef struct dexa__otlp_stats {
  int64_t queued, exported, dropped, failed, retries;
} dexa__otlp_stats;

/* Starts the exporter's thread. Takes cfg's contents (cfg is emptied) and
 * the sender. Returns DEXA_OK, DEXA_E_NOMEM; on error both are freed. */
int dexa__otlp_new(dexa__otlp **out, dexa__otlp_config *cfg, dexa__otlp_sender sender);
/* Takes span: queued, or freed and counted as dropped when the queue is
 * full (or the exporter is shutting down). Never blocks on the network. */
/* 1 when queued; 0 when the span was dropped (a full queue, a stopping
 * exporter). */
int dexa__otlp_enqueue(dexa__otlp *x, dexa_span *span);
/* Asks for every queued span to be sent now and waits until they are, or
 * for at most timeout_ms. Returns DEXA_OK or DEXA_E_TIMEOUT. */
int dexa__otlp_flush(dexa__otlp *x, int64_t timeout_ms);
/* Flushes (at most cfg.export_timeout_ms), stops the thread, frees. NULL
 * is a no-op. */
void dexa__otlp_free(dexa__otlp *x);
void dexa__otlp_get_stats(dexa__otlp *x, dexa__otlp_stats *out);
const dexa__otlp_config *dexa__otlp_get_config(const dexa__otlp *x);

#endif
