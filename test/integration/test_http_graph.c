/* GET sessions/ID/graph of the agent routes, in a real libmicrohttpd daemon
 * on 127.0.0.1 (an ephemeral port), driven with libcurl: the session graph
 * as JSON (with the session's Steps and its wait), DOT and Mermaid wrapped
 * as {"format","text"}; 403 without the session's token, 404 for a missing
 * session, 400 for an unknown format, 405 for another method.
 * test-needs: http providers sqlite */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <dexagents/dexagents.h>
#include <dexagents/graph.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testing.h"

#define KEY "graph-test-key"
#define P "/products/ai-agent"

static dexa_http_agent_routes *g_routes;

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls) {
  (void)cls;
  (void)version;
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

typedef struct resp {
  long status;
  char body[262144];
  size_t len;
} resp;

static size_t on_body(char *p, size_t size, size_t n, void *ud) {
  resp *r = ud;
  size_t len = size * n;
  if (r->len + len >= sizeof r->body) return 0;
  memcpy(r->body + r->len, p, len);
  r->len += len;
  r->body[r->len] = '\0';
  return len;
}

static int request(const char *base, const char *method, const char *path, const char *token,
                   const char *body, resp *r) {
  memset(r, 0, sizeof *r);
  CURL *h = curl_easy_init();
  char url[512], hdr[200];
  snprintf(url, sizeof url, "%s%s", base, path);
  struct curl_slist *headers = NULL;
  if (token) {
    snprintf(hdr, sizeof hdr, "X-Agent-Session-Token: %s", token);
    headers = curl_slist_append(headers, hdr);
  }
  headers = curl_slist_append(headers, "Content-Type: application/json");
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  if (body) curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
  curl_easy_setopt(h, CURLOPT_TIMEOUT, 60L);
  CURLcode cc = curl_easy_perform(h);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(h);
  return cc == CURLE_OK ? 0 : -1;
}

static void test_graph_route(void) {
  dexa_model *demo = NULL;
  dexa_agent *agent = NULL;
  dexa_runtime *rt = NULL;
  struct MHD_Daemon *d = NULL;
  char err[256];
  CHECK_EQ_INT(dexa_model_demo_new(&demo, "mock/dex"), DEXA_OK);
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.models = &demo;
  def.model_count = 1;
  def.builtin_tools = DEXA_BUILTIN_ALL;
  CHECK_EQ_INT(dexa_agent_new(&agent, &def, err, sizeof err), DEXA_OK);
  dexa_model_free(demo);
  dexa_runtime_options o;
  dexa_runtime_options_init(&o, sizeof o);
  o.store = ":memory:";
  CHECK_EQ_INT(dexa_runtime_new(&rt, agent, &o, err, sizeof err), DEXA_OK);
  CHECK_EQ_INT(dexa_runtime_start(rt, 2), DEXA_OK);
  dexa_http_agent_routes_options ro;
  dexa_http_agent_routes_options_init(&ro, sizeof ro);
  const char *models[] = {"mock/dex"};
  ro.models = models;
  ro.model_count = 1;
  ro.session_key = KEY;
  ro.session_key_len = strlen(KEY);
  CHECK_EQ_INT(dexa_http_agent_routes_new(&g_routes, rt, &ro, err, sizeof err), DEXA_OK);
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL,
                       NULL, on_request, NULL, MHD_OPTION_SOCK_ADDR, &sa,
                       MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL, MHD_OPTION_END);
  CHECK(d);
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
  char base[128];
  snprintf(base, sizeof base, "http://127.0.0.1:%u" P, info ? info->port : 0);

  resp r;
  CHECK(request(base, "POST", "/sessions", NULL, "{}", &r) == 0);
  CHECK_EQ_INT(r.status, 200);
  cJSON *s = cJSON_Parse(r.body);
  char sid[128], token[80], path[256];
  snprintf(sid, sizeof sid, "%s", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "session_id")));
  snprintf(token, sizeof token, "%s", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "session_token")));
  cJSON_Delete(s);
  snprintf(path, sizeof path, "/sessions/%s/messages", sid);
  CHECK(request(base, "POST", path, token, "{\"text\":\"/ask Your name?\"}", &r) == 0);
  CHECK_EQ_INT(r.status, 200);
  CHECK_EQ_INT(dexa_runtime_wait_idle(rt, sid, 60000), DEXA_OK);

  /* JSON: the graph document with this session on it */
  snprintf(path, sizeof path, "/sessions/%s/graph", sid);
  CHECK(request(base, "GET", path, token, NULL, &r) == 0);
  CHECK_EQ_INT(r.status, 200);
  cJSON *g = cJSON_Parse(r.body);
  CHECK(g);
  CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(g, "graph")), "dexagents-flow-graph");
  const cJSON *sess = cJSON_GetObjectItemCaseSensitive(g, "session");
  CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(sess, "session_id")), sid);
  CHECK_CONTAINS(r.body, "\"step\":\"AwaitQuestionAnswer\",\"exec_id\"");
  CHECK_CONTAINS(r.body, "\"state\":\"waiting\"");
  cJSON_Delete(g);
  /* the same as the library's own */
  char *lib = NULL;
  CHECK_EQ_INT(dexa_runtime_session_graph(rt, sid, DEXA_GRAPH_DOT, &lib, NULL), DEXA_OK);
  snprintf(path, sizeof path, "/sessions/%s/graph?format=dot", sid);
  CHECK(request(base, "GET", path, token, NULL, &r) == 0);
  CHECK_EQ_INT(r.status, 200);
  g = cJSON_Parse(r.body);
  CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(g, "format")), "dot");
  CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(g, "text")), lib);
  cJSON_Delete(g);
  dexa_free(lib);
  snprintf(path, sizeof path, "/sessions/%s/graph?format=mermaid", sid);
  CHECK(request(base, "GET", path, token, NULL, &r) == 0);
  CHECK_EQ_INT(r.status, 200);
  CHECK_CONTAINS(r.body, "\"text\":\"flowchart TD\\n");
  /* errors */
  snprintf(path, sizeof path, "/sessions/%s/graph?format=svg", sid);
  CHECK(request(base, "GET", path, token, NULL, &r) == 0);
  CHECK_EQ_INT(r.status, 400);
  snprintf(path, sizeof path, "/sessions/%s/graph", sid);
  CHECK(request(base, "GET", path, NULL, NULL, &r) == 0);
  CHECK_EQ_INT(r.status, 403);
  CHECK(request(base, "GET", path, "0000", NULL, &r) == 0);
  CHECK_EQ_INT(r.status, 403);
  CHECK(request(base, "POST", path, token, "{}", &r) == 0);
  CHECK_EQ_INT(r.status, 405);
  char other[80];
  CHECK_EQ_INT(dexa_http_token_sign(KEY, strlen(KEY), "ai-agent-missing", other, sizeof other), DEXA_OK);
  CHECK(request(base, "GET", "/sessions/ai-agent-missing/graph", other, NULL, &r) == 0);
  CHECK_EQ_INT(r.status, 404);
  CHECK_CONTAINS(r.body, "DEXA_E_NOT_FOUND");

  dexa_http_agent_routes_shutdown(g_routes);
  MHD_stop_daemon(d);
  dexa_runtime_stop(rt);
  dexa_http_agent_routes_free(g_routes);
  dexa_runtime_free(rt);
  dexa_agent_free(agent);
}

int main(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  RUN(test_graph_route);
  curl_global_cleanup();
  TEST_MAIN_END();
}
