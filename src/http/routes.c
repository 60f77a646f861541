/* The agent routes object: options, the key, request bodies, dispatch by
 * path, the checks every request passes first, and turning a reply into a
 * libmicrohttpd response. The routes themselves are in routes_rpc.c,
 * routes_stream.c and routes_chat.c. */
#include <microhttpd.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dexagents/errors.h"
#include "http/http_internal.h"

#define OPTIONS_V1_SIZE (offsetof(dexa_http_agent_routes_options, heartbeat_ms) + sizeof(int64_t))
/* The struct as of 1.1 (allowed_hosts ... max_connections_per_client). */
#define OPTIONS_V11_SIZE \
  (offsetof(dexa_http_agent_routes_options, max_connections_per_client) + sizeof(int64_t))
#define HAS_V11(o) ((o)->struct_size >= OPTIONS_V11_SIZE)
/* ... and with mcp_config (also 1.1). */
#define OPTIONS_MCP_SIZE (offsetof(dexa_http_agent_routes_options, mcp_config) + sizeof(void *))
#define HAS_MCP(o) ((o)->struct_size >= OPTIONS_MCP_SIZE)
#define DEFAULT_PREFIX "/products/ai-agent"
#define DEFAULT_MAX_BODY (2 * 1024 * 1024)
#define DEFAULT_HEARTBEAT_MS 15000
#define RANDOM_KEY_BYTES 32
#define TOKEN_HEADER "X-Agent-Session-Token"
#define MAX_SESSION_ID 128
#define DEFAULT_IDLE_TIMEOUT_S 30
#define DEFAULT_REQUEST_TIMEOUT_MS 30000
#define DEFAULT_MAX_CONNECTIONS 512
#define DEFAULT_MAX_PER_CLIENT 64
/* The policy of every response the routes make: they serve data, never a
 * page, so nothing may load, run or frame. */
#define ROUTES_CSP "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

DEXA_EXTERN int dexa_http_agent_routes_options_init(dexa_http_agent_routes_options *o,
                                                    size_t struct_size) {
  if (!o) return DEXA_E_INVALID_ARG;
  if (struct_size < OPTIONS_V1_SIZE) return DEXA_E_STRUCT_SIZE;
  size_t n = struct_size < sizeof *o ? struct_size : sizeof *o;
  memset(o, 0, n);
  o->struct_size = (uint32_t)n;
  o->prefix = DEFAULT_PREFIX;
  o->session_id_prefix = "ai-agent-";
  o->max_body_bytes = DEFAULT_MAX_BODY;
  o->heartbeat_ms = DEFAULT_HEARTBEAT_MS;
  if (HAS_V11(o)) {
    o->idle_timeout_s = DEFAULT_IDLE_TIMEOUT_S;
    o->request_timeout_ms = DEFAULT_REQUEST_TIMEOUT_MS;
    o->max_connections = DEFAULT_MAX_CONNECTIONS;
    o->max_connections_per_client = DEFAULT_MAX_PER_CLIENT;
  }
  return DEXA_OK;
}

static void set_err(char *errmsg, size_t size, const char *msg) {
  if (errmsg && size) snprintf(errmsg, size, "%s", msg);
}

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

/* The GET settings document: the allow-list, the prompt, the context
 * window, "mcp_tools" ([] unless the extra members give it) and extras. */
