/* GET oauth/callback: the sign-in redirect of MCP servers that want OAuth,
 * mounted when dexa_http_agent_routes_options.mcp_config is set. The
 * page's sign-in card opens the authorization server in a new tab; it
 * sends the browser back here with ?code=..&state=.. (or ?error=..). The
 * route completes the sign-in (dexa_mcp_authorization_complete: the code
 * is exchanged for tokens, which go to the token store) and answers the
 * waiting question of the session the sign-in started in, so the tool call
 * goes on; the tab shows a short page to close.
 *
 * No session token is asked for: the browser comes from the authorization
 * server. The state is random, single use and expires; it names the one
 * question it answers, and nothing of the session is shown. */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"
#include "dexagents/mcp.h"
#include "http/http_internal.h"

#define CALLBACK_CSP \
  "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

static void url_encode(dexa__buf *b, const char *v) {
  static const char hex[] = "0123456789ABCDEF";
  for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
    if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
        strchr("-._~", *p)) {
      dexa__buf_append(b, (const char *)p, 1);
    } else {
      char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
      dexa__buf_append(b, e, 3);
    }
  }
}

/* The redirect's query as the authorization server sent it (libmicrohttpd
 * hands the arguments decoded: encode them again). */
static char *query_of(struct MHD_Connection *c) {
  static const char *const names[] = {"code", "state", "error", "error_description"};
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_puts(&b, "?");
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, names[i]);
    if (!v || strlen(v) > 4096) continue;
    if (b.len > 1) dexa__buf_puts(&b, "&");
    dexa__buf_puts(&b, names[i]);
    dexa__buf_puts(&b, "=");
    url_encode(&b, v);
  }
  return dexa__buf_steal(&b, NULL);
}

static void page(dexa__http_reply *reply, unsigned status, const char *title, const char *text) {
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_printf(&b,
                   "<!doctype html><html lang=\"en\"><meta charset=\"utf-8\"><title>%s</title>"
                   "<body style=\"font:16px system-ui;margin:3em auto;max-width:36em\">"
                   "<h1 style=\"font-size:1.3em\">%s</h1><p>%s</p></body></html>",
                   title, title, text);
  size_t len = 0;
  char *body = dexa__buf_steal(&b, &len);
  struct MHD_Response *r =
      body ? MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE) : NULL;
  if (!r) {
    free(body);
    dexa__http_error(reply, 500, DEXA_E_NOMEM, "out of memory");
    return;
  }
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/html; charset=utf-8");
  MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  reply->status = status;
  reply->stream = r;
  reply->csp = CALLBACK_CSP;
}

/* Answers the session's sign-in question: the call goes on (or stops). */
static void answer(dexa_http_agent_routes *r, const char *sid, const char *call_id, int signed_in) {
  cJSON *in = cJSON_CreateObject();
  cJSON_AddStringToObject(in, "call_id", call_id);
  cJSON_AddStringToObject(in, "action", signed_in ? "accept" : "decline");
  char *json = cJSON_PrintUnformatted(in);
  char *out = NULL;
  size_t out_len = 0;
  if (json) dexa_runtime_call(r->rt, sid, "answer_question", json, strlen(json), &out, &out_len);
  dexa_free(out);
  cJSON_free(json);
  cJSON_Delete(in);
}

void dexa__http_oauth_callback(dexa_http_agent_routes *r, void *connection, const char *method,
                               dexa__http_reply *reply) {
  if (strcmp(method, "GET") != 0) {
    page(reply, 405, "Not allowed", "Only GET.");
    return;
  }
  char *query = query_of(connection), *done = NULL, err[300] = "";
  int rc = query ? dexa_mcp_authorization_complete(r->mcp_config, query, &done, NULL, err, sizeof err)
                 : DEXA_E_NOMEM;
  free(query);
  if (rc == DEXA_E_NOT_FOUND || rc == DEXA_E_INVALID_ARG) {
    page(reply, 400, "Unknown sign-in",
         "This sign-in is unknown or has expired. Start it again from the chat.");
    return;
  }
  if (rc != DEXA_OK) {
    page(reply, 502, "Sign-in failed",
         "The authorization server did not give a token. Try again from the chat.");
    return;
  }
  cJSON *d = cJSON_Parse(done);
  dexa_free(done);
  const char *sid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "session_id"));
  const char *call_id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "call_id"));
  int signed_in = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(d, "signed_in"));
  if (sid && call_id) answer(r, sid, call_id, signed_in);
  cJSON_Delete(d);
  if (signed_in) page(reply, 200, "Signed in", "You are signed in. Close this tab and go back to the chat.");
  else page(reply, 200, "Not signed in", "The sign-in was refused. Close this tab and go back to the chat.");
}
