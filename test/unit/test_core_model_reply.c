/* What RunModel keeps of a model reply, through dexa_dispatch on the
 * in-memory host with scripted host models: finish reasons on every stored
 * model message and in turn_finished, the full usage per call with its sums
 * per turn and session (AgentUsage, the snapshot), a truncated answer that
 * continues or fails the turn by the session's setting, the output schema
 * setting carried into every request, and fallback models. */
#include <cjson/cJSON.h>
#include <dexagents/dexagents.h>

#include "support/memhost.h"
#include "testing.h"

/* A scripted model: what its next calls answer. */
typedef struct script {
  const char *finish;    /* dexa_model_reply_set_finish_reason, NULL: none */
  const char *provider;  /* its provider word */
  int call_tool;         /* the first call asks for the "lookup" tool */
  int fail_code;         /* != 0: every call fails with it */
  int calls;
  char last_request[8192];
  int64_t in, out, cached, written, reasoning;
  double cost;
} script;

static int scripted(void *user, const dexa_model_request *req, dexa_model_reply *reply) {
  script *s = user;
  s->calls++;
  const char *json;
  size_t len;
  dexa_model_request_json(req, &json, &len);
  snprintf(s->last_request, sizeof s->last_request, "%.*s", (int)len, json);
  if (s->fail_code) {
    dexa_model_reply_set_error(reply, "scripted failure", 0);
    return s->fail_code;
  }
  int tool = s->call_tool && s->calls == 1;
  const char *item = tool ? "{\"type\":\"call\"}" : "{\"type\":\"text\",\"text\":\"hi\"}";
  dexa_model_reply_add_item(reply, item, strlen(item));
  if (tool) dexa_model_reply_add_tool_call(reply, "c1", "lookup", "{}", 2);
  else dexa_model_reply_add_text(reply, "hi", 2);
  if (s->finish) dexa_model_reply_set_finish_reason(reply, s->finish, s->provider);
  if (s->in || s->out) {
    dexa_model_usage u;
    dexa_model_usage_init(&u, sizeof u);
    u.input_tokens = s->in;
    u.output_tokens = s->out;
    u.cached_input_tokens = s->cached;
    u.cache_write_tokens = s->written;
    u.reasoning_tokens = s->reasoning;
    u.cost_usd = s->cost;
    dexa_model_reply_set_token_usage(reply, &u);
  }
  return DEXA_OK;
}

static dexa_model *scripted_model(const char *name, script *s) {
  dexa_model_vtable vt;
  dexa_model_vtable_init(&vt, sizeof vt);
  vt.generate = scripted;
  dexa_model *m = NULL;
  dexa_model_new(&m, name, &vt, s);
  return m;
}

static int lookup(void *u, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  return dexa_tool_output_set_text(out, "found", 5, 0);
}

typedef struct fixture {
  dexa_agent *agent;
  memhost *h;
  int start_rc;
} fixture;

static dexa_agent *agent_of(dexa_model **models, size_t n, char *err, size_t errn) {
  dexa_tool_source *tools;
  dexa_function_tools_new(&tools, "fns");
  dexa_function_tools_add(tools, "lookup", "read", NULL, DEXA_TOOL_READ, DEXA_APPROVAL_NONE,
                          lookup, NULL);
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.models = models;
  def.model_count = n;
  def.tool_sources = &tools;
  def.tool_source_count = 1;
  dexa_agent *a = NULL;
  dexa_agent_new(&a, &def, err, errn);
  dexa_tool_source_free(tools);
  return a;
}

static fixture setup(script *s, const char *settings) {
  dexa_model *m = scripted_model("host/scripted", s);
  char err[200] = "";
  fixture f = {agent_of(&m, 1, err, sizeof err), NULL, 0};
  dexa_model_free(m);
  f.h = memhost_new(f.agent, "s-reply");
  f.start_rc = memhost_start(f.h, settings);
  memhost_run(f.h);
  return f;
}

static void teardown(fixture *f) {
  memhost_free(f->h);
  dexa_agent_free(f->agent);
}

