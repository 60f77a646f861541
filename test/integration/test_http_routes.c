/* The browser helpers without a browser: session tokens (RFC 4231 vector,
 * constant-time verify), SSE frames, and the agent routes mounted in a real
 * libmicrohttpd daemon on 127.0.0.1 (an ephemeral port) driven with libcurl:
 * every route, every error status (400, 403, 404, 405, 409, 413), bad
 * input that changes nothing, no CORS headers, the event stream (ids are
 * resume tokens, Last-Event-ID and resume_token resume, an invalid token
 * gives 400), the AI SDK chat route's parts that the e2e tests need npm
 * for (Stop aborts, timer and plan data parts, a queued message that
 * streams once its turn starts, a deleted one that aborts), and shutdown
 * ending open streams.
 * test-needs: http providers sqlite */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <dexagents/dexagents.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "testing.h"

#define KEY "route-test-key"
#define P "/products/ai-agent"

static dexa_runtime *g_rt;
static dexa_agent *g_agent;
static dexa_http_agent_routes *g_routes;
static struct MHD_Daemon *g_daemon;
static char g_base[128];

/* ---- fixture ------------------------------------------------------------------ */

static int note_tool(void *u, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  (void)u;
  (void)inv;
  return dexa_tool_output_set_text(out, "noted", 5, 0);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls) {
  (void)cls;
  (void)version;
  if (!dexa_http_agent_routes_match(g_routes, url)) {
    static char nf[] = "not found";
    struct MHD_Response *r = MHD_create_response_from_buffer(9, nf, MHD_RESPMEM_PERSISTENT);
    enum MHD_Result ok = MHD_queue_response(c, 404, r);
    MHD_destroy_response(r);
    return ok;
  }
  return dexa_http_agent_routes_handle(g_routes, c, url, method, upload, upload_size, con_cls) ==
                 DEXA_OK
             ? MHD_YES
             : MHD_NO;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
  (void)cls;
  (void)c;
  (void)toe;
  dexa_http_agent_routes_completed(g_routes, con_cls);
}

static int setup(void) {
  dexa_model *models[2] = {NULL, NULL};
  dexa_tool_source *tools = NULL;
  int rc = dexa_model_demo_new(&models[0], "mock/dex");
  if (rc == DEXA_OK) rc = dexa_model_demo_new(&models[1], "mock/dex-mini");
  if (rc == DEXA_OK) rc = dexa_function_tools_new(&tools, "host");
  if (rc == DEXA_OK)
    rc = dexa_function_tools_add(tools, "send_note", "Sends a note.", NULL, DEXA_TOOL_WRITE,
                                 DEXA_APPROVAL_REQUIRED, note_tool, NULL);
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.models = models;
  def.model_count = 2;
  def.tool_sources = &tools;
  def.tool_source_count = 1;
  def.builtin_tools = DEXA_BUILTIN_ALL;
  def.plan_mode_enabled = 1;
  char err[256] = "";
  if (rc == DEXA_OK) rc = dexa_agent_new(&g_agent, &def, err, sizeof err);
  dexa_model_free(models[0]);
  dexa_model_free(models[1]);
  dexa_tool_source_free(tools);
  dexa_runtime_options ro;
  dexa_runtime_options_init(&ro, sizeof ro);
  ro.store = ":memory:";
  if (rc == DEXA_OK) rc = dexa_runtime_new(&g_rt, g_agent, &ro, err, sizeof err);
  if (rc == DEXA_OK) rc = dexa_runtime_start(g_rt, 2);
  const char *names[] = {"mock/dex", "mock/dex-mini"};
  dexa_http_agent_routes_options o;
  dexa_http_agent_routes_options_init(&o, sizeof o);
  o.session_key = KEY;
  o.session_key_len = strlen(KEY);
  o.models = names;
  o.model_count = 2;
  o.system_prompt = "route test prompt";
  o.context_window_tokens = 32000;
  o.settings_extra_json = "{\"mcp_tools\":[{\"name\":\"files__read\"}],\"note\":\"x\"}";
  o.max_body_bytes = 64 * 1024;
  o.heartbeat_ms = 300;
  o.allowed_hosts = "agent.example, other.example:7";
  if (rc == DEXA_OK) rc = dexa_http_agent_routes_new(&g_routes, g_rt, &o, err, sizeof err);
  if (rc != DEXA_OK) {
    fprintf(stderr, "setup: %s %s\n", dexa_error_name(rc), err);
    return -1;
  }
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  g_daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0,
                              NULL, NULL, on_request, NULL, MHD_OPTION_SOCK_ADDR, &sa,
                              MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL, MHD_OPTION_END);
  if (!g_daemon) return -1;
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(g_daemon, MHD_DAEMON_INFO_BIND_PORT);
  snprintf(g_base, sizeof g_base, "http://127.0.0.1:%u" P, (unsigned)info->port);
  return 0;
}

static void teardown(void) {
  dexa_http_agent_routes_shutdown(g_routes);
  if (g_daemon) MHD_stop_daemon(g_daemon);
  dexa_runtime_stop(g_rt);
  dexa_http_agent_routes_free(g_routes);
  dexa_runtime_free(g_rt);
  dexa_agent_free(g_agent);
}

/* ---- an HTTP client --------------------------------------------------------------- */

typedef struct resp {
  long status;
  char body[256 * 1024];
  size_t len;
  char headers[8192];
  size_t hlen;
  const char *stop_at; /* a stream: stop reading once the body contains this */
} resp;

static size_t on_body(char *p, size_t sz, size_t n, void *u) {
  resp *r = u;
  size_t k = sz * n, room = sizeof r->body - 1 - r->len;
  memcpy(r->body + r->len, p, k < room ? k : room);
  r->len += k < room ? k : room;
  r->body[r->len] = '\0';
  if (r->stop_at && strstr(r->body, r->stop_at)) return 0; /* abort the transfer */
  return k;
}

static size_t on_header(char *p, size_t sz, size_t n, void *u) {
  resp *r = u;
  size_t k = sz * n, room = sizeof r->headers - 1 - r->hlen;
  memcpy(r->headers + r->hlen, p, k < room ? k : room);
  r->hlen += k < room ? k : room;
  r->headers[r->hlen] = '\0';
  return k;
}

/* method path (under the prefix) with the token header (NULL: none), a
 * body (NULL: none) and one more header line (NULL: none). */
static size_t g_body_len; /* the next request's body length (0: strlen) */

static void http_into(resp *rp, const char *method, const char *path, const char *token,
                      const char *body, const char *extra_header, const char *stop_at,
                      long timeout_ms, size_t body_len);

static resp *http(const char *method, const char *path, const char *token, const char *body,
                  const char *extra_header, const char *stop_at, long timeout_ms) {
  static resp r;
  size_t body_len = g_body_len ? g_body_len : body ? strlen(body) : 0;
  g_body_len = 0;
  http_into(&r, method, path, token, body, extra_header, stop_at, timeout_ms, body_len);
  return &r;
}

/* http into the caller's resp (another thread may make one meanwhile). */
static void http_into(resp *rp, const char *method, const char *path, const char *token,
                      const char *body, const char *extra_header, const char *stop_at,
                      long timeout_ms, size_t body_len) {
#define r (*rp)
  memset(&r, 0, sizeof r);
  r.stop_at = stop_at;
  char url[512], th[160];
  snprintf(url, sizeof url, "%s%s", g_base, path);
  CURL *c = curl_easy_init();
  struct curl_slist *h = NULL;
  if (token) {
    snprintf(th, sizeof th, "X-Agent-Session-Token: %s", token);
    h = curl_slist_append(h, th);
  }
  if (extra_header) h = curl_slist_append(h, extra_header);
  h = curl_slist_append(h, "Expect:");
  /* A POST is JSON unless the test names another media type. */
  int own_type = extra_header && strncasecmp(extra_header, "Content-Type:", 13) == 0;
  if ((body || strcmp(method, "POST") == 0) && !own_type)
    h = curl_slist_append(h, "Content-Type: application/json");
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  if (body) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)body_len);
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms ? timeout_ms : 10000L);
  curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
  curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  curl_easy_cleanup(c);
  curl_slist_free_all(h);
#undef r
}

#define GET(path, token) http("GET", path, token, NULL, NULL, NULL, 0)
#define POST(path, token, body) http("POST", path, token, body, NULL, NULL, 0)

static void token_for(const char *id, char *out) {
  dexa_http_token_sign(KEY, strlen(KEY), id, out, DEXA_HTTP_TOKEN_SIZE);
}

