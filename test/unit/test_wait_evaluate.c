/* dexa_wait_evaluate: a host's answer to "is this wait satisfied, and what
 * does Execute consume?", from channel counts (a callback or a JSON
 * object) and fired timers (the host's own, or the clock). */
#include <cjson/cJSON.h>
#include <dexagents/dexagents.h>

#include "testing.h"

static char *eval_counts(const char *wait, const char *counts, int64_t now, int64_t started,
                         const char *fired, int *rc) {
  dexa_wait_state st;
  dexa_wait_state_init(&st, sizeof st);
  st.now_ms = now;
  st.started_ms = started;
  st.fired = fired;
  st.fired_len = fired ? strlen(fired) : 0;
  st.channel_counts = counts;
  st.channel_counts_len = counts ? strlen(counts) : 0;
  char *out = NULL;
  *rc = dexa_wait_evaluate(&out, NULL, wait, wait ? strlen(wait) : 0, &st);
  return out;
}

static char *eval(const char *wait, const char *counts, int64_t now) {
  int rc;
  char *out = eval_counts(wait, counts, now, 1000, NULL, &rc);
  if (rc != DEXA_OK) fprintf(stderr, "    %s: %s\n", wait, dexa_error_name(rc));
  return out;
}

#define CHECK_EVAL(wait, counts, now, want)                                             \
  do {                                                                                  \
    char *_o = eval(wait, counts, now);                                                 \
    int _ok = _o && strcmp(_o, want) == 0;                                              \
    if (!_ok) fprintf(stderr, "    got  %s\n    want %s\n", _o ? _o : "(null)", want);  \
    dexa_free(_o);                                                                      \
    CHECK(_ok);                                                                         \
  } while (0)

static const char *ANSWER_OR_TIMER =
    "{\"mode\":\"any\",\"conditions\":[{\"id\":\"answer\",\"channel\":\"D/c1\",\"min\":1,\"max\":1},"
    "{\"id\":\"timer\",\"timer_ms\":60000}]}";

static void test_any_waits_then_the_channel_wins(void) {
  CHECK_EVAL(ANSWER_OR_TIMER, "{}", 2000,
             "{\"ready\":false,\"fired\":[],\"consume\":[],\"channels\":[\"D/c1\"],"
             "\"timers\":[{\"id\":\"timer\",\"timer_ms\":60000,\"due_ms\":61000}],"
             "\"next_due_ms\":61000}");
  CHECK_EVAL(ANSWER_OR_TIMER, "{\"D/c1\":3}", 2000,
             "{\"ready\":true,\"fired\":[],\"consume\":[{\"id\":\"answer\",\"channel\":\"D/c1\","
             "\"count\":1}],\"channels\":[\"D/c1\"],"
             "\"timers\":[{\"id\":\"timer\",\"timer_ms\":60000,\"due_ms\":61000}],"
             "\"next_due_ms\":null}");
}

static void test_any_timers_win_first_and_consume_nothing(void) {
  CHECK_EVAL(ANSWER_OR_TIMER, "{\"D/c1\":1}", 61000,
             "{\"ready\":true,\"fired\":[\"timer\"],\"consume\":[],\"channels\":[\"D/c1\"],"
             "\"timers\":[{\"id\":\"timer\",\"timer_ms\":60000,\"due_ms\":61000}],"
             "\"next_due_ms\":null}");
}

static void test_all_needs_every_condition_and_shares_a_channel(void) {
  const char *w = "{\"mode\":\"all\",\"conditions\":[{\"id\":\"a\",\"channel\":\"C\",\"min\":2},"
                  "{\"id\":\"b\",\"channel\":\"C\",\"min\":1,\"max\":2},"
                  "{\"id\":\"t\",\"timer_ms\":10}]}";
  char *o = eval(w, "{\"C\":9}", 1005);
  CHECK_CONTAINS(o, "\"ready\":false");
  CHECK_CONTAINS(o, "\"next_due_ms\":1010");
  dexa_free(o);
  o = eval(w, "{\"C\":2}", 1010);
  CHECK_CONTAINS(o, "\"ready\":false"); /* both minimums need 3 */
  dexa_free(o);
  /* "a" has no max: it takes all but the minimum "b" needs; "b" the rest. */
  CHECK_EVAL(w, "{\"C\":9}", 1010,
             "{\"ready\":true,\"fired\":[\"t\"],\"consume\":[{\"id\":\"a\",\"channel\":\"C\","
             "\"count\":8},{\"id\":\"b\",\"channel\":\"C\",\"count\":1}],\"channels\":[\"C\"],"
             "\"timers\":[{\"id\":\"t\",\"timer_ms\":10,\"due_ms\":1010}],\"next_due_ms\":null}");
}

static void test_min_zero_and_max_absent(void) {
  const char *w = "{\"mode\":\"any\",\"conditions\":[{\"id\":\"q\",\"channel\":\"Q\",\"min\":0}]}";
  CHECK_EVAL(w, NULL, 0,
             "{\"ready\":true,\"fired\":[],\"consume\":[{\"id\":\"q\",\"channel\":\"Q\",\"count\":0}],"
             "\"channels\":[\"Q\"],\"timers\":[],\"next_due_ms\":null}");
  char *o = eval(w, "{\"Q\":4}", 0);
  CHECK_CONTAINS(o, "\"count\":4");
  dexa_free(o);
}

static void test_no_wait_is_ready_at_once(void) {
  static const char *empty[] = {NULL, "null", " ", "{}", "{\"mode\":\"any\",\"conditions\":[]}"};
  for (size_t i = 0; i < sizeof empty / sizeof *empty; i++)
    CHECK_EVAL(empty[i], NULL, 0,
               "{\"ready\":true,\"fired\":[],\"consume\":[],\"channels\":[],\"timers\":[],"
               "\"next_due_ms\":null}");
}

