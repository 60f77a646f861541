/* Runtime behaviour with a fake flow: sessions, waits, channels, timers,
 * parallel steps, retries, recovery, leases, cancellation, locked steps,
 * RPC atomicity. Time is the fake clock; nothing here sleeps on purpose.
 * test-needs: sqlite postgresql */
#include "testing.h"
#include "test_runtime_fake.h"

static const char *DESC =
    "{\"flow_type\":\"Fake\",\"start_step\":\"Start\",\"steps\":["
    "{\"name\":\"Start\",\"options\":{\"locked\":true,\"max_attempts\":1}},"
    "{\"name\":\"Wait\",\"options\":{\"has_wait_for\":true}},"
    "{\"name\":\"Work\",\"options\":{\"max_attempts\":3,\"initial_backoff_ms\":1000,"
    "\"backoff_coefficient\":2,\"max_backoff_ms\":60000,\"unknown_key\":1}},"
    "{\"name\":\"Once\",\"options\":{\"max_attempts\":1,\"recovery\":\"Rec\"}},"
    "{\"name\":\"Rec\"},"
    "{\"name\":\"Join\",\"options\":{\"has_wait_for\":true}},"
    "{\"name\":\"Locked\",\"options\":{\"locked\":true}},"
    "{\"name\":\"LockedWait\",\"options\":{\"locked\":true,\"has_wait_for\":true}},"
    "{\"name\":\"NoRec\",\"options\":{\"max_attempts\":1}}],"
    FAKE_RPCS "}";

static char dbpath[1024];

/* Start: writes "started" and returns {"next": settings.next}. */
static int base_start(const dexa_call *c, dexa_result *r) {
  cJSON *in = fake_input(c);
  cJSON *next = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(in, "settings"), "next");
  if (cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(in, "settings"), "boom")) {
    cJSON_Delete(in);
    return dexa__result_fail(r, DEXA_E_BAD_STATE, "start refused");
  }
  char *n = next ? cJSON_PrintUnformatted(next) : NULL;
  char doc[4096];
  snprintf(doc, sizeof doc, "{\"next\":%s}", n ? n : "[]");
  put_write(r, "started", "true");
  put_decision(r, doc);
  free(n);
  cJSON_Delete(in);
  return DEXA_OK;
}

static dexa_runtime *open_rt(fake *f, fake_handler h) {
  dexa_runtime *rt = NULL;
  fake_init(f, h);
  temp_db(dbpath, sizeof dbpath, "rt");
  if (fake_open(&rt, f, DESC, dbpath, 1000, 10000) != DEXA_OK) return NULL;
  return rt;
}

static int start_with(dexa_runtime *rt, const char *sid, const char *settings) {
  char *out = NULL;
  size_t n;
  int rc = dexa_runtime_start_session(rt, sid, settings, strlen(settings), &out, &n);
  dexa_free(out);
  return rc;
}

/* ---- sessions --------------------------------------------------------------- */

static int h_basic(fake *f, const dexa_call *c, dexa_result *r) {
  if (is(c, DEXA_CALL_EXECUTE, "Start")) return base_start(c, r);
  if (is(c, DEXA_CALL_EXECUTE, "Work")) {
    put_write(r, "work", c->input);
    put_decision(r, "{\"next\":[]}");
  }
  return DEXA_OK;
}

static void test_start_session_runs_start_step_inline(void) {
  fake f;
  dexa_runtime *rt = open_rt(&f, h_basic);
  CHECK(rt);
  char *out = NULL;
  size_t n;
  CHECK_EQ_INT(dexa_runtime_start_session(rt, NULL, NULL, 0, &out, &n), DEXA_OK);
  CHECK_CONTAINS(out, "\"session_id\":\"s-");
  CHECK_EQ_INT(strlen(out), strlen("{\"session_id\":\"s-\"}") + 32);
  char sid[64];
  snprintf(sid, sizeof sid, "%.34s", strstr(out, "s-"));
  dexa_free(out);
  CHECK_CONTAINS(f.last_input, "{\"settings\":{}}");
  char *v = fake_get(rt, sid, "started");
  CHECK_STR(v, "{\"value\":true}");
  dexa_free(v);
  CHECK_EQ_INT(fake_count(&f, "E Start Start-1 1"), 1);
  dexa_runtime_free(rt);
}

static void test_start_session_errors_change_nothing(void) {
  fake f;
  dexa_runtime *rt = open_rt(&f, h_basic);
  CHECK(rt);
  CHECK_EQ_INT(start_with(rt, "a", "{}"), DEXA_OK);
  CHECK_EQ_INT(start_with(rt, "a", "{}"), DEXA_E_ALREADY_EXISTS);
  CHECK_EQ_INT(start_with(rt, "b", "[1]"), DEXA_E_INVALID_JSON);
  CHECK_EQ_INT(start_with(rt, "b", "{bad"), DEXA_E_INVALID_JSON);
  CHECK_EQ_INT(start_with(rt, "b", "{\"boom\":1}"), DEXA_E_BAD_STATE);
  CHECK_CONTAINS(dexa_runtime_errmsg(rt), "start refused");
  char *out = NULL;
  size_t n;
  CHECK_EQ_INT(dexa_runtime_call(rt, "b", "get", "{\"key\":\"started\"}", 17, &out, &n),
               DEXA_E_NOT_FOUND);
  CHECK_CONTAINS(out, "\"name\":\"DEXA_E_NOT_FOUND\"");
  dexa_free(out);
  /* The failed start left no session behind: the id is still free. */
  CHECK_EQ_INT(start_with(rt, "b", "{}"), DEXA_OK);
  dexa_runtime_free(rt);
}

