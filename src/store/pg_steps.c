/* PostgreSQL backend: Step execution rows.
 *
 * In a write transaction every operation on a session's Steps first locks
 * the session's row (pg_internal.h), so writers of one session take turns
 * across processes; the claim (step_first_due) locks a due row and its
 * session together and skips rows other transactions hold.
 *
 * A finished execution's row is not deleted but kept as a free slot
 * (state 0) that the session's next execution takes (PG_STEP_INSERT and
 * PG_STEP_DELETE, pg_conn.c): a new row goes where the free space map
 * points, which knows nothing until a VACUUM, so the table grew with every
 * Step ever run; an updated row stays on its page. No read returns a free
 * slot. */
#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"
#include "store/pg_internal.h"

/* The 18 columns in the order of STEP_COLS (pg_conn.c). */
static void bind_row(pg_params *p, const dexa__step_row *r) {
  dexa__pg_p_text(p, r->session_id);
  dexa__pg_p_text(p, r->exec_id);
  dexa__pg_p_text(p, r->step_type);
  dexa__pg_p_int(p, r->ord);
  dexa__pg_p_int(p, r->state);
  dexa__pg_p_int(p, r->method);
  dexa__pg_p_int(p, r->attempt);
  dexa__pg_p_int(p, r->cancelled);
  dexa__pg_p_bytes(p, r->input, r->input_len);
  dexa__pg_p_bytes(p, r->options, r->options_len);
  dexa__pg_p_bytes(p, r->wait, r->wait_len);
  dexa__pg_p_bytes(p, r->conditions, r->conditions_len);
  dexa__pg_p_bytes(p, r->recovery_error, r->recovery_error_len);
  if (r->due_ms == DEXA__NO_DUE)
    dexa__pg_p_null(p);
  else
    dexa__pg_p_int(p, r->due_ms);
  dexa__pg_p_text(p, r->lease_owner);
  dexa__pg_p_int(p, r->lease_until);
  dexa__pg_p_int(p, r->started_ms);
  dexa__pg_p_int(p, r->lost_workers);
}

static int read_row(const PGresult *res, int i, dexa__step_row *r) {
  memset(r, 0, sizeof *r);
  int rc = dexa__pg_dup(res, i, 0, &r->session_id, NULL);
  if (!rc) rc = dexa__pg_dup(res, i, 1, &r->exec_id, NULL);
  if (!rc) rc = dexa__pg_dup(res, i, 2, &r->step_type, NULL);
  r->ord = dexa__pg_int(res, i, 3);
  r->state = (int32_t)dexa__pg_int(res, i, 4);
  r->method = (int32_t)dexa__pg_int(res, i, 5);
  r->attempt = (int32_t)dexa__pg_int(res, i, 6);
  r->cancelled = (int32_t)dexa__pg_int(res, i, 7);
  if (!rc) rc = dexa__pg_dup(res, i, 8, &r->input, &r->input_len);
  if (!rc) rc = dexa__pg_dup(res, i, 9, &r->options, &r->options_len);
  if (!rc) rc = dexa__pg_dup(res, i, 10, &r->wait, &r->wait_len);
  if (!rc) rc = dexa__pg_dup(res, i, 11, &r->conditions, &r->conditions_len);
  if (!rc) rc = dexa__pg_dup(res, i, 12, &r->recovery_error, &r->recovery_error_len);
  r->due_ms = PQgetisnull(res, i, 13) ? DEXA__NO_DUE : dexa__pg_int(res, i, 13);
  if (!rc) rc = dexa__pg_dup(res, i, 14, &r->lease_owner, NULL);
  r->lease_until = dexa__pg_int(res, i, 15);
  r->started_ms = dexa__pg_int(res, i, 16);
  r->lost_workers = (int32_t)dexa__pg_int(res, i, 17);
  if (!rc && (!r->session_id || !r->exec_id || !r->step_type)) rc = DEXA_E_CORRUPT;
  if (rc != DEXA_OK) dexa__step_row_free(r);
  return rc;
}

/* Runs a statement expecting at most one row, read into out. */
static int one_row(pg_conn *c, pg_stmt_id id, const pg_params *p, dexa__step_row *out) {
  memset(out, 0, sizeof *out);
  int rc;
  PGresult *r = dexa__pg_run(c, id, p, &rc);
  if (!r) return rc;
  rc = PQntuples(r) ? read_row(r, 0, out) : DEXA_E_NOT_FOUND;
  PQclear(r);
  return rc;
}

/* Locks the row's session and notes it for NOTIFY, then runs a write. */
static int write_row(pg_conn *c, pg_stmt_id id, const dexa__step_row *row) {
  int rc = dexa__pg_lock_session(c, row->session_id);
  if (rc == DEXA_OK) rc = dexa__pg_touch(c, row->session_id);
  if (rc != DEXA_OK) return rc;
  pg_params p = {0};
  bind_row(&p, row);
  return dexa__pg_exec(c, id, &p, NULL);
}

int dexa__pg_step_insert(dexa__store_conn *c, const dexa__step_row *row) {
  return write_row((pg_conn *)c, PG_STEP_INSERT, row);
}

