/* An incremental Server-Sent Events parser (the WHATWG event-stream rules):
 * bytes arrive in any split; lines end with LF, CR or CRLF; ':' lines are
 * comments; "data:" lines of one event are joined with LF; a blank line
 * dispatches the event; "id:" and "retry:" are ignored (a model stream is
 * never resumed). Memory is bounded: a line longer than DEXA__SSE_MAX_LINE
 * or an event whose data passes DEXA__SSE_MAX_EVENT fails the parser. */
#ifndef DEXA_MODEL_SSE_H
#define DEXA_MODEL_SSE_H

#include <stddef.h>

#include "util/buf.h"
#include "util/utf8.h"

#define DEXA__SSE_MAX_LINE (1u << 20)  /* 1 MiB */
#define DEXA__SSE_MAX_EVENT (8u << 20) /* 8 MiB of data in one event */

/* Called once per event; event is "" when the stream named none, data is
 * NUL-terminated. Return 0 to go on, non-zero to stop the parser (that value
 * is returned by dexa__sse_parser_feed). */
typedef int (*dexa__sse_parser_fn)(void *ctx, const char *event, const char *data, size_t len);

typedef struct dexa__sse_parser {
  dexa__buf line;
  dexa__buf event;
  dexa__buf data;
  int has_data;
  int last_cr;   /* the previous byte was CR: a following LF ends nothing */
  int bom_done;  /* a leading UTF-8 BOM was looked for */
  int failed;
  dexa__sse_parser_fn on_event;
  void *ctx;
} dexa__sse_parser;

void dexa__sse_parser_init(dexa__sse_parser *p, dexa__sse_parser_fn on_event, void *ctx);
void dexa__sse_parser_free(dexa__sse_parser *p);

/* Feeds bytes. Returns 0, the callback's non-zero value, or -1 (a line or
 * event over its cap, or out of memory; the parser stays failed). */
int dexa__sse_parser_feed(dexa__sse_parser *p, const char *bytes, size_t n);

/* The stream ended. An event not yet ended by a blank line is dropped (as
 * the spec says); returns 1 when such a partial event or line was pending,
 * else 0. */
int dexa__sse_parser_finish(dexa__sse_parser *p);

#endif
