/* SQLite backend: the schema, its version, and the migration of older
 * files.
 *
 * Version 2 keeps each session's attributes, channel messages and durable
 * events in ONE table, session_data, ordered (skey, kind, key, seq), where
 * skey is the session's short integer key (sessions.skey: 1, 2, ...; a
 * session id is repeated in no row but its own, which saves its length on
 * every one of a session's rows, 36 bytes for a UUID):
 *
 *   kind 0  attribute      key = attribute key, seq = 0
 *   kind 1  channel msg    key = channel name,  seq = 1, 2, ... (FIFO)
 *   kind 2  event          key = x'',           seq = event sequence
 *
 * Why: everything one operation writes for a session (its newest message,
 * the state attributes that sort right after the messages, a channel
 * message, new events) lies in one key range of one B-tree, so a commit
 * dirties about two leaf pages per session and shares the interior pages,
 * where separate tables cost a page in each. Events are appended in
 * ascending order: SQLite packs pages to the left when it splits, so an
 * ascending run fills its pages; a descending one (tried, to put the
 * newest events next to the attributes) left a quarter of each page empty.
 *
 * Version 1 had separate attrs, channel_msgs and events tables and a
 * step_counters table (execution ids now come from the session's step
 * order). Opening a version 1 file moves its rows over in one transaction. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"
#include "store/sqlite_internal.h"

#define SCHEMA_VERSION 5

/* sessions.active_ms (version 5): the time of the session's last activity
 * (a running session) or of its end (a closed one); sessions_active finds
 * the idle and the expired ones for the lifetime sweep (runtime/sweep.c). */
static const char create_v5[] =
    "CREATE TABLE IF NOT EXISTS sessions(session_id TEXT NOT NULL PRIMARY KEY,"
    " flow_type TEXT NOT NULL, created_ms INTEGER NOT NULL, status INTEGER NOT NULL,"
    " event_seq INTEGER NOT NULL, step_ord INTEGER NOT NULL, settings TEXT,"
    " skey INTEGER NOT NULL, data_ver INTEGER NOT NULL DEFAULT 0,"
    " active_ms INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS sessions_created ON sessions(created_ms, session_id);"
    "CREATE INDEX IF NOT EXISTS sessions_active ON sessions(status, active_ms);"
    "CREATE UNIQUE INDEX IF NOT EXISTS sessions_skey ON sessions(skey);"
    "CREATE TABLE IF NOT EXISTS session_data(skey INTEGER NOT NULL, kind INTEGER NOT NULL,"
    " key BLOB NOT NULL, seq INTEGER NOT NULL, value TEXT NOT NULL,"
    " PRIMARY KEY(skey, kind, key, seq)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS steps(session_id TEXT NOT NULL, exec_id TEXT NOT NULL,"
    " step_type TEXT NOT NULL, ord INTEGER NOT NULL, state INTEGER NOT NULL,"
    " method INTEGER NOT NULL, attempt INTEGER NOT NULL, cancelled INTEGER NOT NULL,"
    " input TEXT, options TEXT, wait TEXT, conditions TEXT, recovery_error TEXT,"
    " due_ms INTEGER, lease_owner TEXT, lease_until INTEGER NOT NULL,"
    " started_ms INTEGER NOT NULL, lost_workers INTEGER NOT NULL DEFAULT 0,"
    " PRIMARY KEY(session_id, exec_id)) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS steps_due ON steps(due_ms) WHERE due_ms IS NOT NULL;";

/* Version 1 sessions get their skey (in creation order) before the newer
 * tables and indexes exist; their rows move over after. */
static const char migrate_v1_sessions[] =
    "ALTER TABLE sessions ADD COLUMN skey INTEGER;"
    "CREATE TEMP TABLE dexa_skeys(session_id TEXT PRIMARY KEY, skey INTEGER NOT NULL);"
    "INSERT INTO temp.dexa_skeys SELECT session_id,"
    " row_number() OVER (ORDER BY created_ms, session_id) FROM sessions;"
    "UPDATE sessions SET skey = (SELECT skey FROM temp.dexa_skeys AS k"
    " WHERE k.session_id = sessions.session_id);"
    "DROP TABLE temp.dexa_skeys;";

/* Version 3 adds the data version of each session (store.h), which the
 * session cache checks. */
static const char migrate_v2_sessions[] =
    "ALTER TABLE sessions ADD COLUMN data_ver INTEGER NOT NULL DEFAULT 0;";

/* Version 4 counts the lost workers of each Step execution apart from its
 * failed attempts (steps.lost_workers; runtime/failures.c). Rows of older
 * files start at 0. */
static const char migrate_v3_steps[] =
    "ALTER TABLE steps ADD COLUMN lost_workers INTEGER NOT NULL DEFAULT 0;";

/* Version 5 adds the time of each session's last activity: a session of an
 * older file counts as active when the file is upgraded, so no session
 * ends at once for having been idle before its store knew lifetimes. */
static const char migrate_v4_sessions[] =
    "ALTER TABLE sessions ADD COLUMN active_ms INTEGER NOT NULL DEFAULT 0;"
    "UPDATE sessions SET active_ms = CAST(strftime('%s', 'now') AS INTEGER) * 1000;";