static int build_settings(dexa_http_agent_routes *r, const dexa_http_agent_routes_options *o,
                          char *errmsg, size_t errmsg_size) {
  cJSON *doc = cJSON_CreateObject(), *extra = NULL;
  int rc = DEXA_E_NOMEM;
  if (o->settings_extra_json) {
    extra = cJSON_Parse(o->settings_extra_json);
    if (!cJSON_IsObject(extra)) {
      set_err(errmsg, errmsg_size, "settings_extra_json must be a JSON object");
      rc = DEXA_E_INVALID_ARG;
      goto cleanup;
    }
  }
  cJSON *models = cJSON_AddArrayToObject(doc, "models");
  if (!cJSON_AddStringToObject(doc, "model", r->models[0]) || !models) goto cleanup;
  for (size_t i = 0; i < r->model_count; i++)
    if (!cJSON_AddItemToArray(models, cJSON_CreateString(r->models[i]))) goto cleanup;
  if (!cJSON_AddStringToObject(doc, "system_prompt", o->system_prompt ? o->system_prompt : "") ||
      !cJSON_AddNumberToObject(doc, "context_window_tokens", (double)o->context_window_tokens))
    goto cleanup;
  if (!cJSON_GetObjectItemCaseSensitive(extra, "mcp_tools") &&
      !cJSON_AddArrayToObject(doc, "mcp_tools"))
    goto cleanup;
  cJSON *item = extra ? extra->child : NULL;
  while (item) {
    cJSON *next = item->next;
    cJSON_DeleteItemFromObjectCaseSensitive(doc, item->string);
    cJSON_AddItemToObject(doc, item->string, cJSON_Duplicate(item, 1));
    item = next;
  }
  char *text = cJSON_PrintUnformatted(doc);
  if (text) {
    r->settings_doc = dup_str(text);
    cJSON_free(text);
  }
  rc = r->settings_doc ? DEXA_OK : DEXA_E_NOMEM;
cleanup:
  cJSON_Delete(doc);
  cJSON_Delete(extra);
  return rc;
}

static int check_options(const dexa_http_agent_routes_options *o, char *errmsg, size_t size) {
  if (o->struct_size < OPTIONS_V1_SIZE) return DEXA_E_STRUCT_SIZE;
  const char *why = NULL;
  if (!o->models || o->model_count == 0) why = "at least one model is needed";
  for (size_t i = 0; !why && i < o->model_count; i++)
    if (!o->models[i] || !*o->models[i]) why = "a model name is empty";
  if (!why && o->prefix && *o->prefix && (o->prefix[0] != '/' || strchr(o->prefix, '?') ||
                                          o->prefix[strlen(o->prefix) - 1] == '/'))
    why = "prefix must start with '/' and not end with '/'";
  if (!why && o->session_key && !o->session_key_len) why = "session_key_len is 0";
  if (!why && (o->max_body_bytes < 0 || o->heartbeat_ms < 0)) why = "negative limit";
  if (!why && o->session_id_prefix && strlen(o->session_id_prefix) > 64)
    why = "session_id_prefix is longer than 64 bytes";
  if (!why && HAS_V11(o) &&
      (o->idle_timeout_s < 0 || o->request_timeout_ms < 0 || o->max_connections < 0 ||
       o->max_connections_per_client < 0 || o->idle_timeout_s > 86400 ||
       o->max_connections > 65536 || o->max_connections_per_client > 65536))
    why = "a connection limit is negative or too large";
  if (!why) {
    int64_t idle = HAS_V11(o) && o->idle_timeout_s ? o->idle_timeout_s : DEFAULT_IDLE_TIMEOUT_S;
    int64_t beat = o->heartbeat_ms ? o->heartbeat_ms : DEFAULT_HEARTBEAT_MS;
    if (beat >= idle * 1000) why = "heartbeat_ms must be shorter than idle_timeout_s";
  }
  if (!why) return DEXA_OK;
  set_err(errmsg, size, why);
  return DEXA_E_INVALID_ARG;
}

static int copy_options(dexa_http_agent_routes *r, const dexa_http_agent_routes_options *o) {
  r->prefix = dup_str(o->prefix ? o->prefix : DEFAULT_PREFIX);
  r->id_prefix = dup_str(o->session_id_prefix ? o->session_id_prefix : "ai-agent-");
  r->models = calloc(o->model_count, sizeof *r->models);
  if (!r->prefix || !r->id_prefix || !r->models) return DEXA_E_NOMEM;
  r->prefix_len = strlen(r->prefix);
  r->model_count = o->model_count;
  for (size_t i = 0; i < o->model_count; i++)
    if (!(r->models[i] = dup_str(o->models[i]))) return DEXA_E_NOMEM;
  r->max_body = o->max_body_bytes ? o->max_body_bytes : DEFAULT_MAX_BODY;
  r->heartbeat_ms = o->heartbeat_ms ? o->heartbeat_ms : DEFAULT_HEARTBEAT_MS;
  int v11 = HAS_V11(o);
  r->idle_timeout_s = v11 && o->idle_timeout_s ? o->idle_timeout_s : DEFAULT_IDLE_TIMEOUT_S;
  r->request_timeout_ms =
      v11 && o->request_timeout_ms ? o->request_timeout_ms : DEFAULT_REQUEST_TIMEOUT_MS;
  r->max_connections = v11 && o->max_connections ? o->max_connections : DEFAULT_MAX_CONNECTIONS;
  r->max_connections_per_client = v11 && o->max_connections_per_client
                                      ? o->max_connections_per_client
                                      : DEFAULT_MAX_PER_CLIENT;
  if (v11 && o->allowed_hosts && !(r->allowed_hosts = dup_str(o->allowed_hosts)))
    return DEXA_E_NOMEM;
  if (HAS_MCP(o)) r->mcp_config = o->mcp_config;
  return DEXA_OK;
}