static void test_next_step_runs_and_is_deleted(void) {
  fake f;
  dexa_runtime *rt = open_rt(&f, h_basic);
  CHECK(rt);
  CHECK_EQ_INT(start_with(rt, "s", "{\"next\":[{\"step\":\"Work\",\"input\":{\"x\":1}}]}"), DEXA_OK);
  CHECK_EQ_INT(run_ready(rt), 1);
  CHECK_EQ_INT(run_ready(rt), 0);
  char *v = fake_get(rt, "s", "work");
  CHECK_STR(v, "{\"value\":{\"x\":1}}");
  dexa_free(v);
  CHECK_EQ_INT(dexa_runtime_wait_idle(rt, "s", 0), DEXA_OK);
  CHECK_EQ_INT(dexa_runtime_wait_idle(rt, "nope", 0), DEXA_E_NOT_FOUND);
  dexa_runtime_free(rt);
}

/* ---- waits ------------------------------------------------------------------- */

/* Wait: WaitFor returns the wait in input.wait; Execute records conditions
 * and, when input.again is set, goes to another Wait with input.again. */
static int h_wait(fake *f, const dexa_call *c, dexa_result *r) {
  if (is(c, DEXA_CALL_EXECUTE, "Start")) return base_start(c, r);
  cJSON *in = fake_input(c);
  if (is(c, DEXA_CALL_WAIT_FOR, "Wait") || is(c, DEXA_CALL_WAIT_FOR, "Join")) {
    char *w = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(in, "wait"));
    put_wait(r, w);
    free(w);
  } else if (is(c, DEXA_CALL_EXECUTE, "Wait") || is(c, DEXA_CALL_EXECUTE, "Join")) {
    char key[64];
    snprintf(key, sizeof key, "cond/%s", c->step_execution_id);
    dexa__result_add_write(r, key, strlen(key), c->conditions, c->conditions_len);
    cJSON *again = cJSON_GetObjectItemCaseSensitive(in, "again");
    if (again) {
      char *a = cJSON_PrintUnformatted(again);
      char doc[2048];
      snprintf(doc, sizeof doc, "{\"next\":[{\"step\":\"Wait\",\"input\":{\"wait\":%s}}]}", a);
      put_decision(r, doc);
      free(a);
    }
  } else if (is(c, DEXA_CALL_EXECUTE, "Work")) {
    put_publish(r, "done", c->input);
  }
  cJSON_Delete(in);
  return DEXA_OK;
}

static void check_attr(dexa_runtime *rt, const char *sid, const char *key, const char *want,
                       int *ok) {
  char *v = fake_get(rt, sid, key);
  char expect[2048];
  snprintf(expect, sizeof expect, "{\"value\":%s}", want);
  *ok = v && strcmp(v, expect) == 0;
  if (!*ok) fprintf(stderr, "    %s = %s, expected %s\n", key, v ? v : "(null)", expect);
  dexa_free(v);
}

#define CHECK_ATTR(rt, sid, key, want)                                                \
  do {                                                                                \
    int _ok;                                                                          \
    check_attr(rt, sid, key, want, &_ok);                                             \
    CHECK(_ok);                                                                       \
  } while (0)

static void test_wait_any_timer_wins_over_channel_and_only_winner_consumes(void) {
  fake f;
  dexa_runtime *rt = open_rt(&f, h_wait);
  CHECK(rt);
  CHECK_EQ_INT(start_with(rt, "s", "{\"next\":[{\"step\":\"Wait\",\"input\":{\"wait\":{\"mode\":\"any\","
                                   "\"conditions\":[{\"id\":\"m\",\"channel\":\"C\",\"max\":1},"
                                   "{\"id\":\"t\",\"timer_ms\":1000}]},\"again\":{\"mode\":\"any\","
                                   "\"conditions\":[{\"id\":\"m2\",\"channel\":\"C\",\"max\":1}]}}}]}"),
               DEXA_OK);
  CHECK_EQ_INT(run_ready(rt), 1); /* WaitFor */
  CHECK_EQ_INT(dexa_runtime_wait_idle(rt, "s", 0), DEXA_OK); /* waiting is idle */
  fake_set_now(&f, f.now + 1500);
  /* Both ready at this evaluation: the timer wins, the message stays queued. */
  CHECK_EQ_INT(fake_pub(rt, "s", "C", "\"hello\""), DEXA_OK);
  CHECK_EQ_INT(run_ready(rt), 3); /* Execute Wait-2, WaitFor Wait-3, Execute Wait-3 */
  CHECK_ATTR(rt, "s", "cond/Wait-2", "{\"fired\":[\"t\"],\"channels\":{}}");
  CHECK_ATTR(rt, "s", "cond/Wait-3", "{\"fired\":[],\"channels\":{\"m2\":[\"hello\"]}}");
  dexa_runtime_free(rt);
}

static void test_wait_timer_fires_on_the_clock(void) {
  fake f;
  dexa_runtime *rt = open_rt(&f, h_wait);
  CHECK(rt);
  CHECK_EQ_INT(start_with(rt, "s", "{\"next\":[{\"step\":\"Wait\",\"input\":{\"wait\":{\"mode\":\"any\","
                                   "\"conditions\":[{\"id\":\"t\",\"timer_ms\":5000}]}}}]}"),
               DEXA_OK);
  CHECK_EQ_INT(run_ready(rt), 1);
  fake_set_now(&f, f.now + 4999);
  CHECK_EQ_INT(run_ready(rt), 0);
  fake_set_now(&f, f.now + 1);
  CHECK_EQ_INT(run_ready(rt), 1);
  CHECK_ATTR(rt, "s", "cond/Wait-2", "{\"fired\":[\"t\"],\"channels\":{}}");
  dexa_runtime_free(rt);
}

