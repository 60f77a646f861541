/* The event stream: durable events with tokens, resume, invalid tokens,
 * retention head, live deltas, long poll, snapshot resume_token.
 * test-needs: sqlite postgresql */
#include "testing.h"
#include "test_runtime_fake.h"

static const char *DESC =
    "{\"flow_type\":\"Fake\",\"start_step\":\"Start\",\"steps\":["
    "{\"name\":\"Start\",\"options\":{\"locked\":true}},{\"name\":\"Emit\"}]," FAKE_RPCS "}";

/* Emit: input {"n":N,"delta":bool}: N durable events {"i":k}, and a live
 * delta first when asked. */
static int h_events(fake *f, const dexa_call *c, dexa_result *r) {
  if (is(c, DEXA_CALL_EXECUTE, "Start")) {
    put_event(r, "{\"type\":\"started\"}");
    return DEXA_OK;
  }
  cJSON *in = fake_input(c);
  int n = cJSON_GetObjectItem(in, "n") ? cJSON_GetObjectItem(in, "n")->valueint : 0;
  if (cJSON_IsTrue(cJSON_GetObjectItem(in, "delta")) && c->event_sink)
    c->event_sink(c->sink_user_data, "{\"type\":\"delta\",\"text\":\"hi\"}", 28);
  for (int i = 1; i <= n; i++) {
    char ev[64];
    snprintf(ev, sizeof ev, "{\"i\":%d}", i);
    put_event(r, ev);
  }
  cJSON_Delete(in);
  return DEXA_OK;
}

static void emit(dexa_runtime *rt, const char *sid, int n, int delta) {
  char d[256], *out = NULL;
  size_t len;
  snprintf(d, sizeof d, "{\"decision\":{\"next\":[{\"step\":\"Emit\",\"input\":{\"n\":%d,\"delta\":%s}}]}}",
           n, delta ? "true" : "false");
  dexa_runtime_call(rt, sid, "decide", d, strlen(d), &out, &len);
  dexa_free(out);
  run_ready(rt);
}

static char dbpath[1024];

static dexa_runtime *open_rt(fake *f, int64_t retained) {
  dexa_runtime *rt = NULL;
  fake_init(f, h_events);
  temp_db(dbpath, sizeof dbpath, "ev");
  return fake_open(&rt, f, DESC, dbpath, 1000, retained) == DEXA_OK ? rt : NULL;
}

/* The "token" member of a read_events output (static buffer). */
static const char *out_token(const char *out, int index) {
  static char tok[128];
  cJSON *j = cJSON_Parse(out);
  cJSON *t = index < 0 ? cJSON_GetObjectItem(j, "token")
                       : cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "events"), index), "token");
  snprintf(tok, sizeof tok, "%s", cJSON_IsString(t) ? t->valuestring : "");
  cJSON_Delete(j);
  return tok;
}

static int out_count(const char *out) {
  cJSON *j = cJSON_Parse(out);
  int n = cJSON_GetArraySize(cJSON_GetObjectItem(j, "events"));
  cJSON_Delete(j);
  return n;
}

static void test_events_read_and_resume(void) {
  fake f;
  dexa_runtime *rt = open_rt(&f, 10000);
  CHECK(rt);
  CHECK_EQ_INT(fake_start(rt, "s"), DEXA_OK);
  emit(rt, "s", 3, 0);
  char *out = NULL;
  size_t n;
  CHECK_EQ_INT(dexa_runtime_read_events(rt, "s", "", 100, 0, &out, &n), DEXA_OK);
  CHECK_EQ_INT(out_count(out), 4);
  CHECK_CONTAINS(out, "\"event\":{\"type\":\"started\"}");
  CHECK_CONTAINS(out, "\"event\":{\"i\":3}");
  char first[128];
  snprintf(first, sizeof first, "%s", out_token(out, 0));
  char last[128];
  snprintf(last, sizeof last, "%s", out_token(out, -1));
  CHECK_STR(last, out_token(out, 3));
  dexa_free(out);
  CHECK_EQ_INT(dexa_runtime_read_events(rt, "s", first, 2, 0, &out, &n), DEXA_OK);
  CHECK_EQ_INT(out_count(out), 2);
  CHECK_CONTAINS(out, "{\"i\":1}");
  CHECK_CONTAINS(out, "{\"i\":2}");
  dexa_free(out);
  CHECK_EQ_INT(dexa_runtime_read_events(rt, "s", last, 10, 0, &out, &n), DEXA_OK);
  CHECK_EQ_INT(out_count(out), 0);
  CHECK_STR(out_token(out, -1), last); /* nothing new: the same position */
  dexa_free(out);
  dexa_runtime_free(rt);
}

