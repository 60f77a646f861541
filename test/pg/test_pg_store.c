/* The PostgreSQL store alone (DEXA_TEST_STORE and DEXA_TEST_PG_DIR, set by
 * test/pg/suites.sh): bad input gives a clear error that names the cause and
 * never the password, a newer schema is refused with nothing written, a
 * commit of one store wakes another store's listener (LISTEN/NOTIFY), a
 * claim never hands one Step to two stores, and a runtime that never
 * starts workers sees the events of Steps another runtime runs.
 * test-needs: postgresql sqlite */
#include <libpq-fe.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "runtime/runtime_internal.h"
#include "support/temp_store.h"
#include "testing.h"
#include "unit/test_runtime_fake.h"

static char pgdir[512];

static int open_err(const char *uri, char *err, size_t n) {
  dexa__store *s = NULL;
  dexa__store_config cfg = {uri, NULL, 0, NULL, NULL};
  err[0] = '\0';
  int rc = dexa__store_open(&s, &cfg, err, n);
  if (s) s->ops->close(s);
  return rc;
}

static void test_unreachable_server_is_a_clear_error(void) {
  char uri[700], err[512];
  snprintf(uri, sizeof uri, "postgresql://dexa:secret-pw-1@/dexa?host=%s/no-such-dir", pgdir);
  CHECK_EQ_INT(open_err(uri, err, sizeof err), DEXA_E_IO);
  CHECK_CONTAINS(err, "cannot connect to PostgreSQL");
  CHECK_CONTAINS(err, "no-such-dir");
  CHECK(!strstr(err, "secret-pw-1"));
}

static void test_wrong_password_is_an_auth_error(void) {
  char uri[700], err[512];
  snprintf(uri, sizeof uri, "postgresql://dexa_pw:wrong-pw-2@/dexa?host=%s", pgdir);
  CHECK_EQ_INT(open_err(uri, err, sizeof err), DEXA_E_AUTH);
  CHECK_CONTAINS(err, "password authentication failed");
  CHECK_CONTAINS(err, "dexa_pw");
  CHECK(!strstr(err, "wrong-pw-2"));
  /* key/value conninfo, the right password: connects (then lacks rights) */
  snprintf(uri, sizeof uri, "host=%s user=dexa_pw password=right-pw dbname=dexa", pgdir);
  CHECK_EQ_INT(open_err(uri, err, sizeof err), DEXA_E_AUTH);
  CHECK_CONTAINS(err, "permission denied");
  CHECK(!strstr(err, "right-pw"));
}

static void test_database_without_rights_is_an_auth_error(void) {
  char uri[700], err[512];
  snprintf(uri, sizeof uri, "postgres://dexa_none@/dexa?host=%s", pgdir);
  CHECK_EQ_INT(open_err(uri, err, sizeof err), DEXA_E_AUTH);
  CHECK_CONTAINS(err, "permission denied for schema public");
}

static int64_t meta_version(const char *path) {
  PGconn *db = PQconnectdb(path);
  PGresult *r = PQexec(db, "SELECT value FROM dexa_meta WHERE key = 'schema_version'");
  int64_t v = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) ? atoll(PQgetvalue(r, 0, 0)) : -1;
  PQclear(r);
  PQfinish(db);
  return v;
}

static int64_t count_rows(const char *path, const char *sql) {
  PGconn *db = PQconnectdb(path);
  PGresult *r = PQexec(db, sql);
  int64_t n = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) ? atoll(PQgetvalue(r, 0, 0)) : -1;
  PQclear(r);
  PQfinish(db);
  return n;
}

/* A version 1 database (steps without lost_workers) is migrated on open:
 * old rows count 0 lost workers. */