typedef struct session {
  char id[128];
  char token[DEXA_HTTP_TOKEN_SIZE];
  char path[256]; /* "/sessions/<id>" */
} session;

static int start(session *s, const char *body) {
  resp *r = POST("/sessions", NULL, body);
  if (r->status != 200) return -1;
  cJSON *d = cJSON_Parse(r->body);
  const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(d, "session_id"));
  const char *tk = cJSON_GetStringValue(cJSON_GetObjectItem(d, "session_token"));
  snprintf(s->id, sizeof s->id, "%s", id ? id : "");
  snprintf(s->token, sizeof s->token, "%s", tk ? tk : "");
  snprintf(s->path, sizeof s->path, "/sessions/%s", s->id);
  cJSON_Delete(d);
  return id && tk ? 0 : -1;
}

static char *path_of(const session *s, const char *rest) {
  static char buf[4][320];
  static int i;
  i = (i + 1) % 4;
  snprintf(buf[i], sizeof buf[i], "%s%s", s->path, rest);
  return buf[i];
}

/* Waits until the session has nothing ready or running. */
static void idle(const session *s) { dexa_runtime_wait_idle(g_rt, s->id, 10000); }

/* The snapshot as a cJSON tree (caller deletes). */
static cJSON *snapshot(const session *s) {
  resp *r = GET(s->path, s->token);
  return r->status == 200 ? cJSON_Parse(r->body) : NULL;
}

static int error_name_is(const resp *r, const char *name) {
  cJSON *d = cJSON_Parse(r->body);
  const char *n = cJSON_GetStringValue(
      cJSON_GetObjectItem(cJSON_GetObjectItem(d, "error"), "name"));
  int ok = n && strcmp(n, name) == 0;
  cJSON_Delete(d);
  return ok;
}

/* ---- tokens and frames -------------------------------------------------------------- */

static void test_token_sign_rfc4231_vector(void) {
  char out[DEXA_HTTP_TOKEN_SIZE];
  CHECK_EQ_INT(dexa_http_token_sign("Jefe", 4, "what do ya want for nothing?", out, sizeof out),
               DEXA_OK);
  CHECK_STR(out, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  CHECK_EQ_INT(dexa_http_token_sign("Jefe", 4, "x", out, 64), DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(dexa_http_token_sign("", 0, "x", out, sizeof out), DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(dexa_http_token_sign("k", 1, "", out, sizeof out), DEXA_E_INVALID_ARG);
}

static void test_token_verify_refuses_every_other_token(void) {
  char t[DEXA_HTTP_TOKEN_SIZE];
  token_for("ai-agent-1", t);
  CHECK_EQ_INT(dexa_http_token_verify(KEY, strlen(KEY), "ai-agent-1", t), DEXA_OK);
  CHECK_EQ_INT(dexa_http_token_verify(KEY, strlen(KEY), "ai-agent-2", t), DEXA_E_AUTH);
  CHECK_EQ_INT(dexa_http_token_verify("other", 5, "ai-agent-1", t), DEXA_E_AUTH);
  CHECK_EQ_INT(dexa_http_token_verify(KEY, strlen(KEY), "ai-agent-1", NULL), DEXA_E_AUTH);
  CHECK_EQ_INT(dexa_http_token_verify(KEY, strlen(KEY), "ai-agent-1", ""), DEXA_E_AUTH);
  char longer[80];
  snprintf(longer, sizeof longer, "%s0", t);
  CHECK_EQ_INT(dexa_http_token_verify(KEY, strlen(KEY), "ai-agent-1", longer), DEXA_E_AUTH);
  t[63] = t[63] == 'a' ? 'b' : 'a'; /* the last digit differs */
  CHECK_EQ_INT(dexa_http_token_verify(KEY, strlen(KEY), "ai-agent-1", t), DEXA_E_AUTH);
  CHECK_EQ_INT(dexa_http_token_verify(NULL, 0, "ai-agent-1", t), DEXA_E_INVALID_ARG);
}

static void test_sse_frame_splits_lines(void) {
  char *out = NULL;
  size_t len = 0;
  CHECK_EQ_INT(dexa_http_sse_frame("t.1", "update", "a\nb\r\nc\rd", 8, &out, &len), DEXA_OK);
  CHECK_STR(out, "id: t.1\nevent: update\ndata: a\ndata: b\ndata: c\ndata: d\n\n");
  CHECK_EQ_INT(len, strlen(out));
  dexa_free(out);
  CHECK_EQ_INT(dexa_http_sse_frame(NULL, NULL, "x", 1, &out, NULL), DEXA_OK);
  CHECK_STR(out, "data: x\n\n");
  dexa_free(out);
  CHECK_EQ_INT(dexa_http_sse_frame("a\nid: forged", NULL, "x", 1, &out, NULL), DEXA_E_INVALID_ARG);
  CHECK(out == NULL);
}

static void test_sse_frames_of_an_events_document(void) {
  const char *doc = "{\"events\":[{\"token\":\"e.1.0\",\"event\":{\"type\":\"a\"}},"
                    "{\"token\":\"e.2.0\",\"event\":{\"type\":\"b\",\"text\":\"x\\ny\"}}],"
                    "\"token\":\"e.2.0\"}";
  char *out = NULL;
  CHECK_EQ_INT(dexa_http_sse_frames(doc, strlen(doc), &out, NULL), DEXA_OK);
  CHECK_STR(out, "id: e.1.0\ndata: {\"type\":\"a\"}\n\nid: e.2.0\ndata: {\"type\":\"b\","
                 "\"text\":\"x\\ny\"}\n\n");
  dexa_free(out);
  CHECK_EQ_INT(dexa_http_sse_frames("{\"events\":[],\"token\":\"\"}", 24, &out, NULL), DEXA_OK);
  CHECK_STR(out, "");
  dexa_free(out);
  CHECK_EQ_INT(dexa_http_sse_frames("{\"events\":[1]}", 14, &out, NULL), DEXA_E_INVALID_JSON);
  CHECK_EQ_INT(dexa_http_sse_frames("nope", 4, &out, NULL), DEXA_E_INVALID_JSON);
}

static void test_routes_options_are_checked(void) {
  dexa_http_agent_routes_options o;
  CHECK_EQ_INT(dexa_http_agent_routes_options_init(&o, 8), DEXA_E_STRUCT_SIZE);
  CHECK_EQ_INT(dexa_http_agent_routes_options_init(&o, sizeof o), DEXA_OK);
  CHECK_STR(o.prefix, "/products/ai-agent");
  dexa_http_agent_routes *r = NULL;
  char err[128] = "";
  CHECK_EQ_INT(dexa_http_agent_routes_new(&r, g_rt, &o, err, sizeof err), DEXA_E_INVALID_ARG);
  CHECK_CONTAINS(err, "model");
  const char *m[] = {"mock/dex"};
  o.models = m;
  o.model_count = 1;
  o.prefix = "/trailing/";
  CHECK_EQ_INT(dexa_http_agent_routes_new(&r, g_rt, &o, err, sizeof err), DEXA_E_INVALID_ARG);
  o.prefix = "/x";
  o.settings_extra_json = "[1]";
  CHECK_EQ_INT(dexa_http_agent_routes_new(&r, g_rt, &o, err, sizeof err), DEXA_E_INVALID_ARG);
  CHECK(r == NULL);
  /* No key: a random one; a token signed under KEY is refused there. */
  o.settings_extra_json = NULL;
  CHECK_EQ_INT(dexa_http_agent_routes_new(&r, g_rt, &o, err, sizeof err), DEXA_OK);
  CHECK_EQ_INT(dexa_http_agent_routes_match(r, "/x/settings"), 1);
  CHECK_EQ_INT(dexa_http_agent_routes_match(r, "/x/sessions/abc/events"), 1);
  CHECK_EQ_INT(dexa_http_agent_routes_match(r, "/x/"), 0);
  CHECK_EQ_INT(dexa_http_agent_routes_match(r, "/x/app.js"), 0);
  CHECK_EQ_INT(dexa_http_agent_routes_match(r, "/products/ai-agent/settings"), 0);
  dexa_http_agent_routes_free(r);
  dexa_http_agent_routes_free(NULL);
}

/* ---- routes -------------------------------------------------------------------------- */

static void test_settings(void) {
  resp *r = GET("/settings", NULL);
  CHECK_EQ_INT(r->status, 200);
  cJSON *d = cJSON_Parse(r->body);
  CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(d, "model")), "mock/dex");
  CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(d, "models")), 2);
  CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(d, "system_prompt")), "route test prompt");
  CHECK_EQ_INT(cJSON_GetObjectItem(d, "context_window_tokens")->valuedouble, 32000);
  CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(d, "mcp_tools")), 1);
  CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(d, "note")), "x");
  cJSON_Delete(d);
  CHECK_CONTAINS(r->headers, "Content-Type: application/json");
  r = POST("/settings", NULL, "{}");
  CHECK_EQ_INT(r->status, 405);
  CHECK_CONTAINS(r->headers, "Allow: GET");
}