static void test_wait_all_needs_every_condition(void) {
  fake f;
  dexa_runtime *rt = open_rt(&f, h_wait);
  CHECK(rt);
  CHECK_EQ_INT(start_with(rt, "s", "{\"next\":[{\"step\":\"Wait\",\"input\":{\"wait\":{\"mode\":\"all\","
                                   "\"conditions\":[{\"id\":\"a\",\"channel\":\"A\",\"min\":2,\"max\":2},"
                                   "{\"id\":\"t\",\"timer_ms\":500}]}}}]}"),
               DEXA_OK);
  CHECK_EQ_INT(run_ready(rt), 1);
  CHECK_EQ_INT(fake_pub(rt, "s", "A", "1"), DEXA_OK);
  CHECK_EQ_INT(fake_pub(rt, "s", "A", "2"), DEXA_OK);
  CHECK_EQ_INT(fake_pub(rt, "s", "A", "3"), DEXA_OK);
  CHECK_EQ_INT(run_ready(rt), 0); /* timer not due */
  fake_set_now(&f, f.now + 600);
  CHECK_EQ_INT(run_ready(rt), 1);
  CHECK_ATTR(rt, "s", "cond/Wait-2", "{\"fired\":[\"t\"],\"channels\":{\"a\":[1,2]}}");
  dexa_runtime_free(rt);
}

static void test_channel_fifo_and_max_absent_takes_all(void) {
  fake f;
  dexa_runtime *rt = open_rt(&f, h_wait);
  CHECK(rt);
  CHECK_EQ_INT(start_with(rt, "s", "{}"), DEXA_OK);
  for (int i = 1; i <= 4; i++) {
    char v[16];
    snprintf(v, sizeof v, "%d", i);
    CHECK_EQ_INT(fake_pub(rt, "s", "Q", v), DEXA_OK);
  }
  const char *d =
      "{\"decision\":{\"next\":[{\"step\":\"Wait\",\"input\":{\"wait\":{\"conditions\":[{\"id\":\"q\","
      "\"channel\":\"Q\",\"max\":2}]},\"again\":{\"conditions\":[{\"id\":\"rest\",\"channel\":\"Q\"}]}}}]}}";
  char *out = NULL;
  size_t n;
  CHECK_EQ_INT(dexa_runtime_call(rt, "s", "decide", d, strlen(d), &out, &n), DEXA_OK);
  dexa_free(out);
  CHECK_EQ_INT(run_ready(rt), 4);
  CHECK_ATTR(rt, "s", "cond/Wait-2", "{\"fired\":[],\"channels\":{\"q\":[1,2]}}");
  CHECK_ATTR(rt, "s", "cond/Wait-3", "{\"fired\":[],\"channels\":{\"rest\":[3,4]}}");
  dexa_runtime_free(rt);
}

static void test_zero_conditions_execute_at_once(void) {
  fake f;
  dexa_runtime *rt = open_rt(&f, h_wait);
  CHECK(rt);
  CHECK_EQ_INT(start_with(rt, "s", "{\"next\":[{\"step\":\"Wait\",\"input\":{\"wait\":null}}]}"), DEXA_OK);
  CHECK_EQ_INT(run_ready(rt), 2);
  CHECK_ATTR(rt, "s", "cond/Wait-2", "{\"fired\":[],\"channels\":{}}");
  dexa_runtime_free(rt);
}

static void test_parallel_steps_join_on_channel_count(void) {
  fake f;
  dexa_runtime *rt = open_rt(&f, h_wait);
  CHECK(rt);
  CHECK_EQ_INT(start_with(rt, "s", "{\"next\":[{\"step\":\"Work\",\"input\":1},{\"step\":\"Work\","
                                   "\"input\":2},{\"step\":\"Work\",\"input\":3},{\"step\":\"Join\","
                                   "\"input\":{\"wait\":{\"conditions\":[{\"id\":\"d\",\"channel\":"
                                   "\"done\",\"min\":3}]}}}]}"),
               DEXA_OK);
  /* Four steps are ready at once: claim two before completing either. */
  dexa_task *t1 = NULL, *t2 = NULL;
  CHECK_EQ_INT(dexa_runtime_poll(rt, &t1, 0), DEXA_OK);
  CHECK_EQ_INT(dexa_runtime_poll(rt, &t2, 0), DEXA_OK);
  CHECK(strcmp(dexa_task_call(t1)->step_execution_id, dexa_task_call(t2)->step_execution_id) != 0);
  dexa_task_abandon(rt, t1);
  dexa_task_abandon(rt, t2);
  fake_set_now(&f, f.now + 5000); /* their leases expire: lost workers, run again at once */
  /* Work-3, Join's WaitFor, Work-1 and Work-2 (attempt 1 again), then Join */
  CHECK_EQ_INT(run_ready(rt), 5);
  CHECK_EQ_INT(fake_count(&f, "E Work "), 3);
  CHECK_EQ_INT(fake_count(&f, "E Join Join-5 1"), 1);
  char *v = fake_get(rt, "s", "cond/Join-5");
  CHECK_CONTAINS(v, "\"d\":[");
  CHECK_CONTAINS(v, "1");
  CHECK_CONTAINS(v, "2");
  CHECK_CONTAINS(v, "3");
  dexa_free(v);
  dexa_runtime_free(rt);
}

/* ---- retries, recovery, leases -------------------------------------------------- */

static int h_fail(fake *f, const dexa_call *c, dexa_result *r) {
  if (is(c, DEXA_CALL_EXECUTE, "Start")) return base_start(c, r);
  cJSON *in = fake_input(c);
  cJSON *fails = cJSON_GetObjectItemCaseSensitive(in, "fails");
  cJSON *ra = cJSON_GetObjectItemCaseSensitive(in, "retry_after");
  int rc = DEXA_OK;
  if (c->kind == DEXA_CALL_EXECUTE && (strcmp(c->name, "Work") == 0 || strcmp(c->name, "Once") == 0 ||
                                        strcmp(c->name, "NoRec") == 0)) {
    if (cJSON_IsNumber(fails) && c->attempt <= fails->valueint) {
      rc = dexa__result_fail(r, DEXA_E_TRANSIENT, "fake failure");
      if (cJSON_IsNumber(ra)) r->retry_after_ms = (int64_t)ra->valuedouble;
    } else {
      put_write(r, c->name, "\"done\"");
    }
  } else if (is(c, DEXA_CALL_EXECUTE, "Rec")) {
    put_write(r, "rec_input", c->input);
    dexa__result_add_write(r, "rec_error", 9, c->recovery_error, c->recovery_error_len);
  }
  cJSON_Delete(in);
  return rc;
}