/* A host with its own durable timers names the fired ones; the clock is
 * then not used. */
static void test_the_hosts_own_timers(void) {
  int rc;
  char *o = eval_counts(ANSWER_OR_TIMER, "{}", 999999999, 0, "[]", &rc);
  CHECK_EQ_INT(rc, DEXA_OK);
  CHECK_CONTAINS(o, "\"ready\":false");
  dexa_free(o);
  o = eval_counts(ANSWER_OR_TIMER, "{}", 0, 0, "[\"timer\"]", &rc);
  CHECK_EQ_INT(rc, DEXA_OK);
  CHECK_CONTAINS(o, "\"ready\":true,\"fired\":[\"timer\"]");
  dexa_free(o);
}

static int count_cb(void *user, const char *channel, size_t len, int64_t *count) {
  int *calls = user;
  (*calls)++;
  if (len == 4 && memcmp(channel, "D/c1", 4) == 0) {
    *count = 1;
    return DEXA_OK;
  }
  return DEXA_E_NOT_FOUND; /* the host's error */
}

static void test_channel_count_callback(void) {
  int calls = 0;
  dexa_wait_state st;
  CHECK_EQ_INT(dexa_wait_state_init(&st, sizeof st), DEXA_OK);
  st.channel_user_data = &calls;
  st.channel_count = count_cb;
  st.channel_counts = "not used";
  st.channel_counts_len = 8;
  char *out = NULL;
  size_t len = 0;
  CHECK_EQ_INT(dexa_wait_evaluate(&out, &len, ANSWER_OR_TIMER, strlen(ANSWER_OR_TIMER), &st), DEXA_OK);
  CHECK_EQ_INT(len, strlen(out));
  CHECK_CONTAINS(out, "\"count\":1");
  CHECK_EQ_INT(calls, 1);
  dexa_free(out);
  const char *other = "{\"conditions\":[{\"id\":\"x\",\"channel\":\"Other\"}]}";
  CHECK_EQ_INT(dexa_wait_evaluate(&out, &len, other, strlen(other), &st), DEXA_E_CALLBACK_FAILED);
  CHECK(out == NULL);
}

static void test_bad_input_is_refused(void) {
  static const char *bad_waits[] = {
      "[]", "{\"mode\":\"some\"}", "{\"conditions\":{}}", "{\"conditions\":[{\"channel\":\"C\"}]}",
      "{\"conditions\":[{\"id\":\"a\"}]}", "{\"conditions\":[{\"id\":\"a\",\"timer_ms\":-1}]}",
      "{\"conditions\":[{\"id\":\"a\",\"channel\":\"C\",\"min\":2,\"max\":1}]}",
      "{\"conditions\":[{\"id\":\"a\",\"channel\":\"C\",\"min\":1.5}]}",
      "{\"conditions\":[{\"id\":\"a\",\"channel\":\"C\"},{\"id\":\"a\",\"timer_ms\":1}]}",
      "{} x", "{"};
  int rc;
  for (size_t i = 0; i < sizeof bad_waits / sizeof *bad_waits; i++) {
    char *o = eval_counts(bad_waits[i], NULL, 0, 0, NULL, &rc);
    if (rc != DEXA_E_INVALID_JSON) fprintf(stderr, "    wait %s: %s\n", bad_waits[i], dexa_error_name(rc));
    CHECK_EQ_INT(rc, DEXA_E_INVALID_JSON);
    CHECK(o == NULL);
  }
  static const char *bad_counts[] = {"[]", "{\"D/c1\":-1}", "{\"D/c1\":1.5}", "{\"D/c1\":\"1\"}", "{"};
  for (size_t i = 0; i < sizeof bad_counts / sizeof *bad_counts; i++) {
    char *o = eval_counts(ANSWER_OR_TIMER, bad_counts[i], 0, 0, NULL, &rc);
    CHECK_EQ_INT(rc, DEXA_E_INVALID_JSON);
    CHECK(o == NULL);
  }
  char *o = eval_counts(ANSWER_OR_TIMER, NULL, 0, 0, "{}", &rc);
  CHECK_EQ_INT(rc, DEXA_E_INVALID_JSON);
  CHECK(o == NULL);
  dexa_wait_state st;
  CHECK_EQ_INT(dexa_wait_state_init(NULL, sizeof st), DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(dexa_wait_state_init(&st, 8), DEXA_E_STRUCT_SIZE);
  dexa_wait_state_init(&st, sizeof st);
  char *out = (char *)"x";
  CHECK_EQ_INT(dexa_wait_evaluate(&out, NULL, "{}", 2, NULL), DEXA_E_INVALID_ARG);
  CHECK(out == NULL);
  CHECK_EQ_INT(dexa_wait_evaluate(NULL, NULL, "{}", 2, &st), DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(dexa_wait_evaluate(&out, NULL, NULL, 2, &st), DEXA_E_INVALID_ARG);
  st.struct_size = 12;
  CHECK_EQ_INT(dexa_wait_evaluate(&out, NULL, "{}", 2, &st), DEXA_E_STRUCT_SIZE);
}

int main(void) {
  RUN(test_any_waits_then_the_channel_wins);
  RUN(test_any_timers_win_first_and_consume_nothing);
  RUN(test_all_needs_every_condition_and_shares_a_channel);
  RUN(test_min_zero_and_max_absent);
  RUN(test_no_wait_is_ready_at_once);
  RUN(test_the_hosts_own_timers);
  RUN(test_channel_count_callback);
  RUN(test_bad_input_is_refused);
  TEST_MAIN_END();
}