static void test_start_session(void) {
  session s;
  CHECK(start(&s, "{\"model\":\"mock/dex-mini\"}") == 0);
  CHECK(strncmp(s.id, "ai-agent-", 9) == 0 && strlen(s.id) == 9 + 36);
  CHECK(s.id[9 + 14] == '4'); /* a version 4 UUID */
  char expected[DEXA_HTTP_TOKEN_SIZE];
  token_for(s.id, expected);
  CHECK_STR(s.token, expected);
  cJSON *snap = snapshot(&s);
  CHECK_STR(cJSON_GetStringValue(
                cJSON_GetObjectItem(cJSON_GetObjectItem(snap, "session"), "model")),
            "mock/dex-mini");
  cJSON_Delete(snap);
  session d; /* no body: the default model */
  CHECK(start(&d, NULL) == 0);
  snap = snapshot(&d);
  CHECK_STR(cJSON_GetStringValue(
                cJSON_GetObjectItem(cJSON_GetObjectItem(snap, "session"), "model")),
            "mock/dex");
  cJSON_Delete(snap);
  CHECK(strcmp(d.id, s.id) != 0);
}

static void test_start_session_bad_requests(void) {
  resp *r = POST("/sessions", NULL, "{\"model\":\"gpt-secret\"}");
  CHECK_EQ_INT(r->status, 400);
  CHECK_CONTAINS(r->body, "model must be one of the models in /settings");
  CHECK_EQ_INT(POST("/sessions", NULL, "{\"model\":7}")->status, 400);
  CHECK_EQ_INT(POST("/sessions", NULL, "{\"model\":")->status, 400);
  CHECK_EQ_INT(POST("/sessions", NULL, "[]")->status, 400);
  r = POST("/sessions", NULL, "{\"model\":\"mock/dex\",\"session_id\":\"mine\"}");
  CHECK_EQ_INT(r->status, 400);
  CHECK(error_name_is(r, "DEXA_E_UNKNOWN_KEY"));
  r = GET("/sessions", NULL);
  CHECK_EQ_INT(r->status, 405);
  CHECK_CONTAINS(r->headers, "Allow: POST");
  /* A body over max_body_bytes (64 KiB here). */
  size_t n = 100 * 1024;
  char *big = malloc(n + 32);
  CHECK(big);
  memcpy(big, "{\"model\":\"", 10);
  memset(big + 10, 'a', n);
  strcpy(big + 10 + n, "\"}");
  r = POST("/sessions", NULL, big);
  free(big);
  CHECK_EQ_INT(r->status, 413);
  CHECK(error_name_is(r, "DEXA_E_TOO_LARGE"));
  CHECK_EQ_INT(GET("/sessions/x/nothing/here", NULL)->status, 403);
}

static void test_every_session_route_checks_the_token(void) {
  session s, other;
  CHECK(start(&s, NULL) == 0 && start(&other, NULL) == 0);
  struct {
    const char *method, *rest, *body;
  } routes[] = {
      {"GET", "", NULL},
      {"POST", "/messages", "{\"text\":\"hi\"}"},
      {"GET", "/messages", NULL},
      {"POST", "/queue/delete", "{\"message_id\":\"m1\"}"},
      {"POST", "/queue/steer", "{\"message_id\":\"m1\"}"},
      {"POST", "/stop", "{}"},
      {"POST", "/approvals", "{\"call_id\":\"c\",\"decision\":\"approve\"}"},
      {"POST", "/answers", "{\"call_id\":\"c\",\"answer\":\"a\"}"},
      {"POST", "/plan/execute", "{\"revision\":1}"},
      {"POST", "/end", "{}"},
      {"GET", "/events", NULL},
  };
  const char *tokens[] = {NULL, "", "0000", other.token};
  for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
    for (size_t t = 0; t < 4; t++) {
      resp *r = http(routes[i].method, path_of(&s, routes[i].rest), tokens[t], routes[i].body,
                     NULL, NULL, 0);
      if (r->status != 403) fprintf(stderr, "    %s %s token %zu: %ld\n", routes[i].method,
                                    routes[i].rest, t, r->status);
      CHECK_EQ_INT(r->status, 403);
      CHECK_CONTAINS(r->body, "this browser has no token for the AI Agent session");
    }
  }
  /* Nothing reached the session. */
  cJSON *snap = snapshot(&s);
  CHECK(snap);
  CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(snap, "messages")), 0);
  CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(snap, "queue")), 0);
  cJSON_Delete(snap);
  /* A token in the query string is not a token. */
  char q[400];
  snprintf(q, sizeof q, "%s?token=%s", s.path, s.token);
  CHECK_EQ_INT(GET(q, NULL)->status, 403);
}

static void test_missing_session_is_404(void) {
  session m;
  snprintf(m.id, sizeof m.id, "ai-agent-00000000-0000-4000-8000-000000000000");
  token_for(m.id, m.token);
  snprintf(m.path, sizeof m.path, "/sessions/%s", m.id);
  resp *r = GET(m.path, m.token);
  CHECK_EQ_INT(r->status, 404);
  CHECK_CONTAINS(r->body, "missing");
  CHECK_EQ_INT(POST(path_of(&m, "/messages"), m.token, "{\"text\":\"hi\"}")->status, 404);
  CHECK_EQ_INT(POST(path_of(&m, "/stop"), m.token, "{}")->status, 404);
  CHECK_EQ_INT(GET(path_of(&m, "/events"), m.token)->status, 404);
  CHECK_EQ_INT(GET(path_of(&m, "/messages"), m.token)->status, 404);
  /* An id the runtime could never have made, with its own valid token. */
  char bad[DEXA_HTTP_TOKEN_SIZE];
  token_for("a b", bad);
  CHECK_EQ_INT(GET("/sessions/a%20b", bad)->status, 404);
}

static void test_unknown_routes_and_methods(void) {
  session s;
  CHECK(start(&s, NULL) == 0);
  CHECK_EQ_INT(GET(path_of(&s, "/nothing"), s.token)->status, 404);
  resp *r = GET(path_of(&s, "/stop"), s.token);
  CHECK_EQ_INT(r->status, 405);
  CHECK_CONTAINS(r->headers, "Allow: POST");
  r = http("DELETE", path_of(&s, "/messages"), s.token, NULL, NULL, NULL, 0);
  CHECK_EQ_INT(r->status, 405);
  CHECK_CONTAINS(r->headers, "Allow: GET, POST");
  CHECK_EQ_INT(POST(path_of(&s, "/events"), s.token, "{}")->status, 405);
}

static void test_send_message_and_bad_bodies_change_nothing(void) {
  session s;
  CHECK(start(&s, NULL) == 0);
  const char *bad[] = {"{\"text\":", "\"hi\"", "{\"text\":5}", "{\"text\":\"hi\",\"plan_mode\":1}",
                       "{\"plan_mode\":true}", "{\"text\":\"hi\",\"extra\":1}", "{\"text\":\"  \"}",
                       "{\"text\":\"hi\"} x", "{\"text\":\"a\xff\"}", "{\"text\":\"a\\u0000b\"}",
                       "{\"text\":\"a\x01\"}", "{\"text\":\"a\",\"text\":\"b\"}"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    resp *r = POST(path_of(&s, "/messages"), s.token, bad[i]);
    if (r->status != 400) fprintf(stderr, "    body %s: %ld %s\n", bad[i], r->status, r->body);
    CHECK_EQ_INT(r->status, 400);
    CHECK_CONTAINS(r->body, "\"error\"");
  }
  cJSON *snap = snapshot(&s);
  CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(snap, "messages")), 0);
  CHECK_EQ_INT(cJSON_GetObjectItem(cJSON_GetObjectItem(snap, "turn"), "turn")->valuedouble, 0);
  cJSON_Delete(snap);
  resp *r = POST(path_of(&s, "/messages"), s.token, "{\"text\":\"hello routes\"}");
  CHECK_EQ_INT(r->status, 200);
  CHECK_CONTAINS(r->body, "\"message_id\"");
  idle(&s);
  snap = snapshot(&s);
  char *text = cJSON_PrintUnformatted(cJSON_GetObjectItem(snap, "messages"));
  cJSON_Delete(snap);
  int ok = text && strstr(text, "Local demo response: hello routes") != NULL;
  free(text);
  CHECK(ok);
}