static void test_version_1_schema_gets_lost_worker_counts(void) {
  char path[1024], err[512];
  temp_store_path(path, sizeof path, "v1");
  CHECK_EQ_INT(open_err(path, err, sizeof err), DEXA_OK);
  PGconn *db = PQconnectdb(path);
  PQclear(PQexec(db, "ALTER TABLE steps DROP COLUMN lost_workers"));
  PQclear(PQexec(db, "INSERT INTO steps(session_id, exec_id, step_type, ord, state, method,"
                     " attempt, cancelled, due_ms, lease_owner, lease_until, started_ms)"
                     " VALUES('s', 'RunModel-3', 'RunModel', 3, 3, 2, 2, 0, 0, 'w', 0, 0)"));
  PQclear(PQexec(db, "UPDATE dexa_meta SET value = '1' WHERE key = 'schema_version'"));
  PQfinish(db);
  CHECK_EQ_INT(open_err(path, err, sizeof err), DEXA_OK);
  CHECK_EQ_INT(meta_version(path), 4);
  db = PQconnectdb(path);
  PGresult *r = PQexec(db, "SELECT lost_workers FROM steps");
  CHECK(PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1);
  if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) CHECK_STR(PQgetvalue(r, 0, 0), "0");
  PQclear(r);
  PQfinish(db);
  temp_store_remove(path);
}

static void test_newer_schema_is_refused_and_left_alone(void) {
  char path[1024], err[512];
  temp_store_path(path, sizeof path, "newer");
  CHECK_EQ_INT(open_err(path, err, sizeof err), DEXA_OK);
  CHECK_EQ_INT(meta_version(path), 4);
  PGconn *db = PQconnectdb(path);
  PQclear(PQexec(db, "UPDATE dexa_meta SET value = '99' WHERE key = 'schema_version'"));
  PQfinish(db);
  CHECK_EQ_INT(open_err(path, err, sizeof err), DEXA_E_UNSUPPORTED);
  CHECK_CONTAINS(err, "schema version 99 is newer than this library's (4)");
  CHECK_EQ_INT(meta_version(path), 99);
  temp_store_remove(path);
}

/* A version 3 database (attributes, channel messages and events in one
 * session_data table, steps of bigint columns) is migrated on open: every
 * row moves to the table of its kind, values as they were, and
 * session_data is gone; steps are rebuilt with narrow counters; the store
 * reads them through its usual operations. */