int dexa__pg_step_update(dexa__store_conn *c, const dexa__step_row *row) {
  return write_row((pg_conn *)c, PG_STEP_UPDATE, row);
}

int dexa__pg_step_get(dexa__store_conn *base, const char *sid, const char *exec_id,
                      dexa__step_row *out) {
  pg_conn *c = (pg_conn *)base;
  memset(out, 0, sizeof *out);
  int rc = dexa__pg_lock_session(c, sid);
  if (rc != DEXA_OK) return rc;
  pg_params p = {0};
  dexa__pg_p_text(&p, sid);
  dexa__pg_p_text(&p, exec_id);
  return one_row(c, PG_STEP_GET, &p, out);
}

int dexa__pg_step_delete(dexa__store_conn *base, const char *sid, const char *exec_id) {
  pg_conn *c = (pg_conn *)base;
  int rc = dexa__pg_lock_session(c, sid);
  if (rc == DEXA_OK) rc = dexa__pg_touch(c, sid);
  if (rc != DEXA_OK) return rc;
  pg_params p = {0};
  dexa__pg_p_text(&p, sid);
  dexa__pg_p_text(&p, exec_id);
  return dexa__pg_exec(c, PG_STEP_DELETE, &p, NULL);
}

int dexa__pg_step_first_due(dexa__store_conn *base, int64_t now, dexa__step_row *out) {
  pg_conn *c = (pg_conn *)base;
  pg_params p = {0};
  dexa__pg_p_int(&p, now);
  int rc = one_row(c, c->writing ? PG_STEP_CLAIM_DUE : PG_STEP_FIRST_DUE, &p, out);
  /* The session is locked already: reading it into the memo waits for
   * nothing. */
  if (rc == DEXA_OK && c->writing) rc = dexa__pg_lock_session(c, out->session_id);
  if (rc != DEXA_OK && rc != DEXA_E_NOT_FOUND) dexa__step_row_free(out);
  return rc;
}

int dexa__pg_step_next_due(dexa__store_conn *base, int64_t *due) {
  pg_conn *c = (pg_conn *)base;
  int rc;
  *due = DEXA__NO_DUE;
  PGresult *r = dexa__pg_run(c, PG_STEP_NEXT_DUE, NULL, &rc);
  if (!r) return rc;
  if (PQntuples(r) && !PQgetisnull(r, 0, 0)) *due = dexa__pg_int(r, 0, 0);
  PQclear(r);
  return DEXA_OK;
}

int dexa__pg_step_list(dexa__store_conn *base, const char *sid, int32_t state,
                       dexa__step_row **rows, size_t *n) {
  pg_conn *c = (pg_conn *)base;
  *rows = NULL;
  *n = 0;
  int rc = dexa__pg_lock_session(c, sid);
  if (rc != DEXA_OK) return rc == DEXA_E_NOT_FOUND ? DEXA_OK : rc;
  pg_params p = {0};
  dexa__pg_p_text(&p, sid);
  if (state) dexa__pg_p_int(&p, state);
  PGresult *r = dexa__pg_run(c, state ? PG_STEP_LIST_STATE : PG_STEP_LIST, &p, &rc);
  if (!r) return rc;
  int count = PQntuples(r);
  if (count) {
    *rows = calloc((size_t)count, sizeof **rows);
    if (!*rows) rc = DEXA_E_NOMEM;
  }
  for (int i = 0; rc == DEXA_OK && i < count; i++) {
    rc = read_row(r, i, &(*rows)[i]);
    if (rc == DEXA_OK) (*n)++;
  }
  PQclear(r);
  if (rc != DEXA_OK) {
    dexa__step_rows_free(*rows, *n);
    *rows = NULL;
    *n = 0;
  }
  return rc;
}

int dexa__pg_step_renew(dexa__store_conn *base, const char *sid, const char *exec_id,
                        const char *owner, int32_t attempt, int64_t now, int64_t until) {
  pg_conn *c = (pg_conn *)base;
  int rc = dexa__pg_lock_session(c, sid);
  if (rc != DEXA_OK) return rc;
  pg_params p = {0};
  dexa__pg_p_text(&p, sid);
  dexa__pg_p_text(&p, exec_id);
  dexa__pg_p_text(&p, owner);
  dexa__pg_p_int(&p, attempt);
  dexa__pg_p_int(&p, now);
  dexa__pg_p_int(&p, until);
  int64_t changed = 0;
  rc = dexa__pg_exec(c, PG_STEP_RENEW, &p, &changed);
  if (rc == DEXA_OK && changed == 0) rc = DEXA_E_NOT_FOUND;
  return rc;
}

int dexa__pg_step_busy_count(dexa__store_conn *base, const char *sid, int64_t *n) {
  pg_conn *c = (pg_conn *)base;
  pg_params p = {0};
  dexa__pg_p_text(&p, sid);
  int rc;
  *n = 0;
  PGresult *r = dexa__pg_run(c, PG_STEP_BUSY, &p, &rc);
  if (!r) return rc;
  *n = dexa__pg_int(r, 0, 0);
  PQclear(r);
  return DEXA_OK;
}