/* Attachments go through POST messages to send_message, which checks them. */
static void test_send_message_with_attachments(void) {
  session s;
  CHECK(start(&s, NULL) == 0);
  resp *r = POST(path_of(&s, "/messages"), s.token,
                 "{\"text\":\"what is this\",\"attachments\":[{\"type\":\"image\","
                 "\"media_type\":\"image/png\",\"data\":\"iVBORw0KGgo=\"}]}");
  CHECK_EQ_INT(r->status, 200);
  idle(&s);
  cJSON *snap = snapshot(&s);
  char *text = cJSON_PrintUnformatted(cJSON_GetObjectItem(snap, "messages"));
  cJSON_Delete(snap);
  int ok = text && strstr(text, "\"attachments\":[{\"type\":\"image\",\"media_type\":"
                                "\"image/png\",\"data\":\"iVBORw0KGgo=\"}]") != NULL;
  free(text);
  CHECK(ok);
  r = POST(path_of(&s, "/messages"), s.token, "{\"text\":\"x\",\"attachments\":{}}");
  CHECK_EQ_INT(r->status, 400);
  CHECK_CONTAINS(r->body, "must be an array");
  r = POST(path_of(&s, "/messages"), s.token,
           "{\"text\":\"x\",\"attachments\":[{\"type\":\"image\",\"data\":\"AAAA\"}]}");
  CHECK_EQ_INT(r->status, 400);
  CHECK(error_name_is(r, "DEXA_E_INVALID_ARG"));
}

/* The session settings a browser may choose go to the start Step, which
 * checks them. */
static void test_start_session_with_settings(void) {
  session s;
  CHECK(start(&s, "{\"on_truncation\":\"fail\",\"output_schema\":{\"schema\":"
                  "{\"type\":\"object\"}}}") == 0);
  cJSON *snap = snapshot(&s);
  char *text = cJSON_PrintUnformatted(cJSON_GetObjectItem(snap, "session"));
  cJSON_Delete(snap);
  int ok = text && strstr(text, "\"on_truncation\":\"fail\",\"output_schema\":{\"schema\":"
                                "{\"type\":\"object\"}}") != NULL;
  if (!ok) fprintf(stderr, "    session %s\n", text ? text : "");
  free(text);
  CHECK(ok);
  resp *r = POST("/sessions", NULL, "{\"on_truncation\":\"sometimes\"}");
  CHECK_EQ_INT(r->status, 400);
  CHECK_CONTAINS(r->body, "settings were refused");
  CHECK_EQ_INT(POST("/sessions", NULL, "{\"output_schema\":[]}")->status, 400);
}

static void test_approve_and_reject_with_conflicts(void) {
  session s;
  CHECK(start(&s, NULL) == 0);
  resp *r = POST(path_of(&s, "/approvals"), s.token, "{\"call_id\":\"nope\",\"decision\":\"approve\"}");
  CHECK_EQ_INT(r->status, 409);
  CHECK(error_name_is(r, "DEXA_E_NOT_PENDING"));
  CHECK_EQ_INT(POST(path_of(&s, "/approvals"), s.token, "{\"call_id\":\"x\"}")->status, 400);
  CHECK_EQ_INT(POST(path_of(&s, "/messages"), s.token,
                    "{\"text\":\"/tool send_note {\\\"text\\\":\\\"a\\\"}\\n/tool send_note {}\"}")
                   ->status,
               200);
  idle(&s);
  cJSON *snap = snapshot(&s);
  cJSON *pending = cJSON_GetObjectItem(snap, "pending");
  CHECK_EQ_INT(cJSON_GetArraySize(pending), 2);
  char a[64], b[64], body[200];
  snprintf(a, sizeof a, "%s", cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(pending, 0), "call_id")));
  snprintf(b, sizeof b, "%s", cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(pending, 1), "call_id")));
  cJSON_Delete(snap);
  snprintf(body, sizeof body, "{\"call_id\":\"%s\",\"decision\":\"maybe\"}", a);
  CHECK_EQ_INT(POST(path_of(&s, "/approvals"), s.token, body)->status, 400);
  snprintf(body, sizeof body, "{\"call_id\":\"%s\",\"decision\":\"approve\"}", a);
  CHECK_EQ_INT(POST(path_of(&s, "/approvals"), s.token, body)->status, 200);
  r = POST(path_of(&s, "/approvals"), s.token, body); /* twice */
  CHECK_EQ_INT(r->status, 409);
  snprintf(body, sizeof body, "{\"call_id\":\"%s\",\"decision\":\"reject\",\"note\":\"no\"}", b);
  CHECK_EQ_INT(POST(path_of(&s, "/approvals"), s.token, body)->status, 200);
  idle(&s);
  snap = snapshot(&s);
  char *text = cJSON_PrintUnformatted(cJSON_GetObjectItem(snap, "messages"));
  cJSON_Delete(snap);
  int ok = text && strstr(text, "\"status\":\"ok\"") && strstr(text, "\"status\":\"rejected\"");
  free(text);
  CHECK(ok);
}

static void test_answer_question(void) {
  session s;
  CHECK(start(&s, NULL) == 0);
  CHECK_EQ_INT(POST(path_of(&s, "/answers"), s.token, "{\"call_id\":\"c\",\"answer\":\"x\"}")->status,
               409);
  CHECK_EQ_INT(POST(path_of(&s, "/messages"), s.token, "{\"text\":\"/choose Which | A | B\"}")->status,
               200);
  idle(&s);
  cJSON *snap = snapshot(&s);
  cJSON *p = cJSON_GetArrayItem(cJSON_GetObjectItem(snap, "pending"), 0);
  CHECK(p);
  char body[200];
  snprintf(body, sizeof body, "{\"call_id\":\"%s\",\"answer\":7}",
           cJSON_GetStringValue(cJSON_GetObjectItem(p, "call_id")));
  CHECK_EQ_INT(POST(path_of(&s, "/answers"), s.token, body)->status, 400);
  /* fields are an object; ask_user's question takes no decline */
  snprintf(body, sizeof body, "{\"call_id\":\"%s\",\"fields\":[1]}",
           cJSON_GetStringValue(cJSON_GetObjectItem(p, "call_id")));
  CHECK_EQ_INT(POST(path_of(&s, "/answers"), s.token, body)->status, 400);
  snprintf(body, sizeof body, "{\"call_id\":\"%s\",\"action\":\"decline\"}",
           cJSON_GetStringValue(cJSON_GetObjectItem(p, "call_id")));
  CHECK_EQ_INT(POST(path_of(&s, "/answers"), s.token, body)->status, 400);
  snprintf(body, sizeof body, "{\"call_id\":\"%s\",\"answer\":\"B\"}",
           cJSON_GetStringValue(cJSON_GetObjectItem(p, "call_id")));
  cJSON_Delete(snap);
  CHECK_EQ_INT(POST(path_of(&s, "/answers"), s.token, body)->status, 200);
  idle(&s);
  snap = snapshot(&s);
  CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(snap, "pending")), 0);
  cJSON_Delete(snap);
}

/* POST /end ends the session: a change after it is 409, the snapshot still 200. */
static void test_end_route(void) {
  session s;
  CHECK(start(&s, NULL) == 0);
  CHECK_EQ_INT(POST(path_of(&s, "/end"), s.token, "{\"reason\":7}")->status, 400);
  CHECK_EQ_INT(POST(path_of(&s, "/end"), s.token, "{\"why\":\"x\"}")->status, 400);
  resp *r = POST(path_of(&s, "/end"), s.token, "{\"reason\":\"closed the tab\"}");
  CHECK_EQ_INT(r->status, 200);
  CHECK_CONTAINS(r->body, "\"ended\":true");
  r = POST(path_of(&s, "/messages"), s.token, "{\"text\":\"late\"}");
  CHECK_EQ_INT(r->status, 409);
  CHECK_CONTAINS(r->body, "DEXA_E_SESSION_ENDED");
  cJSON *snap = snapshot(&s);
  CHECK(snap);
  CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(snap, "ended"), "reason")),
            "closed the tab");
  cJSON_Delete(snap);
  CHECK_EQ_INT(POST(path_of(&s, "/end"), s.token, "{}")->status, 409);
}