static void test_invalid_and_foreign_tokens(void) {
  fake f;
  dexa_runtime *rt = open_rt(&f, 10000);
  CHECK(rt);
  CHECK_EQ_INT(fake_start(rt, "s"), DEXA_OK);
  CHECK_EQ_INT(fake_start(rt, "other"), DEXA_OK);
  char *out = NULL;
  size_t n;
  CHECK_EQ_INT(dexa_runtime_read_events(rt, "other", NULL, 10, 0, &out, &n), DEXA_OK);
  char foreign[128];
  snprintf(foreign, sizeof foreign, "%s", out_token(out, 0));
  dexa_free(out);
  CHECK_EQ_INT(dexa_runtime_read_events(rt, "s", foreign, 10, 0, &out, &n),
               DEXA_E_INVALID_RESUME_TOKEN);
  const char *bad[] = {"garbage", "zzzzzzzz.1.0", "12345678.1", "12345678.-1.0", "12345678.1.0x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECK_EQ_INT(dexa_runtime_read_events(rt, "s", bad[i], 10, 0, &out, &n),
                 DEXA_E_INVALID_RESUME_TOKEN);
  CHECK_EQ_INT(dexa_runtime_read_events(rt, "nope", "", 10, 0, &out, &n), DEXA_E_NOT_FOUND);
  CHECK_EQ_INT(dexa_runtime_read_events(rt, "s", "", 0, 0, &out, &n), DEXA_E_INVALID_ARG);
  dexa_runtime_free(rt);
}

/* A token past the newest event (a store restored from an older backup)
 * is refused instead of waiting for events that may never come. */
static void test_token_beyond_head_is_refused(void) {
  fake f;
  dexa_runtime *rt = open_rt(&f, 10000);
  CHECK(rt);
  CHECK_EQ_INT(fake_start(rt, "s"), DEXA_OK);
  emit(rt, "s", 2, 0);
  char *out = NULL;
  size_t n;
  CHECK_EQ_INT(dexa_runtime_read_events(rt, "s", "", 100, 0, &out, &n), DEXA_OK);
  char last[128], ahead[160];
  snprintf(last, sizeof last, "%s", out_token(out, -1)); /* "<hash>.3.0" */
  dexa_free(out);
  char *dot = strchr(last, '.');
  CHECK(dot != NULL);
  snprintf(ahead, sizeof ahead, "%.*s.4.0", (int)(dot - last), last);
  CHECK_EQ_INT(dexa_runtime_read_events(rt, "s", ahead, 10, 0, &out, &n),
               DEXA_E_INVALID_RESUME_TOKEN);
  CHECK_EQ_INT(dexa_runtime_read_events(rt, "s", last, 10, 0, &out, &n), DEXA_OK);
  dexa_free(out);
  dexa_runtime_free(rt);
}

static void test_token_older_than_head_starts_at_head(void) {
  fake f;
  dexa_runtime *rt = open_rt(&f, 3);
  CHECK(rt);
  CHECK_EQ_INT(fake_start(rt, "s"), DEXA_OK);
  char *out = NULL;
  size_t n;
  CHECK_EQ_INT(dexa_runtime_read_events(rt, "s", "", 10, 0, &out, &n), DEXA_OK);
  char old[128];
  snprintf(old, sizeof old, "%s", out_token(out, 0));
  dexa_free(out);
  emit(rt, "s", 9, 0); /* events 2..10; only the last 3 are retained */
  CHECK_EQ_INT(dexa_runtime_read_events(rt, "s", old, 100, 0, &out, &n), DEXA_OK);
  CHECK_EQ_INT(out_count(out), 3);
  CHECK_CONTAINS(out, "{\"i\":7}");
  CHECK_CONTAINS(out, "{\"i\":9}");
  dexa_free(out);
  CHECK_EQ_INT(dexa_runtime_read_events(rt, "s", "", 100, 0, &out, &n), DEXA_OK);
  CHECK_EQ_INT(out_count(out), 3);
  dexa_free(out);
  dexa_runtime_free(rt);
}

