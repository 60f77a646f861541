/* The Slack connector against a local server speaking the Slack Web API's
 * request and response shapes (chat.postMessage: a Bearer token, JSON in,
 * {"ok":..} out, ok:false errors, 429 with Retry-After), on a free port of
 * 127.0.0.1: the configuration file's checks, the tool's calls and every
 * kind of answer, and a whole session where the post waits for approval,
 * runs once in CallSingleAttemptTool, and the token reaches no session
 * state.
 * test-needs: connectors http sqlite postgresql */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <pthread.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dexagents/connectors.h"
#include "dexagents/dexagents.h"
#include "iface/tool_source.h"
#include "support/temp_store.h"
#include "testing.h"

#define TOKEN "xoxb-test-SECRET-4711"

/* ---- the fake Slack ---------------------------------------------------------------- */

typedef struct fake_slack {
  struct MHD_Daemon *d;
  unsigned port;
  pthread_mutex_t mu;
  int requests;        /* chat.postMessage requests */
  char last_auth[256]; /* the Authorization header of the last one */
  char last_body[4096];
  int rate_limited;    /* 429s sent to channel CRATE so far */
} fake_slack;

typedef struct upload {
  char body[8192];
  size_t len;
} upload;

static enum MHD_Result respond(struct MHD_Connection *c, unsigned status, const char *json,
                               const char *retry_after) {
  struct MHD_Response *r =
      MHD_create_response_from_buffer(strlen(json), (void *)json, MHD_RESPMEM_MUST_COPY);
  MHD_add_response_header(r, "Content-Type", "application/json; charset=utf-8");
  if (retry_after) MHD_add_response_header(r, "Retry-After", retry_after);
  enum MHD_Result ok = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ok;
}

/* Answers as Slack would, by channel: CRATE is rate limited once (Retry-After
 * 1), CSLOW always (Retry-After 120), CGONE does not exist, C500 fails,
 * CHANG answers after 5 s; every other channel gets its post. */
static enum MHD_Result answer(fake_slack *f, struct MHD_Connection *c, const char *auth,
                              const char *body) {
  cJSON *in = cJSON_Parse(body);
  const char *ch = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(in, "channel"));
  const char *ts = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(in, "thread_ts"));
  char out[1024];
  enum MHD_Result r;
  pthread_mutex_lock(&f->mu);
  f->requests++;
  snprintf(f->last_auth, sizeof f->last_auth, "%s", auth ? auth : "");
  snprintf(f->last_body, sizeof f->last_body, "%s", body);
  int first_rate = ch && strcmp(ch, "CRATE") == 0 && f->rate_limited++ == 0;
  pthread_mutex_unlock(&f->mu);
  if (!auth || strcmp(auth, "Bearer " TOKEN) != 0) {
    r = respond(c, 200, "{\"ok\":false,\"error\":\"invalid_auth\"}", NULL);
  } else if (!ch || !ts) {
    r = respond(c, 200, "{\"ok\":false,\"error\":\"invalid_arguments\"}", NULL);
  } else if (first_rate) {
    r = respond(c, 429, "{\"ok\":false,\"error\":\"ratelimited\"}", "1");
  } else if (strcmp(ch, "CSLOW") == 0) {
    r = respond(c, 429, "{\"ok\":false,\"error\":\"ratelimited\"}", "120");
  } else if (strcmp(ch, "CGONE") == 0) {
    r = respond(c, 200, "{\"ok\":false,\"error\":\"channel_not_found\"}", NULL);
  } else if (strcmp(ch, "C500") == 0) {
    r = respond(c, 500, "<html>oops</html>", NULL);
  } else {
    if (strcmp(ch, "CHANG") == 0) sleep(5);
    snprintf(out, sizeof out,
             "{\"ok\":true,\"channel\":\"%s\",\"ts\":\"1710000000.000200\",\"message\":{"
             "\"type\":\"message\",\"text\":\"posted\",\"thread_ts\":\"%s\"}}",
             ch, ts);
    r = respond(c, 200, out, NULL);
  }
  cJSON_Delete(in);
  return r;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *size, void **state) {
  (void)version;
  fake_slack *f = cls;
  upload *u = *state;
  if (!u) {
    *state = u = calloc(1, sizeof *u);
    return u ? MHD_YES : MHD_NO;
  }
  if (*size) {
    size_t n = *size < sizeof u->body - 1 - u->len ? *size : sizeof u->body - 1 - u->len;
    memcpy(u->body + u->len, data, n);
    u->len += n;
    *size = 0;
    return MHD_YES;
  }
  if (strcmp(method, "POST") != 0 || strcmp(url, "/api/chat.postMessage") != 0)
    return respond(c, 404, "{\"ok\":false,\"error\":\"unknown_method\"}", NULL);
  const char *type = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
  if (!type || strncmp(type, "application/json", 16) != 0)
    return respond(c, 200, "{\"ok\":false,\"error\":\"invalid_form_data\"}", NULL);
  return answer(f, c, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization"), u->body);
}

static void on_done(void *cls, struct MHD_Connection *c, void **state,
                    enum MHD_RequestTerminationCode t) {
  (void)cls;
  (void)c;
  (void)t;
  free(*state);
  *state = NULL;
}

static int fake_start(fake_slack *f) {
  memset(f, 0, sizeof *f);
  pthread_mutex_init(&f->mu, NULL);
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = 0; /* a free port */
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  f->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL,
                          NULL, on_request, f, MHD_OPTION_SOCK_ADDR, &sa,
                          MHD_OPTION_NOTIFY_COMPLETED, on_done, f, MHD_OPTION_END);
  if (!f->d) return -1;
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(f->d, MHD_DAEMON_INFO_BIND_PORT);
  f->port = info ? info->port : 0;
  return f->port ? 0 : -1;
}

