/* Session lifetime on the embedded runtime, with a test clock: the idle
 * timeout ends a session (and reads then say so), end_session, retention
 * and the sweep that deletes expired sessions in bounded batches, and a
 * workload that starts and abandons sessions forever with a store that
 * stays bounded. Nothing here waits for real time except the worker
 * thread test, which waits for a condition with a generous deadline.
 * Runs on PostgreSQL too (test/pg/suites.sh sets DEXA_TEST_STORE).
 * test-needs: sqlite postgresql */
#include <cjson/cJSON.h>
#include <dexagents/dexagents.h>
#include <stdatomic.h>
#include <sqlite3.h>
#include <time.h>
#include <unistd.h>

#include "store/store.h"
#include "support/temp_store.h"
#include "testing.h"

#define MIN_MS ((int64_t)60 * 1000)
#define HOUR_MS (60 * MIN_MS)

static _Atomic int64_t now_ms = 1700000000000;
static int64_t test_clock(void *user) { return atomic_load(&now_ms); }
static void advance(int64_t ms) { atomic_fetch_add(&now_ms, ms); }

static dexa_agent *agent;
static char path[1024];

static dexa_agent *make_agent(void) {
  dexa_model *m = NULL;
  if (dexa_model_demo_new(&m, "mock/dex") != DEXA_OK) return NULL;
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.models = &m;
  def.model_count = 1;
  def.builtin_tools = DEXA_BUILTIN_ALL;
  dexa_agent *a = NULL;
  dexa_agent_new(&a, &def, NULL, 0);
  dexa_model_free(m);
  return a;
}

/* A runtime on a new store; sweep_ms 0: only dexa_runtime_sweep sweeps. */
static dexa_runtime *open_rt(const char *name, int64_t idle, int64_t retention, int64_t sweep_ms) {
  temp_store_path(path, sizeof path, name);
  dexa_runtime_options o;
  dexa_runtime_options_init(&o, sizeof o);
  if (o.session_idle_timeout_ms != (int64_t)30 * 24 * HOUR_MS ||
      o.session_retention_ms != (int64_t)7 * 24 * HOUR_MS || o.sweep_interval_ms != 60000) {
    fprintf(stderr, "    unexpected lifetime defaults\n");
    return NULL;
  }
  o.store = path;
  o.sqlite_synchronous = "normal";
  o.clock = test_clock;
  o.session_idle_timeout_ms = idle;
  o.session_retention_ms = retention;
  o.sweep_interval_ms = sweep_ms;
  dexa_runtime *rt = NULL;
  char err[256];
  if (dexa_runtime_new(&rt, agent, &o, err, sizeof err) != DEXA_OK)
    fprintf(stderr, "    dexa_runtime_new: %s\n", err);
  return rt;
}

static void close_rt(dexa_runtime *rt) {
  dexa_runtime_free(rt);
  temp_store_remove(path);
}

static int call(dexa_runtime *rt, const char *sid, const char *rpc, const char *in, char **out) {
  char *o = NULL;
  size_t n;
  int rc = dexa_runtime_call(rt, sid, rpc, in, strlen(in), &o, &n);
  if (out)
    *out = o;
  else
    dexa_free(o);
  return rc;
}

static int say(dexa_runtime *rt, const char *sid, const char *text) {
  char in[256];
  snprintf(in, sizeof in, "{\"text\":\"%s\"}", text);
  int rc = call(rt, sid, "send_message", in, NULL);
  if (rc == DEXA_OK) rc = dexa_runtime_run_ready(rt, NULL);
  return rc;
}

static int start(dexa_runtime *rt, const char *sid) {
  return dexa_runtime_start_session(rt, sid, NULL, 0, NULL, NULL);
}

/* One sweep round: its counts ("ended", "deleted_sessions", ...). */
typedef struct sweep_out {
  int64_t ended, sessions, rows;
  int more;
} sweep_out;

static int sweep(dexa_runtime *rt, sweep_out *s) {
  char *out = NULL;
  size_t n;
  int rc = dexa_runtime_sweep(rt, &out, &n);
  memset(s, 0, sizeof *s);
  cJSON *j = out ? cJSON_Parse(out) : NULL;
  if (j) {
    s->ended = (int64_t)cJSON_GetObjectItem(j, "ended")->valuedouble;
    s->sessions = (int64_t)cJSON_GetObjectItem(j, "deleted_sessions")->valuedouble;
    s->rows = (int64_t)cJSON_GetObjectItem(j, "deleted_rows")->valuedouble;
    s->more = cJSON_IsTrue(cJSON_GetObjectItem(j, "more"));
  }
  cJSON_Delete(j);
  dexa_free(out);
  return rc;
}

