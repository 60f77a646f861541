/* Store administration: dexa_store_copy copies every session whole (the
 * copy reads the same snapshot and events and goes on where the original
 * stopped), refuses a destination that has a session already and the same
 * store twice; dexa_store_check finds what the library would not write;
 * dexa_store_vacuum gives free pages back.
 * test-needs: sqlite postgresql */
#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dexagents/dexagents.h"
#include "dexagents/store.h"
#include "support/admin_fill.h"
#include "support/temp_store.h"
#include "testing.h"

static int64_t num(const cJSON *o, const char *k) {
  return (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

static void test_copy_carries_every_session_whole(void) {
  char a[512], b[512];
  temp_store_path(a, sizeof a, "admin-src");
  temp_store_path(b, sizeof b, "admin-dst");
  dexa_agent *agent = fill_agent();
  dexa_runtime *src = agent ? fill_runtime(agent, a) : NULL;
  CHECK(src);
  CHECK_EQ_INT(fill_sessions(src), DEXA_OK);
  char *out = NULL, err[256] = "";
  CHECK_EQ_INT(dexa_store_copy(a, b, &out, NULL, err, sizeof err), DEXA_OK);
  cJSON *report = cJSON_Parse(out);
  dexa_free(out);
  CHECK_EQ_INT(num(report, "sessions"), 2);
  CHECK(num(report, "attributes") > 10);
  CHECK_EQ_INT(num(report, "channel_messages"), 1); /* the signal of the queued message */
  CHECK(num(report, "steps") >= 3);                  /* AwaitTimer, ResumeTurn, AwaitUserMessage */
  CHECK(num(report, "events") > 10);
  cJSON_Delete(report);
  dexa_runtime *dst = fill_runtime(agent, b);
  CHECK(dst);
  const char *ids[] = {"s-one", "s-two"};
  for (int i = 0; i < 2; i++) {
    cJSON *x = fill_snapshot(src, ids[i]), *y = fill_snapshot(dst, ids[i]);
    CHECK(x && y);
    CHECK(cJSON_Compare(x, y, 1));
    cJSON_Delete(x);
    cJSON_Delete(y);
    char *ex = fill_events(src, ids[i]), *ey = fill_events(dst, ids[i]);
    CHECK(ex && ey);
    CHECK_STR(ey, ex);
    cJSON_free(ex);
    cJSON_free(ey);
  }
  /* the copy goes on: the timer's Step row is live there; a stop ends the
   * wait and the queued message runs */
  char *resp = NULL;
  size_t n;
  CHECK_EQ_INT(dexa_runtime_call(dst, "s-two", "cancel_turn", "{}", 2, &resp, &n), DEXA_OK);
  dexa_free(resp);
  CHECK_EQ_INT(dexa_runtime_run_ready(dst, NULL), DEXA_OK);
  char *ev = fill_events(dst, "s-two");
  CHECK_CONTAINS(ev, "Local demo response: after the tea");
  cJSON_free(ev);
  /* and new sessions there get their own numbers */
  CHECK_EQ_INT(dexa_runtime_start_session(dst, "s-three", NULL, 0, NULL, NULL), DEXA_OK);
  dexa_runtime_free(dst);
  dexa_runtime_free(src);
  dexa_agent_free(agent);
  temp_store_remove(a);
  temp_store_remove(b);
}

static int session_count(const char *path) {
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  int n = -1;
  if (sqlite3_open(path, &db) == SQLITE_OK &&
      sqlite3_prepare_v2(db, "SELECT count(*) FROM sessions", -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    n = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return n;
}

static void test_copy_refuses_a_session_already_there_and_the_same_store(void) {
  char a[512], b[512];
  temp_store_path(a, sizeof a, "admin-src2");
  temp_store_path(b, sizeof b, "admin-dst2");
  dexa_agent *agent = fill_agent();
  dexa_runtime *src = agent ? fill_runtime(agent, a) : NULL, *dst = agent ? fill_runtime(agent, b) : NULL;
  CHECK(src && dst);
  CHECK_EQ_INT(fill_sessions(src), DEXA_OK);
  CHECK_EQ_INT(dexa_runtime_start_session(dst, "s-zero", NULL, 0, NULL, NULL), DEXA_OK);
  CHECK_EQ_INT(dexa_runtime_start_session(dst, "s-two", NULL, 0, NULL, NULL), DEXA_OK);
  dexa_runtime_free(dst);
  char *out = (char *)1, err[256] = "";
  CHECK_EQ_INT(dexa_store_copy(a, b, &out, NULL, err, sizeof err), DEXA_E_ALREADY_EXISTS);
  CHECK(out == NULL);
  CHECK_CONTAINS(err, "s-two");
  CHECK_EQ_INT(session_count(b), 2); /* nothing copied, s-one included */
  char same[600];
  snprintf(same, sizeof same, "sqlite:%s", a);
  CHECK_EQ_INT(dexa_store_copy(a, same, &out, NULL, err, sizeof err), DEXA_E_INVALID_ARG);
  CHECK_CONTAINS(err, "the same store");
  CHECK_EQ_INT(dexa_store_copy(NULL, b, &out, NULL, err, sizeof err), DEXA_E_INVALID_ARG);
  dexa_runtime_free(src);
  dexa_agent_free(agent);
  temp_store_remove(a);
  temp_store_remove(b);
}

static int exec_sql(const char *path, const char *sql) {
  sqlite3 *db = NULL;
  int r = sqlite3_open(path, &db);
  if (r == SQLITE_OK) r = sqlite3_exec(db, sql, NULL, NULL, NULL);
  if (r != SQLITE_OK) fprintf(stderr, "    sql: %s\n", sqlite3_errmsg(db));
  sqlite3_close(db);
  return r;
}

static void test_check_finds_what_the_library_would_not_write(void) {
  char a[512];
  temp_store_path(a, sizeof a, "admin-check");
  dexa_agent *agent = fill_agent();
  dexa_runtime *rt = agent ? fill_runtime(agent, a) : NULL;
  CHECK(rt);
  CHECK_EQ_INT(fill_sessions(rt), DEXA_OK);
  dexa_runtime_free(rt);
  char *out = NULL, err[256] = "";
  int rc0 = dexa_store_check(a, &out, NULL, err, sizeof err);
  if (rc0 != DEXA_OK) fprintf(stderr, "    %s %s\n", err, out ? out : "");
  CHECK_EQ_INT(rc0, DEXA_OK);
  cJSON *r = cJSON_Parse(out);
  dexa_free(out);
  CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "ok")));
  CHECK_EQ_INT(num(r, "sessions"), 2);
  CHECK(num(r, "steps") >= 3 && num(r, "events") > 10 && num(r, "attributes") > 10);
  cJSON_Delete(r);
  /* an attribute that is not JSON, a Step row in no state, an event out of
   * order: three problems, each named */
  CHECK_EQ_INT(exec_sql(a, "UPDATE session_data SET value = 'not json' WHERE kind = 0 AND key = "
                           "CAST('AgentTurn' AS BLOB) AND skey = 1;"
                           "UPDATE steps SET state = 9 WHERE session_id = 's-two' AND "
                           "step_type = 'AwaitTimer';"
                           "UPDATE session_data SET seq = seq + 1000 WHERE kind = 2 AND skey = 1 "
                           "AND seq = (SELECT max(seq) FROM session_data WHERE kind = 2 AND skey = 1);"),
               SQLITE_OK);
  CHECK_EQ_INT(dexa_store_check(a, &out, NULL, err, sizeof err), DEXA_E_CORRUPT);
  CHECK(out);
  CHECK_CONTAINS(out, "\"ok\":false");
  CHECK_CONTAINS(out, "attribute AgentTurn is not JSON");
  CHECK_CONTAINS(out, "(AwaitTimer) has no valid state");
  CHECK_CONTAINS(out, "is out of order");
  CHECK_CONTAINS(out, "\"problem_count\":3");
  CHECK_CONTAINS(err, "problems");
  dexa_free(out);
  /* a file that is not a store */
  CHECK_EQ_INT(exec_sql(a, "DROP TABLE steps;"), SQLITE_OK);
  out = NULL;
  int rc = dexa_store_check(a, &out, NULL, err, sizeof err);
  CHECK(rc != DEXA_OK);
  dexa_free(out);
  dexa_agent_free(agent);
  temp_store_remove(a);
}

static void test_vacuum_gives_free_pages_back(void) {
  char a[512];
  temp_store_path(a, sizeof a, "admin-vacuum");
  dexa_agent *agent = fill_agent();
  dexa_runtime *rt = agent ? fill_runtime(agent, a) : NULL;
  CHECK(rt);
  CHECK_EQ_INT(fill_sessions(rt), DEXA_OK);
  dexa_runtime_free(rt);
  CHECK_EQ_INT(exec_sql(a, "CREATE TABLE junk(x); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL "
                           "SELECT i + 1 FROM n WHERE i < 2000) INSERT INTO junk SELECT "
                           "randomblob(1000) FROM n; PRAGMA wal_checkpoint; DROP TABLE junk;"),
               SQLITE_OK);
  char *out = NULL, err[256] = "";
  CHECK_EQ_INT(dexa_store_vacuum(a, &out, NULL, err, sizeof err), DEXA_OK);
  cJSON *r = cJSON_Parse(out);
  dexa_free(out);
  CHECK(num(r, "bytes_before") > 2000000);
  CHECK(num(r, "bytes_after") < 500000);
  cJSON_Delete(r);
  /* still a store with its sessions */
  CHECK_EQ_INT(dexa_store_check(a, &out, NULL, err, sizeof err), DEXA_OK);
  CHECK_CONTAINS(out, "\"sessions\":2");
  dexa_free(out);
  dexa_agent_free(agent);
  temp_store_remove(a);
}

int main(void) {
  RUN(test_copy_carries_every_session_whole);
  RUN(test_copy_refuses_a_session_already_there_and_the_same_store);
  RUN(test_check_finds_what_the_library_would_not_write);
  RUN(test_vacuum_gives_free_pages_back);
  TEST_MAIN_END();
}