static void test_retries_with_backoff_on_the_clock(void) {
  fake f;
  dexa_runtime *rt = open_rt(&f, h_fail);
  CHECK(rt);
  CHECK_EQ_INT(start_with(rt, "s", "{\"next\":[{\"step\":\"Work\",\"input\":{\"fails\":2}}]}"), DEXA_OK);
  int64_t t0 = f.now;
  CHECK_EQ_INT(run_ready(rt), 1); /* attempt 1 fails: next at +1000 */
  fake_set_now(&f, t0 + 999);
  CHECK_EQ_INT(run_ready(rt), 0);
  CHECK_EQ_INT(dexa_runtime_wait_idle(rt, "s", 0), DEXA_E_TIMEOUT); /* a retry is pending */
  fake_set_now(&f, t0 + 1000);
  CHECK_EQ_INT(run_ready(rt), 1); /* attempt 2 fails: next at +2000 */
  fake_set_now(&f, t0 + 2999);
  CHECK_EQ_INT(run_ready(rt), 0);
  fake_set_now(&f, t0 + 3000);
  CHECK_EQ_INT(run_ready(rt), 1);
  CHECK_EQ_INT(fake_count(&f, "E Work Work-2 3"), 1);
  CHECK_ATTR(rt, "s", "Work", "\"done\"");
  dexa_runtime_free(rt);
}

/* Each retry appends a durable step_retrying event: the attempt that runs
 * next, of how many, the delay, the error, and the turn and call_id of the
 * Step's input. The last failure is not a retry: no event for it. */
static void test_retry_emits_step_retrying_events(void) {
  fake f;
  dexa_runtime *rt = open_rt(&f, h_fail);
  CHECK(rt);
  CHECK_EQ_INT(start_with(rt, "s", "{\"next\":[{\"step\":\"Work\",\"input\":{\"fails\":5,"
                                   "\"turn\":4,\"call_id\":\"c9\"}}]}"),
               DEXA_OK);
  int64_t t0 = f.now;
  CHECK_EQ_INT(run_ready(rt), 1);
  fake_set_now(&f, t0 + 1000);
  CHECK_EQ_INT(run_ready(rt), 1);
  fake_set_now(&f, t0 + 3000);
  CHECK_EQ_INT(run_ready(rt), 1); /* attempt 3 of 3 fails for good */
  char *out = NULL;
  size_t n = 0;
  CHECK_EQ_INT(dexa_runtime_read_events(rt, "s", "", 100, 0, &out, &n), DEXA_OK);
  cJSON *doc = cJSON_Parse(out);
  dexa_free(out);
  int seen = 0;
  cJSON *item;
  cJSON_ArrayForEach(item, cJSON_GetObjectItem(doc, "events")) {
    cJSON *e = cJSON_GetObjectItem(item, "event");
    if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(e, "type")), "step_retrying") != 0)
      continue;
    seen++;
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(e, "step")), "Work");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(e, "call_id")), "c9");
    CHECK_EQ_INT(cJSON_GetObjectItem(e, "turn")->valueint, 4);
    CHECK_EQ_INT(cJSON_GetObjectItem(e, "attempt")->valueint, seen + 1);
    CHECK_EQ_INT(cJSON_GetObjectItem(e, "max_attempts")->valueint, 3);
    CHECK_EQ_INT(cJSON_GetObjectItem(e, "delay_ms")->valuedouble, seen == 1 ? 1000 : 2000);
    CHECK_EQ_INT(cJSON_GetObjectItem(e, "retry_at_ms")->valuedouble,
                 cJSON_GetObjectItem(e, "at")->valuedouble + (seen == 1 ? 1000 : 2000));
    cJSON *err = cJSON_GetObjectItem(e, "error");
    CHECK_EQ_INT(cJSON_GetObjectItem(err, "code")->valueint, DEXA_E_TRANSIENT);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(err, "name")), "DEXA_E_TRANSIENT");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(err, "message")), "fake failure");
  }
  CHECK_EQ_INT(seen, 2);
  cJSON_Delete(doc);
  dexa_runtime_free(rt);
}

static void test_retry_after_overrides_backoff(void) {
  fake f;
  dexa_runtime *rt = open_rt(&f, h_fail);
  CHECK(rt);
  CHECK_EQ_INT(start_with(rt, "s", "{\"next\":[{\"step\":\"Work\",\"input\":{\"fails\":1,\"retry_after\":5000}}]}"),
               DEXA_OK);
  int64_t t0 = f.now;
  CHECK_EQ_INT(run_ready(rt), 1);
  fake_set_now(&f, t0 + 4999);
  CHECK_EQ_INT(run_ready(rt), 0);
  fake_set_now(&f, t0 + 5000);
  CHECK_EQ_INT(run_ready(rt), 1);
  CHECK_ATTR(rt, "s", "Work", "\"done\"");
  dexa_runtime_free(rt);
}

static void test_recovery_step_after_last_failure(void) {
  fake f;
  dexa_runtime *rt = open_rt(&f, h_fail);
  CHECK(rt);
  /* The decision's options override the defaults for this execution only. */
  CHECK_EQ_INT(start_with(rt, "s", "{\"next\":[{\"step\":\"Work\",\"input\":{\"fails\":9},"
                                   "\"options\":{\"max_attempts\":2,\"initial_backoff_ms\":10,"
                                   "\"recovery\":\"Rec\"}}]}"),
               DEXA_OK);
  CHECK_EQ_INT(run_ready(rt), 1);
  fake_set_now(&f, f.now + 10);
  CHECK_EQ_INT(run_ready(rt), 2); /* attempt 2 fails, then Rec runs */
  CHECK_EQ_INT(fake_count(&f, "E Work "), 2);
  CHECK_ATTR(rt, "s", "rec_input", "{\"fails\":9}");
  CHECK_ATTR(rt, "s", "rec_error", "{\"code\":-201,\"message\":\"fake failure\"}");
  dexa_runtime_free(rt);
}