static void test_version_3_data_moves_to_a_table_per_kind(void) {
  char path[1024], err[512];
  temp_store_path(path, sizeof path, "v3data");
  CHECK_EQ_INT(open_err(path, err, sizeof err), DEXA_OK);
  PGconn *db = PQconnectdb(path);
  PGresult *r = PQexec(db,
      "DROP TABLE attrs, channel_msgs, events, steps;"
      "CREATE TABLE steps(session_id text NOT NULL, exec_id text NOT NULL,"
      " step_type text NOT NULL, ord bigint NOT NULL, state bigint NOT NULL,"
      " method bigint NOT NULL, attempt bigint NOT NULL, cancelled bigint NOT NULL,"
      " input bytea, options bytea, wait bytea, conditions bytea, recovery_error bytea,"
      " due_ms bigint, lease_owner text, lease_until bigint NOT NULL,"
      " started_ms bigint NOT NULL, lost_workers bigint NOT NULL DEFAULT 0,"
      " PRIMARY KEY(session_id, exec_id));"
      "CREATE INDEX steps_due ON steps(due_ms) WHERE due_ms IS NOT NULL;"
      "INSERT INTO steps VALUES('old', 'W-7', 'W', 7, 3, 2, 4, 1, convert_to('[1]', 'UTF8'),"
      " NULL, NULL, NULL, NULL, 123, 'me', 456, 99, 2);"
      "CREATE TABLE session_data(skey bigint NOT NULL, kind smallint NOT NULL,"
      " key bytea NOT NULL, seq bigint NOT NULL, value bytea NOT NULL,"
      " PRIMARY KEY(skey, kind, key, seq));"
      "INSERT INTO sessions(session_id, flow_type, created_ms, status, event_seq, step_ord)"
      " VALUES('old', 'Fake', 1, 0, 2, 0);"
      "INSERT INTO session_data SELECT skey, 0, convert_to('k', 'UTF8'), 0, convert_to('\"v\"', 'UTF8')"
      " FROM sessions WHERE session_id = 'old';"
      "INSERT INTO session_data SELECT skey, 1, convert_to('ch', 'UTF8'), 1, convert_to('1', 'UTF8')"
      " FROM sessions WHERE session_id = 'old';"
      "INSERT INTO session_data SELECT skey, 2, '\\x'::bytea, s, convert_to('{\"e\":' || s || '}', 'UTF8')"
      " FROM sessions, generate_series(1, 2) AS s WHERE session_id = 'old';"
      "UPDATE dexa_meta SET value = '3' WHERE key = 'schema_version'");
  CHECK_EQ_INT(PQresultStatus(r), PGRES_COMMAND_OK);
  PQclear(r);
  PQfinish(db);
  CHECK_EQ_INT(open_err(path, err, sizeof err), DEXA_OK);
  CHECK_EQ_INT(meta_version(path), 4);
  CHECK_EQ_INT(count_rows(path, "SELECT count(*) FROM pg_class WHERE relname = 'session_data'"
                                " AND relnamespace = current_schema()::regnamespace"), 0);
  CHECK_EQ_INT(count_rows(path, "SELECT count(*) FROM attrs"), 1);
  CHECK_EQ_INT(count_rows(path, "SELECT count(*) FROM channel_msgs"), 1);
  CHECK_EQ_INT(count_rows(path, "SELECT count(*) FROM events"), 2);
  temp_side side;
  CHECK_EQ_INT(temp_side_open(&side, path, 0), DEXA_OK);
  dexa__store_conn *c = side.conn;
  const char *v = NULL;
  size_t vn = 0;
  CHECK_EQ_INT(c->ops->attr_get(c, "old", "k", 1, &v, &vn), DEXA_OK);
  if (v) CHECK(vn == 3 && memcmp(v, "\"v\"", 3) == 0);
  int64_t n = 0;
  CHECK_EQ_INT(c->ops->chan_count(c, "old", "ch", 2, &n), DEXA_OK);
  CHECK_EQ_INT((int)n, 1);
  /* steps: rebuilt in version 4's layout, the row as it was */
  dexa__step_row row;
  CHECK_EQ_INT(c->ops->step_get(c, "old", "W-7", &row), DEXA_OK);
  CHECK_EQ_INT((int)row.ord, 7);
  CHECK_EQ_INT(row.state, 3);
  CHECK_EQ_INT(row.method, 2);
  CHECK_EQ_INT(row.attempt, 4);
  CHECK_EQ_INT(row.cancelled, 1);
  CHECK_EQ_INT((int)row.due_ms, 123);
  CHECK_EQ_INT((int)row.lease_until, 456);
  CHECK_EQ_INT((int)row.started_ms, 99);
  CHECK_EQ_INT(row.lost_workers, 2);
  if (row.lease_owner) CHECK_STR(row.lease_owner, "me");
  CHECK(row.input_len == 3 && row.input && memcmp(row.input, "[1]", 3) == 0);
  dexa__step_row_free(&row);
  CHECK_EQ_INT(count_rows(path, "SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema()"
                                " AND indexname IN ('steps_pkey', 'steps_due')"), 2);
  CHECK_EQ_INT(count_rows(path, "SELECT count(*) FROM pg_class WHERE relname = 'steps_v3'"), 0);
  temp_side_close(&side);
  temp_store_remove(path);
}

typedef struct woken {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  char sid[64];
  int count;
} woken;

/* A version 2 database (no sessions.active_ms) gets the column, its
 * sessions counted active at the upgrade, and the sweep's index. */
static void test_version_2_database_gets_session_lifetimes(void) {
  char path[1024], err[512];
  temp_store_path(path, sizeof path, "v2life");
  CHECK_EQ_INT(open_err(path, err, sizeof err), DEXA_OK);
  PGconn *db = PQconnectdb(path);
  PQclear(PQexec(db, "DROP INDEX sessions_active; ALTER TABLE sessions DROP COLUMN active_ms;"
                     "INSERT INTO sessions(session_id, flow_type, created_ms, status, event_seq,"
                     " step_ord) VALUES('old', 'AgentSession', 1, 0, 0, 0);"
                     "UPDATE dexa_meta SET value = '2' WHERE key = 'schema_version'"));
  CHECK_EQ_INT(open_err(path, err, sizeof err), DEXA_OK);
  CHECK_EQ_INT(meta_version(path), 4);
  PGresult *r = PQexec(db, "SELECT active_ms, (SELECT count(*) FROM pg_indexes WHERE"
                           " indexname = 'sessions_active' AND schemaname = current_schema()) FROM sessions WHERE session_id = 'old'");
  CHECK_EQ_INT(PQresultStatus(r), PGRES_TUPLES_OK);
  CHECK_EQ_INT(PQntuples(r), 1);
  CHECK(atoll(PQgetvalue(r, 0, 0)) > 1600000000000LL);
  CHECK_EQ_INT(atoll(PQgetvalue(r, 0, 1)), 1);
  PQclear(r);
  PQfinish(db);
  temp_store_remove(path);
}

