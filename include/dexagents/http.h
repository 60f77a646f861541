/* libdexagents: browser helpers.
 *
 * Session tokens (HMAC-SHA256 of a session id under a key), Server-Sent
 * Events frames of a session's event stream, and the agent HTTP routes of
 * the AI Agent example, mountable in any libmicrohttpd daemon.
 *
 * This header needs no libmicrohttpd header: a connection is passed as
 * void * and is a struct MHD_Connection *. */
#ifndef DEXAGENTS_HTTP_H
#define DEXAGENTS_HTTP_H

#include "common.h"

DEXA_BEGIN_DECLS

/* Bytes of a session token with its terminating NUL: 64 hex digits + 1. */
#define DEXA_HTTP_TOKEN_SIZE 65

/* ---- session tokens ---------------------------------------------------- */

/* Writes the session token of session_id: the lower-case hex of
 * HMAC-SHA256(key, session_id), NUL-terminated, into out (at least
 * DEXA_HTTP_TOKEN_SIZE bytes). Every process with the same key computes the
 * same token, so nothing is stored. Returns DEXA_OK or DEXA_E_INVALID_ARG
 * (NULL argument, empty key or session id, out_size too small). */
DEXA_EXTERN int dexa_http_token_sign(const void *key, size_t key_len, const char *session_id,
                                     char *out, size_t out_size);

/* Checks token against the token of session_id under key, in constant time
 * (the time does not depend on where the two differ). Returns DEXA_OK when
 * it matches, DEXA_E_AUTH when it does not (or token is NULL or of another
 * length), DEXA_E_INVALID_ARG (NULL key or session id, empty key). */
DEXA_EXTERN int dexa_http_token_verify(const void *key, size_t key_len, const char *session_id,
                                       const char *token);

/* ---- Server-Sent Events ------------------------------------------------- */

/* Formats one SSE frame: "id: ID\n" (when id is not NULL), "event: EVENT\n"
 * (when event is not NULL), one "data: " line per line of data, and a blank
 * line. *out (free with dexa_free) receives the frame. Returns DEXA_OK,
 * DEXA_E_INVALID_ARG (NULL out, or a CR or LF in id or event) or
 * DEXA_E_NOMEM. */
DEXA_EXTERN int dexa_http_sse_frame(const char *id, const char *event, const char *data,
                                    size_t data_len, char **out, size_t *out_len);

/* Turns a dexa_runtime_read_events document ({"events":[{"token":..,
 * "event":{..}}],"token":..}) into SSE frames, one per event: the id is the
 * event's resume token (so a browser's Last-Event-ID resumes after it) and
 * the data is the event document. *out receives "" for no events. Returns
 * DEXA_OK, DEXA_E_INVALID_JSON (not such a document), DEXA_E_INVALID_ARG or
 * DEXA_E_NOMEM. */
DEXA_EXTERN int dexa_http_sse_frames(const char *events_json, size_t events_len, char **out,
                                     size_t *out_len);

/* ---- agent routes --------------------------------------------------------- */

typedef struct dexa_http_agent_routes dexa_http_agent_routes;

/* Options of dexa_http_agent_routes_new: a size-versioned struct.
 * Initialize with dexa_http_agent_routes_options_init, then set fields. */
typedef struct dexa_http_agent_routes_options {
  uint32_t struct_size;
  int32_t reserved0;
  /* URL prefix of every route, without a trailing '/'. Default
   * "/products/ai-agent". */
  const char *prefix;
  /* The key that signs session tokens. NULL: 32 random bytes are drawn by
   * dexa_http_agent_routes_new, so the tokens of sessions started before a
   * restart are no longer accepted. */
  const void *session_key;
  size_t session_key_len;
  /* The models a session may pick (the runtime's agent allow-list); the
   * first is the default. At least one. */
  const char *const *models;
  size_t model_count;
  /* Shown by GET settings. Default "" and 0. */
  const char *system_prompt;
  int64_t context_window_tokens;
  /* A JSON object whose members are added to the GET settings document
   * (for example "mcp_tools"); NULL for none. */
  const char *settings_extra_json;
  /* Session ids are this prefix and a random UUID. Default "ai-agent-". */
  const char *session_id_prefix;
  /* Largest request body accepted (413 beyond). Default 2 MiB. */
  int64_t max_body_bytes;
  /* An open event stream sends a comment after this long without an event.
   * Default 15000; must be shorter than idle_timeout_s. */
  int64_t heartbeat_ms;
  /* ---- added in 1.1 ---- */
  /* Host header values accepted besides the address the request came in on
   * ("127.0.0.1:8080", and "localhost:8080" on a loopback address):
   * comma-separated "name:port" or "name" (any port); "*" accepts any. A
   * request with another Host gets 421, so a page of a rebound DNS name
   * cannot reach the routes. Default NULL. */
  const char *allowed_hosts;
  /* A connection silent this long is closed (reading the request, between
   * requests, or a client that stops reading a stream). Default 30. */
  int64_t idle_timeout_s;
  /* A request's headers must be complete within this time of the
   * connection opening (or of its previous request ending), and its body
   * within this time after its headers, or the connection is closed: bytes
   * that trickle in do not keep it open. The header limit holds for every
   * URL of a daemon started with dexa_http_agent_routes_daemon_options.
   * Default 30000. */
  int64_t request_timeout_ms;
  /* Connections of the daemon at once, and from one client address.
   * Defaults 512 and 64. See dexa_http_agent_routes_daemon_options. */
  int64_t max_connections;
  int64_t max_connections_per_client;
  /* The MCP servers' configuration (must outlive the routes): with it the
   * routes serve GET oauth/callback, the redirect URI of their sign-ins
   * (dexa_mcp_auth_options.redirect_uri = "http://HOST:PORT" prefix
   * "/oauth/callback"), which completes the sign-in
   * (dexa_mcp_authorization_complete) and answers the session's question.
   * Default NULL: no such route. */
  const struct dexa_mcp_config *mcp_config;
} dexa_http_agent_routes_options;