static void test_live_deltas_merge_and_resume(void) {
  fake f;
  dexa_runtime *rt = open_rt(&f, 10000);
  CHECK(rt);
  CHECK_EQ_INT(fake_start(rt, "s"), DEXA_OK);
  emit(rt, "s", 1, 1);
  char *out = NULL;
  size_t n;
  CHECK_EQ_INT(dexa_runtime_read_events(rt, "s", "", 10, 0, &out, &n), DEXA_OK);
  CHECK_EQ_INT(out_count(out), 3);
  /* started, then the delta (emitted after event 1), then {"i":1} */
  char *p1 = strstr(out, "started"), *p2 = strstr(out, "\"delta\""), *p3 = strstr(out, "{\"i\":1}");
  CHECK(p1 && p2 && p3 && p1 < p2 && p2 < p3);
  CHECK_CONTAINS(out, "\"live\":true");
  char delta_tok[128];
  snprintf(delta_tok, sizeof delta_tok, "%s", out_token(out, 1));
  dexa_free(out);
  CHECK_EQ_INT(dexa_runtime_read_events(rt, "s", delta_tok, 10, 0, &out, &n), DEXA_OK);
  CHECK_EQ_INT(out_count(out), 1); /* the delta is not repeated */
  CHECK_CONTAINS(out, "{\"i\":1}");
  dexa_free(out);
  dexa_runtime_free(rt);
}

static void test_snapshot_carries_resume_token(void) {
  fake f;
  dexa_runtime *rt = open_rt(&f, 10000);
  CHECK(rt);
  CHECK_EQ_INT(fake_start(rt, "s"), DEXA_OK);
  emit(rt, "s", 2, 0);
  char *out = NULL, tok[128];
  size_t n;
  CHECK_EQ_INT(dexa_runtime_call(rt, "s", "snapshot", "{}", 2, &out, &n), DEXA_OK);
  CHECK_CONTAINS(out, "{\"ok\":true,\"resume_token\":\"");
  cJSON *j = cJSON_Parse(out);
  snprintf(tok, sizeof tok, "%s", cJSON_GetObjectItem(j, "resume_token")->valuestring);
  cJSON_Delete(j);
  dexa_free(out);
  emit(rt, "s", 1, 0);
  CHECK_EQ_INT(dexa_runtime_read_events(rt, "s", tok, 10, 0, &out, &n), DEXA_OK);
  CHECK_EQ_INT(out_count(out), 1); /* only what came after the snapshot */
  dexa_free(out);
  dexa_runtime_free(rt);
}

typedef struct poller {
  dexa_runtime *rt;
  char token[128];
  int rc;
  char *out;
} poller;

static void *poll_thread(void *arg) {
  poller *p = arg;
  size_t n;
  p->rc = dexa_runtime_read_events(p->rt, "s", p->token, 10, 20000, &p->out, &n);
  return NULL;
}

static void test_long_poll_wakes_on_append(void) {
  fake f;
  dexa_runtime *rt = open_rt(&f, 10000);
  CHECK(rt);
  CHECK_EQ_INT(fake_start(rt, "s"), DEXA_OK);
  char *out = NULL;
  size_t n;
  CHECK_EQ_INT(dexa_runtime_read_events(rt, "s", "", 10, 0, &out, &n), DEXA_OK);
  poller p = {rt, "", -1, NULL};
  snprintf(p.token, sizeof p.token, "%s", out_token(out, -1));
  dexa_free(out);
  pthread_t th;
  CHECK(pthread_create(&th, NULL, poll_thread, &p) == 0);
  emit(rt, "s", 1, 0);
  pthread_join(th, NULL); /* bounded: the poll gives up after 20 s */
  CHECK_EQ_INT(p.rc, DEXA_OK);
  CHECK_CONTAINS(p.out, "{\"i\":1}");
  dexa_free(p.out);
  dexa_runtime_free(rt);
}

int main(void) {
  RUN(test_events_read_and_resume);
  RUN(test_invalid_and_foreign_tokens);
  RUN(test_token_beyond_head_is_refused);
  RUN(test_token_older_than_head_starts_at_head);
  RUN(test_live_deltas_merge_and_resume);
  RUN(test_snapshot_carries_resume_token);
  RUN(test_long_poll_wakes_on_append);
  temp_store_remove(dbpath);
  TEST_MAIN_END();
}