static void on_wake(void *ctx, const char *sid) {
  woken *w = ctx;
  pthread_mutex_lock(&w->mu);
  if (sid && strcmp(sid, "wake-me") == 0) {
    snprintf(w->sid, sizeof w->sid, "%s", sid);
    w->count++;
  }
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

/* Only a notification can call the hook: waits up to 20 s for it. */
static void test_a_commit_wakes_another_store(void) {
  char path[1024];
  temp_store_path(path, sizeof path, "wake");
  temp_side a, b;
  CHECK_EQ_INT(temp_side_open(&a, path, 0), DEXA_OK);
  CHECK_EQ_INT(temp_side_open(&b, path, 0), DEXA_OK);
  woken w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, "", 0};
  b.store->ops->set_wake(b.store, on_wake, &w);
  /* The listener may still be connecting: commit until it hears one. */
  int heard = 0;
  int rc = DEXA_OK;
  for (int i = 0; i < 200 && !heard && rc == DEXA_OK; i++) {
    rc = a.conn->ops->begin_write(a.conn);
    if (rc == DEXA_OK && i == 0) rc = a.conn->ops->session_insert(a.conn, "wake-me", "Fake", 1, "{}", 2);
    if (rc == DEXA_OK) rc = a.conn->ops->session_set_status(a.conn, "wake-me", 0);
    if (rc == DEXA_OK) rc = a.conn->ops->commit(a.conn);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 100 * 1000000;
    if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
    pthread_mutex_lock(&w.mu);
    if (!w.count) pthread_cond_timedwait(&w.cv, &w.mu, &ts);
    heard = w.count > 0;
    pthread_mutex_unlock(&w.mu);
  }
  b.store->ops->set_wake(b.store, NULL, NULL);
  temp_side_close(&a);
  temp_side_close(&b);
  temp_store_remove(path);
  CHECK_EQ_INT(rc, DEXA_OK);
  CHECK(heard);
  CHECK_STR(w.sid, "wake-me");
}

/* Two stores claim the same 40 due rows at once; SKIP LOCKED hands each row
 * to one of them only. */
typedef struct claimer {
  temp_side side;
  int claimed;
  int rc;
} claimer;

static void *claim_all(void *arg) {
  claimer *c = arg;
  dexa__store_conn *conn = c->side.conn;
  for (;;) {
    int rc = conn->ops->begin_write(conn);
    dexa__step_row row;
    if (rc == DEXA_OK) rc = conn->ops->step_first_due(conn, 1000, &row);
    if (rc == DEXA_E_NOT_FOUND) {
      conn->ops->rollback(conn);
      return NULL;
    }
    if (rc == DEXA_OK) {
      row.state = DEXA__STEP_RUNNING;
      row.due_ms = 999999;
      rc = conn->ops->step_update(conn, &row);
      dexa__step_row_free(&row);
      usleep(2000); /* hold the lock a moment */
    }
    if (rc == DEXA_OK) rc = conn->ops->commit(conn);
    if (rc != DEXA_OK) {
      conn->ops->rollback(conn);
      c->rc = rc;
      return NULL;
    }
    c->claimed++;
  }
}