static void say(fixture *f, const char *text) {
  char in[256];
  snprintf(in, sizeof in, "{\"text\":\"%s\"}", text);
  memhost_rpc(f->h, "send_message", in, NULL);
  memhost_run(f->h);
}

static char *snapshot(fixture *f) {
  char *s = NULL;
  memhost_rpc(f->h, "snapshot", "{}", &s);
  return s;
}

/* The stored message seq, parsed (caller deletes). */
static cJSON *message(fixture *f, int seq) {
  char key[64];
  snprintf(key, sizeof key, "AgentMessages/%020d", seq);
  const char *v = memhost_attr(f->h, key);
  return v ? cJSON_Parse(v) : NULL;
}

static int64_t num(const cJSON *o, const char *path1, const char *path2) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, path1);
  if (path2) v = cJSON_GetObjectItemCaseSensitive(v, path2);
  return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : -1;
}

static void test_finish_reason_and_full_usage_are_stored(void) {
  script s = {"stop", "end_turn", 0, 0, 0, "", 1000, 200, 600, 100, 50, 0.0125};
  fixture f = setup(&s, NULL);
  say(&f, "hello");
  cJSON *m = message(&f, 2);
  CHECK(m);
  CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(m, "finish_reason")), "stop");
  CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(m, "provider_finish_reason")), "end_turn");
  CHECK_EQ_INT(num(m, "usage", "input_tokens"), 1000);
  CHECK_EQ_INT(num(m, "usage", "output_tokens"), 200);
  CHECK_EQ_INT(num(m, "usage", "cached_input_tokens"), 600);
  CHECK_EQ_INT(num(m, "usage", "cache_write_tokens"), 100);
  CHECK_EQ_INT(num(m, "usage", "reasoning_tokens"), 50);
  const cJSON *cost = cJSON_GetObjectItem(cJSON_GetObjectItem(m, "usage"), "cost_usd");
  CHECK(cJSON_IsNumber(cost) && cost->valuedouble > 0.01249 && cost->valuedouble < 0.01251);
  cJSON_Delete(m);
  const char *ev = memhost_events(f.h);
  CHECK_CONTAINS(ev, "\"type\":\"turn_finished\"");
  CHECK_CONTAINS(ev, "\"finish_reason\":\"stop\",\"usage\":{\"calls\":1,\"input_tokens\":1000");
  CHECK_CONTAINS(ev, "\"cache_hit_rate\":0.6,\"cost_usd\":0.0125}");
  char *snap = snapshot(&f);
  CHECK_CONTAINS(snap, "\"usage\":{\"session\":{\"calls\":1,\"input_tokens\":1000,"
                       "\"cached_input_tokens\":600,\"cache_write_tokens\":100,"
                       "\"output_tokens\":200,\"reasoning_tokens\":50");
  free(snap);
  teardown(&f);
}

static void test_usage_sums_per_turn_and_session(void) {
  script s = {NULL, NULL, 1, 0, 0, "", 10, 2, 4, 0, 0, -1};
  fixture f = setup(&s, NULL);
  say(&f, "first"); /* two calls: the tool round and the answer */
  s.call_tool = 0;
  say(&f, "second");
  cJSON *u = cJSON_Parse(memhost_attr(f.h, "AgentUsage"));
  CHECK(u);
  CHECK_EQ_INT(num(cJSON_GetObjectItem(u, "session"), "calls", NULL), 3);
  CHECK_EQ_INT(num(cJSON_GetObjectItem(u, "session"), "input_tokens", NULL), 30);
  CHECK_EQ_INT(num(cJSON_GetObjectItem(u, "session"), "cached_input_tokens", NULL), 12);
  CHECK_EQ_INT(num(cJSON_GetObjectItem(u, "turn"), "turn", NULL), 2);
  CHECK_EQ_INT(num(cJSON_GetObjectItem(u, "turn"), "calls", NULL), 1);
  CHECK(!cJSON_GetObjectItem(cJSON_GetObjectItem(u, "session"), "cost_usd")); /* no price */
  cJSON_Delete(u);
  /* The first turn's sums are in its turn_finished event. */
  CHECK_CONTAINS(memhost_events(f.h), "\"turn\":1,\"finish_reason\":\"stop\",\"usage\":{\"calls\":2,"
                                      "\"input_tokens\":20");
  teardown(&f);
}