static void fake_stop(fake_slack *f) {
  if (f->d) MHD_stop_daemon(f->d);
  f->d = NULL;
}

static int requests(fake_slack *f) {
  pthread_mutex_lock(&f->mu);
  int n = f->requests;
  pthread_mutex_unlock(&f->mu);
  return n;
}

/* ---- configuration -------------------------------------------------------------------- */

static dexa_connector_config *config_for(const fake_slack *f, const char *token, int timeout_ms) {
  char json[1024], err[256] = "";
  snprintf(json, sizeof json,
           "{\"connections\":{\"support-slack\":{\"type\":\"slack\",\"token\":\"%s\","
           "\"baseUrl\":\"http://127.0.0.1:%u/api/\",\"timeoutMs\":%d,\"rateLimitWaitMs\":5000}}}",
           token, f->port, timeout_ms);
  dexa_connector_config *cfg = NULL;
  if (dexa_connector_config_load(&cfg, NULL, json, strlen(json), err, sizeof err) != DEXA_OK)
    fprintf(stderr, "    config: %s\n", err);
  return cfg;
}

static int load_err(const char *json, char *err, size_t n) {
  dexa_connector_config *cfg = (dexa_connector_config *)1;
  int rc = dexa_connector_config_load(&cfg, NULL, json, strlen(json), err, n);
  if (rc == DEXA_OK) dexa_connector_config_free(cfg);
  else if (cfg) return -9999; /* *out must be NULL on error */
  return rc;
}