/* The key: the caller's, or 32 bytes from the DRBG (so a restart ends
 * access to the sessions started before it). */
static int set_key(dexa_http_agent_routes *r, const dexa_http_agent_routes_options *o) {
  r->key_len = o->session_key ? o->session_key_len : RANDOM_KEY_BYTES;
  r->key = malloc(r->key_len);
  if (!r->key) return DEXA_E_NOMEM;
  if (o->session_key) {
    memcpy(r->key, o->session_key, r->key_len);
    return DEXA_OK;
  }
  return dexa__http_random(r, r->key, r->key_len);
}

DEXA_EXTERN int dexa_http_agent_routes_new(dexa_http_agent_routes **out, dexa_runtime *runtime,
                                           const dexa_http_agent_routes_options *options,
                                           char *errmsg, size_t errmsg_size) {
  if (out) *out = NULL;
  if (!out || !runtime || !options) {
    set_err(errmsg, errmsg_size, "out, runtime and options are required");
    return DEXA_E_INVALID_ARG;
  }
  int rc = check_options(options, errmsg, errmsg_size);
  if (rc != DEXA_OK) return rc;
  dexa_http_agent_routes *r = calloc(1, sizeof *r);
  if (!r) return DEXA_E_NOMEM;
  r->rt = runtime;
  pthread_mutex_init(&r->rng_mu, NULL);
  dexa__conn_watch_init(r);
  mbedtls_entropy_init(&r->entropy);
  mbedtls_ctr_drbg_init(&r->drbg);
  atomic_init(&r->closing, 0);
  static const unsigned char personal[] = "dexagents-http-routes";
  if (mbedtls_ctr_drbg_seed(&r->drbg, mbedtls_entropy_func, &r->entropy, personal,
                            sizeof personal - 1) != 0) {
    set_err(errmsg, errmsg_size, "cannot seed the random generator");
    rc = DEXA_E_IO;
  }
  if (rc == DEXA_OK) rc = copy_options(r, options);
  if (rc == DEXA_OK) rc = set_key(r, options);
  if (rc == DEXA_OK) rc = build_settings(r, options, errmsg, errmsg_size);
  if (rc != DEXA_OK) {
    if (rc == DEXA_E_NOMEM) set_err(errmsg, errmsg_size, "out of memory");
    dexa_http_agent_routes_free(r);
    return rc;
  }
  *out = r;
  return DEXA_OK;
}

DEXA_EXTERN void dexa_http_agent_routes_free(dexa_http_agent_routes *r) {
  if (!r) return;
  dexa__conn_watch_stop(r);
  free(r->prefix);
  free(r->id_prefix);
  free(r->allowed_hosts);
  if (r->key) memset(r->key, 0, r->key_len);
  free(r->key);
  for (size_t i = 0; r->models && i < r->model_count; i++) free(r->models[i]);
  free(r->models);
  free(r->settings_doc);
  mbedtls_ctr_drbg_free(&r->drbg);
  mbedtls_entropy_free(&r->entropy);
  pthread_mutex_destroy(&r->rng_mu);
  free(r);
}

DEXA_EXTERN void dexa_http_agent_routes_shutdown(dexa_http_agent_routes *r) {
  if (r) atomic_store(&r->closing, 1);
}