static void test_two_stores_never_claim_one_step_twice(void) {
  char path[1024];
  temp_store_path(path, sizeof path, "claims");
  claimer c[2] = {0};
  CHECK_EQ_INT(temp_side_open(&c[0].side, path, 0), DEXA_OK);
  CHECK_EQ_INT(temp_side_open(&c[1].side, path, 0), DEXA_OK);
  dexa__store_conn *conn = c[0].side.conn;
  CHECK_EQ_INT(conn->ops->begin_write(conn), DEXA_OK);
  for (int s = 0; s < 8; s++) {
    char sid[16];
    snprintf(sid, sizeof sid, "c%d", s);
    CHECK_EQ_INT(conn->ops->session_insert(conn, sid, "Fake", 1, "{}", 2), DEXA_OK);
    for (int i = 0; i < 5; i++) {
      char exec[16];
      snprintf(exec, sizeof exec, "W-%d", i);
      dexa__step_row row = {.session_id = sid, .exec_id = exec, .step_type = "W", .ord = i,
                            .state = DEXA__STEP_READY, .method = 2, .due_ms = 10 + i};
      CHECK_EQ_INT(conn->ops->step_insert(conn, &row), DEXA_OK);
    }
  }
  CHECK_EQ_INT(conn->ops->commit(conn), DEXA_OK);
  pthread_t t[2];
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, claim_all, &c[i]);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  temp_side_close(&c[0].side);
  temp_side_close(&c[1].side);
  temp_store_remove(path);
  CHECK_EQ_INT(c[0].rc, DEXA_OK);
  CHECK_EQ_INT(c[1].rc, DEXA_OK);
  CHECK_EQ_INT(c[0].claimed + c[1].claimed, 40);
}


static void step_at(dexa__step_row *row, const char *sid, char *exec, size_t n, int ord) {
  snprintf(exec, n, "W-%d", ord);
  *row = (dexa__step_row){.session_id = (char *)sid, .exec_id = exec, .step_type = "W",
                          .ord = ord, .state = DEXA__STEP_READY, .method = 2, .due_ms = 10,
                          .input = "{\"big\":1}", .input_len = 9};
}

/* A finished Step's row is kept as a free slot that the session's next
 * Step takes (so the table does not grow with every Step ever run): the
 * free slot is found by no read, and a session's slots are its own. */
static void test_finished_step_rows_are_reused_and_hidden(void) {
  char path[1024], exec[16];
  temp_store_path(path, sizeof path, "slots");
  temp_side side;
  CHECK_EQ_INT(temp_side_open(&side, path, 0), DEXA_OK);
  dexa__store_conn *c = side.conn;
  dexa__step_row row, got;
  CHECK_EQ_INT(c->ops->begin_write(c), DEXA_OK);
  CHECK_EQ_INT(c->ops->session_insert(c, "a", "Fake", 1, "{}", 2), DEXA_OK);
  CHECK_EQ_INT(c->ops->session_insert(c, "b", "Fake", 1, "{}", 2), DEXA_OK);
  for (int i = 1; i <= 2; i++) {
    step_at(&row, "a", exec, sizeof exec, i);
    CHECK_EQ_INT(c->ops->step_insert(c, &row), DEXA_OK);
  }
  CHECK_EQ_INT(c->ops->step_delete(c, "a", "W-1"), DEXA_OK);
  CHECK_EQ_INT(c->ops->commit(c), DEXA_OK);
  CHECK_EQ_INT(c->ops->step_get(c, "a", "W-1", &got), DEXA_E_NOT_FOUND);
  dexa__step_row *rows = NULL;
  size_t n = 0;
  CHECK_EQ_INT(c->ops->step_list(c, "a", 0, &rows, &n), DEXA_OK);
  CHECK_EQ_INT((int)n, 1);
  if (n == 1) CHECK_STR(rows[0].exec_id, "W-2");
  dexa__step_rows_free(rows, n);
  CHECK_EQ_INT(count_rows(path, "SELECT count(*) FROM steps WHERE state = 0 AND input IS NULL"), 1);
  /* Another session's Step does not take a's slot; a's next one does. */
  CHECK_EQ_INT(c->ops->begin_write(c), DEXA_OK);
  step_at(&row, "b", exec, sizeof exec, 1);
  CHECK_EQ_INT(c->ops->step_insert(c, &row), DEXA_OK);
  step_at(&row, "a", exec, sizeof exec, 3);
  CHECK_EQ_INT(c->ops->step_insert(c, &row), DEXA_OK);
  CHECK_EQ_INT(c->ops->commit(c), DEXA_OK);
  CHECK_EQ_INT(count_rows(path, "SELECT count(*) FROM steps"), 3);
  CHECK_EQ_INT(count_rows(path, "SELECT count(*) FROM steps WHERE state = 0"), 0);
  CHECK_EQ_INT(c->ops->step_get(c, "a", "W-3", &got), DEXA_OK);
  if (got.input) CHECK(got.input_len == 9 && memcmp(got.input, "{\"big\":1}", 9) == 0);
  CHECK_EQ_INT((int)got.ord, 3);
  dexa__step_row_free(&got);
  temp_side_close(&side);
  temp_store_remove(path);
}

