/* The SQLite store's layout: attributes, channel messages and events in one
 * table keep their own orders; a version 1 file (separate tables) is
 * migrated on open with nothing lost; a newer version is refused.
 * test-needs: sqlite postgresql */
#include <pthread.h>
#include <stdint.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dexagents/errors.h"
#include "store/store.h"
#include "support/temp_store.h"
#include "testing.h"

static char path[512];

static void fresh_path(const char *name) {
  char file[64];
  snprintf(file, sizeof file, "store-%s", name);
  temp_store_path(path, sizeof path, file);
}

static dexa__store *open_store(int *rc, char *err, size_t n) {
  dexa__store *s = NULL;
  dexa__store_config cfg = {path, "normal", 0, NULL, NULL};
  *rc = dexa__store_open(&s, &cfg, err, n);
  return s;
}

/* The store at path and a connection to it (NULL on failure, with the
 * failure checked). */
static dexa__store_conn *store_connect(dexa__store **s) {
  int rc;
  char err[256] = "";
  *s = open_store(&rc, err, sizeof err);
  dexa__store_conn *c = NULL;
  if (rc == DEXA_OK) rc = (*s)->ops->conn_open(*s, &c);
  if (rc != DEXA_OK) {
    fprintf(stderr, "    store: %s %s\n", dexa_strerror(rc), err);
    t_current_failed = 1;
    if (*s) (*s)->ops->close(*s);
    *s = NULL;
  }
  return c;
}

/* A new store file under name, connected. */
static dexa__store_conn *open_conn(const char *name, dexa__store **s) {
  fresh_path(name);
  return store_connect(s);
}

static void close_conn(dexa__store *s, dexa__store_conn *c) {
  if (c) c->ops->conn_close(c);
  if (s) s->ops->close(s);
}

/* ---- visitors ----------------------------------------------------------------- */

typedef struct seen {
  char text[1024];
  int count;
} seen;

static int see_value(void *ctx, int64_t seq, const char *json, size_t len) {
  seen *s = ctx;
  size_t used = strlen(s->text);
  snprintf(s->text + used, sizeof s->text - used, "%s%lld:%.*s", s->count ? "," : "",
           (long long)seq, (int)len, json);
  s->count++;
  return DEXA_OK;
}

static int see_attr(void *ctx, const char *key, size_t klen, const char *val, size_t vlen) {
  seen *s = ctx;
  size_t used = strlen(s->text);
  snprintf(s->text + used, sizeof s->text - used, "%s%.*s=%.*s", s->count ? "," : "", (int)klen,
           key, (int)vlen, val);
  s->count++;
  return 0;
}

