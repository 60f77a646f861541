/* SQLite backend: the administration operations (store.h) behind
 * dexa_store_check, dexa_store_vacuum and dexa_store_copy. They run
 * rarely, so their statements are prepared per call, not cached. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"
#include "store/sqlite_internal.h"

static int prepare(sq_conn *c, const char *sql, sqlite3_stmt **st) {
  int r = sqlite3_prepare_v2(c->db, sql, -1, st, NULL);
  return r == SQLITE_OK ? DEXA_OK : dexa__sq_err(r);
}

int dexa__sq_session_dump(dexa__store_conn *base, const char *id, dexa__session_dump *out) {
  sq_conn *c = (sq_conn *)base;
  memset(out, 0, sizeof *out);
  sqlite3_stmt *st = NULL;
  int rc = prepare(c, "SELECT flow_type, created_ms, status, event_seq, step_ord, settings,"
                      " active_ms FROM sessions WHERE session_id = ?1", &st);
  if (rc != DEXA_OK) return rc;
  BIND(rc, dexa__sq_text(st, 1, id, strlen(id)));
  if (rc != DEXA_OK) {
    sqlite3_finalize(st);
    return rc;
  }
  int r = sqlite3_step(st);
  if (r == SQLITE_ROW) {
    size_t unused;
    out->row.session_id = strdup(id);
    rc = out->row.session_id ? dexa__sq_col_dup(st, 0, &out->row.flow_type, &unused) : DEXA_E_NOMEM;
    out->row.created_ms = sqlite3_column_int64(st, 1);
    out->row.status = sqlite3_column_int(st, 2);
    out->row.event_seq = sqlite3_column_int64(st, 3);
    out->step_ord = sqlite3_column_int64(st, 4);
    out->row.active_ms = sqlite3_column_int64(st, 6);
    if (rc == DEXA_OK) rc = dexa__sq_col_dup(st, 5, &out->settings, &out->settings_len);
  } else {
    rc = r == SQLITE_DONE ? DEXA_E_NOT_FOUND : dexa__sq_st_err(st, r);
  }
  sqlite3_finalize(st);
  if (rc != DEXA_OK) dexa__session_dump_free(out);
  return rc;
}

int dexa__sq_session_restore(dexa__store_conn *base, const dexa__session_dump *d) {
  sq_conn *c = (sq_conn *)base;
  /* The memo would keep counters read before the update below. */
  if (dexa__session_memo_find(&c->memo, d->row.session_id)) return DEXA_E_BAD_STATE;
  int rc = dexa__sq_session_insert(base, d->row.session_id, d->row.flow_type, d->row.created_ms,
                                   d->settings, d->settings_len);
  sqlite3_stmt *st = NULL;
  if (rc == DEXA_OK)
    rc = prepare(c, "UPDATE sessions SET status = ?2, event_seq = ?3, step_ord = ?4,"
                    " active_ms = ?5 WHERE session_id = ?1", &st);
  if (rc == DEXA_OK) {
    BIND(rc, dexa__sq_text(st, 1, d->row.session_id, strlen(d->row.session_id)));
    BIND(rc, dexa__sq_int(st, 2, d->row.status));
    BIND(rc, dexa__sq_int64(st, 3, d->row.event_seq));
    BIND(rc, dexa__sq_int64(st, 4, d->step_ord));
    BIND(rc, dexa__sq_int64(st, 5, d->row.active_ms));
    if (rc == DEXA_OK) {
      int r = sqlite3_step(st);
      rc = r == SQLITE_DONE ? DEXA_OK : dexa__sq_st_err(st, r);
    }
  }
  sqlite3_finalize(st);
  return rc;
}

int dexa__sq_chan_scan(dexa__store_conn *base, const char *sid, dexa__chan_visit_fn visit,
                       void *ctx) {
  sq_conn *c = (sq_conn *)base;
  sqlite3_stmt *st = NULL;
  int rc = prepare(c, "SELECT key, seq, value FROM session_data WHERE skey ="
                      " (SELECT skey FROM sessions WHERE session_id = ?1) AND kind = 1"
                      " ORDER BY key, seq", &st);
  if (rc != DEXA_OK) return rc;
  BIND(rc, dexa__sq_text(st, 1, sid, strlen(sid)));
  int r = SQLITE_DONE;
  while (rc == DEXA_OK && (r = sqlite3_step(st)) == SQLITE_ROW) {
    const char *ch = sqlite3_column_blob(st, 0), *v;
    size_t chlen = (size_t)sqlite3_column_bytes(st, 0), vn;
    /* The value goes to rowbuf; the channel name stays in the row. */
    rc = dexa__sq_column_value(st, 2, &c->rowbuf, &c->rowcap, &v, &vn);
    if (rc == DEXA_OK) rc = visit(ctx, ch ? ch : "", chlen, sqlite3_column_int64(st, 1), v, vn);
  }
  if (rc == DEXA_OK && r != SQLITE_DONE) rc = dexa__sq_st_err(st, r);
  sqlite3_finalize(st);
  return rc;
}

int dexa__sq_integrity_check(dexa__store_conn *base, dexa__problem_fn report, void *ctx) {
  sq_conn *c = (sq_conn *)base;
  sqlite3_stmt *st = NULL;
  int rc = prepare(c, "PRAGMA integrity_check(100)", &st);
  int r = SQLITE_DONE;
  while (rc == DEXA_OK && (r = sqlite3_step(st)) == SQLITE_ROW) {
    const char *line = (const char *)sqlite3_column_text(st, 0);
    if (line && strcmp(line, "ok") != 0) {
      char msg[600];
      snprintf(msg, sizeof msg, "SQLite integrity_check: %s", line);
      report(ctx, msg);
    }
  }
  if (rc == DEXA_OK && r != SQLITE_DONE) rc = dexa__sq_st_err(st, r);
  sqlite3_finalize(st);
  return rc;
}

static int64_t pragma_i64(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st = NULL;
  int64_t v = -1;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return v;
}

static int64_t db_bytes(sqlite3 *db) {
  return pragma_i64(db, "PRAGMA page_count") * pragma_i64(db, "PRAGMA page_size");
}

/* On a connection of its own: rebuilds the file without its free pages,
 * then checkpoints the WAL into it and truncates the WAL. */
int dexa__sq_vacuum(dexa__store *base, int64_t *before, int64_t *after) {
  sq_store *s = (sq_store *)base;
  sqlite3 *db = NULL;
  int r = sqlite3_open_v2(s->path, &db, SQLITE_OPEN_READWRITE, NULL);
  if (r == SQLITE_OK) sqlite3_busy_timeout(db, 10000);
  if (r == SQLITE_OK) {
    *before = db_bytes(db);
    r = sqlite3_exec(db, "VACUUM", NULL, NULL, NULL);
  }
  if (r == SQLITE_OK) r = sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
  if (r == SQLITE_OK) *after = db_bytes(db);
  sqlite3_close_v2(db);
  return r == SQLITE_OK ? DEXA_OK : dexa__sq_err(r);
}