DEXA_EXTERN int dexa_http_agent_routes_daemon_options(const dexa_http_agent_routes *r, void *items,
                                                      size_t max_items) {
  if (!r || !items || max_items < DEXA_HTTP_DAEMON_OPTIONS_MAX) return DEXA_E_INVALID_ARG;
  struct MHD_OptionItem *o = items;
  o[0] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)r->idle_timeout_s, NULL};
  o[1] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, (intptr_t)r->max_connections, NULL};
  o[2] = (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                                 (intptr_t)r->max_connections_per_client, NULL};
  /* The header timeout's watchdog (conn_watch.c): the routes' state, not
   * the caller's, hence the cast. */
  size_t n = 3 + dexa__conn_watch_options((dexa_http_agent_routes *)r, o + 3);
  o[n] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
  return DEXA_OK;
}

DEXA_EXTERN int dexa_http_agent_routes_check_host(const dexa_http_agent_routes *r,
                                                  void *connection) {
  if (!r || !connection) return DEXA_E_INVALID_ARG;
  return dexa__http_host_ok(r, connection) ? DEXA_OK : DEXA_E_AUTH;
}

DEXA_EXTERN int dexa_http_security_headers(void *response, const char *csp) {
  if (!response || (csp && strpbrk(csp, "\r\n"))) return DEXA_E_INVALID_ARG;
  struct MHD_Response *r = response;
  static const char *const fixed[][2] = {
      {"X-Content-Type-Options", "nosniff"},
      {"X-Frame-Options", "DENY"},
      {"Referrer-Policy", "no-referrer"},
      {"Cross-Origin-Resource-Policy", "same-origin"},
  };
  int ok = MHD_add_response_header(r, "Content-Security-Policy", csp ? csp : ROUTES_CSP) == MHD_YES;
  for (size_t i = 0; ok && i < sizeof fixed / sizeof fixed[0]; i++)
    ok = MHD_add_response_header(r, fixed[i][0], fixed[i][1]) == MHD_YES;
  return ok ? DEXA_OK : DEXA_E_NOMEM;
}

int64_t dexa__http_mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int dexa__http_random(dexa_http_agent_routes *r, unsigned char *out, size_t n) {
  pthread_mutex_lock(&r->rng_mu);
  int ok = mbedtls_ctr_drbg_random(&r->drbg, out, n) == 0;
  pthread_mutex_unlock(&r->rng_mu);
  return ok ? DEXA_OK : DEXA_E_IO;
}

/* ---- paths ------------------------------------------------------------------ */

/* The path after the prefix ("/settings", ...), or NULL when url is not
 * under it. */
static const char *route_path(const dexa_http_agent_routes *r, const char *url) {
  if (!url || strncmp(url, r->prefix, r->prefix_len) != 0) return NULL;
  return url + r->prefix_len;
}

DEXA_EXTERN int dexa_http_agent_routes_match(const dexa_http_agent_routes *r, const char *url) {
  if (!r) return 0;
  const char *p = route_path(r, url);
  if (!p) return 0;
  return strcmp(p, "/settings") == 0 || strcmp(p, "/sessions") == 0 ||
         strncmp(p, "/sessions/", 10) == 0 || (r->mcp_config && strcmp(p, "/oauth/callback") == 0);
}

/* ---- replies ------------------------------------------------------------------ */

unsigned dexa__http_status_of(int rc) {
  switch (rc) {
  case DEXA_OK: return 200;
  case DEXA_E_NOT_FOUND: return 404;
  case DEXA_E_INVALID_ARG:
  case DEXA_E_STRUCT_SIZE:
  case DEXA_E_INVALID_JSON:
  case DEXA_E_UNKNOWN_STEP:
  case DEXA_E_UNKNOWN_RPC:
  case DEXA_E_EMPTY_MESSAGE:
  case DEXA_E_UNKNOWN_KEY:
  case DEXA_E_INVALID_RESUME_TOKEN: return 400;
  case DEXA_E_TOO_LARGE: return 413;
  case DEXA_E_BAD_STATE:
  case DEXA_E_STALE_REVISION:
  case DEXA_E_ALREADY_EXISTS:
  case DEXA_E_NOT_PENDING:
  case DEXA_E_SESSION_ENDED:
  case DEXA_E_STATE_LIMIT: return 409;
  case DEXA_E_AUTH: return 403;
  case DEXA_E_TRANSIENT:
  case DEXA_E_TIMEOUT:
  case DEXA_E_BUSY:
  case DEXA_E_IO:
  case DEXA_E_RATE_LIMITED: return 503;
  default: return 500;
  }
}

