/* SQLite backend: Step execution rows. */
#include "store/sqlite_internal.h"

#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"

#define STMT(var, conn, id)                                                            \
  int rc = DEXA_OK;                                                                    \
  sqlite3_stmt *var = dexa__sq_stmt((sq_conn *)(conn), (id), &rc);                     \
  if (!var) return rc

/* Binds the 18 columns in the order of SQ_STEP_INSERT / SQ_STEP_UPDATE. */
static int bind_row(sqlite3_stmt *st, const dexa__step_row *r) {
  int rc = DEXA_OK;
  BIND(rc, dexa__sq_text(st, 1, r->session_id, strlen(r->session_id)));
  BIND(rc, dexa__sq_text(st, 2, r->exec_id, strlen(r->exec_id)));
  BIND(rc, dexa__sq_text(st, 3, r->step_type, strlen(r->step_type)));
  BIND(rc, dexa__sq_int64(st, 4, r->ord));
  BIND(rc, dexa__sq_int(st, 5, r->state));
  BIND(rc, dexa__sq_int(st, 6, r->method));
  BIND(rc, dexa__sq_int(st, 7, r->attempt));
  BIND(rc, dexa__sq_int(st, 8, r->cancelled));
  BIND(rc, dexa__sq_text(st, 9, r->input, r->input_len));
  BIND(rc, dexa__sq_text(st, 10, r->options, r->options_len));
  BIND(rc, dexa__sq_text(st, 11, r->wait, r->wait_len));
  BIND(rc, dexa__sq_text(st, 12, r->conditions, r->conditions_len));
  BIND(rc, dexa__sq_text(st, 13, r->recovery_error, r->recovery_error_len));
  if (r->due_ms == DEXA__NO_DUE)
    BIND(rc, dexa__sq_null(st, 14));
  else
    BIND(rc, dexa__sq_int64(st, 14, r->due_ms));
  BIND(rc, dexa__sq_text(st, 15, r->lease_owner, r->lease_owner ? strlen(r->lease_owner) : 0));
  BIND(rc, dexa__sq_int64(st, 16, r->lease_until));
  BIND(rc, dexa__sq_int64(st, 17, r->started_ms));
  BIND(rc, dexa__sq_int(st, 18, r->lost_workers));
  return rc;
}

static int read_row(sqlite3_stmt *st, dexa__step_row *r) {
  size_t unused;
  int rc = dexa__sq_col_dup(st, 0, &r->session_id, &unused);
  if (!rc) rc = dexa__sq_col_dup(st, 1, &r->exec_id, &unused);
  if (!rc) rc = dexa__sq_col_dup(st, 2, &r->step_type, &unused);
  r->ord = sqlite3_column_int64(st, 3);
  r->state = sqlite3_column_int(st, 4);
  r->method = sqlite3_column_int(st, 5);
  r->attempt = sqlite3_column_int(st, 6);
  r->cancelled = sqlite3_column_int(st, 7);
  if (!rc) rc = dexa__sq_col_dup(st, 8, &r->input, &r->input_len);
  if (!rc) rc = dexa__sq_col_dup(st, 9, &r->options, &r->options_len);
  if (!rc) rc = dexa__sq_col_dup(st, 10, &r->wait, &r->wait_len);
  if (!rc) rc = dexa__sq_col_dup(st, 11, &r->conditions, &r->conditions_len);
  if (!rc) rc = dexa__sq_col_dup(st, 12, &r->recovery_error, &r->recovery_error_len);
  r->due_ms = sqlite3_column_type(st, 13) == SQLITE_NULL ? DEXA__NO_DUE
                                                         : sqlite3_column_int64(st, 13);
  if (!rc) rc = dexa__sq_col_dup(st, 14, &r->lease_owner, &unused);
  r->lease_until = sqlite3_column_int64(st, 15);
  r->started_ms = sqlite3_column_int64(st, 16);
  r->lost_workers = sqlite3_column_int(st, 17);
  if (!rc && (!r->session_id || !r->exec_id || !r->step_type)) rc = DEXA_E_CORRUPT;
  return rc;
}

/* Steps st expecting at most one row, read into out. */
static int one_row(sqlite3_stmt *st, dexa__step_row *out) {
  memset(out, 0, sizeof *out);
  int r = sqlite3_step(st);
  int rc = r == SQLITE_ROW ? read_row(st, out)
                           : (r == SQLITE_DONE ? DEXA_E_NOT_FOUND : dexa__sq_st_err(st, r));
  sqlite3_reset(st);
  if (rc != DEXA_OK) dexa__step_row_free(out);
  return rc;
}

int dexa__sq_step_insert(dexa__store_conn *c, const dexa__step_row *row) {
  STMT(st, c, SQ_STEP_INSERT);
  rc = bind_row(st, row);
  return rc == DEXA_OK ? dexa__sq_exec(st) : rc;
}

