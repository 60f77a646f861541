/* MCP over Streamable HTTP and its OAuth in a build without WITH_CURL=1:
 * a server with a "url" is configured as usual, but connecting to it fails
 * with DEXA_E_UNSUPPORTED (so it is left out of the model call, like any
 * server that cannot be listed), and dexa_mcp_authorization_complete is
 * DEXA_E_UNSUPPORTED. MCP over stdio is in every build. */
#include <stdio.h>

#include "dexagents/errors.h"
#include "dexagents/mcp.h"
#include "tools/mcp_internal.h"
#include "tools/mcp_oauth.h"

#define ABSENT "MCP over HTTP: built without WITH_CURL=1"

int dexa__mcp_http_new(dexa__mcp_http **out, dexa__mcp_client *c) {
  *out = NULL;
  return DEXA_E_UNSUPPORTED;
}

void dexa__mcp_http_free(dexa__mcp_http *h) {}

static int absent(char *err, size_t err_size) {
  if (err && err_size) snprintf(err, err_size, "%s", ABSENT);
  return DEXA_E_UNSUPPORTED;
}

int dexa__mcp_http_post(dexa__mcp_http *h, uint64_t generation, const char *body,
                        const char *wait_id, const char *method, const char *name,
                        int64_t deadline_ms, char *err, size_t err_size) {
  return absent(err, err_size);
}

int dexa__mcp_http_post_auth(dexa__mcp_http *h, uint64_t generation, const char *body,
                             const char *wait_id, const char *method, const char *name,
                             int64_t deadline_ms, dexa__mcp_http_auth *auth, char *err,
                             size_t err_size) {
  return absent(err, err_size);
}

void dexa__mcp_http_listen(dexa__mcp_http *h, int64_t wait_ms) {}
void dexa__mcp_http_end_session(dexa__mcp_http *h) {}
void dexa__mcp_http_reset_session(dexa__mcp_http *h) {}

/* No OAuth client: the transport never connects, so none is needed. */
int dexa__mcp_oauth_new(dexa__mcp_oauth **out) {
  *out = NULL;
  return DEXA_OK;
}

void dexa__mcp_oauth_free(dexa__mcp_oauth *o) {}

int dexa__mcp_oauth_recover(dexa__mcp_client *c, const char *method,
                            const dexa__mcp_http_auth *refusal, char *err, size_t err_size) {
  return absent(err, err_size);
}

void dexa__mcp_oauth_succeeded(dexa__mcp_client *c, const char *method) {}

int dexa__mcp_oauth_can_sign_in(dexa__mcp_client *c) { return 0; }

int dexa__mcp_oauth_begin(dexa__mcp_client *c, const char *session_id, const char *call_id,
                          char **url, char *err, size_t err_size) {
  if (url) *url = NULL;
  return absent(err, err_size);
}

DEXA_EXTERN int dexa_mcp_authorization_complete(const dexa_mcp_config *config,
                                                const char *redirect_url, char **out_json,
                                                size_t *out_len, char *errmsg,
                                                size_t errmsg_size) {
  if (out_json) *out_json = NULL;
  if (out_len) *out_len = 0;
  return absent(errmsg, errmsg_size);
}