static void test_queue_steer_delete_and_stop(void) {
  session s;
  CHECK(start(&s, NULL) == 0);
  resp *r = POST(path_of(&s, "/stop"), s.token, "{}");
  if (r->status != 409) fprintf(stderr, "    stop when idle: %ld %s\n", r->status, r->body);
  CHECK_EQ_INT(r->status, 409); /* nothing to stop */
  CHECK_EQ_INT(POST(path_of(&s, "/stop"), s.token, "{\"now\":true}")->status, 400);
  CHECK_EQ_INT(POST(path_of(&s, "/queue/delete"), s.token, "{\"message_id\":\"m9\"}")->status, 404);
  CHECK_EQ_INT(POST(path_of(&s, "/queue/steer"), s.token, "{}")->status, 400);
  CHECK_EQ_INT(POST(path_of(&s, "/messages"), s.token, "{\"text\":\"/wait 30 hold\"}")->status, 200);
  idle(&s);
  CHECK_EQ_INT(POST(path_of(&s, "/messages"), s.token, "{\"text\":\"second\"}")->status, 200);
  CHECK_EQ_INT(POST(path_of(&s, "/messages"), s.token, "{\"text\":\"third\"}")->status, 200);
  CHECK_EQ_INT(POST(path_of(&s, "/queue/delete"), s.token, "{\"message_id\":\"m3\"}")->status, 200);
  CHECK_EQ_INT(POST(path_of(&s, "/queue/delete"), s.token, "{\"message_id\":\"m3\"}")->status, 404);
  CHECK_EQ_INT(POST(path_of(&s, "/queue/steer"), s.token, "{\"message_id\":\"m2\"}")->status, 200);
  idle(&s);
  cJSON *snap = snapshot(&s);
  char *text = cJSON_PrintUnformatted(snap);
  cJSON_Delete(snap);
  int ok = text && strstr(text, "Local demo response: second") && !strstr(text, "third");
  free(text);
  CHECK(ok);
  CHECK_EQ_INT(POST(path_of(&s, "/messages"), s.token, "{\"text\":\"/wait 30 again\"}")->status, 200);
  idle(&s);
  CHECK_EQ_INT(POST(path_of(&s, "/stop"), s.token, "{}")->status, 200);
  idle(&s);
  snap = snapshot(&s);
  CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(snap, "turn"), "status")),
            "cancelled");
  cJSON_Delete(snap);
}

/* ---- the AI SDK chat route (POST sessions/ID/chat) ------------------------------------- */

/* A chat request in its own thread: its stream stays open until its turn
 * ends, while the test acts on the session. */
typedef struct chat_req {
  pthread_t t;
  char path[320], token[DEXA_HTTP_TOKEN_SIZE], body[512];
  resp r;
} chat_req;

static void *chat_run(void *p) {
  chat_req *q = p;
  http_into(&q->r, "POST", q->path, q->token, q->body, NULL, NULL, 60000, strlen(q->body));
  return NULL;
}

static chat_req *chat_start(const session *s, const char *text, int plan_mode) {
  chat_req *q = calloc(1, sizeof *q);
  snprintf(q->path, sizeof q->path, "%s/chat", s->path);
  snprintf(q->token, sizeof q->token, "%s", s->token);
  snprintf(q->body, sizeof q->body,
           "{\"id\":\"c1\",\"trigger\":\"submit-message\",\"messages\":[{\"id\":\"u1\","
           "\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":\"%s\"}]}]%s}",
           text, plan_mode ? ",\"plan_mode\":true" : "");
  pthread_create(&q->t, NULL, chat_run, q);
  return q;
}

/* Waits for the stream's end; the response (free it). */
static chat_req *chat_join(chat_req *q) {
  pthread_join(q->t, NULL);
  return q;
}

/* The chunk types of a UI message stream, in order, space separated. */
static void chunk_types(const char *body, char *out, size_t size) {
  out[0] = '\0';
  for (const char *p = strstr(body, "data: "); p; p = strstr(p + 1, "\ndata: ")) {
    const char *d = p[0] == '\n' ? p + 7 : p + 6;
    cJSON *c = cJSON_ParseWithOpts(d, NULL, 0);
    const char *t = cJSON_GetStringValue(cJSON_GetObjectItem(c, "type"));
    size_t n = strlen(out);
    snprintf(out + n, size - n, "%s%s", n ? " " : "", t ? t : strncmp(d, "[DONE]", 6) == 0 ? "[DONE]" : "?");
    cJSON_Delete(c);
  }
}

/* The text of a UI message stream: its text-delta chunks joined. */
static void stream_text(const char *body, char *out, size_t size) {
  out[0] = '\0';
  for (const char *p = strstr(body, "data: "); p; p = strstr(p + 1, "\ndata: ")) {
    cJSON *c = cJSON_ParseWithOpts(p[0] == '\n' ? p + 7 : p + 6, NULL, 0);
    const char *t = cJSON_GetStringValue(cJSON_GetObjectItem(c, "type"));
    const char *d = cJSON_GetStringValue(cJSON_GetObjectItem(c, "delta"));
    size_t n = strlen(out);
    if (t && d && strcmp(t, "text-delta") == 0) snprintf(out + n, size - n, "%s", d);
    cJSON_Delete(c);
  }
}

/* Waits until the snapshot's queue holds n messages; the id of the first. */
static int queued(const session *s, int n, char *id, size_t size) {
  for (int i = 0; i < 400; i++) {
    cJSON *snap = snapshot(s);
    cJSON *q = cJSON_GetObjectItem(snap, "queue");
    int k = cJSON_GetArraySize(q);
    const char *first = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(q, 0), "id"));
    if (k == n && first) snprintf(id, size, "%s", first);
    cJSON_Delete(snap);
    if (k == n) return 1;
    struct timespec ts = {0, 25 * 1000000L};
    nanosleep(&ts, NULL);
  }
  return 0;
}

static void test_chat_stop_aborts_with_a_timer_part(void) {
  session s;
  CHECK(start(&s, NULL) == 0);
  chat_req *q = chat_start(&s, "/wait 600 tea", 0);
  /* the timer waits (the session is idle then), then Stop ends the stream */
  for (int i = 0; i < 400; i++) {
    cJSON *snap = snapshot(&s);
    char *t = cJSON_PrintUnformatted(snap);
    int waiting = t && strstr(t, "\"timer\"");
    free(t);
    cJSON_Delete(snap);
    if (waiting) break;
    struct timespec ts = {0, 25 * 1000000L};
    nanosleep(&ts, NULL);
  }
  idle(&s);
  CHECK_EQ_INT(POST(path_of(&s, "/stop"), s.token, "{}")->status, 200);
  chat_join(q);
  CHECK_EQ_INT(q->r.status, 200);
  char types[2048];
  chunk_types(q->r.body, types, sizeof types);
  CHECK(strstr(types, "start start-step") == types);
  CHECK(strstr(types, "data-timer"));
  CHECK(strstr(types, "abort finish-step finish [DONE]"));
  CHECK(strstr(q->r.body, "\"reason\":\"stopped\""));
  CHECK(strstr(q->r.body, "\"finishReason\":\"other\""));
  CHECK(strstr(q->r.body, "\"seconds\":600") || strstr(q->r.body, "tea"));
  free(q);
}

static void test_chat_plan_is_a_data_part(void) {
  session s;
  CHECK(start(&s, NULL) == 0);
  chat_req *q = chat_join(chat_start(&s, "plan it", 1));
  CHECK_EQ_INT(q->r.status, 200);
  char types[2048];
  chunk_types(q->r.body, types, sizeof types);
  CHECK(strstr(types, "data-plan"));
  CHECK(strstr(q->r.body, "\"type\":\"data-plan\",\"id\":\"plan\""));
  CHECK(strstr(types, "finish-step finish [DONE]"));
  CHECK(strstr(q->r.body, "\"finishReason\":\"stop\""));
  if (!strstr(types, "data-plan")) fprintf(stderr, "    chunks: %s\n", types);
  free(q);
}

/* A chat message queued behind a turn that waits for a timer: its
 * request, with *id the message's id (NULL when it did not queue). */
static chat_req *chat_queued(session *s, const char *text, char *id, size_t size) {
  if (start(s, NULL) != 0 ||
      POST(path_of(s, "/messages"), s->token, "{\"text\":\"/wait 600 hold\"}")->status != 200)
    return NULL;
  idle(s);
  chat_req *q = chat_start(s, text, 0);
  if (queued(s, 1, id, size)) return q;
  free(chat_join(q));
  return NULL;
}

