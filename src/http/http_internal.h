/* src/http internals shared by its files.
 *
 * token.c          session tokens (public)
 * sse.c            SSE frames (public) and the appenders below
 * routes.c         the routes object, request bodies, dispatch, responses
 * request_check.c  Host header, media type and body bytes, before any route
 * routes_rpc.c     the JSON routes: settings, start session, session RPCs
 * routes_stream.c  the event pump and the event stream route (Server-Sent Events)
 * routes_chat.c    the AI SDK UI message stream route (POST sessions/ID/chat)
 * routes_graph.c   the session graph route
 * routes_oauth.c   the MCP sign-in redirect (oauth/callback)
 * conn_watch.c     the header timeout (a watchdog over the connections) */
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
  char *allowed_hosts; /* NULL: only the local address */
  int64_t idle_timeout_s;
  int64_t request_timeout_ms;
  int64_t max_connections;
  int64_t max_connections_per_client;
  pthread_mutex_t rng_mu; /* guards drbg */
  mbedtls_entropy_context entropy;
  mbedtls_ctr_drbg_context drbg;
  atomic_int closing;
  const struct dexa_mcp_config *mcp_config; /* NULL: no oauth/callback route */
  /* conn_watch.c: the connections of the daemons given the options */
  pthread_mutex_t conn_mu;
  pthread_cond_t conn_cv;
  struct dexa__conn *conns;
  pthread_t watch_thread;
  int watch_running, watch_stop;
};

/* The header timeout (conn_watch.c). */
typedef struct dexa__conn dexa__conn;
struct MHD_OptionItem;
void dexa__conn_watch_init(dexa_http_agent_routes *routes);
/* Ends the watchdog; call after the daemon stopped. */
void dexa__conn_watch_stop(dexa_http_agent_routes *routes);
/* Writes the daemon options of the watchdog (2 items) and returns 2. */
size_t dexa__conn_watch_options(dexa_http_agent_routes *routes, struct MHD_OptionItem *items);

/* What the routes keep for one request between handler calls. */
typedef struct dexa__http_request {
  dexa__buf body;
  int too_large;
  int64_t start_ms; /* monotonic, when the headers were complete */
} dexa__http_request;

/* A response under construction: status and JSON body (malloc'd). */
typedef struct dexa__http_reply {
  unsigned status;
  char *body;
  size_t len;
  const char *allow; /* the Allow header of a 405 */
  void *stream;      /* an MHD response already made (the event stream) */
  const char *csp;   /* the Content-Security-Policy (NULL: the routes' own) */
} dexa__http_reply;

/* Sets reply to {"error":{"code","name","message"}} with status. */
void dexa__http_error(dexa__http_reply *reply, unsigned status, int code, const char *message);
/* Sets reply from a runtime operation: 200 and its document, or the error
 * document with the status of rc. Takes doc (dexa_free'd or kept). */
void dexa__http_from_runtime(dexa__http_reply *reply, int rc, char *doc, size_t len);
/* The HTTP status of a DEXA_E_* code. */
unsigned dexa__http_status_of(int rc);

/* Why a request body is refused before it is parsed (not one JSON value,
 * invalid UTF-8, a NUL byte or a \u0000 escape), or NULL when it is fine. */
const char *dexa__http_body_problem(const char *s, size_t n);
/* 1 when a Content-Type header value is application/json (UTF-8). */
int dexa__http_is_json_type(const char *content_type);
/* 1 when the Host header names the local address or an allowed host. */
struct MHD_Connection;
int dexa__http_host_ok(const dexa_http_agent_routes *r, struct MHD_Connection *c);
/* Monotonic milliseconds. */
int64_t dexa__http_mono_ms(void);

/* Draws n random bytes. Returns DEXA_OK or DEXA_E_IO. */
int dexa__http_random(dexa_http_agent_routes *routes, unsigned char *out, size_t n);

/* A field of a JSON request body. */
typedef enum field_type { F_STR, F_BOOL, F_INT, F_ARRAY, F_OBJECT } field_type;
typedef struct field {
  const char *name;
  field_type type;
  int required;
} field;
/* Parses body (NULL: {}) as an object of the given fields only, each once
 * and of its type. Returns the object, or NULL with reply set to 400. */
cJSON *dexa__http_parse_body(const dexa__buf *body, const field *fields, size_t n,
                             dexa__http_reply *reply);

/* Routes (routes_rpc.c). body is NULL for a request without one. */
void dexa__http_settings(dexa_http_agent_routes *routes, dexa__http_reply *reply);
void dexa__http_start_session(dexa_http_agent_routes *routes, const dexa__buf *body,
                              dexa__http_reply *reply);
/* A route under sessions/ID/ (rest is "" or "/messages", ...), after the
 * token check. */
void dexa__http_session_route(dexa_http_agent_routes *routes, void *connection,
                              const char *method, const char *session_id, const char *rest,
                              const dexa__buf *body, dexa__http_reply *reply);

/* ---- the event pump (routes_stream.c) ----
 * A pump streams a session's events as frames that a map function makes
 * from each event. */
typedef struct dexa__pump dexa__pump;
/* Appends the frames of one read_events item ({"token","event","live"?})
 * to out. Returns DEXA_OK, 1 to end the stream after this item, or a
 * negative code (the stream ends). */
typedef int (*dexa__pump_map)(void *ctx, dexa__pump *pump, const cJSON *item, dexa__buf *out);
/* Reads the first batch after resume (404 / 400 into reply when the session
 * or the token is bad), then sets reply->stream to a streaming response
 * that starts with prologue (NULL: none). Takes map_ctx (map_free'd with
 * the stream, also on error). Returns DEXA_OK or the error set in reply. */
int dexa__pump_open(dexa_http_agent_routes *r, struct MHD_Connection *c, const char *session_id,
                    const char *resume, const char *prologue, dexa__pump_map map, void *map_ctx,
                    void (*map_free)(void *), dexa__http_reply *reply);
/* Ends the stream once what is framed has been sent. */
void dexa__pump_end(dexa__pump *pump);
const char *dexa__pump_session(const dexa__pump *pump);
dexa_http_agent_routes *dexa__pump_routes(const dexa__pump *pump);

/* The session graph (routes_graph.c): GET sessions/ID/graph. */
void dexa__http_session_graph(dexa_http_agent_routes *routes, void *connection,
                              const char *session_id, dexa__http_reply *reply);

/* The event stream (routes_stream.c): sets reply->stream or an error. */
void dexa__http_event_stream(dexa_http_agent_routes *routes, void *connection,
                             const char *session_id, dexa__http_reply *reply);

/* GET oauth/callback (routes_oauth.c): completes an MCP server's sign-in
 * and answers the session's question; an HTML page in reply->stream. */
void dexa__http_oauth_callback(dexa_http_agent_routes *routes, void *connection,
                               const char *method, dexa__http_reply *reply);

/* POST sessions/ID/chat (routes_chat.c): sends the last user message of an
 * AI SDK chat request and answers with that turn as a UI message stream. */
void dexa__http_chat(dexa_http_agent_routes *routes, void *connection, const char *session_id,
                     const dexa__buf *body, dexa__http_reply *reply);

#endif