static void test_config_is_checked_and_never_shows_the_token(void) {
  char err[256];
  CHECK_EQ_INT(load_err("{\"connections\":{\"support-slack\":{\"type\":\"slack\",\"token\":\"" TOKEN
                        "\",\"chanel\":1}}}", err, sizeof err),
               DEXA_E_UNKNOWN_KEY);
  CHECK_CONTAINS(err, "connections.support-slack.chanel: unknown key");
  CHECK_EQ_INT(load_err("{\"connections\":{\"support-slack\":{\"type\":\"slack\"}}}", err, sizeof err),
               DEXA_E_INVALID_ARG);
  CHECK_CONTAINS(err, "needs token or tokenEnv");
  CHECK_EQ_INT(load_err("{\"connections\":{\"support-slack\":{\"token\":\"" TOKEN "\"}}}", err,
                        sizeof err),
               DEXA_E_INVALID_ARG);
  CHECK_CONTAINS(err, "needs type");
  CHECK(strstr(err, "SECRET") == NULL);
  CHECK_EQ_INT(load_err("{\"connections\":{\"s\":{\"type\":\"slack\",\"token\":\"xoxb SECRET\"}}}",
                        err, sizeof err),
               DEXA_E_INVALID_ARG);
  CHECK(strstr(err, "SECRET") == NULL);
  CHECK_EQ_INT(load_err("{\"connections\":{\"s\":{\"type\":\"teams\",\"token\":\"t\"}}}", err, sizeof err),
               DEXA_E_INVALID_ARG);
  CHECK_CONTAINS(err, "unknown connector");
  CHECK_EQ_INT(load_err("{\"connections\":{\"s\":{\"type\":\"slack\",\"token\":\"t\","
                        "\"baseUrl\":\"ftp://x\"}}}", err, sizeof err),
               DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(load_err("{\"connections\":{\"s\":{\"type\":\"slack\",\"tokenEnv\":"
                        "\"DEXA_TEST_NO_SUCH_VARIABLE\"}}}", err, sizeof err),
               DEXA_E_INVALID_ARG);
  CHECK_CONTAINS(err, "DEXA_TEST_NO_SUCH_VARIABLE is not set");
  CHECK_EQ_INT(load_err("{\"connections\":{\"s\":{\"type\":\"slack\",\"token\":\"t\","
                        "\"tokenEnv\":\"X\"}}}", err, sizeof err),
               DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(load_err("{\"conections\":{}}", err, sizeof err), DEXA_E_UNKNOWN_KEY);
  CHECK_EQ_INT(load_err("{\"connections\":", err, sizeof err), DEXA_E_INVALID_JSON);
  /* no file: DEXA_E_NOT_FOUND, which a worker takes as "no connector tools" */
  dexa_connector_config *cfg = NULL;
  CHECK_EQ_INT(dexa_connector_config_load(&cfg, "/nonexistent/dexa-connectors.json", NULL, 0, err,
                                          sizeof err),
               DEXA_E_NOT_FOUND);
  /* tokenEnv: read at load; the redacted form names the variable only */
  setenv("DEXA_TEST_SLACK_TOKEN", TOKEN, 1);
  const char *ok = "{\"connections\":{\"support-slack\":{\"type\":\"slack\",\"tokenEnv\":"
                   "\"DEXA_TEST_SLACK_TOKEN\"},\"other\":{\"type\":\"slack\",\"token\":\"" TOKEN "\"}}}";
  CHECK_EQ_INT(dexa_connector_config_load(&cfg, NULL, ok, strlen(ok), err, sizeof err), DEXA_OK);
  char *shown = NULL;
  CHECK_EQ_INT(dexa_connector_config_redacted_json(cfg, &shown, NULL), DEXA_OK);
  CHECK_CONTAINS(shown, "\"tokenEnv\":\"DEXA_TEST_SLACK_TOKEN\"");
  CHECK_CONTAINS(shown, "\"token\":\"<redacted>\"");
  CHECK_CONTAINS(shown, "\"baseUrl\":\"https://slack.com/api\"");
  CHECK(strstr(shown, "SECRET") == NULL);
  dexa_free(shown);
  dexa_tool_source *src = NULL;
  CHECK_EQ_INT(dexa_connector_tool_source_new(&src, cfg, "nope", err, sizeof err), DEXA_E_NOT_FOUND);
  CHECK_CONTAINS(err, "no connection \"nope\"");
  CHECK_EQ_INT(dexa_connector_tool_source_new(&src, cfg, "support-slack", err, sizeof err), DEXA_OK);
  CHECK_STR(dexa_tool_source_name(src), "support-slack");
  char *list = NULL;
  CHECK_EQ_INT(dexa_tool_source_list_json(&list, NULL, src), DEXA_OK);
  CHECK_CONTAINS(list, "\"name\":\"slack_post_thread_reply\"");
  CHECK_CONTAINS(list, "\"effect\":\"write\",\"approval\":true");
  CHECK_CONTAINS(list, "\"required\":[\"channelId\",\"threadTimestamp\",\"text\"]");
  dexa_free(list);
  dexa_tool_source_free(src);
  dexa_connector_config_free(cfg);
}

/* ---- calls ------------------------------------------------------------------------------- */

/* Calls the tool directly, as CallSingleAttemptTool does. */
static char *call(dexa_tool_source *src, const char *args, int *is_error, char **content) {
  dexa_tool_invocation inv = {.name = "slack_post_thread_reply", .call_id = "c1",
                              .session_id = "s-test", .idempotency_key = "s-test:c1",
                              .arguments = args, .arguments_len = strlen(args), .attempt = 1};
  dexa_tool_output out;
  dexa__tool_output_init(&out);
  int rc = src->vt.call_tool(src->user_data, &inv, &out);
  char *text = rc == DEXA_OK && out.text.data ? strdup(out.text.data) : NULL;
  *is_error = out.is_error;
  if (content) *content = out.content.len ? strdup(out.content.data) : NULL;
  dexa__tool_output_free(&out);
  return text;
}

static void test_calls_post_and_report_every_kind_of_answer(void) {
  fake_slack f;
  CHECK(fake_start(&f) == 0);
  dexa_connector_config *cfg = config_for(&f, TOKEN, 60000);
  dexa_tool_source *src = NULL;
  char err[256];
  CHECK(cfg);
  CHECK_EQ_INT(dexa_connector_tool_source_new(&src, cfg, "support-slack", err, sizeof err), DEXA_OK);
  int is_error;
  char *content = NULL;
  /* a post: Bearer token, JSON body with thread_ts and the idempotency key */
  char *t = call(src, "{\"channelId\":\"C0123456789\",\"threadTimestamp\":\"1710000000.000100\","
                      "\"text\":\"Hello from Dex\"}", &is_error, &content);
  CHECK_CONTAINS(t, "Posted the reply in thread 1710000000.000100 of C0123456789 (message ts 1710000000.000200)");
  CHECK_EQ_INT(is_error, 0);
  CHECK_CONTAINS(content, "\"ok\":true");
  CHECK_EQ_INT(requests(&f), 1);
  CHECK_STR(f.last_auth, "Bearer " TOKEN);
  cJSON *body = cJSON_Parse(f.last_body);
  CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(body, "channel")), "C0123456789");
  CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(body, "thread_ts")), "1710000000.000100");
  CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(body, "text")), "Hello from Dex");
  CHECK_CONTAINS(f.last_body, "\"idempotency_key\":\"s-test:c1\"");
  cJSON_Delete(body);
  free(t);
  free(content);
  /* rate limited once: waits Retry-After (1 s) and posts, once */
  t = call(src, "{\"channelId\":\"CRATE\",\"threadTimestamp\":\"1.2\",\"text\":\"x\"}", &is_error, NULL);
  CHECK_CONTAINS(t, "Posted the reply");
  CHECK_EQ_INT(requests(&f), 3);
  free(t);
  /* rate limited for longer than rateLimitWaitMs: not posted, not waited for */
  t = call(src, "{\"channelId\":\"CSLOW\",\"threadTimestamp\":\"1.2\",\"text\":\"x\"}", &is_error, NULL);
  CHECK_CONTAINS(t, "Slack is rate limiting this app (retry after 120 s); the reply was not posted.");
  CHECK_EQ_INT(is_error, 1);
  CHECK_EQ_INT(requests(&f), 4);
  free(t);
  /* ok:false */
  t = call(src, "{\"channelId\":\"CGONE\",\"threadTimestamp\":\"1.2\",\"text\":\"x\"}", &is_error, &content);
  CHECK_CONTAINS(t, "Slack refused the post (channel_not_found, HTTP 200); the reply was not posted.");
  CHECK_EQ_INT(is_error, 1);
  CHECK_CONTAINS(content, "channel_not_found");
  free(t);
  free(content);
  /* a server error, and no answer in time: the outcome is unknown */
  t = call(src, "{\"channelId\":\"C500\",\"threadTimestamp\":\"1.2\",\"text\":\"x\"}", &is_error, NULL);
  CHECK_CONTAINS(t, "Slack answered HTTP 500 without a result; the reply may or may not have been posted");
  free(t);
  /* no answer within timeoutMs (the server takes 5 s, the call waits 1) */
  dexa_connector_config *quick = config_for(&f, TOKEN, 1000);
  dexa_tool_source *impatient = NULL;
  CHECK_EQ_INT(dexa_connector_tool_source_new(&impatient, quick, "support-slack", err, sizeof err), DEXA_OK);
  dexa_connector_config_free(quick);
  t = call(impatient, "{\"channelId\":\"CHANG\",\"threadTimestamp\":\"1.2\",\"text\":\"x\"}", &is_error, NULL);
  dexa_tool_source_free(impatient);
  CHECK_CONTAINS(t, "Slack did not answer");
  CHECK_CONTAINS(t, "may or may not have been posted");
  CHECK_EQ_INT(is_error, 1);
  free(t);
  int before = requests(&f);
  /* bad arguments: nothing is sent */
  t = call(src, "{\"channelId\":\"C1\",\"text\":\"x\"}", &is_error, NULL);
  CHECK_CONTAINS(t, "needs channelId");
  CHECK_EQ_INT(is_error, 1);
  free(t);
  t = call(src, "{\"channelId\":\"C1\\r\\nX-Evil: 1\",\"threadTimestamp\":\"1.2\",\"text\":\"x\"}", &is_error, NULL);
  CHECK_CONTAINS(t, "needs channelId");
  free(t);
  CHECK_EQ_INT(requests(&f), before);
  dexa_tool_source_free(src);
  dexa_connector_config_free(cfg);
  /* a refused token, and a Slack that is not there */
  cfg = config_for(&f, "xoxb-wrong", 60000);
  CHECK_EQ_INT(dexa_connector_tool_source_new(&src, cfg, "support-slack", err, sizeof err), DEXA_OK);
  t = call(src, "{\"channelId\":\"C1\",\"threadTimestamp\":\"1.2\",\"text\":\"x\"}", &is_error, NULL);
  CHECK_CONTAINS(t, "Slack refused the post (invalid_auth");
  CHECK(strstr(t, "xoxb-wrong") == NULL);
  free(t);
  dexa_tool_source_free(src);
  dexa_connector_config_free(cfg);
  /* a port bound but not listening: connections are refused, and no other
   * program can take the port meanwhile */
  fake_stop(&f);
  int closed = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa;
  socklen_t sl = sizeof sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  CHECK(closed >= 0 && bind(closed, (struct sockaddr *)&sa, sizeof sa) == 0 &&
        getsockname(closed, (struct sockaddr *)&sa, &sl) == 0);
  f.port = ntohs(sa.sin_port);
  cfg = config_for(&f, TOKEN, 60000);
  CHECK_EQ_INT(dexa_connector_tool_source_new(&src, cfg, "support-slack", err, sizeof err), DEXA_OK);
  t = call(src, "{\"channelId\":\"C1\",\"threadTimestamp\":\"1.2\",\"text\":\"x\"}", &is_error, NULL);
  CHECK_CONTAINS(t, "Slack could not be reached");
  CHECK_CONTAINS(t, "the reply was not posted");
  CHECK(strstr(t, "SECRET") == NULL);
  free(t);
  close(closed);
  dexa_tool_source_free(src);
  dexa_connector_config_free(cfg);
}