static void test_no_recovery_fails_the_session(void) {
  fake f;
  dexa_runtime *rt = open_rt(&f, h_fail);
  CHECK(rt);
  CHECK_EQ_INT(start_with(rt, "s", "{\"next\":[{\"step\":\"NoRec\",\"input\":{\"fails\":1}},"
                                   "{\"step\":\"Wait\",\"input\":{}}]}"),
               DEXA_OK);
  run_ready(rt);
  char *out = NULL;
  size_t n;
  CHECK_EQ_INT(dexa_runtime_list_sessions(rt, NULL, 10, &out, &n), DEXA_OK);
  CHECK_CONTAINS(out, "\"status\":\"failed\"");
  dexa_free(out);
  CHECK_EQ_INT(run_ready(rt), 0);
  CHECK_EQ_INT(fake_count(&f, "E Wait "), 0);
  dexa_runtime_free(rt);
}

static void test_lost_lease_is_retried(void) {
  fake f;
  dexa_runtime *rt = open_rt(&f, h_fail);
  CHECK(rt);
  CHECK_EQ_INT(start_with(rt, "s", "{\"next\":[{\"step\":\"Work\",\"input\":{}}]}"), DEXA_OK);
  dexa_task *t = NULL;
  CHECK_EQ_INT(dexa_runtime_poll(rt, &t, 0), DEXA_OK);
  CHECK_EQ_INT(dexa_task_call(t)->attempt, 1);
  dexa_task_abandon(rt, t); /* as if the worker died */
  CHECK_EQ_INT(run_ready(rt), 0); /* still leased */
  fake_set_now(&f, f.now + 1001); /* lease_ms is 1000 */
  /* The loss is seen: run again at once, and not as a failed attempt. */
  CHECK_EQ_INT(run_ready(rt), 1);
  CHECK_EQ_INT(fake_count(&f, "E Work Work-2 1"), 1);
  CHECK_ATTR(rt, "s", "Work", "\"done\"");
  dexa_runtime_free(rt);
}

static void test_lost_single_attempt_goes_to_recovery_and_never_reruns(void) {
  fake f;
  dexa_runtime *rt = open_rt(&f, h_fail);
  CHECK(rt);
  CHECK_EQ_INT(start_with(rt, "s", "{\"next\":[{\"step\":\"Once\",\"input\":{\"id\":7}}]}"), DEXA_OK);
  dexa_task *t = NULL;
  CHECK_EQ_INT(dexa_runtime_poll(rt, &t, 0), DEXA_OK);
  dexa_result *res = NULL;
  CHECK_EQ_INT(fake_dispatch(&f, &res, dexa_task_call(t)), DEXA_OK); /* the write "happens" */
  dexa_task_abandon(rt, t);                                           /* then the worker dies */
  dexa_result_free(res);
  fake_set_now(&f, f.now + 1001);
  CHECK_EQ_INT(run_ready(rt), 1);
  CHECK_EQ_INT(fake_count(&f, "E Once "), 1); /* not run again */
  CHECK_EQ_INT(fake_count(&f, "E Rec Rec-3 1"), 1);
  CHECK_ATTR(rt, "s", "rec_input", "{\"id\":7}");
  char *v = fake_get(rt, "s", "rec_error");
  CHECK_CONTAINS(v, "\"code\":-202");
  dexa_free(v);
  dexa_runtime_free(rt);
}

static void test_late_completion_is_dropped(void) {
  fake f;
  dexa_runtime *rt = open_rt(&f, h_fail);
  CHECK(rt);
  CHECK_EQ_INT(start_with(rt, "s", "{\"next\":[{\"step\":\"Work\",\"input\":{}}]}"), DEXA_OK);
  dexa_task *t = NULL;
  CHECK_EQ_INT(dexa_runtime_poll(rt, &t, 0), DEXA_OK);
  dexa_result *res = NULL;
  CHECK_EQ_INT(fake_dispatch(&f, &res, dexa_task_call(t)), DEXA_OK);
  fake_set_now(&f, f.now + 1001);
  CHECK_EQ_INT(dexa_runtime_complete(rt, t, res), DEXA_E_TIMEOUT);
  dexa_result_free(res);
  CHECK_ATTR(rt, "s", "Work", "null");
  dexa_runtime_free(rt);
}

static void test_complete_applies_in_time(void) {
  fake f;
  dexa_runtime *rt = open_rt(&f, h_fail);
  CHECK(rt);
  CHECK_EQ_INT(start_with(rt, "s", "{\"next\":[{\"step\":\"Work\",\"input\":{}}]}"), DEXA_OK);
  dexa_task *t = NULL;
  CHECK_EQ_INT(dexa_runtime_poll(rt, &t, 0), DEXA_OK);
  CHECK_EQ_INT(dexa_runtime_poll(rt, &(dexa_task *){NULL}, 0), DEXA_E_TIMEOUT);
  dexa_result *res = NULL;
  CHECK_EQ_INT(fake_dispatch(&f, &res, dexa_task_call(t)), DEXA_OK);
  fake_set_now(&f, f.now + 999);
  CHECK_EQ_INT(dexa_runtime_complete(rt, t, res), DEXA_OK);
  dexa_result_free(res);
  CHECK_ATTR(rt, "s", "Work", "\"done\"");
  dexa_runtime_free(rt);
}

/* ---- cancel, locked steps, RPCs ------------------------------------------------ */