/* Sessions in the store (every page of dexa_runtime_list_sessions). */
static int count_sessions(dexa_runtime *rt, const char *status) {
  int total = 0;
  char after[512] = "";
  for (;;) {
    char *out = NULL;
    size_t n;
    if (dexa_runtime_list_sessions(rt, after[0] ? after : NULL, 1000, &out, &n) != DEXA_OK) return -1;
    cJSON *j = cJSON_Parse(out);
    dexa_free(out);
    const cJSON *s;
    cJSON_ArrayForEach(s, cJSON_GetObjectItem(j, "sessions")) {
      if (!status || strcmp(cJSON_GetObjectItem(s, "status")->valuestring, status) == 0) total++;
    }
    const cJSON *next = cJSON_GetObjectItem(j, "next");
    int more = cJSON_IsString(next);
    if (more) snprintf(after, sizeof after, "%s", next->valuestring);
    cJSON_Delete(j);
    if (!more) return total;
  }
}

static void test_idle_session_is_ended_and_reads_say_it_is_not_retained(void) {
  dexa_runtime *rt = open_rt("life-idle", 10 * MIN_MS, HOUR_MS, 0);
  CHECK(rt);
  CHECK_EQ_INT(start(rt, "idle"), DEXA_OK);
  CHECK_EQ_INT(say(rt, "idle", "hello"), DEXA_OK);
  sweep_out s;
  advance(9 * MIN_MS);
  CHECK_EQ_INT(sweep(rt, &s), DEXA_OK);
  CHECK_EQ_INT(s.ended, 0);
  /* Activity pushes the end out. */
  CHECK_EQ_INT(say(rt, "idle", "still here"), DEXA_OK);
  advance(9 * MIN_MS);
  CHECK_EQ_INT(sweep(rt, &s), DEXA_OK);
  CHECK_EQ_INT(s.ended, 0);
  CHECK_EQ_INT(count_sessions(rt, "running"), 1);
  advance(2 * MIN_MS);
  CHECK_EQ_INT(sweep(rt, &s), DEXA_OK);
  CHECK_EQ_INT(s.ended, 1);
  CHECK_EQ_INT(s.sessions, 0);
  CHECK_EQ_INT(count_sessions(rt, "ended"), 1);
  /* Ended: changes are refused, reads still answer. */
  char *out = NULL;
  CHECK_EQ_INT(call(rt, "idle", "send_message", "{\"text\":\"late\"}", &out), DEXA_E_SESSION_ENDED);
  CHECK_CONTAINS(out, "DEXA_E_SESSION_ENDED");
  CHECK_CONTAINS(out, "has ended");
  dexa_free(out);
  CHECK_EQ_INT(call(rt, "idle", "snapshot", "{}", &out), DEXA_OK);
  CHECK_CONTAINS(out, "\"ended\":{");
  CHECK_CONTAINS(out, "\"reason\":\"idle_timeout\"");
  dexa_free(out);
  size_t n;
  CHECK_EQ_INT(dexa_runtime_read_events(rt, "idle", "", 1000, 0, &out, &n), DEXA_OK);
  CHECK_CONTAINS(out, "\"type\":\"session_ended\"");
  dexa_free(out);
  /* Past the retention the session reads as gone, before and after the
   * sweep deletes it. */
  advance(HOUR_MS);
  CHECK_EQ_INT(call(rt, "idle", "snapshot", "{}", &out), DEXA_E_NOT_FOUND);
  CHECK_CONTAINS(out, "no longer retained");
  dexa_free(out);
  CHECK_EQ_INT(dexa_runtime_read_events(rt, "idle", "", 10, 0, &out, &n), DEXA_E_NOT_FOUND);
  CHECK_CONTAINS(dexa_runtime_errmsg(rt), "no longer retained");
  CHECK_EQ_INT(sweep(rt, &s), DEXA_OK);
  CHECK_EQ_INT(s.sessions, 1);
  CHECK(s.rows > 5);
  CHECK_EQ_INT(count_sessions(rt, NULL), 0);
  CHECK_EQ_INT(call(rt, "idle", "snapshot", "{}", &out), DEXA_E_NOT_FOUND);
  dexa_free(out);
  /* The id can be used again. */
  CHECK_EQ_INT(start(rt, "idle"), DEXA_OK);
  CHECK_EQ_INT(say(rt, "idle", "new life"), DEXA_OK);
  CHECK_EQ_INT(call(rt, "idle", "snapshot", "{}", &out), DEXA_OK);
  CHECK_CONTAINS(out, "new life");
  CHECK(!strstr(out, "still here"));
  dexa_free(out);
  close_rt(rt);
}

