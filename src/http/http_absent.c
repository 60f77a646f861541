/* The browser helpers in a build without WITH_HTTP=1 (the agent routes are
 * libmicrohttpd handlers; the session tokens are mbedTLS's HMAC-SHA256):
 * every function that can fail is DEXA_E_UNSUPPORTED, naming the option
 * in errmsg where it has one; dexa_build_has("http") is 0. */
#include <stdio.h>

#include "dexagents/errors.h"
#include "dexagents/http.h"

#define ABSENT "HTTP helpers: built without WITH_HTTP=1"

DEXA_EXTERN int dexa_http_token_sign(const void *key, size_t key_len, const char *session_id,
                                     char *out, size_t out_size) {
  if (out && out_size) out[0] = '\0';
  return DEXA_E_UNSUPPORTED;
}

DEXA_EXTERN int dexa_http_token_verify(const void *key, size_t key_len, const char *session_id,
                                       const char *token) {
  return DEXA_E_UNSUPPORTED;
}

DEXA_EXTERN int dexa_http_sse_frame(const char *id, const char *event, const char *data,
                                    size_t data_len, char **out, size_t *out_len) {
  if (out) *out = NULL;
  if (out_len) *out_len = 0;
  return DEXA_E_UNSUPPORTED;
}

DEXA_EXTERN int dexa_http_sse_frames(const char *events_json, size_t events_len, char **out,
                                     size_t *out_len) {
  if (out) *out = NULL;
  if (out_len) *out_len = 0;
  return DEXA_E_UNSUPPORTED;
}

DEXA_EXTERN int dexa_http_agent_routes_options_init(dexa_http_agent_routes_options *options,
                                                    size_t struct_size) {
  return DEXA_E_UNSUPPORTED;
}

DEXA_EXTERN int dexa_http_agent_routes_new(dexa_http_agent_routes **out, dexa_runtime *runtime,
                                           const dexa_http_agent_routes_options *options,
                                           char *errmsg, size_t errmsg_size) {
  if (out) *out = NULL;
  if (errmsg && errmsg_size) snprintf(errmsg, errmsg_size, "%s", ABSENT);
  return DEXA_E_UNSUPPORTED;
}

DEXA_EXTERN void dexa_http_agent_routes_free(dexa_http_agent_routes *routes) {}

DEXA_EXTERN int dexa_http_agent_routes_match(const dexa_http_agent_routes *routes,
                                             const char *url) {
  return 0;
}

DEXA_EXTERN int dexa_http_agent_routes_handle(dexa_http_agent_routes *routes, void *connection,
                                              const char *url, const char *method,
                                              const char *upload_data, size_t *upload_data_size,
                                              void **request_state) {
  return DEXA_E_UNSUPPORTED;
}

DEXA_EXTERN void dexa_http_agent_routes_completed(dexa_http_agent_routes *routes,
                                                  void **request_state) {
  if (request_state) *request_state = NULL;
}

DEXA_EXTERN int dexa_http_agent_routes_daemon_options(const dexa_http_agent_routes *routes,
                                                      void *items, size_t max_items) {
  return DEXA_E_UNSUPPORTED;
}

DEXA_EXTERN int dexa_http_agent_routes_check_host(const dexa_http_agent_routes *routes,
                                                  void *connection) {
  return DEXA_E_UNSUPPORTED;
}

DEXA_EXTERN int dexa_http_security_headers(void *response, const char *content_security_policy) {
  return DEXA_E_UNSUPPORTED;
}

DEXA_EXTERN void dexa_http_agent_routes_shutdown(dexa_http_agent_routes *routes) {}
