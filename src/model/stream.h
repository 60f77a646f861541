/* A response stream: the framing parser (Server-Sent Events, or the AWS
 * event stream of Bedrock) wired to one provider's decoder, with the
 * body-size cap. The HTTP layer, the unit tests and the fuzz targets all
 * feed bytes through this, so they exercise the same path. */
#ifndef DEXA_MODEL_STREAM_H
#define DEXA_MODEL_STREAM_H

#include "model/decoder.h"
#include "model/eventstream.h"
#include "model/sse.h"

typedef enum dexa__framing { DEXA__FRAMING_SSE = 0, DEXA__FRAMING_AWS_EVENTSTREAM = 1 } dexa__framing;

/* One provider's decoder: state of size bytes, zeroed before init. */
typedef struct dexa__stream_ops {
  const char *name;
  size_t size;
  void (*init)(void *state, dexa__decoder *d);
  /* One event (SSE: its name or "", and data; event stream: its event
   * type, or "exception:<type>" for an exception or error message, and
   * the payload); returns DEXA_OK or the error recorded in d. */
  int (*event)(void *state, const char *event, const char *data, size_t len);
  /* The body ended; adds the complete items to the reply or fails. Called
   * only when no error was recorded; returns d->rc. */
  int (*end)(void *state);
  void (*free)(void *state);
  dexa__framing framing;
  const char *content_type; /* of a good response, e.g. "text/event-stream" */
} dexa__stream_ops;

extern const dexa__stream_ops dexa__openai_responses_stream;
extern const dexa__stream_ops dexa__openai_chat_stream;
extern const dexa__stream_ops dexa__anthropic_stream;
extern const dexa__stream_ops dexa__gemini_stream;
extern const dexa__stream_ops dexa__bedrock_stream;

typedef struct dexa__stream {
  const dexa__stream_ops *ops;
  void *state;
  dexa__decoder *d;
  dexa__sse_parser sse;
  dexa__es_parser es;
  size_t total;
} dexa__stream;

/* Returns DEXA_OK or DEXA_E_NOMEM. */
int dexa__stream_init(dexa__stream *s, const dexa__stream_ops *ops, dexa__decoder *d);
void dexa__stream_free(dexa__stream *s);

/* Feeds body bytes; returns DEXA_OK or the error (recorded in d). */
int dexa__stream_feed(dexa__stream *s, const char *bytes, size_t n);

/* The body ended cleanly: finishes the decoder. Returns d->rc. */
int dexa__stream_end(dexa__stream *s);

/* Feeds a whole captured body in chunks of chunk bytes (0: at once), then
 * ends it. For tests and fuzzing. */
int dexa__stream_run(const dexa__stream_ops *ops, dexa__decoder *d, const char *body, size_t n,
                     size_t chunk);

#endif