static void test_end_session_cancels_waits_and_refuses_changes(void) {
  dexa_runtime *rt = open_rt("life-end", 0, 0, 0);
  CHECK(rt);
  CHECK_EQ_INT(start(rt, "e"), DEXA_OK);
  CHECK_EQ_INT(say(rt, "e", "/ask are you there?"), DEXA_OK);
  char *out = NULL;
  CHECK_EQ_INT(call(rt, "e", "snapshot", "{}", &out), DEXA_OK);
  CHECK_CONTAINS(out, "\"pending\":[{");
  dexa_free(out);
  size_t n;
  CHECK_EQ_INT(call(rt, "e", "end_session", "{\"reason\":7}", NULL), DEXA_E_INVALID_JSON);
  CHECK_EQ_INT(call(rt, "e", "end_session", "{\"why\":\"x\"}", NULL), DEXA_E_INVALID_JSON);
  CHECK_EQ_INT(dexa_runtime_end_session(rt, "e", "done here", &out, &n), DEXA_OK);
  CHECK_CONTAINS(out, "\"ended\":true");
  CHECK_CONTAINS(out, "\"reason\":\"done here\"");
  dexa_free(out);
  CHECK_EQ_INT(dexa_runtime_wait_idle(rt, "e", 0), DEXA_OK);
  CHECK_EQ_INT(call(rt, "e", "snapshot", "{}", &out), DEXA_OK);
  CHECK_CONTAINS(out, "\"pending\":[]");
  CHECK_CONTAINS(out, "\"status\":\"cancelled\"");
  CHECK_CONTAINS(out, "\"reason\":\"done here\"");
  dexa_free(out);
  CHECK_EQ_INT(dexa_runtime_read_events(rt, "e", "", 1000, 0, &out, &n), DEXA_OK);
  CHECK_CONTAINS(out, "\"action\":\"end_session\"");
  CHECK_CONTAINS(out, "\"type\":\"session_ended\"");
  dexa_free(out);
  CHECK_EQ_INT(call(rt, "e", "send_message", "{\"text\":\"x\"}", NULL), DEXA_E_SESSION_ENDED);
  CHECK_EQ_INT(call(rt, "e", "cancel_turn", "{}", NULL), DEXA_E_SESSION_ENDED);
  CHECK_EQ_INT(dexa_runtime_end_session(rt, "e", NULL, NULL, NULL), DEXA_E_SESSION_ENDED);
  CHECK_EQ_INT(dexa_runtime_end_session(rt, "nope", NULL, NULL, NULL), DEXA_E_NOT_FOUND);
  /* A durable timer of an ended session never fires. */
  CHECK_EQ_INT(start(rt, "t"), DEXA_OK);
  CHECK_EQ_INT(say(rt, "t", "/wait 600 nap"), DEXA_OK);
  CHECK_EQ_INT(dexa_runtime_end_session(rt, "t", NULL, NULL, NULL), DEXA_OK);
  advance(3600 * 1000);
  int32_t ran = -1;
  CHECK_EQ_INT(dexa_runtime_run_ready(rt, &ran), DEXA_OK);
  CHECK_EQ_INT(ran, 0);
  CHECK_EQ_INT(count_sessions(rt, "ended"), 2);
  /* Retention 0 keeps ended sessions: the sweep deletes nothing. */
  advance((int64_t)365 * 24 * HOUR_MS);
  sweep_out s;
  CHECK_EQ_INT(sweep(rt, &s), DEXA_OK);
  CHECK_EQ_INT(s.sessions + s.ended, 0);
  CHECK_EQ_INT(call(rt, "t", "snapshot", "{}", NULL), DEXA_OK);
  if (!temp_store_is_pg()) { /* an ended session is a valid one for dexa_store_check */
    char *report = NULL, err[256];
    size_t len;
    int rc = dexa_store_check(path, &report, &len, err, sizeof err);
    if (rc != DEXA_OK) fprintf(stderr, "    %s %s\n", report ? report : "", err);
    dexa_free(report);
    CHECK_EQ_INT(rc, DEXA_OK);
  }
  close_rt(rt);
}