/* Sets struct_size and every default. Returns DEXA_OK, DEXA_E_INVALID_ARG
 * or DEXA_E_STRUCT_SIZE. */
DEXA_EXTERN int dexa_http_agent_routes_options_init(dexa_http_agent_routes_options *options,
                                                    size_t struct_size);

/* Creates the agent routes over runtime (which must outlive them); options
 * are copied. See dexa_http_agent_routes_new(3) for the routes. On error
 * *out is NULL and errmsg (if not NULL) receives a message. Returns DEXA_OK,
 * DEXA_E_INVALID_ARG (no model, bad prefix, settings_extra_json not an
 * object), DEXA_E_STRUCT_SIZE, DEXA_E_IO (no random key could be drawn) or
 * DEXA_E_NOMEM. */
DEXA_EXTERN int dexa_http_agent_routes_new(dexa_http_agent_routes **out, dexa_runtime *runtime,
                                           const dexa_http_agent_routes_options *options,
                                           char *errmsg, size_t errmsg_size);

/* Releases the routes. Stop the daemon first (no request may still run).
 * NULL is a no-op. */
DEXA_EXTERN void dexa_http_agent_routes_free(dexa_http_agent_routes *routes);

/* Returns 1 when url (the path, without the query) is one of the routes'
 * paths (under the prefix: settings, sessions, sessions/...), else 0. A
 * host serves its other URLs itself. */
DEXA_EXTERN int dexa_http_agent_routes_match(const dexa_http_agent_routes *routes,
                                             const char *url);

/* Handles one call of a libmicrohttpd access handler for a URL that
 * dexa_http_agent_routes_match accepted; pass the handler's arguments
 * (connection is a struct MHD_Connection *; request_state is the handler's
 * con_cls / req_cls, owned by the routes for this request). Returns DEXA_OK
 * (return MHD_YES) or a negative code (return MHD_NO: the connection is
 * closed): DEXA_E_INVALID_ARG, DEXA_E_NOMEM, DEXA_E_IO, DEXA_E_TIMEOUT (the
 * body did not arrive within request_timeout_ms). Thread-safe; the
 * event streams block their connection's thread while they wait for
 * events, so mount the routes in a daemon started with
 * MHD_USE_THREAD_PER_CONNECTION (and the options of
 * dexa_http_agent_routes_daemon_options). */
DEXA_EXTERN int dexa_http_agent_routes_handle(dexa_http_agent_routes *routes, void *connection,
                                              const char *url, const char *method,
                                              const char *upload_data, size_t *upload_data_size,
                                              void **request_state);

/* Releases what the routes keep for one request; call it from the
 * daemon's MHD_OPTION_NOTIFY_COMPLETED callback for every request whose
 * con_cls the host does not use itself. *request_state NULL is a no-op; it
 * is set to NULL. */
DEXA_EXTERN void dexa_http_agent_routes_completed(dexa_http_agent_routes *routes,
                                                  void **request_state);

/* Entries that dexa_http_agent_routes_daemon_options may write. */
#define DEXA_HTTP_DAEMON_OPTIONS_MAX 8

/* Writes the libmicrohttpd options that the routes' limits need into items
 * (an array of struct MHD_OptionItem of max_items entries, at least
 * DEXA_HTTP_DAEMON_OPTIONS_MAX), ending with MHD_OPTION_END: the idle
 * timeout, the connection limit, the per-client connection limit, and
 * the header timeout (request_timeout_ms), which takes the daemon's
 * MHD_OPTION_NOTIFY_CONNECTION and MHD_OPTION_URI_LOG_CALLBACK (a host
 * sets neither itself; the routes' URI callback leaves con_cls NULL). Pass
 * them to MHD_start_daemon with MHD_OPTION_ARRAY, for one daemon per
 * routes object. Returns DEXA_OK or DEXA_E_INVALID_ARG (NULL argument,
 * max_items too small). */
DEXA_EXTERN int dexa_http_agent_routes_daemon_options(const dexa_http_agent_routes *routes,
                                                      void *items, size_t max_items);

/* Returns DEXA_OK when the Host header of the request on connection (a
 * struct MHD_Connection *) names the address it came in on or one of
 * allowed_hosts, else DEXA_E_AUTH. The routes check it themselves; a host
 * checks the other URLs it serves with it. */
DEXA_EXTERN int dexa_http_agent_routes_check_host(const dexa_http_agent_routes *routes,
                                                  void *connection);

/* Adds the security headers of the routes' own responses to response (a
 * struct MHD_Response *): Content-Security-Policy (content_security_policy,
 * or NULL for "default-src 'none'; frame-ancestors 'none'; base-uri 'none';
 * form-action 'none'"), X-Content-Type-Options: nosniff, X-Frame-Options:
 * DENY, Referrer-Policy: no-referrer, Cross-Origin-Resource-Policy:
 * same-origin. Returns DEXA_OK, DEXA_E_INVALID_ARG (NULL response, a CR or
 * LF in the policy) or DEXA_E_NOMEM. */
DEXA_EXTERN int dexa_http_security_headers(void *response, const char *content_security_policy);

/* Ends every open event stream within a fraction of a second and refuses
 * new ones (503). Call it before MHD_stop_daemon so the daemon stops at
 * once. Thread-safe. */
DEXA_EXTERN void dexa_http_agent_routes_shutdown(dexa_http_agent_routes *routes);

DEXA_END_DECLS

#endif