static void test_cancel_drops_queued_waiting_and_running(void) {
  fake f;
  dexa_runtime *rt = open_rt(&f, h_fail);
  CHECK(rt);
  CHECK_EQ_INT(start_with(rt, "s", "{\"next\":[{\"step\":\"Work\",\"input\":{}},{\"step\":\"Wait\",\"input\":{}},"
                                   "{\"step\":\"Once\",\"input\":{}}]}"),
               DEXA_OK);
  dexa_task *t = NULL;
  CHECK_EQ_INT(dexa_runtime_poll(rt, &t, 0), DEXA_OK);
  char claimed[64];
  snprintf(claimed, sizeof claimed, "%s", dexa_task_call(t)->name);
  const char *d = "{\"decision\":{\"cancel\":[\"Work\",\"Wait\",\"Once\"]}}";
  char *out = NULL;
  size_t n;
  CHECK_EQ_INT(dexa_runtime_call(rt, "s", "decide", d, strlen(d), &out, &n), DEXA_OK);
  dexa_free(out);
  dexa_result *res = NULL;
  CHECK_EQ_INT(fake_dispatch(&f, &res, dexa_task_call(t)), DEXA_OK);
  CHECK_EQ_INT(dexa_runtime_complete(rt, t, res), DEXA_E_TIMEOUT);
  dexa_result_free(res);
  CHECK_ATTR(rt, "s", claimed, "null");
  CHECK_EQ_INT(run_ready(rt), 0);
  CHECK_EQ_INT(dexa_runtime_wait_idle(rt, "s", 0), DEXA_OK);
  dexa_runtime_free(rt);
}

static void test_complete_decision_ends_the_session(void) {
  fake f;
  dexa_runtime *rt = open_rt(&f, h_fail);
  CHECK(rt);
  CHECK_EQ_INT(start_with(rt, "s", "{\"next\":[{\"step\":\"Wait\",\"input\":{}}]}"), DEXA_OK);
  const char *d = "{\"decision\":{\"complete\":true,\"next\":[{\"step\":\"Work\"}]}}";
  char *out = NULL;
  size_t n;
  CHECK_EQ_INT(dexa_runtime_call(rt, "s", "decide", d, strlen(d), &out, &n), DEXA_OK);
  dexa_free(out);
  CHECK_EQ_INT(run_ready(rt), 0);
  CHECK_EQ_INT(dexa_runtime_list_sessions(rt, NULL, 10, &out, &n), DEXA_OK);
  CHECK_CONTAINS(out, "\"status\":\"completed\"");
  dexa_free(out);
  dexa_runtime_free(rt);
}

static int h_locked(fake *f, const dexa_call *c, dexa_result *r) {
  if (is(c, DEXA_CALL_EXECUTE, "Start")) return base_start(c, r);
  if (is(c, DEXA_CALL_EXECUTE, "Locked")) {
    const char *v;
    size_t n;
    int count = 0;
    if (c->attr_get(c->attr_user_data, "count", 5, &v, &n) == DEXA_OK) count = atoi(v);
    char buf[16];
    snprintf(buf, sizeof buf, "%d", count + 1);
    put_write(r, "count", buf);
  }
  return DEXA_OK;
}

static void test_locked_steps_run_inline_never_polled(void) {
  fake f;
  dexa_runtime *rt = open_rt(&f, h_locked);
  CHECK(rt);
  CHECK_EQ_INT(start_with(rt, "s", "{\"next\":[{\"step\":\"Locked\"},{\"step\":\"Locked\"},"
                                   "{\"step\":\"Locked\"}]}"),
               DEXA_OK);
  dexa_task *t = NULL;
  /* poll never hands a locked step to the host: it runs them itself. */
  CHECK_EQ_INT(dexa_runtime_poll(rt, &t, 0), DEXA_E_TIMEOUT);
  CHECK(t == NULL);
  CHECK_EQ_INT(fake_count(&f, "E Locked "), 3);
  CHECK_ATTR(rt, "s", "count", "3");
  dexa_runtime_free(rt);
}

static int h_locked_wait(fake *f, const dexa_call *c, dexa_result *r) {
  if (is(c, DEXA_CALL_EXECUTE, "Start")) return base_start(c, r);
  if (is(c, DEXA_CALL_WAIT_FOR, "LockedWait"))
    put_wait(r, "{\"conditions\":[{\"id\":\"m\",\"channel\":\"C\",\"min\":1}]}");
  if (is(c, DEXA_CALL_EXECUTE, "LockedWait"))
    dexa__result_add_write(r, "unblocked", 9, c->conditions, c->conditions_len);
  return DEXA_OK;
}

/* An RPC that satisfies a locked Step's wait runs that Step in its own
 * commit: no claim or worker is needed before the RPC returns. */
static void test_rpc_runs_the_locked_step_it_unblocks(void) {
  fake f;
  dexa_runtime *rt = open_rt(&f, h_locked_wait);
  CHECK(rt);
  CHECK_EQ_INT(start_with(rt, "s", "{\"next\":[{\"step\":\"LockedWait\"}]}"), DEXA_OK);
  CHECK_EQ_INT(run_ready(rt), 1); /* its WaitFor */
  CHECK_EQ_INT(fake_count(&f, "E LockedWait "), 0);
  CHECK_EQ_INT(fake_pub(rt, "s", "C", "\"go\""), DEXA_OK);
  CHECK_EQ_INT(fake_count(&f, "E LockedWait "), 1);
  CHECK_ATTR(rt, "s", "unblocked", "{\"fired\":[],\"channels\":{\"m\":[\"go\"]}}");
  CHECK_EQ_INT(dexa_runtime_wait_idle(rt, "s", 0), DEXA_OK);
  dexa_runtime_free(rt);
}

