/* The client program of the official MCP client conformance suite
 * (@modelcontextprotocol/conformance; test/mcp/conformance.sh runs it).
 *
 *   conformance_client [--protocol-version V] URL
 *
 * It goes through the public API exactly as a worker and its host do: a
 * configuration with one Streamable HTTP server at URL (the suite appends
 * it) and what the scenario's context gives (MCP_CONFORMANCE_CONTEXT:
 * pre-registered or client-credentials clients, a private key, an IdP), one
 * tool source, a listing, then the calls the scenario named by
 * MCP_CONFORMANCE_SCENARIO expects: tools_call calls add_numbers, sse-retry
 * calls test_reconnection, any other scenario calls every tool with {}.
 *
 * It also plays the session and the person: a call that asks a question
 * (dexa_tool_output_ask) is run again with the answer, as AwaitQuestionAnswer
 * does. A sign-in question's page is "opened" with a plain GET that does not
 * follow the redirect (the suite's authorization server signs in at once),
 * and the redirect's URL goes to dexa_mcp_authorization_complete, as the
 * host's callback route does; an elicitation is accepted with every field
 * left out (the library fills the defaults). Tokens go to a temporary file
 * store. Exit status 0 when every step succeeded. */
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <dexagents/dexagents.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "iface/tool_source.h"

#define MAX_ROUNDS 12

static dexa_mcp_config *cfg;

static size_t on_header(char *buf, size_t size, size_t n, void *ud) {
  char *location = ud;
  size_t len = size * n;
  if (len > 9 && strncasecmp(buf, "location:", 9) == 0) {
    const char *v = buf + 9;
    size_t vl = len - 9;
    while (vl && *v == ' ') v++, vl--;
    while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n')) vl--;
    snprintf(location, 4096, "%.*s", (int)vl, v);
  }
  return len;
}

static size_t drop(char *buf, size_t size, size_t n, void *ud) {
  (void)buf;
  (void)ud;
  return size * n;
}

/* The person signs in: opens the page and lands on the redirect. */
static int sign_in(const char *url) {
  char location[4096] = "";
  CURL *curl = curl_easy_init();
  curl_easy_setopt(curl, CURLOPT_URL, url);
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, location);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, drop);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, 20L);
  CURLcode cc = curl_easy_perform(curl);
  curl_easy_cleanup(curl);
  if (cc != CURLE_OK || !location[0]) {
    printf("sign-in page: %s, no redirect\n", curl_easy_strerror(cc));
    return -1;
  }
  char *done = NULL, err[300] = "";
  int rc = dexa_mcp_authorization_complete(cfg, location, &done, NULL, err, sizeof err);
  printf("authorization complete: %s %s %s\n", dexa_error_name(rc), done ? done : "", err);
  dexa_free(done);
  return rc == DEXA_OK ? 0 : -1;
}

/* The answer to a question, as the person would give it. */
static cJSON *answer_for(const cJSON *q) {
  const char *purpose = cJSON_GetStringValue(cJSON_GetObjectItem(q, "purpose"));
  const char *url = cJSON_GetStringValue(cJSON_GetObjectItem(q, "url"));
  cJSON *a = cJSON_CreateObject();
  cJSON_AddItemToObject(a, "key", cJSON_Duplicate(cJSON_GetObjectItem(q, "key"), 1));
  int ok = 1;
  if (purpose && !strcmp(purpose, "sign_in")) ok = url && sign_in(url) == 0;
  cJSON_AddStringToObject(a, "action", ok ? "accept" : "cancel");
  if (ok && cJSON_GetObjectItem(q, "fields")) cJSON_AddItemToObject(a, "fields", cJSON_CreateObject());
  const cJSON *choices = cJSON_GetObjectItem(q, "choices");
  if (ok && choices) cJSON_AddStringToObject(a, "answer", cJSON_GetArrayItem(choices, 0)->valuestring);
  return a;
}