static void test_chat_queued_message_streams_when_its_turn_starts(void) {
  session s;
  char id[64] = "", body[128];
  chat_req *q = chat_queued(&s, "later on", id, sizeof id);
  CHECK(q);
  /* steered in: the waiting turn ends, the queued message's turn streams */
  snprintf(body, sizeof body, "{\"message_id\":\"%s\"}", id);
  CHECK_EQ_INT(POST(path_of(&s, "/queue/steer"), s.token, body)->status, 200);
  chat_join(q);
  CHECK_EQ_INT(q->r.status, 200);
  char types[2048];
  chunk_types(q->r.body, types, sizeof types);
  char said[512];
  stream_text(q->r.body, said, sizeof said);
  CHECK(strstr(types, "start start-step") == types);
  CHECK(strstr(q->r.body, "\"messageId\":\"turn-2\""));
  CHECK_STR(said, "Local demo response: later on");
  CHECK(strstr(q->r.body, "\"finishReason\":\"stop\""));
  CHECK(!strstr(types, "abort") && !strstr(q->r.body, "hold"));
  free(q);
}

static void test_chat_deleted_queued_message_aborts(void) {
  session s;
  char id[64] = "", body[128];
  chat_req *q = chat_queued(&s, "never mind", id, sizeof id);
  CHECK(q);
  snprintf(body, sizeof body, "{\"message_id\":\"%s\"}", id);
  CHECK_EQ_INT(POST(path_of(&s, "/queue/delete"), s.token, body)->status, 200);
  chat_join(q);
  CHECK_EQ_INT(q->r.status, 200);
  char types[2048];
  chunk_types(q->r.body, types, sizeof types);
  CHECK_STR(types, "start start-step abort finish-step finish [DONE]");
  CHECK(strstr(q->r.body, "\"reason\":\"the queued message was deleted\""));
  free(q);
  /* the waiting turn is untouched */
  cJSON *snap = snapshot(&s);
  CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(snap, "turn"), "status")),
            "running");
  cJSON_Delete(snap);
  CHECK_EQ_INT(POST(path_of(&s, "/stop"), s.token, "{}")->status, 200);
}

static void test_execute_plan_refuses_a_stale_revision(void) {
  session s;
  CHECK(start(&s, NULL) == 0);
  CHECK_EQ_INT(POST(path_of(&s, "/plan/execute"), s.token, "{\"revision\":\"1\"}")->status, 400);
  CHECK_EQ_INT(POST(path_of(&s, "/plan/execute"), s.token, "{\"revision\":1.5}")->status, 400);
  CHECK_EQ_INT(POST(path_of(&s, "/messages"), s.token, "{\"text\":\"plan it\",\"plan_mode\":true}")->status,
               200);
  idle(&s);
  resp *r = POST(path_of(&s, "/plan/execute"), s.token, "{\"revision\":99}");
  CHECK_EQ_INT(r->status, 409);
  CHECK(error_name_is(r, "DEXA_E_STALE_REVISION"));
  CHECK_EQ_INT(POST(path_of(&s, "/plan/execute"), s.token, "{\"revision\":1}")->status, 200);
  idle(&s);
  cJSON *snap = snapshot(&s);
  CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(snap, "plan"), "status")),
            "completed");
  cJSON_Delete(snap);
}

static void test_older_messages(void) {
  session s;
  CHECK(start(&s, NULL) == 0);
  for (int i = 0; i < 3; i++) {
    CHECK_EQ_INT(POST(path_of(&s, "/messages"), s.token, "{\"text\":\"x\"}")->status, 200);
    idle(&s);
  }
  resp *r = GET(path_of(&s, "/messages?before_seq=5&limit=2"), s.token);
  CHECK_EQ_INT(r->status, 200);
  cJSON *d = cJSON_Parse(r->body);
  cJSON *m = cJSON_GetObjectItem(d, "messages");
  CHECK_EQ_INT(cJSON_GetArraySize(m), 2);
  CHECK_EQ_INT(cJSON_GetObjectItem(cJSON_GetArrayItem(m, 0), "seq")->valuedouble, 3);
  CHECK(cJSON_IsTrue(cJSON_GetObjectItem(d, "has_more")));
  cJSON_Delete(d);
  CHECK_EQ_INT(GET(path_of(&s, "/messages?before_seq=abc"), s.token)->status, 400);
  CHECK_EQ_INT(GET(path_of(&s, "/messages?limit=-1"), s.token)->status, 400);
  CHECK_EQ_INT(GET(path_of(&s, "/messages?limit=0"), s.token)->status, 400);
  CHECK_EQ_INT(GET(path_of(&s, "/messages?limit=201"), s.token)->status, 400);
}

static void test_no_cors_headers(void) {
  session s;
  CHECK(start(&s, NULL) == 0);
  resp *r = http("GET", "/settings", NULL, NULL, "Origin: http://evil.example", NULL, 0);
  CHECK(!strstr(r->headers, "Access-Control-"));
  r = http("OPTIONS", s.path, NULL, NULL, "Origin: http://evil.example", NULL, 0);
  CHECK(!strstr(r->headers, "Access-Control-"));
  r = http("GET", s.path, s.token, NULL, "Origin: http://evil.example", NULL, 0);
  CHECK_EQ_INT(r->status, 200);
  CHECK(!strstr(r->headers, "Access-Control-"));
}

/* The ids of the frames in body, in order, joined by ' '. */
static void frame_ids(const char *body, char *out, size_t size) {
  out[0] = '\0';
  for (const char *p = body; (p = strstr(p, "id: ")) != NULL; p += 4) {
    if (p != body && p[-1] != '\n') continue;
    size_t n = strcspn(p + 4, "\n");
    size_t used = strlen(out);
    snprintf(out + used, size - used, "%s%.*s", used ? " " : "", (int)n, p + 4);
  }
}

static void test_event_stream_ids_resume_and_bad_tokens(void) {
  session s;
  CHECK(start(&s, NULL) == 0);
  CHECK_EQ_INT(POST(path_of(&s, "/messages"), s.token, "{\"text\":\"stream me\"}")->status, 200);
  idle(&s);
  /* From the start: every event, each with its resume token as id. */
  resp *r = http("GET", path_of(&s, "/events"), s.token, NULL, NULL, "turn_finished", 5000);
  CHECK_EQ_INT(r->status, 200);
  CHECK_CONTAINS(r->headers, "Content-Type: text/event-stream");
  CHECK(!strstr(r->headers, "Access-Control-"));
  CHECK_CONTAINS(r->body, "retry: ");
  CHECK_CONTAINS(r->body, "\"type\":\"session_started\"");
  CHECK_CONTAINS(r->body, "\"type\":\"text_delta\"");
  char all[4096];
  frame_ids(r->body, all, sizeof all);
  CHECK(strlen(all) > 0);
  /* The snapshot's resume token comes after every event so far. */
  cJSON *snap = snapshot(&s);
  char resume[256];
  snprintf(resume, sizeof resume, "%s", cJSON_GetStringValue(cJSON_GetObjectItem(snap, "resume_token")));
  cJSON_Delete(snap);
  CHECK(strstr(all, resume) != NULL);
  /* Last-Event-ID of the second event: the stream goes on from the third. */
  char second[256], header[300];
  const char *sp = strchr(all, ' ');
  CHECK(sp);
  size_t n = strcspn(sp + 1, " ");
  snprintf(second, sizeof second, "%.*s", (int)n, sp + 1);
  snprintf(header, sizeof header, "Last-Event-ID: %s", second);
  r = http("GET", path_of(&s, "/events"), s.token, NULL, header, "turn_finished", 5000);
  CHECK_EQ_INT(r->status, 200);
  char resumed[4096];
  frame_ids(r->body, resumed, sizeof resumed);
  CHECK_STR(resumed, sp + 1 + n + 1); /* exactly the ids after the second */
  CHECK(!strstr(r->body, "session_started"));
  /* resume_token (the snapshot's): only what comes after it, here a new turn. */
  char q[512];
  snprintf(q, sizeof q, "%s?resume_token=%s", path_of(&s, "/events"), resume);
  CHECK_EQ_INT(POST(path_of(&s, "/messages"), s.token, "{\"text\":\"after snapshot\"}")->status, 200);
  r = http("GET", q, s.token, NULL, NULL, "turn_finished", 5000);
  CHECK_EQ_INT(r->status, 200);
  CHECK_CONTAINS(r->body, "after snapshot");
  CHECK(!strstr(r->body, "stream me"));
  /* Last-Event-ID wins over the query parameter. */
  snprintf(q, sizeof q, "%s?resume_token=garbage", path_of(&s, "/events"));
  snprintf(header, sizeof header, "Last-Event-ID: %s", resume);
  r = http("GET", q, s.token, NULL, header, "turn_finished", 5000);
  CHECK_EQ_INT(r->status, 200);
  /* Invalid tokens: 400 and the page's cue to reload the snapshot. */
  const char *bad[] = {"garbage", "1.2.3.4.5", "ffffffff.999999.0"};
  for (size_t i = 0; i < 3; i++) {
    snprintf(q, sizeof q, "%s?resume_token=%s", path_of(&s, "/events"), bad[i]);
    r = GET(q, s.token);
    if (r->status != 400) fprintf(stderr, "    token %s: %ld\n", bad[i], r->status);
    CHECK_EQ_INT(r->status, 400);
    CHECK_CONTAINS(r->body, "the resume token is not valid; reload the snapshot");
  }
  r = http("GET", path_of(&s, "/events"), s.token, NULL, "Last-Event-ID: nonsense", NULL, 0);
  CHECK_EQ_INT(r->status, 400);
}