/* ---- a session --------------------------------------------------------------------------- */

static int has_token(const char *s) { return s && strstr(s, "SECRET") != NULL; }

static void test_a_post_waits_for_approval_and_runs_once(void) {
  fake_slack f;
  CHECK(fake_start(&f) == 0);
  dexa_connector_config *cfg = config_for(&f, TOKEN, 60000);
  dexa_tool_source *src = NULL;
  dexa_model *demo = NULL;
  dexa_agent *agent = NULL;
  dexa_runtime *rt = NULL;
  char err[256], path[512];
  CHECK(cfg);
  CHECK_EQ_INT(dexa_connector_tool_source_new(&src, cfg, "support-slack", err, sizeof err), DEXA_OK);
  dexa_connector_config_free(cfg);
  CHECK_EQ_INT(dexa_model_demo_new(&demo, "mock/dex"), DEXA_OK);
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.models = &demo;
  def.model_count = 1;
  def.tool_sources = &src;
  def.tool_source_count = 1;
  CHECK_EQ_INT(dexa_agent_new(&agent, &def, err, sizeof err), DEXA_OK);
  dexa_model_free(demo);
  dexa_tool_source_free(src);
  temp_store_path(path, sizeof path, "slack");
  dexa_runtime_options o;
  dexa_runtime_options_init(&o, sizeof o);
  o.store = path;
  CHECK_EQ_INT(dexa_runtime_new(&rt, agent, &o, err, sizeof err), DEXA_OK);
  CHECK_EQ_INT(dexa_runtime_start_session(rt, "s-slack", NULL, 0, NULL, NULL), DEXA_OK);
  CHECK_EQ_INT(dexa_runtime_run_ready(rt, NULL), DEXA_OK);
  const char *msg = "{\"text\":\"/tool slack_post_thread_reply {\\\"channelId\\\":\\\"C0123456789\\\","
                    "\\\"threadTimestamp\\\":\\\"1710000000.000100\\\",\\\"text\\\":\\\"Hello from Dex\\\"}\"}";
  char *out = NULL;
  size_t n;
  CHECK_EQ_INT(dexa_runtime_call(rt, "s-slack", "send_message", msg, strlen(msg), &out, &n), DEXA_OK);
  dexa_free(out);
  CHECK_EQ_INT(dexa_runtime_run_ready(rt, NULL), DEXA_OK);
  /* it waits for Approve; nothing is posted yet */
  CHECK_EQ_INT(dexa_runtime_call(rt, "s-slack", "snapshot", "{}", 2, &out, &n), DEXA_OK);
  CHECK_CONTAINS(out, "\"kind\":\"approval\"");
  CHECK_CONTAINS(out, "\"name\":\"slack_post_thread_reply\"");
  CHECK_CONTAINS(out, "\"effect\":\"write\"");
  dexa_free(out);
  CHECK_EQ_INT(requests(&f), 0);
  const char *approve = "{\"call_id\":\"demo-t1r1c1\",\"decision\":\"approve\"}";
  CHECK_EQ_INT(dexa_runtime_call(rt, "s-slack", "resolve_approval", approve, strlen(approve), &out, &n),
               DEXA_OK);
  dexa_free(out);
  CHECK_EQ_INT(dexa_runtime_run_ready(rt, NULL), DEXA_OK);
  CHECK_EQ_INT(requests(&f), 1);
  CHECK_CONTAINS(f.last_body, "\"idempotency_key\":\"s-slack:demo-t1r1c1\"");
  /* the result came back to the model; the token is nowhere in the session */
  CHECK_EQ_INT(dexa_runtime_call(rt, "s-slack", "snapshot", "{}", 2, &out, &n), DEXA_OK);
  CHECK_CONTAINS(out, "Tool slack_post_thread_reply (ok): Posted the reply in thread 1710000000.000100");
  CHECK(!has_token(out));
  dexa_free(out);
  CHECK_EQ_INT(dexa_runtime_read_events(rt, "s-slack", "", 1000, 0, &out, &n), DEXA_OK);
  CHECK_CONTAINS(out, "\"type\":\"tool_call_finished\"");
  CHECK(!has_token(out));
  dexa_free(out);
  dexa_runtime_free(rt);
  /* nor in the store's files */
  const char *suffix[] = {"", "-wal"};
  for (int i = 0; i < 2; i++) {
    char p[600];
    snprintf(p, sizeof p, "%s%s", path, suffix[i]);
    FILE *fp = fopen(p, "rb");
    if (!fp) continue;
    char *buf = malloc(1 << 24);
    size_t got = buf ? fread(buf, 1, (1 << 24) - 1, fp) : 0;
    fclose(fp);
    CHECK(buf);
    buf[got] = '\0';
    CHECK(memmem(buf, got, "SECRET-4711", 11) == NULL);
    free(buf);
  }
  dexa_agent_free(agent);
  temp_store_remove(path);
  fake_stop(&f);
}

int main(void) {
  RUN(test_config_is_checked_and_never_shows_the_token);
  RUN(test_calls_post_and_report_every_kind_of_answer);
  RUN(test_a_post_waits_for_approval_and_runs_once);
  TEST_MAIN_END();
}