static void test_finish_reason_inferred_when_the_client_gives_none(void) {
  script s = {NULL, NULL, 1, 0, 0, "", 0, 0, 0, 0, 0, -1};
  fixture f = setup(&s, NULL);
  say(&f, "call a tool");
  cJSON *call = message(&f, 2), *answer = message(&f, 4);
  CHECK(call && answer);
  CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(call, "finish_reason")), "tool_calls");
  CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(answer, "finish_reason")), "stop");
  CHECK(!cJSON_GetObjectItem(answer, "usage")); /* the client reported none */
  cJSON_Delete(call);
  cJSON_Delete(answer);
  teardown(&f);
}

static void test_truncated_answer_finishes_the_turn_marked_truncated(void) {
  script s = {"length", "max_tokens", 0, 0, 0, "", 0, 0, 0, 0, 0, -1};
  fixture f = setup(&s, NULL);
  say(&f, "write a long essay");
  CHECK_CONTAINS(memhost_attr(f.h, "AgentTurn"), "\"status\":\"idle\"");
  const char *ev = memhost_events(f.h);
  CHECK_CONTAINS(ev, "\"finish_reason\":\"length\",\"truncated\":true");
  CHECK_CONTAINS(ev, "\"message\":{\"seq\":2,\"turn\":1,\"round\":1,\"role\":\"model\"");
  CHECK_CONTAINS(ev, "\"finish_reason\":\"length\"}"); /* in message_appended too */
  teardown(&f);
}

static void test_truncated_answer_fails_the_turn_when_set_to_fail(void) {
  script s = {"length", "max_tokens", 0, 0, 0, "", 0, 0, 0, 0, 0, -1};
  fixture f = setup(&s, "{\"on_truncation\":\"fail\"}");
  CHECK_EQ_INT(f.start_rc, DEXA_OK);
  say(&f, "write a long essay");
  CHECK_CONTAINS(memhost_attr(f.h, "AgentTurn"), "\"status\":\"failed\"");
  const char *ev = memhost_events(f.h);
  CHECK_CONTAINS(ev, "\"type\":\"turn_failed\"");
  CHECK_CONTAINS(ev, "\"code\":-302,\"message\":\"the answer was cut at the output token limit\","
                     "\"finish_reason\":\"length\"");
  CHECK(!strstr(ev, "turn_finished"));
  cJSON *m = message(&f, 2); /* the partial answer stays, marked */
  CHECK(m);
  CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(m, "finish_reason")), "length");
  cJSON_Delete(m);
  teardown(&f);
}

static void test_bad_settings_refuse_the_session(void) {
  static const char *const bad[] = {
      "{\"on_truncation\":\"maybe\"}",
      "{\"output_schema\":\"yes\"}",
      "{\"output_schema\":{\"schema\":{\"type\":\"string\"}}}",
      "{\"output_schema\":{\"name\":\"has space\",\"schema\":{\"type\":\"object\"}}}",
      "{\"output_schema\":{\"schema\":{\"type\":\"object\"},\"strict\":1}}",
      "{\"output_schema\":{\"schema\":{\"type\":\"object\"},\"format\":\"x\"}}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    script s = {0};
    fixture f = setup(&s, bad[i]);
    if (f.start_rc == DEXA_OK) fprintf(stderr, "    accepted %s\n", bad[i]);
    CHECK(f.start_rc == DEXA_E_INVALID_ARG || f.start_rc == DEXA_E_UNKNOWN_KEY);
    CHECK(memhost_attr(f.h, "AgentSession") == NULL);
    teardown(&f);
  }
}

static void test_output_schema_reaches_every_request(void) {
  script s = {0};
  fixture f = setup(&s, "{\"output_schema\":{\"name\":\"answer\",\"schema\":{\"type\":\"object\","
                        "\"properties\":{\"city\":{\"type\":\"string\"}}},\"strict\":true}}");
  CHECK_EQ_INT(f.start_rc, DEXA_OK);
  say(&f, "where");
  CHECK_CONTAINS(s.last_request, "\"output_schema\":{\"name\":\"answer\",\"schema\":{\"type\":"
                                 "\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}},"
                                 "\"strict\":true}");
  teardown(&f);
  script plain = {0};
  fixture g = setup(&plain, NULL);
  say(&g, "where");
  CHECK(plain.calls == 1 && !strstr(plain.last_request, "output_schema"));
  teardown(&g);
}

