/* The sign-in redirect of MCP servers that want OAuth: PREFIX/oauth/callback.
 * The page's sign-in card opens the authorization server in a new tab; it
 * sends the browser back here with ?code=..&state=.. (or ?error=..). This
 * route completes the sign-in (dexa_mcp_authorization_complete: the code is
 * exchanged for tokens, which go to the token store) and answers the
 * waiting question of the session the sign-in started in, so the tool call
 * goes on; the tab shows a short page to close.
 *
 * No session token is asked for: the browser comes from the authorization
 * server. The state is random, single use and expires; it names the one
 * question it answers, and nothing of the session is shown. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ai_agent.h"

#define CALLBACK_CSP "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; frame-ancestors 'none'"

int ai_agent_oauth_is_callback(const char *url, const char *prefix) {
  size_t n = strlen(prefix);
  return strncmp(url, prefix, n) == 0 && strcmp(url + n, "/oauth/callback") == 0;
}

static void url_encode(char *out, size_t size, const char *v) {
  static const char hex[] = "0123456789ABCDEF";
  size_t k = strlen(out);
  for (const unsigned char *p = (const unsigned char *)v; *p && k + 4 < size; p++) {
    if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
        strchr("-._~", *p)) {
      out[k++] = (char)*p;
    } else {
      out[k++] = '%';
      out[k++] = hex[*p >> 4];
      out[k++] = hex[*p & 15];
    }
  }
  out[k] = '\0';
}

/* The redirect's query as the authorization server sent it (libmicrohttpd
 * hands the arguments decoded: encode them again). */
static void query_of(struct MHD_Connection *c, char *out, size_t size) {
  static const char *const names[] = {"code", "state", "error", "error_description"};
  snprintf(out, size, "?");
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, names[i]);
    if (!v) continue;
    size_t k = strlen(out);
    snprintf(out + k, size - k, "%s%s=", k > 1 ? "&" : "", names[i]);
    url_encode(out, size, v);
  }
}

static enum MHD_Result page(struct MHD_Connection *c, unsigned status, const char *title,
                            const char *text) {
  char *body = malloc(2048);
  if (!body) return MHD_NO;
  int n = snprintf(body, 2048,
                   "<!doctype html><html lang=\"en\"><meta charset=\"utf-8\"><title>%s</title>"
                   "<body style=\"font:16px system-ui;margin:3em auto;max-width:36em\">"
                   "<h1 style=\"font-size:1.3em\">%s</h1><p>%s</p></body></html>",
                   title, title, text);
  struct MHD_Response *r = MHD_create_response_from_buffer((size_t)n, body, MHD_RESPMEM_MUST_FREE);
  if (!r) {
    free(body);
    return MHD_NO;
  }
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/html; charset=utf-8");
  MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  dexa_http_security_headers(r, CALLBACK_CSP);
  enum MHD_Result ok = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ok;
}

enum MHD_Result ai_agent_oauth_callback(struct MHD_Connection *c, const char *method,
                                        const dexa_mcp_config *config, dexa_runtime *rt) {
  if (strcmp(method, "GET") != 0) return page(c, 405, "Not allowed", "Only GET.");
  if (!config) return page(c, 404, "Not found", "No MCP servers are configured.");
  char query[4096], err[300] = "", *done = NULL;
  query_of(c, query, sizeof query);
  int rc = dexa_mcp_authorization_complete(config, query, &done, NULL, err, sizeof err);
  if (rc == DEXA_E_NOT_FOUND || rc == DEXA_E_INVALID_ARG)
    return page(c, 400, "Unknown sign-in",
                "This sign-in is unknown or has expired. Start it again from the chat.");
  if (rc != DEXA_OK)
    return page(c, 502, "Sign-in failed",
                "The authorization server did not give a token. Try again from the chat.");
  cJSON *d = cJSON_Parse(done);
  dexa_free(done);
  const char *sid = cJSON_GetStringValue(cJSON_GetObjectItem(d, "session_id"));
  const char *call_id = cJSON_GetStringValue(cJSON_GetObjectItem(d, "call_id"));
  int signed_in = cJSON_IsTrue(cJSON_GetObjectItem(d, "signed_in"));
  if (sid && call_id) { /* the session's question: the call goes on (or stops) */
    cJSON *in = cJSON_CreateObject();
    cJSON_AddStringToObject(in, "call_id", call_id);
    cJSON_AddStringToObject(in, "action", signed_in ? "accept" : "decline");
    char *json = cJSON_PrintUnformatted(in);
    char *out = NULL;
    size_t out_len = 0;
    if (json) dexa_runtime_call(rt, sid, "answer_question", json, strlen(json), &out, &out_len);
    dexa_free(out);
    cJSON_free(json);
    cJSON_Delete(in);
  }
  cJSON_Delete(d);
  return signed_in ? page(c, 200, "Signed in", "You are signed in. Close this tab and go back to the chat.")
                   : page(c, 200, "Not signed in",
                          "The sign-in was refused. Close this tab and go back to the chat.");
}