/* One call, run again with the answers while it asks. */
static int call(dexa_tool_source *s, const char *name, const char *args) {
  cJSON *answers = cJSON_CreateArray();
  int rc = DEXA_OK;
  for (int round = 0; round < MAX_ROUNDS; round++) {
    char *text = cJSON_PrintUnformatted(answers);
    dexa_tool_invocation inv = {.name = name, .call_id = "call-1", .session_id = "conformance",
                                .idempotency_key = "conformance:call-1", .arguments = args,
                                .arguments_len = strlen(args), .attempt = 1, .answers = text,
                                .answers_len = strlen(text), .effect = DEXA_TOOL_READ};
    dexa_tool_output out;
    dexa__tool_output_init(&out);
    rc = s->vt.call_tool(s->user_data, &inv, &out);
    free(text);
    if (rc == DEXA_OK && out.asks) {
      printf("call %s asks: %s\n", name, out.question.data);
      cJSON *q = cJSON_Parse(out.question.data);
      cJSON_AddItemToArray(answers, answer_for(q));
      cJSON_Delete(q);
      dexa__tool_output_free(&out);
      continue;
    }
    printf("call %s: %s%s %s\n", name, dexa_error_name(rc), out.is_error ? " (tool error)" : "",
           out.text.data ? out.text.data : "");
    rc = rc != DEXA_OK ? rc : out.is_error ? DEXA_E_TOOL : DEXA_OK;
    dexa__tool_output_free(&out);
    break;
  }
  cJSON_Delete(answers);
  return rc;
}

/* Lists the tools; a server that wants a sign-in first offers only
 * "<server>__sign_in", which is called (and answered) until it lists. */
static int list(dexa_tool_source *s, dexa_tool_list *l) {
  int rc = DEXA_OK;
  for (int round = 0; round < 4; round++) {
    dexa__tool_list_free(l);
    dexa__tool_list_init(l);
    rc = s->vt.list_tools(s->user_data, l);
    printf("list_tools %s, %zu tools%s\n", dexa_error_name(rc), l->count,
           l->count == 1 && strstr(l->defs[0].name, "__sign_in") ? " (sign in first)" : "");
    if (rc != DEXA_OK || !(l->count == 1 && strstr(l->defs[0].name, "__sign_in"))) break;
    rc = call(s, l->defs[0].name, "{}");
    if (rc != DEXA_OK) break;
  }
  return rc;
}

static const char *ctx_str(const cJSON *ctx, const char *k) {
  return cJSON_GetStringValue(cJSON_GetObjectItem(ctx, k));
}