/* The store's purge deletes at most max_rows per call. */
static void test_purge_deletes_at_most_the_rows_asked(void) {
  dexa_runtime *rt = open_rt("life-purge", 0, 0, 0);
  CHECK(rt);
  CHECK_EQ_INT(start(rt, "big"), DEXA_OK);
  for (int i = 0; i < 40; i++) CHECK_EQ_INT(say(rt, "big", "hi"), DEXA_OK);
  CHECK_EQ_INT(dexa_runtime_end_session(rt, "big", NULL, NULL, NULL), DEXA_OK);
  dexa_runtime_free(rt);
  temp_side side;
  CHECK_EQ_INT(temp_side_open(&side, path, 0), DEXA_OK);
  dexa__store_conn *c = side.conn;
  int64_t total = 0, deleted = 0;
  int gone = 0, calls = 0;
  while (!gone && calls < 1000) {
    CHECK_EQ_INT(c->ops->begin_write(c), DEXA_OK);
    CHECK_EQ_INT(c->ops->session_purge(c, "big", 50, &deleted, &gone), DEXA_OK);
    CHECK_EQ_INT(c->ops->commit(c), DEXA_OK);
    CHECK(deleted <= 50 + 16); /* the rows of one batch, plus the Step rows and session row */
    total += deleted;
    calls++;
  }
  CHECK(gone);
  CHECK(calls >= 3);
  CHECK(total > 100);
  dexa__session_row row;
  CHECK_EQ_INT(c->ops->session_get(c, "big", &row), DEXA_E_NOT_FOUND);
  temp_side_close(&side);
  temp_store_remove(path);
}

/* Many expired sessions: each round deletes a bounded amount and says
 * whether more is left; rounds go on until every session is gone. */
static void test_sweep_deletes_in_bounded_rounds(void) {
  dexa_runtime *rt = open_rt("life-rounds", 0, MIN_MS, 0);
  CHECK(rt);
  char sid[32];
  for (int i = 0; i < 260; i++) {
    snprintf(sid, sizeof sid, "r%03d", i);
    CHECK_EQ_INT(start(rt, sid), DEXA_OK);
    CHECK_EQ_INT(say(rt, sid, "hi"), DEXA_OK);
    CHECK_EQ_INT(dexa_runtime_end_session(rt, sid, NULL, NULL, NULL), DEXA_OK);
  }
  advance(2 * MIN_MS);
  sweep_out s;
  int rounds = 0;
  int64_t sessions = 0;
  do {
    CHECK_EQ_INT(sweep(rt, &s), DEXA_OK);
    CHECK(s.sessions <= 100);
    CHECK(s.rows <= 4000 + 100 * 16);
    sessions += s.sessions;
    rounds++;
  } while (s.more && rounds < 100);
  CHECK(!s.more);
  CHECK(rounds >= 3);
  CHECK_EQ_INT(sessions, 260);
  CHECK_EQ_INT(count_sessions(rt, NULL), 0);
  close_rt(rt);
}

/* The SQLite store's pages in use (its page count less its free pages, as
 * a reader sees it, WAL included) and its session_data rows: what grows
 * when deleted rows are not given back, whatever the checkpoints did. */