void dexa__http_error(dexa__http_reply *reply, unsigned status, int code, const char *message) {
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_printf(&b, "{\"error\":{\"code\":%d,\"name\":", code);
  dexa__buf_json_cstr(&b, dexa_error_name(code));
  dexa__buf_puts(&b, ",\"message\":");
  dexa__buf_json_cstr(&b, message);
  dexa__buf_puts(&b, "}}");
  free(reply->body);
  reply->status = status;
  reply->body = dexa__buf_steal(&b, &reply->len);
  if (!reply->body) reply->len = 0;
}

void dexa__http_from_runtime(dexa__http_reply *reply, int rc, char *doc, size_t len) {
  if (rc != DEXA_OK && !doc) {
    dexa__http_error(reply, dexa__http_status_of(rc), rc, dexa_strerror(rc));
    return;
  }
  free(reply->body);
  reply->status = dexa__http_status_of(rc);
  reply->body = doc; /* dexa_free is free */
  reply->len = doc ? len : 0;
}

static int queue_reply(struct MHD_Connection *c, dexa__http_reply *reply) {
  struct MHD_Response *resp = reply->stream;
  if (!resp) {
    if (!reply->body) return DEXA_E_NOMEM;
    resp = MHD_create_response_from_buffer(reply->len, reply->body, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
      free(reply->body);
      return DEXA_E_NOMEM;
    }
    reply->body = NULL;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (reply->allow) MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, reply->allow);
  }
  dexa_http_security_headers(resp, reply->csp);
  enum MHD_Result ok = MHD_queue_response(c, reply->status, resp);
  MHD_destroy_response(resp);
  return ok == MHD_YES ? DEXA_OK : DEXA_E_IO;
}

/* ---- dispatch ------------------------------------------------------------------- */

static int is_method(const char *m, const char *want) { return m && strcmp(m, want) == 0; }

static void method_not_allowed(dexa__http_reply *reply, const char *allow) {
  dexa__http_error(reply, 405, DEXA_E_INVALID_ARG, "method not allowed on this route");
  reply->allow = allow;
}

static int valid_session_id(const char *id, size_t n) {
  if (n == 0 || n > MAX_SESSION_ID) return 0;
  for (size_t i = 0; i < n; i++) {
    char ch = id[i];
    int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
             ch == '-' || ch == '_' || ch == '.' || ch == ':';
    if (!ok) return 0;
  }
  return 1;
}

/* sessions/ID[/rest]: the token is checked before anything touches the
 * session, even before the id is looked at. */
static void session_route(dexa_http_agent_routes *r, struct MHD_Connection *c, const char *method,
                          const char *p, const dexa__http_request *req, dexa__http_reply *reply) {
  const char *slash = strchr(p, '/');
  size_t n = slash ? (size_t)(slash - p) : strlen(p);
  char id[MAX_SESSION_ID + 1];
  const char *token = MHD_lookup_connection_value(c, MHD_HEADER_KIND, TOKEN_HEADER);
  if (n > MAX_SESSION_ID) {
    dexa__http_error(reply, 403, DEXA_E_AUTH, "this browser has no token for the AI Agent session");
    return;
  }
  memcpy(id, p, n);
  id[n] = '\0';
  if (n == 0 || dexa_http_token_verify(r->key, r->key_len, id, token) != DEXA_OK) {
    dexa__http_error(reply, 403, DEXA_E_AUTH, "this browser has no token for the AI Agent session");
    return;
  }
  if (!valid_session_id(id, n)) {
    dexa__http_error(reply, 404, DEXA_E_NOT_FOUND, "the AI Agent session is missing");
    return;
  }
  const char *rest = slash ? slash : "";
  if (strcmp(rest, "/events") == 0 || strcmp(rest, "/graph") == 0) {
    if (!is_method(method, "GET")) method_not_allowed(reply, "GET");
    else if (strcmp(rest, "/events") == 0) dexa__http_event_stream(r, c, id, reply);
    else dexa__http_session_graph(r, c, id, reply);
    return;
  }
  if (strcmp(rest, "/chat") == 0) {
    if (is_method(method, "POST"))
      dexa__http_chat(r, c, id, req->body.len ? &req->body : NULL, reply);
    else method_not_allowed(reply, "POST");
    return;
  }
  dexa__http_session_route(r, c, method, id, rest, req->body.len ? &req->body : NULL, reply);
}

