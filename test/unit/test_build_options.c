/* The build options (make WITH_HTTP=0, WITH_CURL=0, WITH_SQLITE=0,
 * WITH_POSTGRES=0, MINIMAL=1): dexa_build_info and dexa_build_has describe
 * this build, and each function of a part left out exists and returns
 * DEXA_E_UNSUPPORTED with a message naming its option. Runs in every
 * variant (make check and make check-minimal); a part the build has is
 * checked to work instead. */
#include <cjson/cJSON.h>
#include <string.h>

#include "dexagents/dexagents.h"
#include "testing.h"

static void test_build_info_lists_the_features_that_build_has_reports(void) {
  const char *info = dexa_build_info();
  CHECK(info != NULL);
  cJSON *doc = cJSON_Parse(info);
  CHECK(doc != NULL);
  CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "version")), dexa_version());
  const cJSON *list = cJSON_GetObjectItemCaseSensitive(doc, "features");
  CHECK(cJSON_IsArray(list));
  const cJSON *it;
  cJSON_ArrayForEach(it, list) CHECK_EQ_INT(dexa_build_has(it->valuestring), 1);
  const char *always[] = {"core", "flow", "runtime", "demo-models", "function-tools", "mcp-stdio",
                          "claude-code"};
  for (size_t i = 0; i < sizeof always / sizeof *always; i++) CHECK_EQ_INT(dexa_build_has(always[i]), 1);
  CHECK_EQ_INT(dexa_build_has(NULL), 0);
  CHECK_EQ_INT(dexa_build_has(""), 0);
  CHECK_EQ_INT(dexa_build_has("cor"), 0);
  CHECK_EQ_INT(dexa_build_has("core flow"), 0);
  CHECK_EQ_INT(dexa_build_has("http2"), 0);
  /* options and features agree */
  const cJSON *opts = cJSON_GetObjectItemCaseSensitive(doc, "options");
  CHECK_EQ_INT(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(opts, "WITH_HTTP")), dexa_build_has("http"));
  CHECK_EQ_INT(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(opts, "WITH_CURL")), dexa_build_has("providers"));
  CHECK_EQ_INT(dexa_build_has("providers"), dexa_build_has("mcp-http"));
  CHECK_EQ_INT(dexa_build_has("providers"), dexa_build_has("connectors"));
  CHECK_EQ_INT(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(opts, "WITH_SQLITE")), dexa_build_has("sqlite"));
  CHECK_EQ_INT(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(opts, "WITH_POSTGRES")),
               dexa_build_has("postgresql"));
  cJSON_Delete(doc);
}

static void test_provider_models_without_curl_are_unsupported_and_mock_models_work(void) {
  char err[256] = "";
  dexa_model *m = NULL;
  CHECK_EQ_INT(dexa_model_client_new(&m, "mock/dex", NULL, 0, err, sizeof err), DEXA_OK);
  dexa_model_free(m);
  m = NULL;
  CHECK_EQ_INT(dexa_model_client_new(&m, "nosuch/x", NULL, 0, err, sizeof err), DEXA_E_INVALID_ARG);
  int rc = dexa_model_client_new(&m, "openai/gpt-5-mini", NULL, 0, err, sizeof err);
  if (dexa_build_has("providers")) {
    CHECK_EQ_INT(rc, DEXA_OK);
  } else {
    CHECK_EQ_INT(rc, DEXA_E_UNSUPPORTED);
    CHECK_CONTAINS(err, "built without WITH_CURL=1");
    CHECK(m == NULL);
  }
  dexa_model_free(m);
}

static void test_http_helpers_without_http_are_unsupported(void) {
  char tok[DEXA_HTTP_TOKEN_SIZE], err[256] = "";
  int rc = dexa_http_token_sign("k", 1, "s", tok, sizeof tok);
  CHECK_EQ_INT(rc, dexa_build_has("http") ? DEXA_OK : DEXA_E_UNSUPPORTED);
  char *frame = NULL;
  size_t n = 0;
  rc = dexa_http_sse_frame("1", "e", "d", 1, &frame, &n);
  CHECK_EQ_INT(rc, dexa_build_has("http") ? DEXA_OK : DEXA_E_UNSUPPORTED);
  dexa_free(frame);
  dexa_http_agent_routes_options o;
  rc = dexa_http_agent_routes_options_init(&o, sizeof o);
  if (dexa_build_has("http")) {
    CHECK_EQ_INT(rc, DEXA_OK);
    return;
  }
  CHECK_EQ_INT(rc, DEXA_E_UNSUPPORTED);
  CHECK_EQ_INT(dexa_http_token_verify("k", 1, "s", "00"), DEXA_E_UNSUPPORTED);
  dexa_http_agent_routes *r = (dexa_http_agent_routes *)&o;
  CHECK_EQ_INT(dexa_http_agent_routes_new(&r, NULL, NULL, err, sizeof err), DEXA_E_UNSUPPORTED);
  CHECK(r == NULL);
  CHECK_CONTAINS(err, "built without WITH_HTTP=1");
  CHECK_EQ_INT(dexa_http_agent_routes_match(NULL, "/"), 0);
  CHECK_EQ_INT(dexa_http_security_headers(NULL, NULL), DEXA_E_UNSUPPORTED);
  CHECK_EQ_INT(dexa_http_agent_routes_check_host(NULL, NULL), DEXA_E_UNSUPPORTED);
  CHECK_EQ_INT(dexa_http_agent_routes_daemon_options(NULL, NULL, 0), DEXA_E_UNSUPPORTED);
  dexa_http_agent_routes_free(NULL);
  dexa_http_agent_routes_shutdown(NULL);
}

