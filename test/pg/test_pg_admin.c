/* Store administration on PostgreSQL (DEXA_TEST_STORE, set by
 * test/pg/suites.sh): a SQLite store copied into PostgreSQL reads the same
 * snapshots and events and goes on there, and copies back into a new
 * SQLite file whole; dexa_store_check passes on what the library wrote and
 * names what it would not write (a row of no session, a damaged packed
 * value); dexa_store_vacuum runs beside an open runtime; no message names
 * the password.
 * test-needs: sqlite postgresql */
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/admin_fill.h"
#include "support/temp_store.h"
#include "testing.h"

static int64_t num(const cJSON *o, const char *k) {
  return (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

/* A SQLite file of this process (temp_store_path names PostgreSQL here). */
static void sqlite_path(char *buf, size_t n, const char *name) {
  const char *dir = getenv("TMPDIR");
  snprintf(buf, n, "%s/dexa-%s-%d.db", dir && *dir ? dir : "/tmp", name, (int)getpid());
  temp_store_remove(buf);
}

static void remove_sqlite(const char *path) {
  char side[600];
  unlink(path);
  snprintf(side, sizeof side, "%s-wal", path);
  unlink(side);
  snprintf(side, sizeof side, "%s-shm", path);
  unlink(side);
}

/* The two stores hold the same sessions: snapshots and durable events. */
static int same_sessions(dexa_runtime *x, dexa_runtime *y) {
  const char *ids[] = {"s-one", "s-two"};
  int same = 1;
  for (int i = 0; i < 2; i++) {
    cJSON *a = fill_snapshot(x, ids[i]), *b = fill_snapshot(y, ids[i]);
    char *ea = fill_events(x, ids[i]), *eb = fill_events(y, ids[i]);
    same = same && a && b && cJSON_Compare(a, b, 1) && ea && eb && strcmp(ea, eb) == 0;
    cJSON_Delete(a);
    cJSON_Delete(b);
    cJSON_free(ea);
    cJSON_free(eb);
  }
  return same;
}

static void test_sqlite_into_postgresql_and_back(void) {
  char lite[512], pg[1024], back[512], err[512] = "";
  sqlite_path(lite, sizeof lite, "pgadmin-src");
  sqlite_path(back, sizeof back, "pgadmin-back");
  temp_store_path(pg, sizeof pg, "pgadmin_copy");
  dexa_agent *agent = fill_agent();
  dexa_runtime *src = agent ? fill_runtime(agent, lite) : NULL;
  CHECK(src);
  CHECK_EQ_INT(fill_sessions(src), DEXA_OK);
  char *out = NULL;
  int rc = dexa_store_copy(lite, pg, &out, NULL, err, sizeof err);
  if (rc != DEXA_OK) fprintf(stderr, "    copy: %s\n", err);
  CHECK_EQ_INT(rc, DEXA_OK);
  cJSON *report = cJSON_Parse(out);
  dexa_free(out);
  CHECK_EQ_INT(num(report, "sessions"), 2);
  CHECK_EQ_INT(num(report, "channel_messages"), 1);
  CHECK(num(report, "steps") >= 3 && num(report, "events") > 10);
  cJSON_Delete(report);
  dexa_runtime *dst = fill_runtime(agent, pg);
  CHECK(dst);
  CHECK(same_sessions(src, dst));
  /* back into a new SQLite file, before the copy on PostgreSQL moves on */
  CHECK_EQ_INT(dexa_store_copy(pg, back, &out, NULL, err, sizeof err), DEXA_OK);
  dexa_free(out);
  dexa_runtime *again = fill_runtime(agent, back);
  CHECK(again);
  CHECK(same_sessions(dst, again));
  dexa_runtime_free(again);
  /* the copy on PostgreSQL goes on: Stop ends the timer, the queued message runs */
  char *resp = NULL;
  size_t n;
  CHECK_EQ_INT(dexa_runtime_call(dst, "s-two", "cancel_turn", "{}", 2, &resp, &n), DEXA_OK);
  dexa_free(resp);
  CHECK_EQ_INT(dexa_runtime_run_ready(dst, NULL), DEXA_OK);
  char *ev = fill_events(dst, "s-two");
  CHECK_CONTAINS(ev, "Local demo response: after the tea");
  cJSON_free(ev);
  /* a second copy finds the sessions there and copies nothing */
  CHECK_EQ_INT(dexa_store_copy(lite, pg, &out, NULL, err, sizeof err), DEXA_E_ALREADY_EXISTS);
  dexa_runtime_free(dst);
  dexa_runtime_free(src);
  dexa_agent_free(agent);
  remove_sqlite(lite);
  remove_sqlite(back);
  temp_store_remove(pg);
}

static int sql(const char *conninfo, const char *statement) {
  PGconn *db = PQconnectdb(conninfo);
  PGresult *r = PQexec(db, statement);
  int ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
  if (!ok) fprintf(stderr, "    sql: %s", PQerrorMessage(db));
  PQclear(r);
  PQfinish(db);
  return ok;
}

static void test_check_and_vacuum(void) {
  char pg[1024], err[512] = "";
  temp_store_path(pg, sizeof pg, "pgadmin_check");
  dexa_agent *agent = fill_agent();
  dexa_runtime *rt = agent ? fill_runtime(agent, pg) : NULL;
  CHECK(rt);
  CHECK_EQ_INT(fill_sessions(rt), DEXA_OK);
  char *out = NULL;
  int rc = dexa_store_check(pg, &out, NULL, err, sizeof err);
  if (rc != DEXA_OK) fprintf(stderr, "    check: %s %s\n", err, out ? out : "");
  CHECK_EQ_INT(rc, DEXA_OK);
  CHECK_CONTAINS(out, "\"ok\":true");
  CHECK_CONTAINS(out, "\"sessions\":2");
  dexa_free(out);
  /* vacuum beside the open runtime */
  CHECK_EQ_INT(dexa_store_vacuum(pg, &out, NULL, err, sizeof err), DEXA_OK);
  cJSON *v = cJSON_Parse(out);
  dexa_free(out);
  CHECK(num(v, "bytes_before") > 0 && num(v, "bytes_after") > 0);
  cJSON_Delete(v);
  /* what the library would not write: a row of no session, a packed value
   * whose length is a lie */
  CHECK(sql(pg, "INSERT INTO attrs(skey, key, value)"
                " VALUES(999999, '\\x41'::bytea, '\\x7b7d'::bytea)"));
  CHECK(sql(pg, "UPDATE attrs SET value = '\\x0164'::bytea"
                " WHERE key = convert_to('AgentTurn', 'UTF8') AND skey ="
                " (SELECT skey FROM sessions WHERE session_id = 's-one')"));
  out = NULL;
  CHECK_EQ_INT(dexa_store_check(pg, &out, NULL, err, sizeof err), DEXA_E_CORRUPT);
  CHECK(out);
  CHECK_CONTAINS(out, "1 session data rows that belong to no session");
  CHECK_CONTAINS(out, "stored values are damaged");
  dexa_free(out);
  dexa_runtime_free(rt);
  dexa_agent_free(agent);
  temp_store_remove(pg);
}

static void test_messages_never_name_the_password(void) {
  const char *d = getenv("DEXA_TEST_PG_DIR");
  char uri[700], err[512] = "", *out = NULL;
  snprintf(uri, sizeof uri, "postgresql://dexa_pw:wrong-pw-7@/dexa?host=%s", d);
  CHECK(dexa_store_check(uri, &out, NULL, err, sizeof err) != DEXA_OK);
  CHECK(err[0]);
  CHECK(!strstr(err, "wrong-pw-7"));
  CHECK(dexa_store_copy(uri, "/nonexistent-dir/x.db", &out, NULL, err, sizeof err) != DEXA_OK);
  CHECK(!strstr(err, "wrong-pw-7"));
  snprintf(uri, sizeof uri, "host=%s dbname=dexa user=dexa_pw password=wrong-pw-8", d);
  CHECK(dexa_store_vacuum(uri, &out, NULL, err, sizeof err) != DEXA_OK);
  CHECK(err[0]);
  CHECK(!strstr(err, "wrong-pw-8"));
}

int main(void) {
  if (!temp_store_is_pg() || !getenv("DEXA_TEST_PG_DIR")) {
    fprintf(stderr, "    DEXA_TEST_STORE and DEXA_TEST_PG_DIR must be set (test/pg/suites.sh)\n");
    printf("0 passed, %d failed%s\n", getenv("CI") ? 1 : 0, getenv("CI") ? "" : ", 1 skipped");
    return getenv("CI") ? 1 : 0;
  }
  RUN(test_sqlite_into_postgresql_and_back);
  RUN(test_check_and_vacuum);
  RUN(test_messages_never_name_the_password);
  TEST_MAIN_END();
}
