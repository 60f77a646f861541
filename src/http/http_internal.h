/* src/http internals shared by its files.
 *
 * token.c          session tokens (public)
 * sse.c            SSE frames (public) and the appenders below
 * routes.c         the routes object, request bodies, dispatch, responses
 * routes_rpc.c     the JSON routes: settings, start session, session RPCs
 * routes_stream.c  the event stream route (Server-Sent Events)
 * routes_graph.c   the session graph route */
#ifndef DEXA_HTTP_INTERNAL_H
#define DEXA_HTTP_INTERNAL_H

#include <cjson/cJSON.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <pthread.h>
#include <stdatomic.h>

#include "dexagents/http.h"
#include "dexagents/runtime.h"
#include "util/buf.h"

/* Appends one SSE frame to b (see dexa_http_sse_frame). */
int dexa__sse_append(dexa__buf *b, const char *id, const char *event, const char *data,
                     size_t data_len);
/* Appends one frame per event of a read_events document. */
int dexa__sse_append_events(dexa__buf *b, const cJSON *doc);

struct dexa_http_agent_routes {
  dexa_runtime *rt;
  char *prefix; /* no trailing '/' ("" for the root) */
  size_t prefix_len;
  unsigned char *key;
  size_t key_len;
  char **models;
  size_t model_count;
  char *settings_doc; /* the GET settings response, built once */
  char *id_prefix;
  int64_t max_body;
  int64_t heartbeat_ms;
  pthread_mutex_t rng_mu; /* guards drbg */
  mbedtls_entropy_context entropy;
  mbedtls_ctr_drbg_context drbg;
  atomic_int closing;
};

/* What the routes keep for one request between handler calls. */
typedef struct dexa__http_request {
  dexa__buf body;
  int too_large;
} dexa__http_request;

/* A response under construction: status and JSON body (malloc'd). */
typedef struct dexa__http_reply {
  unsigned status;
  char *body;
  size_t len;
  const char *allow; /* the Allow header of a 405 */
  void *stream;      /* an MHD response already made (the event stream) */
} dexa__http_reply;

/* Sets reply to {"error":{"code","name","message"}} with status. */
void dexa__http_error(dexa__http_reply *reply, unsigned status, int code, const char *message);
/* Sets reply from a runtime operation: 200 and its document, or the error
 * document with the status of rc. Takes doc (dexa_free'd or kept). */
void dexa__http_from_runtime(dexa__http_reply *reply, int rc, char *doc, size_t len);
/* The HTTP status of a DEXA_E_* code. */
unsigned dexa__http_status_of(int rc);

/* Draws n random bytes. Returns DEXA_OK or DEXA_E_IO. */
int dexa__http_random(dexa_http_agent_routes *routes, unsigned char *out, size_t n);

/* Routes (routes_rpc.c). body is NULL for a request without one. */
void dexa__http_settings(dexa_http_agent_routes *routes, dexa__http_reply *reply);
void dexa__http_start_session(dexa_http_agent_routes *routes, const dexa__buf *body,
                              dexa__http_reply *reply);
/* A route under sessions/ID/ (rest is "" or "/messages", ...), after the
 * token check. */
void dexa__http_session_route(dexa_http_agent_routes *routes, void *connection,
                              const char *method, const char *session_id, const char *rest,
                              const dexa__buf *body, dexa__http_reply *reply);

/* The session graph (routes_graph.c): GET sessions/ID/graph. */
void dexa__http_session_graph(dexa_http_agent_routes *routes, void *connection,
                              const char *session_id, dexa__http_reply *reply);

/* The event stream (routes_stream.c): sets reply->stream or an error. */
void dexa__http_event_stream(dexa_http_agent_routes *routes, void *connection,
                             const char *session_id, dexa__http_reply *reply);

#endif