static const char migrate_v1_data[] =
    "INSERT INTO session_data(skey, kind, key, seq, value)"
    " SELECT s.skey, 0, a.key, 0, a.value FROM attrs AS a JOIN sessions AS s USING(session_id);"
    "INSERT INTO session_data(skey, kind, key, seq, value)"
    " SELECT s.skey, 1, c.channel, c.seq, c.value FROM channel_msgs AS c"
    " JOIN sessions AS s USING(session_id);"
    "INSERT INTO session_data(skey, kind, key, seq, value)"
    " SELECT s.skey, 2, x'', e.seq, e.json FROM events AS e JOIN sessions AS s USING(session_id);"
    "DROP TABLE attrs; DROP TABLE channel_msgs; DROP TABLE events; DROP TABLE step_counters;";

/* The stored schema version: 0 for a new file. */
static int read_version(sqlite3 *db, int *version) {
  *version = 0;
  sqlite3_stmt *st = NULL;
  int r = sqlite3_prepare_v2(db, "SELECT value FROM dexa_meta WHERE key = 'schema_version'", -1,
                             &st, NULL);
  if (r != SQLITE_OK) {
    /* No dexa_meta table: a new file (or not ours, which CREATE reveals). */
    sqlite3_finalize(st);
    return DEXA_OK;
  }
  r = sqlite3_step(st);
  if (r == SQLITE_ROW) *version = atoi((const char *)sqlite3_column_text(st, 0));
  int rc = (r == SQLITE_ROW || r == SQLITE_DONE) ? DEXA_OK : dexa__sq_err(r);
  sqlite3_finalize(st);
  return rc;
}

static int exec(sqlite3 *db, const char *sql, char *errmsg, size_t n) {
  char *err = NULL;
  int r = sqlite3_exec(db, sql, NULL, NULL, &err);
  if (r != SQLITE_OK && errmsg) snprintf(errmsg, n, "%s", err ? err : sqlite3_errstr(r));
  sqlite3_free(err);
  return r == SQLITE_OK ? DEXA_OK : dexa__sq_err(r);
}

static int has_column(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st = NULL;
  int has = 0;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) has = sqlite3_step(st) == SQLITE_ROW;
  sqlite3_finalize(st);
  return has;
}

static int has_lost_workers(sqlite3 *db) {
  return has_column(db, "SELECT 1 FROM pragma_table_info('steps') WHERE name = 'lost_workers'");
}

static int has_active_ms(sqlite3 *db) {
  return has_column(db, "SELECT 1 FROM pragma_table_info('sessions') WHERE name = 'active_ms'");
}

/* Brings the open write transaction's file to SCHEMA_VERSION. */
static int upgrade(sqlite3 *db, int version, char *errmsg, size_t n) {
  if (version > SCHEMA_VERSION) {
    if (errmsg)
      snprintf(errmsg, n, "schema version %d is newer than this library's (%d)", version,
               SCHEMA_VERSION);
    return DEXA_E_UNSUPPORTED;
  }
  if (version == SCHEMA_VERSION) return DEXA_OK;
  int rc = exec(db,
                "CREATE TABLE IF NOT EXISTS dexa_meta(key TEXT NOT NULL PRIMARY KEY, value TEXT)"
                " WITHOUT ROWID",
                errmsg, n);
  if (rc == DEXA_OK && version == 1) rc = exec(db, migrate_v1_sessions, errmsg, n);
  if (rc == DEXA_OK && (version == 1 || version == 2)) rc = exec(db, migrate_v2_sessions, errmsg, n);
  if (rc == DEXA_OK && version >= 1 && !has_active_ms(db)) rc = exec(db, migrate_v4_sessions, errmsg, n);
  if (rc == DEXA_OK) rc = exec(db, create_v5, errmsg, n);
  /* An older steps table (CREATE IF NOT EXISTS left it) lacks the column. */
  if (rc == DEXA_OK && version >= 1 && !has_lost_workers(db)) rc = exec(db, migrate_v3_steps, errmsg, n);
  if (rc == DEXA_OK && version == 1) rc = exec(db, migrate_v1_data, errmsg, n);
  if (rc != DEXA_OK) return rc == DEXA_E_ALREADY_EXISTS ? DEXA_E_CORRUPT : rc;
  char sql[128];
  snprintf(sql, sizeof sql,
           "INSERT INTO dexa_meta(key, value) VALUES('schema_version', '%d')"
           " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
           SCHEMA_VERSION);
  return exec(db, sql, errmsg, n);
}

int dexa__sq_schema_check(sqlite3 *db, char *errmsg, size_t n) {
  int version = 0;
  int rc = read_version(db, &version);
  if (rc != DEXA_OK) {
    if (errmsg) snprintf(errmsg, n, "%s", sqlite3_errmsg(db));
    return rc;
  }
  if (version == SCHEMA_VERSION) return DEXA_OK;
  if (errmsg)
    snprintf(errmsg, n,
             version ? "schema version %d, and this library's (%d) cannot be written to it"
                     : "not a store (no schema)%.0d%.0d",
             version, SCHEMA_VERSION);
  return version > SCHEMA_VERSION ? DEXA_E_UNSUPPORTED : version ? DEXA_E_IO : DEXA_E_CORRUPT;
}

int dexa__sq_schema_ensure(sqlite3 *db, char *errmsg, size_t n) {
  /* Another process may be creating or migrating the same file: the
   * write lock serializes us, and the version is read again under it. */
  int rc = exec(db, "BEGIN IMMEDIATE", errmsg, n);
  int version = 0;
  if (rc == DEXA_OK) rc = read_version(db, &version);
  if (rc == DEXA_OK) rc = upgrade(db, version, errmsg, n);
  if (rc == DEXA_OK) rc = exec(db, "COMMIT", errmsg, n);
  if (rc != DEXA_OK && !sqlite3_get_autocommit(db)) sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
  return rc;
}
