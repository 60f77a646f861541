/* What the stream decoders share: the state every decoder starts
 * with, the first error it met, and the live deltas. A decoder turns the
 * events of one provider stream into a dexa_model_reply; it never records a
 * partial answer: a stream that ends before its terminal event, or breaks
 * its format, fails the call (the reply is then discarded by RunModel). */
#ifndef DEXA_MODEL_DECODER_H
#define DEXA_MODEL_DECODER_H

#include <cjson/cJSON.h>

#include "dexagents/model.h"
#include "util/buf.h"

/* Caps against hostile streams (documented in dexa_model_client_new(3)). */
#define DEXA__MODEL_MAX_BODY (64u << 20)   /* bytes of one response stream */
#define DEXA__MODEL_MAX_PARTS 4096         /* output items / blocks / tool calls */

typedef struct dexa__decoder {
  const dexa_model_request *req; /* for live deltas; NULL in tests */
  dexa_model_reply *reply;
  const char *client;            /* the client's name, for messages */
  int done;                      /* the terminal event was seen */
  char id_prefix[48];            /* for call ids a provider does not give: call-t<turn>r<round> */
  int rc;                        /* first error, DEXA_OK until then */
  char err[768];
} dexa__decoder;

void dexa__decoder_init(dexa__decoder *d, const char *client, const dexa_model_request *req,
                        dexa_model_reply *reply);

/* Records the first error (later ones are ignored) and returns rc. */
int dexa__decoder_fail(dexa__decoder *d, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Parses one event's data as a JSON object: checks UTF-8 and the nesting
 * cap first. NULL after recording the error. */
cJSON *dexa__decoder_parse(dexa__decoder *d, const char *data, size_t len);

void dexa__decoder_emit(dexa__decoder *d, int kind, const char *text, size_t len);

/* Adds a tool call to the last item; arguments is the model's JSON text
 * ("" means {}). Invalid JSON or a non-object fails the call. */
int dexa__decoder_tool_call(dexa__decoder *d, const char *call_id, const char *name,
                            const char *arguments, size_t len);

/* A number member that is an integer in [0, 2^53] (JSON numbers from a
 * stream may be anything: never cast an out-of-range double). Returns 1
 * and sets *out, else 0. */
int dexa__jcount(const cJSON *obj, const char *key, int64_t *out);

/* What the reply holds so far. */
size_t dexa__decoder_call_count(const dexa__decoder *d);
size_t dexa__decoder_item_count(const dexa__decoder *d);

/* Makes a usage that a provider reported loosely consistent (cached and
 * written input within input, reasoning within output), so that
 * dexa_model_reply_set_token_usage takes it. */
void dexa__usage_clamp(dexa_model_usage *u);

/* A string member or NULL. */
const char *dexa__jstr(const cJSON *obj, const char *key);

/* Iterates the elements of the JSON array s[0..n) (a validated span): *pos
 * starts at 0; returns 1 with the next element's span, 0 at the end, -1 on
 * malformed text. */
int dexa__json_array_next(const char *s, size_t n, size_t *pos, const char **el, size_t *el_len);

#endif