/* What every request must pass before a route runs: the Host header, and
 * for a POST the media type and the bytes of its body. 0 when it passes. */
static int refused(dexa_http_agent_routes *r, struct MHD_Connection *c, const char *method,
                   const dexa__http_request *req, dexa__http_reply *reply) {
  if (!dexa__http_host_ok(r, c)) {
    dexa__http_error(reply, 421, DEXA_E_AUTH,
                     "the Host header does not name this server (allowed_hosts)");
    return 1;
  }
  if (!is_method(method, "POST")) return 0;
  /* A form or a text/plain post of another site cannot reach a route. */
  const char *type = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
  if (!dexa__http_is_json_type(type)) {
    dexa__http_error(reply, 415, DEXA_E_INVALID_ARG, "the request body must be application/json");
    return 1;
  }
  const char *why = req->body.len ? dexa__http_body_problem(req->body.data, req->body.len) : NULL;
  if (why) {
    dexa__http_error(reply, 400, DEXA_E_INVALID_JSON, why);
    return 1;
  }
  return 0;
}

static void dispatch(dexa_http_agent_routes *r, struct MHD_Connection *c, const char *url,
                     const char *method, const dexa__http_request *req, dexa__http_reply *reply) {
  const char *p = route_path(r, url);
  const dexa__buf *body = req->body.len ? &req->body : NULL;
  if (refused(r, c, method, req, reply)) return;
  if (!p) {
    dexa__http_error(reply, 404, DEXA_E_NOT_FOUND, "no such route");
  } else if (strcmp(p, "/settings") == 0) {
    if (is_method(method, "GET") || is_method(method, "HEAD")) dexa__http_settings(r, reply);
    else method_not_allowed(reply, "GET");
  } else if (strcmp(p, "/sessions") == 0) {
    if (is_method(method, "POST")) dexa__http_start_session(r, body, reply);
    else method_not_allowed(reply, "POST");
  } else if (strncmp(p, "/sessions/", 10) == 0) {
    session_route(r, c, method, p + 10, req, reply);
  } else if (r->mcp_config && strcmp(p, "/oauth/callback") == 0) {
    dexa__http_oauth_callback(r, c, method, reply);
  } else {
    dexa__http_error(reply, 404, DEXA_E_NOT_FOUND, "no such route");
  }
}

DEXA_EXTERN int dexa_http_agent_routes_handle(dexa_http_agent_routes *r, void *connection,
                                              const char *url, const char *method,
                                              const char *upload_data, size_t *upload_data_size,
                                              void **request_state) {
  if (!r || !connection || !request_state || !upload_data_size) return DEXA_E_INVALID_ARG;
  dexa__http_request *req = *request_state;
  if (!req) { /* the first call: headers only */
    req = calloc(1, sizeof *req);
    if (!req) return DEXA_E_NOMEM;
    dexa__buf_init(&req->body);
    req->start_ms = dexa__http_mono_ms();
    *request_state = req;
    return DEXA_OK;
  }
  if (*upload_data_size) { /* a piece of the body */
    size_t n = *upload_data_size;
    /* A body that trickles in is cut off (a silent one by the idle timeout). */
    if (dexa__http_mono_ms() - req->start_ms > r->request_timeout_ms) return DEXA_E_TIMEOUT;
    if (req->too_large || (int64_t)(req->body.len + n) > r->max_body) {
      req->too_large = 1;
      dexa__buf_free(&req->body);
    } else {
      dexa__buf_append(&req->body, upload_data, n);
    }
    *upload_data_size = 0;
    return req->body.oom ? DEXA_E_NOMEM : DEXA_OK;
  }
  dexa__http_reply reply = {0, NULL, 0, NULL, NULL, NULL};
  if (req->too_large)
    dexa__http_error(&reply, 413, DEXA_E_TOO_LARGE, "the request body is too large");
  else
    dispatch(r, connection, url, method, req, &reply);
  return queue_reply(connection, &reply);
}

DEXA_EXTERN void dexa_http_agent_routes_completed(dexa_http_agent_routes *r, void **request_state) {
  (void)r;
  if (!request_state || !*request_state) return;
  dexa__http_request *req = *request_state;
  dexa__buf_free(&req->body);
  free(req);
  *request_state = NULL;
}