static void test_failed_rpc_changes_nothing(void) {
  fake f;
  dexa_runtime *rt = open_rt(&f, h_wait);
  CHECK(rt);
  CHECK_EQ_INT(start_with(rt, "s", "{\"next\":[{\"step\":\"Wait\",\"input\":{\"wait\":{\"conditions\":"
                                   "[{\"id\":\"c\",\"channel\":\"C\"}]}}}]}"),
               DEXA_OK);
  CHECK_EQ_INT(run_ready(rt), 1);
  char *out = NULL;
  size_t n;
  const char *in = "{\"key\":\"k\",\"value\":1}";
  CHECK_EQ_INT(dexa_runtime_call(rt, "s", "fail", in, strlen(in), &out, &n), DEXA_E_BAD_STATE);
  CHECK_STR(out, "{\"error\":{\"code\":-108,\"name\":\"DEXA_E_BAD_STATE\",\"message\":\"refused\"}}");
  dexa_free(out);
  CHECK_ATTR(rt, "s", "k", "null");
  CHECK_EQ_INT(run_ready(rt), 0); /* its publish to C did not happen */
  CHECK_EQ_INT(dexa_runtime_call(rt, "s", "put", in, strlen(in), &out, &n), DEXA_OK);
  dexa_free(out);
  CHECK_ATTR(rt, "s", "k", "1");
  CHECK_EQ_INT(run_ready(rt), 1); /* the successful put's publish woke the wait */
  CHECK_EQ_INT(dexa_runtime_call(rt, "s", "nope", "{}", 2, &out, &n), DEXA_E_UNKNOWN_RPC);
  CHECK_CONTAINS(out, "DEXA_E_UNKNOWN_RPC");
  dexa_free(out);
  CHECK_EQ_INT(dexa_runtime_call(rt, "zz", "put", in, strlen(in), &out, &n), DEXA_E_NOT_FOUND);
  dexa_free(out);
  CHECK_EQ_INT(dexa_runtime_call(rt, "s", "peek", "{\"key\":\"k\"}", 11, &out, &n), DEXA_OK);
  CHECK_STR(out, "{\"value\":1}");
  dexa_free(out);
  dexa_runtime_free(rt);
}

static void test_bad_decision_counts_as_failed_attempt(void) {
  fake f;
  dexa_runtime *rt = open_rt(&f, h_basic);
  CHECK(rt);
  CHECK_EQ_INT(start_with(rt, "s", "{}"), DEXA_OK);
  const char *d = "{\"decision\":{\"next\":[{\"step\":\"NoSuchStep\"}]}}";
  char *out = NULL;
  size_t n;
  CHECK_EQ_INT(dexa_runtime_call(rt, "s", "decide", d, strlen(d), &out, &n), DEXA_E_UNKNOWN_STEP);
  dexa_free(out);
  dexa_runtime_free(rt);
}

static void test_state_survives_reopen(void) {
  fake f;
  dexa_runtime *rt = open_rt(&f, h_wait);
  CHECK(rt);
  CHECK_EQ_INT(start_with(rt, "s", "{\"next\":[{\"step\":\"Wait\",\"input\":{\"wait\":{\"conditions\":"
                                   "[{\"id\":\"c\",\"channel\":\"C\"}]}}}]}"),
               DEXA_OK);
  CHECK_EQ_INT(run_ready(rt), 1);
  char *out = NULL;
  size_t n;
  CHECK_EQ_INT(dexa_runtime_call(rt, "s", "put", "{\"key\":\"k\",\"value\":\"v\"}", 23, &out, &n), DEXA_OK);
  dexa_free(out);
  dexa_runtime_free(rt);
  /* put also published to C: the waiting step is ready for Execute. */
  rt = NULL;
  CHECK_EQ_INT(fake_open(&rt, &f, DESC, dbpath, 1000, 10000), DEXA_OK);
  CHECK_ATTR(rt, "s", "k", "\"v\"");
  CHECK_EQ_INT(run_ready(rt), 1);
  CHECK_ATTR(rt, "s", "cond/Wait-2", "{\"fired\":[],\"channels\":{\"c\":[1]}}");
  CHECK_EQ_INT(start_with(rt, "s", "{}"), DEXA_E_ALREADY_EXISTS);
  dexa_runtime_free(rt);
}

/* Work reads attribute "k" through the dispatch's reader and records what
 * it saw as "seen". */
static int h_read_k(fake *f, const dexa_call *c, dexa_result *r) {
  if (is(c, DEXA_CALL_EXECUTE, "Start")) return base_start(c, r);
  if (is(c, DEXA_CALL_EXECUTE, "Work")) {
    const char *v = NULL;
    size_t n = 0;
    char seen[256] = "null";
    if (c->attr_get(c->attr_user_data, "k", 1, &v, &n) == DEXA_OK)
      snprintf(seen, sizeof seen, "%.*s", (int)n, v);
    put_write(r, "seen", seen);
    put_decision(r, "{\"next\":[]}");
  }
  return DEXA_OK;
}

static int put_k(dexa_runtime *rt, const char *value) {
  char in[128], *out = NULL;
  size_t n;
  snprintf(in, sizeof in, "{\"key\":\"k\",\"value\":\"%s\"}", value);
  int rc = dexa_runtime_call(rt, "s", "put", in, strlen(in), &out, &n);
  dexa_free(out);
  return rc;
}

static int decide_work(dexa_runtime *rt) {
  const char *d = "{\"decision\":{\"next\":[{\"step\":\"Work\"}]}}";
  char *out = NULL;
  size_t n;
  int rc = dexa_runtime_call(rt, "s", "decide", d, strlen(d), &out, &n);
  dexa_free(out);
  return rc;
}

/* Two runtimes on one store file stand for two processes: a Step claimed
 * by one reads what the other wrote last, although the first holds the
 * session in its session cache from an earlier Step. */
static void test_a_step_reads_what_another_process_wrote(void) {
  fake fa, fb;
  dexa_runtime *a = open_rt(&fa, h_read_k), *b = NULL;
  CHECK(a);
  fake_init(&fb, h_read_k);
  CHECK_EQ_INT(fake_open(&b, &fb, DESC, dbpath, 1000, 10000), DEXA_OK);
  CHECK_EQ_INT(start_with(a, "s", "{}"), DEXA_OK);
  CHECK_EQ_INT(put_k(a, "one"), DEXA_OK);
  CHECK_EQ_INT(decide_work(a), DEXA_OK);
  CHECK_EQ_INT(run_ready(a), 1);
  CHECK_ATTR(a, "s", "seen", "\"one\"");
  CHECK_EQ_INT(put_k(b, "two"), DEXA_OK);
  CHECK_EQ_INT(decide_work(a), DEXA_OK);
  CHECK_EQ_INT(run_ready(a), 1);
  CHECK_ATTR(a, "s", "seen", "\"two\"");
  /* And the other way round, after a's writes moved the version on. */
  CHECK_EQ_INT(put_k(a, "three"), DEXA_OK);
  CHECK_EQ_INT(decide_work(b), DEXA_OK);
  CHECK_EQ_INT(run_ready(b), 1);
  CHECK_ATTR(b, "s", "seen", "\"three\"");
  dexa_runtime_free(b);
  dexa_runtime_free(a);
}