/* ---- attachments ---- */

static void test_attachments_are_stored_and_reach_the_model(void) {
  script s = {0};
  fixture f = setup(&s, NULL);
  const char *in = "{\"text\":\"\",\"attachments\":[{\"type\":\"image\",\"media_type\":"
                   "\"image/png\",\"data\":\"iVBORw0KGgo=\"},{\"type\":\"file\",\"url\":"
                   "\"https://example.com/a.pdf\",\"media_type\":\"application/pdf\",\"name\":\"a.pdf\"}]}";
  CHECK_EQ_INT(memhost_rpc(f.h, "send_message", in, NULL), DEXA_OK);
  memhost_run(f.h);
  cJSON *m = message(&f, 1);
  CHECK(m);
  char *att = cJSON_PrintUnformatted(cJSON_GetObjectItem(m, "attachments"));
  cJSON_Delete(m);
  CHECK(att);
  CHECK_STR(att, "[{\"type\":\"image\",\"media_type\":\"image/png\",\"data\":\"iVBORw0KGgo=\"},"
                 "{\"type\":\"file\",\"url\":\"https://example.com/a.pdf\",\"media_type\":"
                 "\"application/pdf\",\"name\":\"a.pdf\"}]");
  free(att);
  CHECK_CONTAINS(s.last_request, "\"data\":\"iVBORw0KGgo=\"");
  /* Events show the attachments without their bytes. */
  const char *ev = memhost_events(f.h);
  CHECK(!strstr(ev, "iVBORw0KGgo="));
  CHECK_CONTAINS(ev, "\"attachments\":[{\"type\":\"image\",\"media_type\":\"image/png\",\"bytes\":8},"
                     "{\"type\":\"file\",\"media_type\":\"application/pdf\",\"name\":\"a.pdf\","
                     "\"url\":\"https://example.com/a.pdf\"}]");
  teardown(&f);
}

static void test_bad_attachments_are_refused(void) {
  static const struct {
    const char *att;
    int rc;
  } bad[] = {
      {"{\"type\":\"image\",\"media_type\":\"image/png\",\"data\":\"not base64!\"}", DEXA_E_INVALID_ARG},
      {"{\"type\":\"image\",\"data\":\"iVBORw0KGgo=\"}", DEXA_E_INVALID_ARG},
      {"{\"type\":\"image\",\"media_type\":\"image/png\",\"data\":\"iVBORw0KGgo=\",\"url\":\"https://x\"}",
       DEXA_E_INVALID_ARG},
      {"{\"type\":\"image\",\"media_type\":\"image/tiff\",\"data\":\"iVBORw0KGgo=\"}", DEXA_E_INVALID_ARG},
      {"{\"type\":\"video\",\"url\":\"https://x\"}", DEXA_E_INVALID_ARG},
      {"{\"type\":\"image\",\"url\":\"file:///etc/passwd\"}", DEXA_E_INVALID_ARG},
      {"{\"type\":\"image\",\"url\":\"https://x\",\"detail\":\"high\"}", DEXA_E_UNKNOWN_KEY},
      {"\"image.png\"", DEXA_E_INVALID_ARG},
  };
  script s = {0};
  fixture f = setup(&s, NULL);
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char in[512];
    snprintf(in, sizeof in, "{\"text\":\"look\",\"attachments\":[%s]}", bad[i].att);
    int rc = memhost_rpc(f.h, "send_message", in, NULL);
    if (rc != bad[i].rc) fprintf(stderr, "    %s: %s\n", bad[i].att, dexa_error_name(rc));
    CHECK_EQ_INT(rc, bad[i].rc);
  }
  char many[4096] = "{\"text\":\"x\",\"attachments\":[";
  for (int i = 0; i < 17; i++) strcat(many, i ? ",{\"type\":\"image\",\"url\":\"https://x\"}" : "{\"type\":\"image\",\"url\":\"https://x\"}");
  strcat(many, "]}");
  CHECK_EQ_INT(memhost_rpc(f.h, "send_message", many, NULL), DEXA_E_TOO_LARGE);
  CHECK_EQ_INT(memhost_rpc(f.h, "send_message", "{\"text\":\" \",\"attachments\":[]}", NULL),
               DEXA_E_EMPTY_MESSAGE);
  CHECK_EQ_INT(memhost_count(f.h, "QueuedUserMessages/"), 0);
  CHECK_EQ_INT(s.calls, 0);
  teardown(&f);
}