static int store_usage(const char *p, int64_t *pages, int64_t *rows) {
  sqlite3 *db = NULL;
  int ok = sqlite3_open_v2(p, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK;
  const char *sql[2] = {"SELECT (SELECT page_count FROM pragma_page_count()) -"
                        " (SELECT freelist_count FROM pragma_freelist_count())",
                        "SELECT count(*) FROM session_data"};
  int64_t *out[2] = {pages, rows};
  for (int i = 0; ok && i < 2; i++) {
    sqlite3_stmt *st = NULL;
    ok = sqlite3_prepare_v2(db, sql[i], -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW;
    if (ok) *out[i] = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return ok ? 0 : -1;
}

/* A workload that starts sessions and abandons each after one message,
 * forever, with the clock a minute further per session: the automatic
 * sweep (run by dexa_runtime_run_ready here) ends and deletes them, so the
 * number of sessions and the store's size stay under a bound. */
static void test_abandoned_sessions_keep_the_store_bounded(void) {
  dexa_runtime *rt = open_rt("life-bounded", HOUR_MS, HOUR_MS, 10 * MIN_MS);
  CHECK(rt);
  int pg = temp_store_is_pg();
  int total = pg ? 600 : 2000;
  /* Alive at once: idle + retention + a sweep interval + slack, a minute each. */
  const int bound = 60 + 60 + 10 + 10;
  int64_t pages_at_half = 0, rows_at_half = 0;
  int most = 0;
  char sid[32];
  for (int i = 0; i < total; i++) {
    snprintf(sid, sizeof sid, "a%05d", i);
    CHECK_EQ_INT(start(rt, sid), DEXA_OK);
    CHECK_EQ_INT(say(rt, sid, "hello, then never again"), DEXA_OK);
    advance(MIN_MS);
    if (i % 50 == 49) {
      int alive = count_sessions(rt, NULL);
      CHECK(alive >= 0);
      if (alive > most) most = alive;
      if (alive > bound) {
        fprintf(stderr, "    %d sessions after %d started\n", alive, i + 1);
        CHECK(alive <= bound);
      }
    }
    if (i == total / 2 && !pg) CHECK_EQ_INT(store_usage(path, &pages_at_half, &rows_at_half), 0);
  }
  CHECK(most > 60); /* the sessions did pile up to the steady state */
  if (!pg) {
    /* Deleted rows make room for new ones: neither the rows nor the pages
     * in use grow with the number of sessions started. */
    int64_t pages = 0, rows = 0;
    CHECK_EQ_INT(store_usage(path, &pages, &rows), 0);
    if (getenv("DEXA_TEST_VERBOSE") || rows > rows_at_half + rows_at_half / 4 ||
        pages > pages_at_half + pages_at_half / 4 + 16)
      fprintf(stderr, "    session_data rows %lld -> %lld, pages in use %lld -> %lld\n",
              (long long)rows_at_half, (long long)rows, (long long)pages_at_half, (long long)pages);
    CHECK(rows_at_half > 0);
    CHECK(rows <= rows_at_half + rows_at_half / 4);
    CHECK(pages <= pages_at_half + pages_at_half / 4 + 16);
  }
  close_rt(rt);
}

/* Worker threads sweep by themselves once the sweep is due on the clock. */
static void test_worker_threads_sweep_by_themselves(void) {
  dexa_runtime *rt = open_rt("life-workers", 10 * MIN_MS, 0, MIN_MS);
  CHECK(rt);
  CHECK_EQ_INT(start(rt, "w"), DEXA_OK);
  CHECK_EQ_INT(dexa_runtime_start(rt, 2), DEXA_OK);
  CHECK_EQ_INT(call(rt, "w", "send_message", "{\"text\":\"hi\"}", NULL), DEXA_OK);
  CHECK_EQ_INT(dexa_runtime_wait_idle(rt, "w", 60000), DEXA_OK);
  advance(20 * MIN_MS);
  int ended = 0;
  for (int i = 0; i < 1200 && !ended; i++) { /* up to a minute of real time */
    ended = count_sessions(rt, "ended") == 1;
    if (!ended) usleep(50 * 1000);
  }
  CHECK_EQ_INT(dexa_runtime_stop(rt), DEXA_OK);
  CHECK(ended);
  close_rt(rt);
}

int main(void) {
  agent = make_agent();
  if (!agent) {
    fprintf(stderr, "cannot make the agent\n");
    return 1;
  }
  RUN(test_idle_session_is_ended_and_reads_say_it_is_not_retained);
  RUN(test_end_session_cancels_waits_and_refuses_changes);
  RUN(test_purge_deletes_at_most_the_rows_asked);
  RUN(test_sweep_deletes_in_bounded_rounds);
  RUN(test_abandoned_sessions_keep_the_store_bounded);
  RUN(test_worker_threads_sweep_by_themselves);
  dexa_agent_free(agent);
  TEST_MAIN_END();
}