static void test_event_stream_heartbeat_and_live_events(void) {
  session s;
  CHECK(start(&s, NULL) == 0);
  idle(&s);
  cJSON *snap = snapshot(&s);
  char q[512];
  snprintf(q, sizeof q, "%s?resume_token=%s", path_of(&s, "/events"),
           cJSON_GetStringValue(cJSON_GetObjectItem(snap, "resume_token")));
  cJSON_Delete(snap);
  /* Nothing happens: a comment after heartbeat_ms (300 here). */
  resp *r = http("GET", q, s.token, NULL, NULL, ": keep-alive", 5000);
  CHECK_EQ_INT(r->status, 200);
  CHECK_CONTAINS(r->body, ": keep-alive\n\n");
}

/* ---- hardening: bodies, media types, Host, headers ------------------------------------- */

/* Bodies that a parser would read as something else than what was sent are
 * refused with 400 before the RPC runs, and change nothing. */
static void test_bodies_that_are_not_exactly_one_json_value_are_400(void) {
  session s;
  CHECK(start(&s, NULL) == 0);
  struct {
    const char *body;
    size_t len;
  } bad[] = {
      {"{\"text\":\"hi\"} x", 0},
      {"{\"text\":\"hi\"}{\"text\":\"again\"}", 0},
      {"{\"text\":\"hi\"}\n\n[]", 0},
      {"{\"text\":\"a\\u0000b\"}", 0},
      {"{\"text\":\"a\\u0000\"}", 0},
      {"{\"text\":\"a\0b\"}", 13},
      {"{\"text\":\"hi\"}\0", 14},
      {"{\"text\":\"\xff\"}", 0},
      {"{\"text\":\"\xc0\xaf\"}", 0},
      {"{\"text\":\"\xed\xa0\x80\"}", 0},
      {"{\"text\":\"\xf4\x90\x80\x80\"}", 0},
      {"{\"text\":\"\xe2\x82\"}", 0},
      {"{\"text\":\"a\",\"text\":\"b\"}", 0},
      {"{\"text\":\"\\ud800\"}", 0},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    g_body_len = bad[i].len;
    resp *r = POST(path_of(&s, "/messages"), s.token, bad[i].body);
    if (r->status != 400) fprintf(stderr, "    bad body %zu: %ld %s\n", i, r->status, r->body);
    CHECK_EQ_INT(r->status, 400);
  }
  g_body_len = 13;
  CHECK_EQ_INT(POST("/sessions", NULL, "{\"model\":\"\0\"}")->status, 400);
  cJSON *snap = snapshot(&s);
  CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(snap, "messages")), 0);
  CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(snap, "queue")), 0);
  cJSON_Delete(snap);
  /* Escapes and multi-byte characters that are fine pass. */
  resp *r = POST(path_of(&s, "/messages"), s.token,
                 "{\"text\":\"caf\xc3\xa9 \xf0\x9f\x99\x82 \\u00e9 \\\"q\\\" \\\\u0000\"} \n");
  CHECK_EQ_INT(r->status, 200);
  idle(&s);
  snap = snapshot(&s);
  char *text = cJSON_PrintUnformatted(cJSON_GetObjectItem(snap, "messages"));
  cJSON_Delete(snap);
  CHECK(text && strstr(text, "caf\xc3\xa9 \xf0\x9f\x99\x82"));
  free(text);
}

/* Only application/json reaches a POST route: a cross-site form or a
 * text/plain post cannot. */
static void test_post_routes_accept_only_application_json(void) {
  session s;
  CHECK(start(&s, NULL) == 0);
  const char *types[] = {"Content-Type: text/plain", "Content-Type: application/x-www-form-urlencoded",
                         "Content-Type: multipart/form-data; boundary=x",
                         "Content-Type: application/json; charset=latin1",
                         "Content-Type: application/jsonx", "Content-Type:"};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
    resp *r = http("POST", path_of(&s, "/messages"), s.token, "{\"text\":\"hi\"}", types[i], NULL, 0);
    if (r->status != 415) fprintf(stderr, "    %s: %ld\n", types[i], r->status);
    CHECK_EQ_INT(r->status, 415);
    CHECK_CONTAINS(r->body, "application/json");
  }
  CHECK_EQ_INT(http("POST", "/sessions", NULL, "{}", "Content-Type: text/plain", NULL, 0)->status, 415);
  cJSON *snap = snapshot(&s);
  CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(snap, "messages")), 0);
  cJSON_Delete(snap);
  resp *r = http("POST", path_of(&s, "/stop"), s.token, "{}",
                 "Content-Type: Application/JSON; charset=UTF-8", NULL, 0);
  CHECK_EQ_INT(r->status, 409); /* past the media type: nothing to stop */
}

/* A page of another name that resolves to this server (DNS rebinding)
 * sends its own Host: refused with 421 on every route. */
static void test_host_header_must_name_this_server(void) {
  session s;
  CHECK(start(&s, NULL) == 0);
  unsigned port = 0;
  sscanf(g_base, "http://127.0.0.1:%u", &port);
  char evil[64], local[64], allowed[64], wrong_port[64];
  snprintf(evil, sizeof evil, "Host: evil.example:%u", port);
  snprintf(local, sizeof local, "Host: localhost:%u", port);
  snprintf(allowed, sizeof allowed, "Host: agent.example:%u", port);
  snprintf(wrong_port, sizeof wrong_port, "Host: 127.0.0.1:%u", port + 1);
  const char *refused[] = {evil, wrong_port, "Host: other.example:8", "Host: 127.0.0.1"};
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    resp *r = http("GET", "/settings", NULL, NULL, refused[i], NULL, 0);
    if (r->status != 421) fprintf(stderr, "    %s: %ld\n", refused[i], r->status);
    CHECK_EQ_INT(r->status, 421);
    CHECK_EQ_INT(http("GET", s.path, s.token, NULL, refused[i], NULL, 0)->status, 421);
    CHECK_EQ_INT(http("GET", path_of(&s, "/events"), s.token, NULL, refused[i], NULL, 0)->status, 421);
    CHECK_EQ_INT(http("POST", path_of(&s, "/messages"), s.token, "{\"text\":\"x\"}", refused[i], NULL, 0)->status,
                 421);
  }
  CHECK_EQ_INT(http("GET", "/settings", NULL, NULL, local, NULL, 0)->status, 200);
  CHECK_EQ_INT(http("GET", "/settings", NULL, NULL, allowed, NULL, 0)->status, 200);
  CHECK_EQ_INT(http("GET", "/settings", NULL, NULL, "Host: agent.example", NULL, 0)->status, 200);
  CHECK_EQ_INT(http("GET", "/settings", NULL, NULL, "Host: other.example:7", NULL, 0)->status, 200);
  cJSON *snap = snapshot(&s);
  CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(snap, "messages")), 0);
  cJSON_Delete(snap);
}

static void check_security_headers(const resp *r) {
  CHECK_CONTAINS(r->headers, "Content-Security-Policy: default-src 'none'; frame-ancestors 'none'");
  CHECK_CONTAINS(r->headers, "X-Content-Type-Options: nosniff");
  CHECK_CONTAINS(r->headers, "X-Frame-Options: DENY");
  CHECK_CONTAINS(r->headers, "Referrer-Policy: no-referrer");
}