typedef struct seen_events {
  int n;
  int64_t seq[8];
  char json[8][32];
} seen_events;

static int see_event(void *ctx, int64_t seq, const char *json, size_t len) {
  seen_events *s = ctx;
  if (s->n >= 8 || len >= sizeof s->json[0] || json[len] != '\0') return DEXA_E_CORRUPT;
  s->seq[s->n] = seq;
  memcpy(s->json[s->n++], json, len + 1);
  return DEXA_OK;
}

/* The events of one result share a row: read back one by one, from any
 * seq inside the row, never past the limit, each NUL-terminated; a
 * damaged row is found by the store check. */
static void test_events_of_one_result_share_a_row(void) {
  char path[1024];
  temp_store_path(path, sizeof path, "evbatch");
  temp_side side;
  CHECK_EQ_INT(temp_side_open(&side, path, 0), DEXA_OK);
  dexa__store_conn *c = side.conn;
  const char *json[3] = {"{\"type\":\"a\"}", "{\"type\":\"bb\"}", "{\"type\":\"ccc\"}"};
  size_t len[3] = {12, 13, 14};
  CHECK(c->ops->event_append_batch != NULL);
  CHECK_EQ_INT(c->ops->begin_write(c), DEXA_OK);
  CHECK_EQ_INT(c->ops->session_insert(c, "e", "Fake", 1, "{}", 2), DEXA_OK);
  CHECK_EQ_INT(c->ops->event_append_batch(c, "e", 3, json, len, 3), DEXA_OK);
  CHECK_EQ_INT(c->ops->event_append(c, "e", 4, "{\"type\":\"d\"}", 12), DEXA_OK);
  CHECK_EQ_INT(c->ops->commit(c), DEXA_OK);
  CHECK_EQ_INT(count_rows(path, "SELECT count(*) FROM events"), 2);
  seen_events all = {0}, mid = {0};
  CHECK_EQ_INT(c->ops->event_read(c, "e", 0, 10, see_event, &all), DEXA_OK);
  CHECK_EQ_INT(all.n, 4);
  for (int i = 0; i < all.n; i++) CHECK_EQ_INT((int)all.seq[i], i + 1);
  CHECK_STR(all.json[1], "{\"type\":\"bb\"}");
  CHECK_STR(all.json[2], "{\"type\":\"ccc\"}");
  CHECK_STR(all.json[3], "{\"type\":\"d\"}");
  CHECK_EQ_INT(c->ops->event_read(c, "e", 1, 1, see_event, &mid), DEXA_OK);
  CHECK_EQ_INT(mid.n, 1);
  CHECK_EQ_INT((int)mid.seq[0], 2);
  temp_side_close(&side);
  PGconn *db = PQconnectdb(path);
  PQclear(PQexec(db, "UPDATE events SET value = '\\x1e0009'::bytea WHERE seq = 3"));
  PQfinish(db);
  char *out = NULL, err[256];
  CHECK_EQ_INT(dexa_store_check(path, &out, NULL, err, sizeof err), DEXA_E_CORRUPT);
  if (out) CHECK_CONTAINS(out, "stored values are damaged");
  dexa_free(out);
  temp_store_remove(path);
}

static const char *DESC =
    "{\"flow_type\":\"Fake\",\"start_step\":\"Start\",\"steps\":["
    "{\"name\":\"Start\",\"options\":{\"locked\":true}},"
    "{\"name\":\"Work\"}]," FAKE_RPCS "}";

