/* An incremental parser of the AWS event stream framing
 * (application/vnd.amazon.eventstream, as Bedrock's ConverseStream sends
 * it): each message is a 12-byte prelude (total length, headers length,
 * CRC32 of the 8 bytes before), typed headers, a payload and a CRC32 of the
 * whole message. Bytes arrive in any split; both CRCs are checked; memory
 * is bounded by DEXA__ES_MAX_MESSAGE. */
#ifndef DEXA_MODEL_EVENTSTREAM_H
#define DEXA_MODEL_EVENTSTREAM_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

#define DEXA__ES_MAX_MESSAGE (16u << 20) /* one message, headers and payload */

/* Called once per message with its :message-type ("event", "exception",
 * "error"), the event type (:event-type, or :exception-type / :error-code
 * for the other kinds; "" when absent) and the payload (NUL-terminated).
 * Return 0 to go on, non-zero to stop the parser with that value. */
typedef int (*dexa__es_fn)(void *ctx, const char *message_type, const char *type,
                           const char *payload, size_t len);

typedef struct dexa__es_parser {
  dexa__buf msg;   /* the message being received */
  size_t need;     /* its total length once the prelude is in, else 0 */
  int failed;
  char why[96];    /* what broke the framing */
  dexa__es_fn on_message;
  void *ctx;
} dexa__es_parser;

void dexa__es_parser_init(dexa__es_parser *p, dexa__es_fn on_message, void *ctx);
void dexa__es_parser_free(dexa__es_parser *p);

/* Feeds bytes. Returns 0, the callback's non-zero value, or -1 when the
 * framing is broken (bad length or CRC, malformed headers, out of memory;
 * p->why says which); the parser stays failed. */
int dexa__es_parser_feed(dexa__es_parser *p, const char *bytes, size_t n);

/* 1 when the stream ended inside a message. */
int dexa__es_parser_pending(const dexa__es_parser *p);

/* CRC-32 (IEEE 802.3, as zlib's crc32) of n bytes, continuing crc. */
uint32_t dexa__crc32(uint32_t crc, const unsigned char *s, size_t n);

#endif