int dexa__sq_step_get(dexa__store_conn *c, const char *sid, const char *exec_id,
                      dexa__step_row *out) {
  STMT(st, c, SQ_STEP_GET);
  BIND(rc, dexa__sq_text(st, 1, sid, strlen(sid)));
  BIND(rc, dexa__sq_text(st, 2, exec_id, strlen(exec_id)));
  return rc == DEXA_OK ? one_row(st, out) : rc;
}

int dexa__sq_step_update(dexa__store_conn *c, const dexa__step_row *row) {
  STMT(st, c, SQ_STEP_UPDATE);
  rc = bind_row(st, row);
  return rc == DEXA_OK ? dexa__sq_exec(st) : rc;
}

int dexa__sq_step_delete(dexa__store_conn *c, const char *sid, const char *exec_id) {
  STMT(st, c, SQ_STEP_DELETE);
  BIND(rc, dexa__sq_text(st, 1, sid, strlen(sid)));
  BIND(rc, dexa__sq_text(st, 2, exec_id, strlen(exec_id)));
  return rc == DEXA_OK ? dexa__sq_exec(st) : rc;
}

int dexa__sq_step_first_due(dexa__store_conn *c, int64_t now, dexa__step_row *out) {
  STMT(st, c, SQ_STEP_FIRST_DUE);
  BIND(rc, dexa__sq_int64(st, 1, now));
  return rc == DEXA_OK ? one_row(st, out) : rc;
}

int dexa__sq_step_next_due(dexa__store_conn *c, int64_t *due) {
  STMT(st, c, SQ_STEP_NEXT_DUE);
  int r = sqlite3_step(st);
  *due = DEXA__NO_DUE;
  if (r == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
    *due = sqlite3_column_int64(st, 0);
  rc = (r == SQLITE_ROW || r == SQLITE_DONE) ? DEXA_OK : dexa__sq_st_err(st, r);
  sqlite3_reset(st);
  return rc;
}

static int push_row(dexa__step_row **rows, size_t *n, size_t *cap, sqlite3_stmt *st) {
  if (*n == *cap) {
    size_t nc = *cap ? *cap * 2 : 4;
    dexa__step_row *p = realloc(*rows, nc * sizeof *p);
    if (!p) return DEXA_E_NOMEM;
    *rows = p;
    *cap = nc;
  }
  memset(&(*rows)[*n], 0, sizeof **rows);
  int rc = read_row(st, &(*rows)[*n]);
  (*n)++; /* counted even on error so that the caller frees it */
  return rc;
}

int dexa__sq_step_list(dexa__store_conn *c, const char *sid, int32_t state,
                       dexa__step_row **rows, size_t *n) {
  *rows = NULL;
  *n = 0;
  STMT(st, c, state ? SQ_STEP_LIST_STATE : SQ_STEP_LIST);
  BIND(rc, dexa__sq_text(st, 1, sid, strlen(sid)));
  if (state) BIND(rc, dexa__sq_int(st, 2, state));
  size_t cap = 0;
  int r = SQLITE_DONE;
  while (rc == DEXA_OK && (r = sqlite3_step(st)) == SQLITE_ROW)
    rc = push_row(rows, n, &cap, st);
  if (rc == DEXA_OK && r != SQLITE_DONE) rc = dexa__sq_st_err(st, r);
  sqlite3_reset(st);
  if (rc != DEXA_OK) {
    dexa__step_rows_free(*rows, *n);
    *rows = NULL;
    *n = 0;
  }
  return rc;
}

int dexa__sq_step_renew(dexa__store_conn *c, const char *sid, const char *exec_id,
                        const char *owner, int32_t attempt, int64_t now, int64_t until) {
  STMT(st, c, SQ_STEP_RENEW);
  BIND(rc, dexa__sq_text(st, 1, sid, strlen(sid)));
  BIND(rc, dexa__sq_text(st, 2, exec_id, strlen(exec_id)));
  BIND(rc, dexa__sq_text(st, 3, owner, strlen(owner)));
  BIND(rc, dexa__sq_int(st, 4, attempt));
  BIND(rc, dexa__sq_int64(st, 5, now));
  BIND(rc, dexa__sq_int64(st, 6, until));
  if (rc == DEXA_OK) rc = dexa__sq_exec(st);
  if (rc == DEXA_OK && sqlite3_changes(((sq_conn *)c)->db) == 0) rc = DEXA_E_NOT_FOUND;
  return rc;
}

int dexa__sq_step_busy_count(dexa__store_conn *c, const char *sid, int64_t *n) {
  STMT(st, c, SQ_STEP_BUSY);
  BIND(rc, dexa__sq_text(st, 1, sid, strlen(sid)));
  if (rc != DEXA_OK) return rc;
  int r = sqlite3_step(st);
  *n = r == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
  rc = r == SQLITE_ROW ? DEXA_OK : dexa__sq_st_err(st, r);
  sqlite3_reset(st);
  return rc;
}