/* ---- fallbacks ---- */

static void test_fallback_runs_when_the_model_keeps_failing(void) {
  script primary = {0}, backup = {"stop", NULL, 0, 0, 0, "", 5, 1, 0, 0, 0, -1};
  primary.fail_code = DEXA_E_RATE_LIMITED;
  dexa_model *m[2] = {scripted_model("host/primary", &primary), scripted_model("host/backup", &backup)};
  const char *names[] = {"host/backup"};
  CHECK_EQ_INT(dexa_model_set_fallbacks(m[0], names, 1), DEXA_OK);
  char err[200] = "";
  fixture f = {agent_of(m, 2, err, sizeof err), NULL, 0};
  dexa_model_free(m[0]);
  dexa_model_free(m[1]);
  CHECK(f.agent);
  f.h = memhost_new(f.agent, "s-fallback");
  memhost_start(f.h, NULL);
  memhost_run(f.h);
  say(&f, "hello");
  /* Attempt 1 retries the model itself; attempt 2 fails over. */
  CHECK_EQ_INT(primary.calls, 2);
  CHECK_EQ_INT(backup.calls, 1);
  cJSON *msg = message(&f, 2);
  CHECK(msg);
  CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(msg, "model")), "host/backup");
  cJSON_Delete(msg);
  const char *ev = memhost_events(f.h);
  CHECK_CONTAINS(ev, "\"type\":\"model_fallback\"");
  CHECK_CONTAINS(ev, "\"from\":\"host/primary\",\"to\":\"host/backup\",\"error\":{\"code\":-205,"
                     "\"message\":\"scripted failure\"}");
  CHECK_CONTAINS(ev, "turn_finished");
  teardown(&f);
}

static void test_fallback_not_used_for_permanent_errors(void) {
  script primary = {0}, backup = {0};
  primary.fail_code = DEXA_E_AUTH;
  dexa_model *m[2] = {scripted_model("host/primary", &primary), scripted_model("host/backup", &backup)};
  const char *names[] = {"host/backup"};
  dexa_model_set_fallbacks(m[0], names, 1);
  char err[200] = "";
  fixture f = {agent_of(m, 2, err, sizeof err), NULL, 0};
  dexa_model_free(m[0]);
  dexa_model_free(m[1]);
  f.h = memhost_new(f.agent, "s-fallback");
  memhost_start(f.h, NULL);
  memhost_run(f.h);
  say(&f, "hello");
  CHECK_EQ_INT(primary.calls, 1);
  CHECK_EQ_INT(backup.calls, 0);
  CHECK_CONTAINS(memhost_events(f.h), "turn_failed");
  teardown(&f);
}