/* The server's entry of the configuration for the scenario. */
static cJSON *server_entry(const char *url, const char *version, const char *scenario) {
  cJSON *srv = cJSON_CreateObject();
  cJSON_AddStringToObject(srv, "url", url);
  cJSON_AddStringToObject(srv, "protocolVersion", version);
  cJSON_AddNumberToObject(srv, "timeoutMs", 20000);
  cJSON_AddTrueToObject(srv, "trustAnnotations");
  if (strstr(scenario, "elicitation")) cJSON_AddTrueToObject(srv, "elicitation");
  if (strncmp(scenario, "auth/", 5) != 0) return srv;
  const char *raw = getenv("MCP_CONFORMANCE_CONTEXT");
  cJSON *ctx = raw ? cJSON_Parse(raw) : NULL;
  cJSON *auth = cJSON_AddObjectToObject(srv, "auth");
  /* A host with a client ID metadata document offers it everywhere; the
   * authorization server decides whether it takes it. */
  cJSON_AddStringToObject(auth, "clientMetadataUrl", "https://conformance-test.local/client-metadata.json");
  if (ctx_str(ctx, "idp_token_endpoint")) {
    cJSON_AddStringToObject(auth, "grant", "enterprise");
    cJSON *idp = cJSON_AddObjectToObject(auth, "idp");
    cJSON_AddStringToObject(idp, "tokenEndpoint", ctx_str(ctx, "idp_token_endpoint"));
    cJSON_AddStringToObject(idp, "clientId", ctx_str(ctx, "idp_client_id"));
    cJSON_AddStringToObject(idp, "idToken", ctx_str(ctx, "idp_id_token"));
  } else if (strstr(scenario, "client-credentials")) {
    cJSON_AddStringToObject(auth, "grant", "client_credentials");
  }
  if (ctx_str(ctx, "client_id")) cJSON_AddStringToObject(auth, "clientId", ctx_str(ctx, "client_id"));
  if (ctx_str(ctx, "client_secret")) cJSON_AddStringToObject(auth, "clientSecret", ctx_str(ctx, "client_secret"));
  if (ctx_str(ctx, "private_key_pem")) cJSON_AddStringToObject(auth, "privateKey", ctx_str(ctx, "private_key_pem"));
  if (ctx_str(ctx, "signing_algorithm"))
    cJSON_AddStringToObject(auth, "signingAlgorithm", ctx_str(ctx, "signing_algorithm"));
  cJSON_Delete(ctx);
  return srv;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: conformance_client [--protocol-version V] URL\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *url = argv[argc - 1], *version = "auto";
  if (argc >= 4 && strcmp(argv[1], "--protocol-version") == 0) version = argv[2];
  const char *scenario = getenv("MCP_CONFORMANCE_SCENARIO");
  if (!scenario) scenario = "";
  cJSON *doc = cJSON_CreateObject();
  cJSON_AddItemToObject(cJSON_AddObjectToObject(doc, "mcpServers"), "conformance",
                        server_entry(url, version, scenario));
  char *json = cJSON_PrintUnformatted(doc), err[512];
  cJSON_Delete(doc);
  int rc = dexa_mcp_config_load(&cfg, NULL, json, strlen(json), err, sizeof err);
  free(json);
  if (rc != DEXA_OK) {
    fprintf(stderr, "config: %s\n", err);
    return 1;
  }
  char dir[] = "/tmp/dexa-conformance-XXXXXX", tokens[64];
  if (!mkdtemp(dir)) return 1;
  snprintf(tokens, sizeof tokens, "%s/tokens.json", dir);
  dexa_mcp_auth_options o;
  dexa_mcp_auth_options_init(&o, sizeof o);
  o.redirect_uri = "http://localhost:3000/callback";
  o.client_name = "libdexagents conformance";
  o.token_file = tokens;
  dexa_mcp_config_set_auth(cfg, &o);
  dexa_tool_source **v = NULL;
  size_t n = 0;
  rc = dexa_mcp_tool_sources_new(&v, &n, cfg);
  if (rc != DEXA_OK) return 1;
  dexa_tool_source *s = v[0];
  dexa_tool_list l;
  dexa__tool_list_init(&l);
  printf("scenario %s\n", scenario);
  rc = list(s, &l);
  if (rc == DEXA_OK) {
    if (strcmp(scenario, "tools_call") == 0) {
      rc = call(s, "conformance__add_numbers", "{\"a\":2,\"b\":3}");
    } else if (strcmp(scenario, "sse-retry") == 0) {
      rc = call(s, "conformance__test_reconnection", "{}");
    } else if (strcmp(scenario, "initialize") != 0) {
      for (size_t i = 0; i < l.count && rc == DEXA_OK; i++) rc = call(s, l.defs[i].name, "{}");
    }
  }
  dexa__tool_list_free(&l);
  dexa_mcp_tool_sources_free(v, n); /* ends the session (DELETE) */
  dexa_mcp_config_free(cfg);
  unlink(tokens);
  char lock[80];
  snprintf(lock, sizeof lock, "%s.lock", tokens);
  unlink(lock);
  rmdir(dir);
  return rc == DEXA_OK ? 0 : 1;
}