static int64_t count_rows(const char *sql) {
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  int64_t n = -1;
  if (sqlite3_open(path, &db) == SQLITE_OK &&
      sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return n;
}

/* Runs sql on the file at path with a connection of its own. */
static int make_file(const char *sql) {
  sqlite3 *db = NULL;
  int r = sqlite3_open(path, &db);
  if (r == SQLITE_OK) r = sqlite3_exec(db, sql, NULL, NULL, NULL);
  sqlite3_close(db);
  return r;
}

/* ---- one table, three orders -------------------------------------------------- */

static void test_events_read_in_order_after_a_position_and_trim(void) {
  dexa__store *s = NULL;
  dexa__store_conn *c = open_conn("events", &s);
  if (!c) return;
  CHECK_EQ_INT(c->ops->begin_write(c), DEXA_OK);
  CHECK_EQ_INT(c->ops->session_insert(c, "s1", "F", 1, "{}", 2), DEXA_OK);
  CHECK_EQ_INT(c->ops->session_insert(c, "s2", "F", 2, "{}", 2), DEXA_OK);
  char json[32];
  for (int i = 1; i <= 5; i++) {
    int n = snprintf(json, sizeof json, "{\"e\":%d}", i);
    CHECK_EQ_INT(c->ops->event_append(c, "s1", i, json, (size_t)n), DEXA_OK);
    CHECK_EQ_INT(c->ops->event_append(c, "s2", i, "{}", 2), DEXA_OK);
  }
  /* Attributes and a channel in the same session must not show up. */
  CHECK_EQ_INT(c->ops->attr_put(c, "s1", "zz", 2, "1", 1), DEXA_OK);
  CHECK_EQ_INT(c->ops->chan_push(c, "s1", "ch", 2, "\"m\"", 3), DEXA_OK);
  CHECK_EQ_INT(c->ops->commit(c), DEXA_OK);

  seen all = {"", 0};
  CHECK_EQ_INT(c->ops->event_read(c, "s1", 0, 100, see_value, &all), DEXA_OK);
  CHECK_STR(all.text, "1:{\"e\":1},2:{\"e\":2},3:{\"e\":3},4:{\"e\":4},5:{\"e\":5}");
  seen page = {"", 0};
  CHECK_EQ_INT(c->ops->event_read(c, "s1", 2, 2, see_value, &page), DEXA_OK);
  CHECK_STR(page.text, "3:{\"e\":3},4:{\"e\":4}");

  CHECK_EQ_INT(c->ops->begin_write(c), DEXA_OK);
  CHECK_EQ_INT(c->ops->event_trim(c, "s1", 3), DEXA_OK);
  CHECK_EQ_INT(c->ops->commit(c), DEXA_OK);
  seen kept = {"", 0};
  CHECK_EQ_INT(c->ops->event_read(c, "s1", 0, 100, see_value, &kept), DEXA_OK);
  CHECK_STR(kept.text, "4:{\"e\":4},5:{\"e\":5}");
  seen other = {"", 0};
  CHECK_EQ_INT(c->ops->event_read(c, "s2", 0, 100, see_value, &other), DEXA_OK);
  CHECK_EQ_INT(other.count, 5);
  close_conn(s, c);
}

static void test_attributes_and_channels_keep_their_orders(void) {
  dexa__store *s = NULL;
  dexa__store_conn *c = open_conn("attrs", &s);
  if (!c) return;
  CHECK_EQ_INT(c->ops->begin_write(c), DEXA_OK);
  CHECK_EQ_INT(c->ops->session_insert(c, "s1", "F", 1, "{}", 2), DEXA_OK);
  CHECK_EQ_INT(c->ops->attr_put(c, "s1", "b/2", 3, "two", 3), DEXA_OK);
  CHECK_EQ_INT(c->ops->attr_put(c, "s1", "a", 1, "first", 5), DEXA_OK);
  CHECK_EQ_INT(c->ops->attr_put(c, "s1", "b/1", 3, "one", 3), DEXA_OK);
  CHECK_EQ_INT(c->ops->attr_put(c, "s1", "a", 1, "again", 5), DEXA_OK);
  CHECK_EQ_INT(c->ops->event_append(c, "s1", 1, "{}", 2), DEXA_OK);
  CHECK_EQ_INT(c->ops->chan_push(c, "s1", "q", 1, "1", 1), DEXA_OK);
  CHECK_EQ_INT(c->ops->chan_push(c, "s1", "q", 1, "2", 1), DEXA_OK);
  CHECK_EQ_INT(c->ops->chan_push(c, "s1", "r", 1, "x", 1), DEXA_OK);
  CHECK_EQ_INT(c->ops->chan_push(c, "s1", "q", 1, "3", 1), DEXA_OK);
  CHECK_EQ_INT(c->ops->commit(c), DEXA_OK);

  seen every = {"", 0};
  CHECK_EQ_INT(c->ops->attr_scan(c, "s1", "", 0, see_attr, &every), DEXA_OK);
  CHECK_STR(every.text, "a=again,b/1=one,b/2=two");
  seen b = {"", 0};
  CHECK_EQ_INT(c->ops->attr_scan(c, "s1", "b/", 2, see_attr, &b), DEXA_OK);
  CHECK_STR(b.text, "b/1=one,b/2=two");

  int64_t n = 0;
  CHECK_EQ_INT(c->ops->chan_count(c, "s1", "q", 1, &n), DEXA_OK);
  CHECK_EQ_INT(n, 3);
  CHECK_EQ_INT(c->ops->begin_write(c), DEXA_OK);
  seen two = {"", 0};
  CHECK_EQ_INT(c->ops->chan_take(c, "s1", "q", 1, 2, see_value, &two), DEXA_OK);
  CHECK_EQ_INT(c->ops->commit(c), DEXA_OK);
  CHECK_STR(two.text, "1:1,2:2");
  CHECK_EQ_INT(c->ops->chan_count(c, "s1", "q", 1, &n), DEXA_OK);
  CHECK_EQ_INT(n, 1);
  CHECK_EQ_INT(c->ops->chan_count(c, "s1", "r", 1, &n), DEXA_OK);
  CHECK_EQ_INT(n, 1);
  close_conn(s, c);
}

/* Rows are keyed by the session's short key: a session that does not exist
 * has none, and writing for it is refused. */
static void test_writes_for_an_unknown_session_are_refused(void) {
  dexa__store *s = NULL;
  dexa__store_conn *c = open_conn("nosession", &s);
  if (!c) return;
  CHECK_EQ_INT(c->ops->begin_write(c), DEXA_OK);
  CHECK_EQ_INT(c->ops->session_insert(c, "s1", "F", 1, "{}", 2), DEXA_OK);
  CHECK_EQ_INT(c->ops->session_insert(c, "s2", "F", 2, "{}", 2), DEXA_OK);
  CHECK_EQ_INT(c->ops->attr_put(c, "nope", "a", 1, "1", 1), DEXA_E_NOT_FOUND);
  CHECK_EQ_INT(c->ops->chan_push(c, "nope", "q", 1, "1", 1), DEXA_E_NOT_FOUND);
  CHECK_EQ_INT(c->ops->event_append(c, "nope", 1, "{}", 2), DEXA_E_NOT_FOUND);
  CHECK_EQ_INT(c->ops->attr_put(c, "s2", "a", 1, "2", 1), DEXA_OK);
  CHECK_EQ_INT(c->ops->commit(c), DEXA_OK);
  const char *v = NULL;
  size_t n = 0;
  CHECK_EQ_INT(c->ops->attr_get(c, "nope", "a", 1, &v, &n), DEXA_E_NOT_FOUND);
  CHECK_EQ_INT(c->ops->attr_get(c, "s1", "a", 1, &v, &n), DEXA_E_NOT_FOUND);
  CHECK_EQ_INT(c->ops->attr_get(c, "s2", "a", 1, &v, &n), DEXA_OK);
  close_conn(s, c);
  CHECK_EQ_INT(count_rows("SELECT count(*) FROM session_data"), 1);
  CHECK_EQ_INT(count_rows("SELECT skey FROM sessions WHERE session_id = 's2'"), 2);
}

/* ---- locking -------------------------------------------------------------------- */

typedef struct second_writer {
  dexa__store *s;
  int rc;
} second_writer;

static void *write_second(void *arg) {
  second_writer *w = arg;
  dexa__store_conn *c = NULL;
  w->rc = w->s->ops->conn_open(w->s, &c);
  if (w->rc == DEXA_OK) w->rc = c->ops->begin_write(c);
  if (w->rc == DEXA_OK) w->rc = c->ops->attr_put(c, "s1", "b", 1, "2", 1);
  if (w->rc == DEXA_OK) w->rc = c->ops->commit(c);
  if (c) c->ops->conn_close(c);
  return NULL;
}

/* A second writer (another connection, as another process would have)
 * waits for the first one's transaction instead of failing busy. */
static void test_a_writer_waits_for_another_writer(void) {
  dexa__store *s = NULL;
  dexa__store_conn *c = open_conn("busy", &s);
  if (!c) return;
  CHECK_EQ_INT(c->ops->begin_write(c), DEXA_OK);
  CHECK_EQ_INT(c->ops->session_insert(c, "s1", "F", 1, "{}", 2), DEXA_OK);
  second_writer w = {s, -1};
  pthread_t th;
  pthread_create(&th, NULL, write_second, &w);
  usleep(30000); /* the second writer is waiting for the lock by now */
  CHECK_EQ_INT(c->ops->attr_put(c, "s1", "a", 1, "1", 1), DEXA_OK);
  CHECK_EQ_INT(c->ops->commit(c), DEXA_OK);
  pthread_join(th, NULL);
  CHECK_EQ_INT(w.rc, DEXA_OK);
  seen both = {"", 0};
  CHECK_EQ_INT(c->ops->attr_scan(c, "s1", "", 0, see_attr, &both), DEXA_OK);
  CHECK_STR(both.text, "a=1,b=2");
  close_conn(s, c);
}

/* ---- checkpoints ---------------------------------------------------------------- */

static long file_size(const char *suffix) {
  char p[600];
  snprintf(p, sizeof p, "%s%s", path, suffix);
  FILE *f = fopen(p, "rb");
  if (!f) return -1;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fclose(f);
  return n;
}

/* About 12 MB of commits, three times the checkpoint threshold: the store's
 * thread copies the WAL into the database and the WAL starts over, so it
 * never holds everything; every row is still there. */
static void test_wal_is_checkpointed_off_the_commit_path(void) {
  dexa__store *s = NULL;
  dexa__store_conn *c = open_conn("ckpt", &s);
  if (!c) return;
  /* Random letters: packing cannot shrink them, so every commit writes
   * its full 8 KB. */
  static char value[8000];
  uint32_t state = 1;
  for (size_t i = 0; i < sizeof value; i++) {
    state = state * 1664525u + 1013904223u;
    value[i] = (char)('a' + (state >> 8) % 26);
  }
  char key[32];
  long wal_max = 0;
  int rc = DEXA_OK;
  /* 5000 commits of 8 KB (40 MB of frames) pass the inline bound of 8000
   * pages (32 MB): the WAL stays under it even when the checkpoint thread
   * falls behind, as on a loaded machine; on an idle one it stays far below. */
  for (int i = 0; i < 5000 && rc == DEXA_OK; i++) {
    rc = c->ops->begin_write(c);
    if (rc == DEXA_OK && i == 0) rc = c->ops->session_insert(c, "s1", "F", 1, "{}", 2);
    int n = snprintf(key, sizeof key, "k/%06d", i);
    if (rc == DEXA_OK) rc = c->ops->attr_put(c, "s1", key, (size_t)n, value, sizeof value);
    if (rc == DEXA_OK) rc = c->ops->commit(c);
    long w = file_size("-wal");
    if (w > wal_max) wal_max = w;
    if (i % 100 == 0) usleep(20000); /* give the thread a moment, as real load would */
  }
  CHECK_EQ_INT(rc, DEXA_OK);
  close_conn(s, c);
  int64_t rows = count_rows("SELECT count(*) FROM session_data WHERE kind = 0");
  CHECK_EQ_INT(rows, 5000);
  CHECK(wal_max > 0);
  CHECK(wal_max < 34L * 1024 * 1024); /* 8000 pages of 4 KB and the frames of one commit */
  CHECK(file_size("") > 38L * 1024 * 1024);
}

static int put_one(dexa__store_conn *c, const char *sid, const char *key) {
  int rc = c->ops->begin_write(c);
  if (rc == DEXA_OK) rc = c->ops->session_insert(c, sid, "F", 1, "{}", 2);
  if (rc == DEXA_OK) rc = c->ops->attr_put(c, sid, key, strlen(key), "\"v\"", 3);
  if (rc == DEXA_OK) return c->ops->commit(c);
  c->ops->rollback(c);
  return rc;
}

static long wal_inode(void) {
  char p[600];
  struct stat st;
  snprintf(p, sizeof p, "%s-wal", path);
  return stat(p, &st) == 0 ? (long)st.st_ino : -1;
}

/* The WAL file outlives the store, emptied into the database: the database
 * file alone holds every commit, and the next store writes over the same
 * WAL file instead of a new one. */
static void test_the_wal_file_stays_checkpointed_after_close(void) {
  dexa__store *s = NULL;
  dexa__store_conn *c = open_conn("keep-wal", &s);
  if (!c) return;
  CHECK_EQ_INT(put_one(c, "s1", "k"), DEXA_OK);
  close_conn(s, c);
  CHECK(file_size("-wal") > 0);
  long ino = wal_inode();
  /* The database file alone, as a copy without its WAL would be. */
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  char uri[600];
  snprintf(uri, sizeof uri, "file:%s?immutable=1", path);
  int n = -1;
  if (sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL) == SQLITE_OK &&
      sqlite3_prepare_v2(db, "SELECT count(*) FROM session_data", -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    n = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  CHECK_EQ_INT(n, 1);
  c = store_connect(&s);
  if (!c) return;
  CHECK_EQ_INT(put_one(c, "s2", "k"), DEXA_OK);
  const char *v = NULL;
  size_t vn = 0;
  CHECK_EQ_INT(c->ops->attr_get(c, "s1", "k", 1, &v, &vn), DEXA_OK);
  close_conn(s, c);
  CHECK_EQ_INT(wal_inode(), ino);
  CHECK_EQ_INT(count_rows("SELECT count(*) FROM session_data"), 2);
  temp_store_remove(path);
}

/* ---- packed values ---------------------------------------------------------------- */

static const char big_event[] =
    "{\"type\":\"tool_call_finished\",\"at\":1796058801284,\"call_id\":\"call_read_a_1\","
    "\"name\":\"read_a\",\"status\":\"ok\",\"seq\":4}";

/* Session data is stored packed (value_pack.h) and every read gives back
 * the bytes written; rows stored as plain text, as older files and short
 * values have them, read back as well. */
static void test_values_are_stored_packed_and_read_as_written(void) {
  dexa__store *s = NULL;
  dexa__store_conn *c = open_conn("packed", &s);
  if (!c) return;
  size_t n = sizeof big_event - 1;
  CHECK_EQ_INT(c->ops->begin_write(c), DEXA_OK);
  CHECK_EQ_INT(c->ops->session_insert(c, "s1", "F", 1, "{}", 2), DEXA_OK);
  CHECK_EQ_INT(c->ops->attr_put(c, "s1", "a/1", 3, big_event, n), DEXA_OK);
  CHECK_EQ_INT(c->ops->attr_put(c, "s1", "a/2", 3, "{}", 2), DEXA_OK);
  CHECK_EQ_INT(c->ops->chan_push(c, "s1", "q", 1, big_event, n), DEXA_OK);
  CHECK_EQ_INT(c->ops->event_append(c, "s1", 1, big_event, n), DEXA_OK);
  CHECK_EQ_INT(c->ops->commit(c), DEXA_OK);
  close_conn(s, c);
  CHECK_EQ_INT(count_rows("SELECT count(*) FROM session_data WHERE typeof(value) = 'blob'"
                          " AND length(value) < 80"),
               3);
  CHECK_EQ_INT(count_rows("SELECT count(*) FROM session_data WHERE typeof(value) = 'text'"), 1);
  /* A plain row as a version 1 file migrated or an older build wrote it. */
  char sql[600];
  snprintf(sql, sizeof sql,
           "INSERT INTO session_data(skey, kind, key, seq, value) VALUES"
           " ((SELECT skey FROM sessions WHERE session_id = 's1'), 2, x'', 2, '%s')",
           big_event);
  CHECK_EQ_INT(make_file(sql), SQLITE_OK);

  c = store_connect(&s);
  if (!c) return;
  const char *v = NULL;
  size_t vn = 0;
  CHECK_EQ_INT(c->ops->attr_get(c, "s1", "a/1", 3, &v, &vn), DEXA_OK);
  CHECK_EQ_INT(vn, n);
  CHECK_STR(v, big_event);
  seen attrs = {"", 0}, events = {"", 0}, queue = {"", 0};
  CHECK_EQ_INT(c->ops->attr_scan(c, "s1", "a/", 2, see_attr, &attrs), DEXA_OK);
  CHECK_EQ_INT(c->ops->event_read(c, "s1", 0, 10, see_value, &events), DEXA_OK);
  CHECK_EQ_INT(c->ops->begin_write(c), DEXA_OK);
  CHECK_EQ_INT(c->ops->chan_take(c, "s1", "q", 1, 5, see_value, &queue), DEXA_OK);
  CHECK_EQ_INT(c->ops->commit(c), DEXA_OK);
  close_conn(s, c);
  char want[1024];
  snprintf(want, sizeof want, "a/1=%s,a/2={}", big_event);
  CHECK_STR(attrs.text, want);
  snprintf(want, sizeof want, "1:%s,2:%s", big_event, big_event);
  CHECK_STR(events.text, want);
  snprintf(want, sizeof want, "1:%s", big_event);
  CHECK_STR(queue.text, want);
}

/* A damaged packed value is reported as corruption, not returned. */
static void test_a_damaged_packed_value_reads_as_corrupt(void) {
  dexa__store *s = NULL;
  dexa__store_conn *c = open_conn("damaged", &s);
  if (!c) return;
  CHECK_EQ_INT(c->ops->begin_write(c), DEXA_OK);
  CHECK_EQ_INT(c->ops->session_insert(c, "s1", "F", 1, "{}", 2), DEXA_OK);
  CHECK_EQ_INT(c->ops->attr_put(c, "s1", "a", 1, big_event, sizeof big_event - 1), DEXA_OK);
  CHECK_EQ_INT(c->ops->commit(c), DEXA_OK);
  close_conn(s, c);
  CHECK_EQ_INT(make_file("UPDATE session_data SET value = substr(value, 1, length(value) - 3)"),
               SQLITE_OK);
  c = store_connect(&s);
  if (!c) return;
  const char *v = NULL;
  size_t vn = 0;
  CHECK_EQ_INT(c->ops->attr_get(c, "s1", "a", 1, &v, &vn), DEXA_E_CORRUPT);
  close_conn(s, c);
}

/* ---- versions ------------------------------------------------------------------- */

/* The version 1 layout, as released files have it. */
static const char v1_file[] =
    "PRAGMA journal_mode=WAL;"
    "CREATE TABLE sessions(session_id TEXT NOT NULL PRIMARY KEY, flow_type TEXT NOT NULL,"
    " created_ms INTEGER NOT NULL, status INTEGER NOT NULL, event_seq INTEGER NOT NULL,"
    " step_ord INTEGER NOT NULL, settings TEXT) WITHOUT ROWID;"
    "CREATE INDEX sessions_created ON sessions(created_ms, session_id);"
    "CREATE TABLE attrs(session_id TEXT NOT NULL, key BLOB NOT NULL, value TEXT NOT NULL,"
    " PRIMARY KEY(session_id, key)) WITHOUT ROWID;"
    "CREATE TABLE channel_msgs(session_id TEXT NOT NULL, channel BLOB NOT NULL,"
    " seq INTEGER NOT NULL, value TEXT NOT NULL, PRIMARY KEY(session_id, channel, seq))"
    " WITHOUT ROWID;"
    "CREATE TABLE step_counters(session_id TEXT NOT NULL, step_type TEXT NOT NULL,"
    " n INTEGER NOT NULL, PRIMARY KEY(session_id, step_type)) WITHOUT ROWID;"
    "CREATE TABLE steps(session_id TEXT NOT NULL, exec_id TEXT NOT NULL,"
    " step_type TEXT NOT NULL, ord INTEGER NOT NULL, state INTEGER NOT NULL,"
    " method INTEGER NOT NULL, attempt INTEGER NOT NULL, cancelled INTEGER NOT NULL,"
    " input TEXT, options TEXT, wait TEXT, conditions TEXT, recovery_error TEXT,"
    " due_ms INTEGER, lease_owner TEXT, lease_until INTEGER NOT NULL,"
    " started_ms INTEGER NOT NULL, PRIMARY KEY(session_id, exec_id)) WITHOUT ROWID;"
    "CREATE INDEX steps_due ON steps(due_ms) WHERE due_ms IS NOT NULL;"
    "CREATE TABLE events(session_id TEXT NOT NULL, seq INTEGER NOT NULL, json TEXT NOT NULL,"
    " PRIMARY KEY(session_id, seq)) WITHOUT ROWID;"
    "CREATE TABLE dexa_meta(key TEXT NOT NULL PRIMARY KEY, value TEXT) WITHOUT ROWID;"
    "INSERT INTO dexa_meta VALUES('schema_version', '1');"
    "INSERT INTO sessions VALUES('old', 'F', 5, 0, 2, 3, '{}');"
    /* Version 1 bound keys and channel names as blobs. */
    "INSERT INTO attrs VALUES('old', CAST('AgentTurn' AS BLOB), '{\"turn\":1}');"
    "INSERT INTO attrs VALUES('old', CAST('AgentMessages/1' AS BLOB), '{\"seq\":1}');"
    "INSERT INTO channel_msgs VALUES('old', CAST('UserMessageSignals' AS BLOB), 1, '\"hi\"');"
    "INSERT INTO step_counters VALUES('old', 'RunModel', 3);"
    "INSERT INTO steps VALUES('old', 'RunModel-3', 'RunModel', 3, 1, 2, 0, 0, 'null', NULL,"
    " NULL, NULL, NULL, 0, NULL, 0, 0);"
    "INSERT INTO events VALUES('old', 1, '{\"type\":\"a\"}');"
    "INSERT INTO events VALUES('old', 2, '{\"type\":\"b\"}');";

static void test_version_1_file_is_migrated_with_nothing_lost(void) {
  fresh_path("v1");
  CHECK_EQ_INT(make_file(v1_file), SQLITE_OK);
  dexa__store *s = NULL;
  dexa__store_conn *c = store_connect(&s);
  if (!c) return;
  seen attrs = {"", 0};
  CHECK_EQ_INT(c->ops->attr_scan(c, "old", "", 0, see_attr, &attrs), DEXA_OK);
  CHECK_STR(attrs.text, "AgentMessages/1={\"seq\":1},AgentTurn={\"turn\":1}");
  seen events = {"", 0};
  CHECK_EQ_INT(c->ops->event_read(c, "old", 0, 10, see_value, &events), DEXA_OK);
  CHECK_STR(events.text, "1:{\"type\":\"a\"},2:{\"type\":\"b\"}");
  int64_t n = 0;
  CHECK_EQ_INT(c->ops->chan_count(c, "old", "UserMessageSignals", 18, &n), DEXA_OK);
  CHECK_EQ_INT(n, 1);
  dexa__step_row row;
  CHECK_EQ_INT(c->ops->step_get(c, "old", "RunModel-3", &row), DEXA_OK);
  dexa__step_row_free(&row);
  /* The next event and execution continue the session's counters. */
  int64_t seq = 0, ord = 0;
  CHECK_EQ_INT(c->ops->begin_write(c), DEXA_OK);
  CHECK_EQ_INT(c->ops->session_bump_events(c, "old", 1, &seq), DEXA_OK);
  CHECK_EQ_INT(c->ops->session_next_ord(c, "old", &ord), DEXA_OK);
  CHECK_EQ_INT(c->ops->session_insert(c, "new", "F", 9, "{}", 2), DEXA_OK);
  CHECK_EQ_INT(c->ops->attr_put(c, "new", "AgentTurn", 9, "{}", 2), DEXA_OK);
  CHECK_EQ_INT(c->ops->commit(c), DEXA_OK);
  CHECK_EQ_INT(seq, 3);
  CHECK_EQ_INT(ord, 4);
  close_conn(s, c);
  CHECK_EQ_INT(count_rows("SELECT value FROM dexa_meta WHERE key = 'schema_version'"), 5);
  CHECK_EQ_INT(count_rows("SELECT count(*) FROM sessions WHERE data_ver = 0"), 1);
  CHECK_EQ_INT(count_rows("SELECT skey FROM sessions WHERE session_id = 'old'"), 1);
  CHECK_EQ_INT(count_rows("SELECT skey FROM sessions WHERE session_id = 'new'"), 2);
  CHECK_EQ_INT(count_rows("SELECT count(*) FROM sqlite_schema WHERE name IN"
                          " ('attrs', 'events', 'channel_msgs', 'step_counters')"),
               0);
  /* Opening again leaves a current file as it is. */
  s = NULL;
  c = store_connect(&s);
  CHECK(c != NULL);
  close_conn(s, c);
  CHECK_EQ_INT(count_rows("SELECT count(*) FROM session_data"), 6);
}

/* The version 2 layout: session_data as now, sessions without data_ver. */
static const char v2_file[] =
    "PRAGMA journal_mode=WAL;"
    "CREATE TABLE sessions(session_id TEXT NOT NULL PRIMARY KEY, flow_type TEXT NOT NULL,"
    " created_ms INTEGER NOT NULL, status INTEGER NOT NULL, event_seq INTEGER NOT NULL,"
    " step_ord INTEGER NOT NULL, settings TEXT, skey INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE session_data(skey INTEGER NOT NULL, kind INTEGER NOT NULL,"
    " key BLOB NOT NULL, seq INTEGER NOT NULL, value TEXT NOT NULL,"
    " PRIMARY KEY(skey, kind, key, seq)) WITHOUT ROWID;"
    "CREATE TABLE dexa_meta(key TEXT NOT NULL PRIMARY KEY, value TEXT) WITHOUT ROWID;"
    "INSERT INTO dexa_meta VALUES('schema_version', '2');"
    "INSERT INTO sessions VALUES('old', 'F', 5, 0, 0, 0, '{}', 1);"
    "INSERT INTO session_data VALUES(1, 0, CAST('k' AS BLOB), 0, '\"v\"');";

/* Version 2 gains the data version (store.h), 0 for every session, and a
 * write raises it. */
static void test_version_2_file_gets_data_versions(void) {
  fresh_path("v2");
  CHECK_EQ_INT(make_file(v2_file), SQLITE_OK);
  dexa__store *s = NULL;
  dexa__store_conn *c = store_connect(&s);
  if (!c) return;
  int64_t ver = -1;
  CHECK_EQ_INT(c->ops->session_data_version(c, "old", &ver), DEXA_OK);
  CHECK_EQ_INT(ver, 0);
  const char *v = NULL;
  size_t vn = 0;
  CHECK_EQ_INT(c->ops->attr_get(c, "old", "k", 1, &v, &vn), DEXA_OK);
  CHECK_STR(v, "\"v\"");
  CHECK_EQ_INT(c->ops->begin_write(c), DEXA_OK);
  CHECK_EQ_INT(c->ops->attr_put(c, "old", "k", 1, "1", 1), DEXA_OK);
  CHECK_EQ_INT(c->ops->commit(c), DEXA_OK);
  CHECK_EQ_INT(c->ops->session_data_version(c, "old", &ver), DEXA_OK);
  CHECK_EQ_INT(ver, 1);
  close_conn(s, c);
  CHECK_EQ_INT(count_rows("SELECT value FROM dexa_meta WHERE key = 'schema_version'"), 5);
  /* Version 4: sessions count as active at the upgrade (no idle end at once). */
  CHECK_EQ_INT(count_rows("SELECT count(*) FROM sessions WHERE active_ms > 1600000000000"), 1);
  CHECK_EQ_INT(count_rows("SELECT count(*) FROM sqlite_schema WHERE name = 'sessions_active'"), 1);
}

/* The version 3 layout of steps: no lost_workers. */
static const char v3_steps[] =
    "CREATE TABLE steps(session_id TEXT NOT NULL, exec_id TEXT NOT NULL,"
    " step_type TEXT NOT NULL, ord INTEGER NOT NULL, state INTEGER NOT NULL,"
    " method INTEGER NOT NULL, attempt INTEGER NOT NULL, cancelled INTEGER NOT NULL,"
    " input TEXT, options TEXT, wait TEXT, conditions TEXT, recovery_error TEXT,"
    " due_ms INTEGER, lease_owner TEXT, lease_until INTEGER NOT NULL,"
    " started_ms INTEGER NOT NULL, PRIMARY KEY(session_id, exec_id)) WITHOUT ROWID;"
    "INSERT INTO steps VALUES('old', 'RunModel-3', 'RunModel', 3, 3, 2, 2, 0, 'null', NULL,"
    " NULL, NULL, NULL, 0, 'w', 0, 0);"
    "UPDATE dexa_meta SET value = '3' WHERE key = 'schema_version';";

/* Version 3 gains the lost-worker count of each Step row, 0 for old rows,
 * and a count written is read back. */
static void test_version_3_file_gets_lost_worker_counts(void) {
  fresh_path("v3");
  CHECK_EQ_INT(make_file(v2_file), SQLITE_OK);
  CHECK_EQ_INT(make_file("ALTER TABLE sessions ADD COLUMN data_ver INTEGER NOT NULL DEFAULT 0"),
               SQLITE_OK);
  CHECK_EQ_INT(make_file(v3_steps), SQLITE_OK);
  dexa__store *s = NULL;
  dexa__store_conn *c = store_connect(&s);
  if (!c) return;
  dexa__step_row row;
  CHECK_EQ_INT(c->ops->step_get(c, "old", "RunModel-3", &row), DEXA_OK);
  CHECK_EQ_INT(row.attempt, 2);
  CHECK_EQ_INT(row.lost_workers, 0);
  row.lost_workers = 4;
  CHECK_EQ_INT(c->ops->begin_write(c), DEXA_OK);
  CHECK_EQ_INT(c->ops->step_update(c, &row), DEXA_OK);
  CHECK_EQ_INT(c->ops->commit(c), DEXA_OK);
  dexa__step_row_free(&row);
  CHECK_EQ_INT(c->ops->step_get(c, "old", "RunModel-3", &row), DEXA_OK);
  CHECK_EQ_INT(row.lost_workers, 4);
  dexa__step_row_free(&row);
  close_conn(s, c);
  CHECK_EQ_INT(count_rows("SELECT value FROM dexa_meta WHERE key = 'schema_version'"), 5);
  CHECK_EQ_INT(count_rows("SELECT lost_workers FROM steps"), 4);
}

static void test_newer_version_is_refused_and_left_alone(void) {
  fresh_path("v99");
  CHECK_EQ_INT(make_file("CREATE TABLE dexa_meta(key TEXT NOT NULL PRIMARY KEY, value TEXT)"
                         " WITHOUT ROWID; INSERT INTO dexa_meta VALUES('schema_version', '99');"),
               SQLITE_OK);
  int rc;
  char err[256] = "";
  dexa__store *s = open_store(&rc, err, sizeof err);
  CHECK_EQ_INT(rc, DEXA_E_UNSUPPORTED);
  CHECK(s == NULL);
  CHECK_CONTAINS(err, "schema version 99");
  CHECK_EQ_INT(count_rows("SELECT count(*) FROM sqlite_schema"), 1);
}

static void test_a_file_that_is_not_a_database_is_refused(void) {
  fresh_path("junk");
  FILE *f = fopen(path, "wb");
  if (f) {
    for (int i = 0; i < 512; i++) fputs("not a database ", f);
    fclose(f);
  }
  int rc;
  char err[256] = "";
  dexa__store *s = open_store(&rc, err, sizeof err);
  CHECK(rc == DEXA_E_CORRUPT || rc == DEXA_E_IO);
  CHECK(s == NULL);
}

int main(void) {
  RUN(test_events_read_in_order_after_a_position_and_trim);
  RUN(test_attributes_and_channels_keep_their_orders);
  RUN(test_writes_for_an_unknown_session_are_refused);
  RUN(test_a_writer_waits_for_another_writer);
  RUN(test_wal_is_checkpointed_off_the_commit_path);
  RUN(test_the_wal_file_stays_checkpointed_after_close);
  RUN(test_values_are_stored_packed_and_read_as_written);
  RUN(test_a_damaged_packed_value_reads_as_corrupt);
  RUN(test_version_1_file_is_migrated_with_nothing_lost);
  RUN(test_version_2_file_gets_data_versions);
  RUN(test_version_3_file_gets_lost_worker_counts);
  RUN(test_newer_version_is_refused_and_left_alone);
  RUN(test_a_file_that_is_not_a_database_is_refused);
  unlink(path);
  TEST_MAIN_END();
}