static void test_fallback_names_are_checked(void) {
  script a = {0}, b = {0};
  dexa_model *m[2] = {scripted_model("host/a", &a), scripted_model("host/b", &b)};
  const char *own[] = {"host/a"}, *twice[] = {"host/b", "host/b"}, *empty[] = {""};
  const char *unknown[] = {"host/zzz"};
  CHECK_EQ_INT(dexa_model_set_fallbacks(m[0], own, 1), DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(dexa_model_set_fallbacks(m[0], twice, 2), DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(dexa_model_set_fallbacks(m[0], empty, 1), DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(dexa_model_set_fallbacks(NULL, unknown, 1), DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(dexa_model_set_fallbacks(m[0], unknown, 1), DEXA_OK);
  char err[200] = "";
  dexa_agent *agent = agent_of(m, 2, err, sizeof err);
  CHECK(agent == NULL);
  CHECK_CONTAINS(err, "fallback");
  CHECK_EQ_INT(dexa_model_set_fallbacks(m[0], NULL, 0), DEXA_OK); /* cleared */
  agent = agent_of(m, 2, err, sizeof err);
  CHECK(agent != NULL);
  dexa_agent_free(agent);
  dexa_model_free(m[0]);
  dexa_model_free(m[1]);
}

/* ---- the reply setters ---- */

static int check_setters(void *user, const dexa_model_request *req, dexa_model_reply *reply) {
  int *bad = user;
  dexa_model_usage u;
  *bad = 0;
  *bad |= dexa_model_usage_init(&u, sizeof u - 1) != DEXA_E_STRUCT_SIZE;
  *bad |= dexa_model_usage_init(&u, sizeof u) != DEXA_OK || u.cost_usd >= 0;
  u.input_tokens = 10;
  u.cached_input_tokens = 8;
  u.cache_write_tokens = 3; /* 11 > 10 */
  *bad |= dexa_model_reply_set_token_usage(reply, &u) != DEXA_E_INVALID_ARG;
  u.cache_write_tokens = 2;
  u.output_tokens = 1;
  u.reasoning_tokens = 2;
  *bad |= dexa_model_reply_set_token_usage(reply, &u) != DEXA_E_INVALID_ARG;
  u.reasoning_tokens = 1;
  *bad |= dexa_model_reply_set_token_usage(reply, &u) != DEXA_OK;
  u.struct_size = 4;
  *bad |= dexa_model_reply_set_token_usage(reply, &u) != DEXA_E_STRUCT_SIZE;
  *bad |= dexa_model_reply_set_finish_reason(reply, "truncated", NULL) != DEXA_E_INVALID_ARG;
  *bad |= dexa_model_reply_set_finish_reason(reply, "stop", "bad\nword") != DEXA_E_INVALID_ARG;
  *bad |= dexa_model_reply_set_finish_reason(reply, "content_filter", "SAFETY") != DEXA_OK;
  dexa_model_reply_add_item(reply, "{}", 2);
  dexa_model_reply_add_text(reply, "x", 1);
  return DEXA_OK;
}

static void test_reply_setters_check_their_input(void) {
  int bad = -1;
  dexa_model_vtable vt;
  dexa_model_vtable_init(&vt, sizeof vt);
  vt.generate = check_setters;
  dexa_model *m = NULL;
  dexa_model_new(&m, "host/setters", &vt, &bad);
  char err[200];
  dexa_agent *a = agent_of(&m, 1, err, sizeof err);
  dexa_model_free(m);
  memhost *h = memhost_new(a, "s-setters");
  memhost_start(h, NULL);
  memhost_run(h);
  memhost_rpc(h, "send_message", "{\"text\":\"x\"}", NULL);
  memhost_run(h);
  CHECK_EQ_INT(bad, 0);
  CHECK_CONTAINS(memhost_attr(h, "AgentMessages/00000000000000000002"),
                 "\"finish_reason\":\"content_filter\",\"provider_finish_reason\":\"SAFETY\"");
  memhost_free(h);
  dexa_agent_free(a);
}

int main(void) {
  RUN(test_finish_reason_and_full_usage_are_stored);
  RUN(test_usage_sums_per_turn_and_session);
  RUN(test_finish_reason_inferred_when_the_client_gives_none);
  RUN(test_truncated_answer_finishes_the_turn_marked_truncated);
  RUN(test_truncated_answer_fails_the_turn_when_set_to_fail);
  RUN(test_bad_settings_refuse_the_session);
  RUN(test_output_schema_reaches_every_request);
  RUN(test_attachments_are_stored_and_reach_the_model);
  RUN(test_bad_attachments_are_refused);
  RUN(test_fallback_runs_when_the_model_keeps_failing);
  RUN(test_fallback_not_used_for_permanent_errors);
  RUN(test_fallback_names_are_checked);
  RUN(test_reply_setters_check_their_input);
  TEST_MAIN_END();
}