static void test_list_sessions_pages_newest_first(void) {
  fake f;
  dexa_runtime *rt = open_rt(&f, h_basic);
  CHECK(rt);
  const char *ids[] = {"a", "b", "c", "d", "e"};
  for (int i = 0; i < 5; i++) {
    fake_set_now(&f, 1000 + i);
    CHECK_EQ_INT(start_with(rt, ids[i], "{}"), DEXA_OK);
  }
  char *out = NULL, next[128];
  size_t n;
  CHECK_EQ_INT(dexa_runtime_list_sessions(rt, NULL, 2, &out, &n), DEXA_OK);
  CHECK_CONTAINS(out, "{\"sessions\":[{\"session_id\":\"e\",\"created_ms\":1004,\"flow_type\":\"Fake\"");
  CHECK_CONTAINS(out, "\"session_id\":\"d\"");
  cJSON *j = cJSON_Parse(out);
  snprintf(next, sizeof next, "%s", cJSON_GetObjectItem(j, "next")->valuestring);
  cJSON_Delete(j);
  dexa_free(out);
  CHECK_EQ_INT(dexa_runtime_list_sessions(rt, next, 2, &out, &n), DEXA_OK);
  CHECK_CONTAINS(out, "\"session_id\":\"c\"");
  CHECK_CONTAINS(out, "\"session_id\":\"b\"");
  j = cJSON_Parse(out);
  snprintf(next, sizeof next, "%s", cJSON_GetObjectItem(j, "next")->valuestring);
  cJSON_Delete(j);
  dexa_free(out);
  CHECK_EQ_INT(dexa_runtime_list_sessions(rt, next, 2, &out, &n), DEXA_OK);
  CHECK_CONTAINS(out, "[{\"session_id\":\"a\"");
  CHECK_CONTAINS(out, "\"next\":null");
  dexa_free(out);
  CHECK_EQ_INT(dexa_runtime_list_sessions(rt, NULL, 0, &out, &n), DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(dexa_runtime_list_sessions(rt, "junk", 5, &out, &n), DEXA_E_INVALID_ARG);
  dexa_runtime_free(rt);
}

static void test_memory_store_and_options(void) {
  fake f;
  fake_init(&f, h_basic);
  dexa_runtime *rt = NULL;
  CHECK_EQ_INT(fake_open(&rt, &f, DESC, ":memory:", 1000, 0), DEXA_OK);
  CHECK_EQ_INT(start_with(rt, "m", "{\"next\":[{\"step\":\"Work\",\"input\":5}]}"), DEXA_OK);
  CHECK_EQ_INT(run_ready(rt), 1);
  CHECK_ATTR(rt, "m", "work", "5");
  dexa_runtime_free(rt);
  dexa_runtime_options o;
  CHECK_EQ_INT(dexa_runtime_options_init(&o, 8), DEXA_E_STRUCT_SIZE);
  CHECK_EQ_INT(dexa_runtime_options_init(&o, sizeof o), DEXA_OK);
  CHECK_EQ_INT(o.lease_ms, 10000);
  o.sqlite_synchronous = "sometimes";
  o.store = ":memory:";
  rt = NULL;
  CHECK_EQ_INT(dexa__runtime_new_with_dispatch(&rt, DESC, fake_dispatch, &f, &o, NULL, 0),
               DEXA_E_INVALID_ARG);
  CHECK(rt == NULL);
  CHECK_EQ_INT(dexa__runtime_new_with_dispatch(&rt, "{\"nope\":1}", fake_dispatch, &f, NULL, NULL, 0),
               DEXA_E_INVALID_JSON);
}

int main(void) {
  RUN(test_start_session_runs_start_step_inline);
  RUN(test_start_session_errors_change_nothing);
  RUN(test_next_step_runs_and_is_deleted);
  RUN(test_wait_any_timer_wins_over_channel_and_only_winner_consumes);
  RUN(test_wait_timer_fires_on_the_clock);
  RUN(test_wait_all_needs_every_condition);
  RUN(test_channel_fifo_and_max_absent_takes_all);
  RUN(test_zero_conditions_execute_at_once);
  RUN(test_parallel_steps_join_on_channel_count);
  RUN(test_retries_with_backoff_on_the_clock);
  RUN(test_retry_emits_step_retrying_events);
  RUN(test_retry_after_overrides_backoff);
  RUN(test_recovery_step_after_last_failure);
  RUN(test_no_recovery_fails_the_session);
  RUN(test_lost_lease_is_retried);
  RUN(test_lost_single_attempt_goes_to_recovery_and_never_reruns);
  RUN(test_late_completion_is_dropped);
  RUN(test_complete_applies_in_time);
  RUN(test_cancel_drops_queued_waiting_and_running);
  RUN(test_complete_decision_ends_the_session);
  RUN(test_locked_steps_run_inline_never_polled);
  RUN(test_rpc_runs_the_locked_step_it_unblocks);
  RUN(test_failed_rpc_changes_nothing);
  RUN(test_bad_decision_counts_as_failed_attempt);
  RUN(test_state_survives_reopen);
  RUN(test_a_step_reads_what_another_process_wrote);
  RUN(test_list_sessions_pages_newest_first);
  RUN(test_memory_store_and_options);
  temp_store_remove(dbpath);
  TEST_MAIN_END();
}