static int h_events(fake *f, const dexa_call *c, dexa_result *r) {
  if (is(c, DEXA_CALL_EXECUTE, "Start")) {
    put_decision(r, "{\"next\":[{\"step\":\"Work\",\"input\":1}]}");
    return DEXA_OK;
  }
  if (is(c, DEXA_CALL_EXECUTE, "Work")) {
    dexa__result_add_event(r, "{\"type\":\"worked\"}", 17);
    put_write(r, "worked", "true");
  }
  return DEXA_OK;
}

/* A runtime on which dexa_runtime_start is never called (a client, as the
 * web example or the bindings are) reads the events of a Step that another
 * runtime's worker ran. */
static void test_client_only_runtime_sees_other_workers_events(void) {
  char path[1024];
  temp_store_path(path, sizeof path, "client");
  fake fc, fw;
  fake_init(&fc, h_events);
  fake_init(&fw, h_events);
  dexa_runtime *client = NULL, *worker = NULL;
  dexa_runtime_options o;
  dexa_runtime_options_init(&o, sizeof o);
  o.store = path;
  o.worker_id = "w";
  CHECK_EQ_INT(dexa__runtime_new_with_dispatch(&client, DESC, fake_dispatch, &fc, &o, NULL, 0), DEXA_OK);
  CHECK_EQ_INT(dexa__runtime_new_with_dispatch(&worker, DESC, fake_dispatch, &fw, &o, NULL, 0), DEXA_OK);
  CHECK_EQ_INT(dexa_runtime_start(worker, 1), DEXA_OK);
  CHECK_EQ_INT(dexa_runtime_start_session(client, "ev", "{}", 2, NULL, NULL), DEXA_OK);
  char *out = NULL;
  size_t n = 0;
  int found = 0;
  const char *token = NULL;
  char tok[128] = "";
  for (int i = 0; i < 20 && !found; i++) {
    CHECK_EQ_INT(dexa_runtime_read_events(client, "ev", token, 100, 1000, &out, &n), DEXA_OK);
    found = strstr(out, "\"worked\"") != NULL;
    cJSON *doc = cJSON_Parse(out);
    snprintf(tok, sizeof tok, "%s", cJSON_GetObjectItem(doc, "token")->valuestring);
    cJSON_Delete(doc);
    token = tok;
    dexa_free(out);
  }
  CHECK_EQ_INT(dexa_runtime_wait_idle(client, "ev", 20000), DEXA_OK);
  CHECK_EQ_INT(fake_count(&fc, "E Work "), 0); /* the client ran nothing */
  CHECK_EQ_INT(fake_count(&fw, "E Work "), 1);
  dexa_runtime_free(worker);
  dexa_runtime_free(client);
  temp_store_remove(path);
  CHECK(found);
}

int main(void) {
  const char *d = getenv("DEXA_TEST_PG_DIR");
  if (!temp_store_is_pg() || !d) {
    fprintf(stderr, "    DEXA_TEST_STORE and DEXA_TEST_PG_DIR must be set (test/pg/suites.sh)\n");
    printf("0 passed, %d failed\n", getenv("CI") ? 1 : 0);
    return getenv("CI") ? 1 : 0;
  }
  snprintf(pgdir, sizeof pgdir, "%s", d);
  RUN(test_unreachable_server_is_a_clear_error);
  RUN(test_wrong_password_is_an_auth_error);
  RUN(test_database_without_rights_is_an_auth_error);
  RUN(test_newer_schema_is_refused_and_left_alone);
  RUN(test_version_1_schema_gets_lost_worker_counts);
  RUN(test_version_2_database_gets_session_lifetimes);
  RUN(test_version_3_data_moves_to_a_table_per_kind);
  RUN(test_a_commit_wakes_another_store);
  RUN(test_two_stores_never_claim_one_step_twice);
  RUN(test_finished_step_rows_are_reused_and_hidden);
  RUN(test_events_of_one_result_share_a_row);
  RUN(test_client_only_runtime_sees_other_workers_events);
  TEST_MAIN_END();
}
