/* The OTLP export, received on 127.0.0.1 and decoded with the official
 * opentelemetry-proto definitions (test/otel/_receiver.cjs: protobufjs and
 * @opentelemetry/otlp-transformer's compiled protos, pinned in
 * test/otel/package-lock.json): a session runs a turn with a host tool and
 * a plain turn on the demo model through two worker threads, with the
 * OTEL_* variables set, once with http/protobuf and once with http/json
 * (whose collector first answers 503: the batch is retried). Checked: one
 * trace per turn, a span per Step under the turn's span, the GenAI
 * attributes of the model spans, the tool span, the resource, the headers,
 * and that the span callbacks saw what was exported. The receiver ends
 * when this program does, however it ends (its standard input closes).
 * test-needs: providers sqlite */
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dexagents/dexagents.h"
#include "support/temp_store.h"
#include "testing.h"

static pid_t receiver_pid = -1;
static int receiver_in = -1;
static char node_modules[1024];

static void receiver_stop(void) {
  if (receiver_pid <= 0) return;
  if (receiver_in >= 0) close(receiver_in); /* it exits on end of input */
  receiver_in = -1;
  kill(receiver_pid, SIGTERM);
  waitpid(receiver_pid, NULL, 0);
  receiver_pid = -1;
}

/* Starts the receiver; returns its port, or 0. */
static int receiver_start(int fail_first) {
  int in[2], out[2];
  if (pipe(in) != 0 || pipe(out) != 0) return 0;
  char fail[16];
  snprintf(fail, sizeof fail, "%d", fail_first);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    close(in[1]);
    close(out[0]);
    execlp("node", "node", "test/otel/_receiver.cjs", node_modules, fail, (char *)NULL);
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  receiver_pid = pid;
  receiver_in = in[1];
  FILE *f = fdopen(out[0], "r");
  int port = 0;
  char line[128];
  /* A blocking read: node prints the port once listening, or exits. */
  if (f && fgets(line, sizeof line, f)) sscanf(line, "port %d", &port);
  if (f) fclose(f);
  return port;
}

static size_t collect(char *p, size_t size, size_t n, void *ud) {
  cJSON **doc = ud;
  (void)doc;
  size_t len = size * n;
  static char *acc;
  static size_t acc_len;
  if (!p) { /* reset */
    free(acc);
    acc = NULL;
    acc_len = 0;
    return 0;
  }
  char *q = realloc(acc, acc_len + len + 1);
  if (!q) return 0;
  acc = q;
  memcpy(acc + acc_len, p, len);
  acc_len += len;
  acc[acc_len] = '\0';
  cJSON_Delete(*doc);
  *doc = cJSON_Parse(acc);
  return len;
}

static cJSON *received(int port) {
  cJSON *doc = NULL;
  collect(NULL, 0, 0, &doc);
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/spans", port);
  CURL *h = curl_easy_init();
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &doc);
  curl_easy_setopt(h, CURLOPT_TIMEOUT, 60L);
  curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
  curl_easy_perform(h);
  curl_easy_cleanup(h);
  return doc;
}

/* ---- the session ------------------------------------------------------------ */

static atomic_int hook_starts, hook_ends;
static void on_start(void *u, const dexa_span *s) { (void)u; (void)s; atomic_fetch_add(&hook_starts, 1); }
static void on_end(void *u, const dexa_span *s) {
  (void)u;
  int64_t start = 0, end = 0;
  dexa_span_times(s, &start, &end);
  if (end >= start && end > 0 && dexa_span_name(s)[0]) atomic_fetch_add(&hook_ends, 1);
}

static int clock_tool(void *u, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  (void)u;
  (void)inv;
  return dexa_tool_output_set_text(out, "12:00", 5, 0);
}

static char stats_json[1024];