static void test_every_response_has_security_headers(void) {
  session s;
  CHECK(start(&s, NULL) == 0);
  check_security_headers(GET("/settings", NULL));
  check_security_headers(GET(s.path, s.token));
  check_security_headers(GET(s.path, NULL)); /* 403 */
  check_security_headers(POST("/sessions", NULL, "{")); /* 400 */
  check_security_headers(http("GET", "/settings", NULL, NULL, "Host: evil.example", NULL, 0));
  check_security_headers(http("GET", path_of(&s, "/events"), s.token, NULL, NULL, "session_started", 5000));
  /* The helper for a host's own responses. */
  struct MHD_Response *mr = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
  CHECK_EQ_INT(dexa_http_security_headers(mr, "default-src 'self'"), DEXA_OK);
  CHECK_STR(MHD_get_response_header(mr, "Content-Security-Policy"), "default-src 'self'");
  CHECK_STR(MHD_get_response_header(mr, "X-Content-Type-Options"), "nosniff");
  CHECK_EQ_INT(dexa_http_security_headers(mr, "a\r\nX-Evil: 1"), DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(dexa_http_security_headers(NULL, NULL), DEXA_E_INVALID_ARG);
  MHD_destroy_response(mr);
}

static void test_execute_without_a_plan_is_409(void) {
  session s;
  CHECK(start(&s, NULL) == 0);
  resp *r = POST(path_of(&s, "/plan/execute"), s.token, "{\"revision\":1}");
  CHECK_EQ_INT(r->status, 409);
  CHECK_CONTAINS(r->body, "no plan");
  session m;
  snprintf(m.id, sizeof m.id, "ai-agent-00000000-0000-4000-8000-00000000dead");
  token_for(m.id, m.token);
  snprintf(m.path, sizeof m.path, "/sessions/%s", m.id);
  CHECK_EQ_INT(POST(path_of(&m, "/plan/execute"), m.token, "{\"revision\":1}")->status, 404);
}

/* A token past the stream's head (a store restored from a backup) is a
 * 400, not a stream that waits for events that never come. */
static void test_resume_token_beyond_the_head_is_400(void) {
  session s;
  CHECK(start(&s, NULL) == 0);
  idle(&s);
  cJSON *snap = snapshot(&s);
  char tok[128], ahead[160], q[512];
  snprintf(tok, sizeof tok, "%s", cJSON_GetStringValue(cJSON_GetObjectItem(snap, "resume_token")));
  cJSON_Delete(snap);
  char *dot = strchr(tok, '.');
  CHECK(dot != NULL);
  long seq = strtol(dot + 1, NULL, 10);
  snprintf(ahead, sizeof ahead, "%.*s.%ld.0", (int)(dot - tok), tok, seq + 50);
  snprintf(q, sizeof q, "%s?resume_token=%s", path_of(&s, "/events"), ahead);
  resp *r = http("GET", q, s.token, NULL, NULL, NULL, 3000);
  CHECK_EQ_INT(r->status, 400);
  CHECK_CONTAINS(r->body, "reload the snapshot");
}

static void test_daemon_options_and_limits(void) {
  dexa_http_agent_routes_options o;
  CHECK_EQ_INT(dexa_http_agent_routes_options_init(&o, sizeof o), DEXA_OK);
  CHECK_EQ_INT(o.idle_timeout_s, 30);
  CHECK_EQ_INT(o.max_connections, 512);
  CHECK_EQ_INT(o.max_connections_per_client, 64);
  CHECK_EQ_INT(o.request_timeout_ms, 30000);
  const char *m[] = {"mock/dex"};
  o.models = m;
  o.model_count = 1;
  o.idle_timeout_s = 10;
  o.max_connections_per_client = 5;
  dexa_http_agent_routes *r = NULL;
  char err[128] = "";
  CHECK_EQ_INT(dexa_http_agent_routes_new(&r, g_rt, &o, err, sizeof err), DEXA_E_INVALID_ARG);
  CHECK_CONTAINS(err, "heartbeat_ms");
  o.heartbeat_ms = 5000;
  CHECK_EQ_INT(dexa_http_agent_routes_new(&r, g_rt, &o, err, sizeof err), DEXA_OK);
  struct MHD_OptionItem items[DEXA_HTTP_DAEMON_OPTIONS_MAX];
  CHECK_EQ_INT(dexa_http_agent_routes_daemon_options(r, items, 2), DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(dexa_http_agent_routes_daemon_options(r, items, DEXA_HTTP_DAEMON_OPTIONS_MAX), DEXA_OK);
  int seen = 0;
  for (int i = 0; i < DEXA_HTTP_DAEMON_OPTIONS_MAX && items[i].option != MHD_OPTION_END; i++) {
    long v = (long)items[i].value;
    if (items[i].option == MHD_OPTION_CONNECTION_TIMEOUT) seen |= v == 10 ? 1 : 0;
    if (items[i].option == MHD_OPTION_PER_IP_CONNECTION_LIMIT) seen |= v == 5 ? 2 : 0;
    if (items[i].option == MHD_OPTION_CONNECTION_LIMIT) seen |= v == 512 ? 4 : 0;
  }
  CHECK_EQ_INT(seen, 7);
  dexa_http_agent_routes_free(r);
  o.max_connections = -1;
  CHECK_EQ_INT(dexa_http_agent_routes_new(&r, g_rt, &o, err, sizeof err), DEXA_E_INVALID_ARG);
  /* A 1.0-sized struct still works, with the 1.1 defaults. */
  dexa_http_agent_routes_options old;
  size_t v10 = offsetof(dexa_http_agent_routes_options, heartbeat_ms) + sizeof(int64_t);
  CHECK_EQ_INT(dexa_http_agent_routes_options_init(&old, v10), DEXA_OK);
  old.models = m;
  old.model_count = 1;
  CHECK_EQ_INT(dexa_http_agent_routes_new(&r, g_rt, &old, err, sizeof err), DEXA_OK);
  CHECK_EQ_INT(dexa_http_agent_routes_daemon_options(r, items, DEXA_HTTP_DAEMON_OPTIONS_MAX), DEXA_OK);
  CHECK_EQ_INT(items[0].value, 30);
  dexa_http_agent_routes_free(r);
}

static void *shutdown_later(void *arg) {
  (void)arg;
  struct timespec ts = {0, 300 * 1000 * 1000};
  nanosleep(&ts, NULL);
  dexa_http_agent_routes_shutdown(g_routes);
  return NULL;
}

static void test_shutdown_ends_open_streams(void) {
  session s;
  CHECK(start(&s, NULL) == 0);
  pthread_t t;
  pthread_create(&t, NULL, shutdown_later, NULL);
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  resp *r = http("GET", path_of(&s, "/events"), s.token, NULL, NULL, NULL, 8000);
  clock_gettime(CLOCK_MONOTONIC, &b);
  pthread_join(t, NULL);
  long ms = (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
  CHECK_EQ_INT(r->status, 200);
  CHECK(ms < 3000);
  CHECK_EQ_INT(GET(path_of(&s, "/events"), s.token)->status, 503);
}

int main(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  if (setup() != 0) {
    printf("FAIL setup\n0 passed, 1 failed\n");
    return 1;
  }
  RUN(test_token_sign_rfc4231_vector);
  RUN(test_token_verify_refuses_every_other_token);
  RUN(test_sse_frame_splits_lines);
  RUN(test_sse_frames_of_an_events_document);
  RUN(test_routes_options_are_checked);
  RUN(test_settings);
  RUN(test_start_session);
  RUN(test_start_session_bad_requests);
  RUN(test_every_session_route_checks_the_token);
  RUN(test_missing_session_is_404);
  RUN(test_unknown_routes_and_methods);
  RUN(test_send_message_and_bad_bodies_change_nothing);
  RUN(test_send_message_with_attachments);
  RUN(test_start_session_with_settings);
  RUN(test_approve_and_reject_with_conflicts);
  RUN(test_answer_question);
  RUN(test_queue_steer_delete_and_stop);
  RUN(test_chat_stop_aborts_with_a_timer_part);
  RUN(test_chat_plan_is_a_data_part);
  RUN(test_chat_queued_message_streams_when_its_turn_starts);
  RUN(test_chat_deleted_queued_message_aborts);
  RUN(test_end_route);
  RUN(test_execute_plan_refuses_a_stale_revision);
  RUN(test_older_messages);
  RUN(test_no_cors_headers);
  RUN(test_event_stream_ids_resume_and_bad_tokens);
  RUN(test_event_stream_heartbeat_and_live_events);
  RUN(test_bodies_that_are_not_exactly_one_json_value_are_400);
  RUN(test_post_routes_accept_only_application_json);
  RUN(test_host_header_must_name_this_server);
  RUN(test_every_response_has_security_headers);
  RUN(test_execute_without_a_plan_is_409);
  RUN(test_resume_token_beyond_the_head_is_400);
  RUN(test_daemon_options_and_limits);
  RUN(test_shutdown_ends_open_streams);
  teardown();
  curl_global_cleanup();
  TEST_MAIN_END();
}