static void test_mcp_over_http_and_connectors_without_curl_are_unsupported(void) {
  if (dexa_build_has("mcp-http")) SKIP("this build has WITH_CURL=1 (test_mcp_fake covers it)");
  char err[256] = "";
  const char *json = "{\"mcpServers\":{\"remote\":{\"url\":\"http://127.0.0.1:9/mcp\"}}}";
  dexa_mcp_config *cfg = NULL;
  CHECK_EQ_INT(dexa_mcp_config_load(&cfg, NULL, json, strlen(json), err, sizeof err), DEXA_OK);
  char *out = NULL;
  size_t n = 0;
  CHECK_EQ_INT(dexa_mcp_authorization_complete(cfg, "http://127.0.0.1/cb?code=x&state=y", &out, &n,
                                               err, sizeof err),
               DEXA_E_UNSUPPORTED);
  CHECK_CONTAINS(err, "built without WITH_CURL=1");
  CHECK(out == NULL);
  dexa_mcp_config_free(cfg);

  const char *conn = "{\"connections\":{\"team\":{\"type\":\"slack\",\"token\":\"xoxb-1\"}}}";
  dexa_connector_config *cc = NULL;
  CHECK_EQ_INT(dexa_connector_config_load(&cc, NULL, conn, strlen(conn), err, sizeof err), DEXA_OK);
  dexa_tool_source *src = NULL;
  CHECK_EQ_INT(dexa_connector_tool_source_new(&src, cc, "team", err, sizeof err), DEXA_E_UNSUPPORTED);
  CHECK_CONTAINS(err, "built without WITH_CURL=1");
  CHECK(src == NULL);
  dexa_connector_config_free(cc);
}

static void test_stores_left_out_are_unsupported(void) {
  char err[256] = "";
  char *out = NULL;
  size_t n = 0;
  if (!dexa_build_has("sqlite")) {
    CHECK_EQ_INT(dexa_store_check("test-build-options.db", &out, &n, err, sizeof err), DEXA_E_UNSUPPORTED);
    CHECK_CONTAINS(err, "built without WITH_SQLITE=1");
    dexa_model *m = NULL;
    CHECK_EQ_INT(dexa_model_demo_new(&m, "mock/dex"), DEXA_OK);
    dexa_agent_def def;
    dexa_agent_def_init(&def, sizeof def);
    def.models = &m;
    def.model_count = 1;
    dexa_agent *agent = NULL;
    CHECK_EQ_INT(dexa_agent_new(&agent, &def, err, sizeof err), DEXA_OK);
    dexa_runtime_options o;
    dexa_runtime_options_init(&o, sizeof o);
    o.store = ":memory:";
    dexa_runtime *rt = NULL;
    CHECK_EQ_INT(dexa_runtime_new(&rt, agent, &o, err, sizeof err), DEXA_E_UNSUPPORTED);
    CHECK_CONTAINS(err, "built without WITH_SQLITE=1");
    CHECK(rt == NULL);
    dexa_agent_free(agent);
    dexa_model_free(m);
  }
  if (!dexa_build_has("postgresql")) {
    CHECK_EQ_INT(dexa_store_check("postgresql://127.0.0.1:9/x", &out, &n, err, sizeof err),
                 DEXA_E_UNSUPPORTED);
    CHECK_CONTAINS(err, "built without WITH_POSTGRES=1");
    CHECK_EQ_INT(dexa_store_check("host=127.0.0.1 port=9 dbname=x", &out, &n, err, sizeof err),
                 DEXA_E_UNSUPPORTED);
    CHECK_CONTAINS(err, "built without WITH_POSTGRES=1");
  }
  dexa_free(out);
  if (dexa_build_has("sqlite") && dexa_build_has("postgresql")) SKIP("this build has both stores");
}

int main(void) {
  RUN(test_build_info_lists_the_features_that_build_has_reports);
  RUN(test_provider_models_without_curl_are_unsupported_and_mock_models_work);
  RUN(test_http_helpers_without_http_are_unsupported);
  RUN(test_mcp_over_http_and_connectors_without_curl_are_unsupported);
  RUN(test_stores_left_out_are_unsupported);
  TEST_MAIN_END();
}