/* Runs the two turns; returns DEXA_OK or the first error. */
static int run_session(const char *sid) {
  dexa_model *m = NULL;
  dexa_tool_source *tools = NULL;
  dexa_agent *a = NULL;
  dexa_runtime *rt = NULL;
  char store[512];
  temp_store_path(store, sizeof store, sid);
  int rc = dexa_model_demo_new(&m, "mock/dex");
  if (rc == DEXA_OK) rc = dexa_function_tools_new(&tools, "host");
  if (rc == DEXA_OK)
    rc = dexa_function_tools_add(tools, "clock", "The time", NULL, DEXA_TOOL_READ,
                                 DEXA_APPROVAL_NONE, clock_tool, NULL);
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.models = &m;
  def.model_count = 1;
  def.tool_sources = &tools;
  def.tool_source_count = 1;
  if (rc == DEXA_OK) rc = dexa_agent_new(&a, &def, NULL, 0);
  dexa_runtime_options o;
  dexa_runtime_options_init(&o, sizeof o);
  o.store = store;
  o.on_span_start = on_start;
  o.on_span_end = on_end;
  char err[256] = "";
  if (rc == DEXA_OK) rc = dexa_runtime_new(&rt, a, &o, err, sizeof err);
  if (rc == DEXA_OK) rc = dexa_runtime_start(rt, 2);
  if (rc == DEXA_OK) rc = dexa_runtime_start_session(rt, sid, NULL, 0, NULL, NULL);
  const char *msgs[] = {"{\"text\":\"/tool clock {}\"}", "{\"text\":\"hello\"}"};
  for (int i = 0; i < 2 && rc == DEXA_OK; i++) {
    char *out = NULL;
    size_t len = 0;
    rc = dexa_runtime_call(rt, sid, "send_message", msgs[i], strlen(msgs[i]), &out, &len);
    dexa_free(out);
    /* The turn ends with AwaitUserMessage waiting; generous for a loaded machine. */
    if (rc == DEXA_OK) rc = dexa_runtime_wait_idle(rt, sid, 120000);
  }
  if (rt) dexa_runtime_stop(rt); /* flushes the exporter */
  char *st = NULL;
  size_t sl = 0;
  if (rt && dexa_runtime_trace_stats(rt, &st, &sl) == DEXA_OK)
    snprintf(stats_json, sizeof stats_json, "%s", st);
  dexa_free(st);
  dexa_runtime_free(rt);
  dexa_agent_free(a);
  dexa_tool_source_free(tools);
  dexa_model_free(m);
  temp_store_remove(store);
  if (rc != DEXA_OK) fprintf(stderr, "    session: %s %s\n", dexa_strerror(rc), err);
  return rc;
}

/* ---- checks ------------------------------------------------------------------ */

static const cJSON *attr(const cJSON *span, const char *key) {
  return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(span, "attributes"), key);
}
static const char *attr_str(const cJSON *span, const char *key) {
  const cJSON *a = attr(span, key);
  return cJSON_IsString(a) ? a->valuestring : NULL;
}
static long long attr_int(const cJSON *span, const char *key) {
  const cJSON *i = cJSON_GetObjectItemCaseSensitive(attr(span, key), "int");
  return cJSON_IsString(i) ? atoll(i->valuestring) : -1;
}
static const char *str(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : "";
}

static const cJSON *find_span(const cJSON *spans, const char *name, long long turn, int nth) {
  const cJSON *s;
  cJSON_ArrayForEach(s, spans) {
    if (strcmp(str(s, "name"), name) != 0) continue;
    if (turn >= 0 && attr_int(s, "dexagents.turn") != turn) continue;
    if (nth-- == 0) return s;
  }
  return NULL;
}

static int count_hex(const char *s) { return (int)strlen(s); }

static int hook_total(void) { return atomic_load(&hook_ends); }

