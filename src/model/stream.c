/* The SSE parser wired to a provider decoder (see stream.h). */
#include "model/stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"

static int on_event(void *ctx, const char *event, const char *data, size_t len) {
  dexa__stream *s = ctx;
  int rc = s->ops->event(s->state, event, data, len);
  if (rc == DEXA_OK && s->d->rc != DEXA_OK) rc = s->d->rc;
  return rc == DEXA_OK ? 0 : 1;
}

/* An event-stream message: events go by their type, exceptions and errors
 * as "exception:<type>". */
static int on_message(void *ctx, const char *message_type, const char *type, const char *payload,
                      size_t len) {
  if (strcmp(message_type, "event") == 0) return on_event(ctx, type, payload, len);
  char name[160];
  snprintf(name, sizeof name, "exception:%s", type);
  return on_event(ctx, name, payload, len);
}

int dexa__stream_init(dexa__stream *s, const dexa__stream_ops *ops, dexa__decoder *d) {
  s->ops = ops;
  s->d = d;
  s->total = 0;
  s->state = calloc(1, ops->size);
  if (!s->state) return dexa__decoder_fail(d, DEXA_E_NOMEM, "out of memory");
  dexa__sse_parser_init(&s->sse, on_event, s);
  dexa__es_parser_init(&s->es, on_message, s);
  ops->init(s->state, d);
  return DEXA_OK;
}

void dexa__stream_free(dexa__stream *s) {
  if (!s->state) return;
  s->ops->free(s->state);
  free(s->state);
  s->state = NULL;
  dexa__sse_parser_free(&s->sse);
  dexa__es_parser_free(&s->es);
}

int dexa__stream_feed(dexa__stream *s, const char *bytes, size_t n) {
  if (s->d->rc != DEXA_OK) return s->d->rc;
  s->total += n;
  if (s->total > DEXA__MODEL_MAX_BODY)
    return dexa__decoder_fail(s->d, DEXA_E_MODEL, "the response passed %u MiB",
                              DEXA__MODEL_MAX_BODY >> 20);
  if (s->ops->framing == DEXA__FRAMING_AWS_EVENTSTREAM) {
    if (dexa__es_parser_feed(&s->es, bytes, n) == -1)
      return dexa__decoder_fail(s->d, DEXA_E_TRANSIENT, "%s", s->es.why);
    return s->d->rc;
  }
  int rc = dexa__sse_parser_feed(&s->sse, bytes, n);
  if (rc == -1)
    return dexa__decoder_fail(s->d, DEXA_E_MODEL,
                              "an event-stream line over %u KiB or event over %u MiB",
                              DEXA__SSE_MAX_LINE >> 10, DEXA__SSE_MAX_EVENT >> 20);
  return s->d->rc;
}

int dexa__stream_end(dexa__stream *s) {
  if (s->d->rc != DEXA_OK) return s->d->rc;
  /* A final event without its blank line: the spec drops it; a terminal
   * event lost that way is caught by the decoder's end. */
  dexa__sse_parser_finish(&s->sse);
  if (s->ops->framing == DEXA__FRAMING_AWS_EVENTSTREAM && dexa__es_parser_pending(&s->es))
    return dexa__decoder_fail(s->d, DEXA_E_TRANSIENT, "the stream ended inside an event (truncated)");
  return s->ops->end(s->state);
}

int dexa__stream_run(const dexa__stream_ops *ops, dexa__decoder *d, const char *body, size_t n,
                     size_t chunk) {
  dexa__stream s;
  int rc = dexa__stream_init(&s, ops, d);
  if (rc != DEXA_OK) return rc;
  if (!chunk) chunk = n ? n : 1;
  for (size_t off = 0; off < n && rc == DEXA_OK; off += chunk)
    rc = dexa__stream_feed(&s, body + off, n - off < chunk ? n - off : chunk);
  if (rc == DEXA_OK) rc = dexa__stream_end(&s);
  dexa__stream_free(&s);
  return rc;
}