static void check_export(const char *encoding, int fail_first) {
  if (!node_modules[0]) SKIP("no npm packages (see above)");
  atomic_store(&hook_starts, 0);
  atomic_store(&hook_ends, 0);
  int port = receiver_start(fail_first);
  CHECK(port > 0);
  char endpoint[64];
  snprintf(endpoint, sizeof endpoint, "http://127.0.0.1:%d", port);
  setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint, 1);
  setenv("OTEL_EXPORTER_OTLP_PROTOCOL", strcmp(encoding, "json") == 0 ? "http/json" : "http/protobuf", 1);
  setenv("OTEL_SERVICE_NAME", "otel-test", 1);
  setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=ci", 1);
  setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-test-token=abc%20def", 1);
  setenv("OTEL_BSP_SCHEDULE_DELAY", "200", 1);
  setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "8", 1); /* several requests per run */
  setenv("OTEL_BSP_EXPORT_TIMEOUT", "60000", 1);
  setenv("NO_PROXY", "127.0.0.1", 1);
  char sid[64];
  snprintf(sid, sizeof sid, "s-otel-%s", encoding);
  CHECK_EQ_INT(run_session(sid), DEXA_OK);
  unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");

  cJSON *doc = received(port);
  CHECK(doc);
  const cJSON *spans = cJSON_GetObjectItemCaseSensitive(doc, "spans");
  const cJSON *reqs = cJSON_GetObjectItemCaseSensitive(doc, "requests");
  int n = cJSON_GetArraySize(spans);
  fprintf(stderr, "    %s: %d spans in %d requests; stats %s\n", encoding, n, cJSON_GetArraySize(reqs), stats_json);
  const cJSON *r;
  int rejected = 0, unavailable = 0;
  cJSON_ArrayForEach(r, reqs) {
    int status = cJSON_GetObjectItemCaseSensitive(r, "status")->valueint;
    if (status == 400) fprintf(stderr, "    rejected: %s\n", str(r, "error"));
    rejected += status == 400;
    unavailable += status == 503;
  }
  CHECK_EQ_INT(rejected, 0);
  CHECK_EQ_INT(unavailable, fail_first);
  CHECK(n >= 10);
  /* Every span the callbacks saw end was exported, once. */
  CHECK_EQ_INT(hook_total(), n);
  CHECK_EQ_INT(atomic_load(&hook_starts), n);
  CHECK_CONTAINS(stats_json, "\"dropped\":0");
  char exported[32];
  snprintf(exported, sizeof exported, "\"exported\":%d", n);
  CHECK_CONTAINS(stats_json, exported);
  if (fail_first) CHECK(!strstr(stats_json, "\"retries\":0"));

  const cJSON *s;
  cJSON_ArrayForEach(s, spans) {
    CHECK_STR(str(s, "encoding"), encoding);
    CHECK_STR(str(s, "header"), "abc def");
    CHECK_STR(str(s, "scope"), "libdexagents");
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(s, "resource");
    CHECK_STR(str(res, "service.name"), "otel-test");
    CHECK_STR(str(res, "deployment.environment"), "ci");
    CHECK_EQ_INT(count_hex(str(s, "traceId")), 32);
    CHECK_EQ_INT(count_hex(str(s, "spanId")), 16);
    CHECK_STR(attr_str(s, "dexagents.session.id"), sid);
    CHECK(atoll(str(s, "end")) >= atoll(str(s, "start")));
  }

  /* One trace per turn, rooted at the turn's span. */
  for (int turn = 1; turn <= 2; turn++) {
    const cJSON *root = find_span(spans, "turn", turn, 0);
    CHECK(root);
    CHECK(!find_span(spans, "turn", turn, 1));
    CHECK_STR(str(root, "parentSpanId"), "");
    CHECK_STR(attr_str(root, "dexagents.turn.outcome"), "finished");
    const char *trace = str(root, "traceId");
    int steps = 0;
    cJSON_ArrayForEach(s, spans) {
      if (attr_int(s, "dexagents.turn") != turn) continue;
      CHECK_STR(str(s, "traceId"), trace);
      if (attr_str(s, "dexagents.step.type")) {
        steps++;
        CHECK_STR(str(s, "parentSpanId"), str(root, "spanId"));
        CHECK_STR(attr_str(s, "dexagents.step.type"), str(s, "name"));
        CHECK_EQ_INT(attr_int(s, "dexagents.step.attempt"), 1);
        CHECK(attr_str(s, "dexagents.step.outcome"));
        CHECK_EQ_INT(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(s, "status"), "code")->valueint, 1);
      }
    }
    CHECK(steps >= (turn == 1 ? 5 : 2));
  }
  CHECK(strcmp(str(find_span(spans, "turn", 1, 0), "traceId"), str(find_span(spans, "turn", 2, 0), "traceId")) != 0);

  /* A span per Step: the turn with the tool ran two model calls, the tool
   * Step and ResumeTurn (its WaitFor and its Execute). */
  const cJSON *rm1 = find_span(spans, "RunModel", 1, 0), *rm2 = find_span(spans, "RunModel", 1, 1);
  const cJSON *ct = find_span(spans, "CallTool", 1, 0);
  CHECK(rm1 && rm2 && ct);
  CHECK(find_span(spans, "ResumeTurn", 1, 1));
  CHECK(find_span(spans, "AwaitUserMessage", 1, 0));
  CHECK(find_span(spans, "RunModel", 2, 0));

  /* Model spans: GenAI semantic conventions, under their RunModel. */
  for (int i = 0; i < 3; i++) {
    const cJSON *ms = find_span(spans, "chat dex", -1, i);
    CHECK(ms);
    CHECK_EQ_INT(cJSON_GetObjectItemCaseSensitive(ms, "kind")->valueint, 3); /* CLIENT */
    CHECK_STR(attr_str(ms, "gen_ai.operation.name"), "chat");
    CHECK_STR(attr_str(ms, "gen_ai.provider.name"), "dexagents.demo");
    CHECK_STR(attr_str(ms, "gen_ai.system"), "dexagents.demo");
    CHECK_STR(attr_str(ms, "gen_ai.request.model"), "dex");
    CHECK_STR(attr_str(ms, "gen_ai.response.model"), "dex");
    CHECK(attr_int(ms, "gen_ai.usage.input_tokens") > 0);
    CHECK(attr_int(ms, "gen_ai.usage.output_tokens") > 0);
    const cJSON *fr = attr(ms, "gen_ai.response.finish_reasons");
    CHECK(cJSON_IsArray(fr) && cJSON_GetArraySize(fr) == 1);
    const char *parent = str(ms, "parentSpanId");
    int under_run_model = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, spans) under_run_model |= strcmp(str(p, "spanId"), parent) == 0 &&
                                                   strcmp(str(p, "name"), "RunModel") == 0;
    CHECK(under_run_model);
    if (strcmp(parent, str(rm1, "spanId")) == 0)
      CHECK_STR(cJSON_GetArrayItem(fr, 0)->valuestring, "tool_calls");
    if (strcmp(parent, str(rm2, "spanId")) == 0)
      CHECK_STR(cJSON_GetArrayItem(fr, 0)->valuestring, "stop");
  }
  CHECK(!find_span(spans, "chat dex", -1, 3));

  /* The tool span: name, effect, outcome, under its CallTool. */
  const cJSON *ts = find_span(spans, "execute_tool clock", 1, 0);
  CHECK(ts);
  CHECK_STR(str(ts, "parentSpanId"), str(ct, "spanId"));
  CHECK_STR(attr_str(ts, "gen_ai.operation.name"), "execute_tool");
  CHECK_STR(attr_str(ts, "gen_ai.tool.name"), "clock");
  CHECK_STR(attr_str(ts, "dexagents.tool.effect"), "read");
  CHECK_STR(attr_str(ts, "dexagents.tool.outcome"), "ok");
  CHECK_STR(attr_str(ts, "dexagents.tool.source"), "host");
  CHECK(attr_str(ts, "gen_ai.tool.call.id"));
  cJSON_Delete(doc);
  receiver_stop();
}

static void export_protobuf(void) { check_export("protobuf", 0); }
static void export_json_after_503(void) { check_export("json", 1); }

int main(void) {
  atexit(receiver_stop);
  signal(SIGPIPE, SIG_IGN);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  FILE *p = popen("test/otel/_npm_setup.sh", "r");
  if (p) {
    if (!fgets(node_modules, sizeof node_modules, p)) node_modules[0] = '\0';
    node_modules[strcspn(node_modules, "\n")] = '\0';
    if (pclose(p) != 0) node_modules[0] = '\0';
  }
  if (!node_modules[0] && getenv("CI")) { /* CI has npm: a missing setup is a failure */
    printf("FAIL npm setup\n0 passed, 1 failed\n");
    return 1;
  }
  RUN(export_protobuf);
  RUN(export_json_after_503);
  receiver_stop();
  TEST_MAIN_END();
}
