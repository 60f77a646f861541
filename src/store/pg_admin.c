/* The PostgreSQL backend's administration operations (store.h), used by
 * dexa_store_check, dexa_store_vacuum and dexa_store_copy (store_admin.c):
 * a session's row as a dump and back, its channel messages in order, a
 * consistency check of the schema's rows, and VACUUM.
 *
 * Their statements are the PG_ADMIN_* members of the prepared statement
 * table (pg_conn.c), run through dexa__pg_run like every other, so they
 * work inside a pipelined transaction too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"
#include "store/pg_internal.h"

int dexa__pg_session_dump(dexa__store_conn *base, const char *id, dexa__session_dump *out) {
  pg_conn *c = (pg_conn *)base;
  memset(out, 0, sizeof *out);
  pg_params p = {0};
  dexa__pg_p_text(&p, id);
  int rc;
  PGresult *r = dexa__pg_run(c, PG_ADMIN_SESSION_DUMP, &p, &rc);
  if (!r) return rc;
  if (PQntuples(r) == 0) {
    PQclear(r);
    return DEXA_E_NOT_FOUND;
  }
  size_t unused;
  out->row.session_id = strdup(id);
  rc = out->row.session_id ? dexa__pg_dup(r, 0, 0, &out->row.flow_type, &unused) : DEXA_E_NOMEM;
  out->row.created_ms = dexa__pg_int(r, 0, 1);
  out->row.status = (int32_t)dexa__pg_int(r, 0, 2);
  out->row.event_seq = dexa__pg_int(r, 0, 3);
  out->step_ord = dexa__pg_int(r, 0, 4);
  if (rc == DEXA_OK) rc = dexa__pg_dup(r, 0, 5, &out->settings, &out->settings_len);
  PQclear(r);
  if (rc != DEXA_OK) dexa__session_dump_free(out);
  return rc;
}

int dexa__pg_session_restore(dexa__store_conn *base, const dexa__session_dump *d) {
  pg_conn *c = (pg_conn *)base;
  /* The memo would keep counters read before the update below. */
  if (dexa__session_memo_find(&c->memo, d->row.session_id)) return DEXA_E_BAD_STATE;
  int rc = dexa__pg_session_insert(base, d->row.session_id, d->row.flow_type, d->row.created_ms,
                                   d->settings, d->settings_len);
  if (rc != DEXA_OK) return rc;
  pg_params p = {0};
  dexa__pg_p_text(&p, d->row.session_id);
  dexa__pg_p_int(&p, d->row.status);
  dexa__pg_p_int(&p, d->row.event_seq);
  dexa__pg_p_int(&p, d->step_ord);
  return dexa__pg_exec(c, PG_ADMIN_SESSION_RESTORE, &p, NULL);
}

int dexa__pg_chan_scan(dexa__store_conn *base, const char *sid, dexa__chan_visit_fn visit,
                       void *ctx) {
  pg_conn *c = (pg_conn *)base;
  pg_params p = {0};
  dexa__pg_p_text(&p, sid);
  int rc;
  PGresult *r = dexa__pg_run(c, PG_ADMIN_CHAN_SCAN, &p, &rc);
  if (!r) return rc;
  for (int i = 0, n = PQntuples(r); i < n && rc == DEXA_OK; i++) {
    const char *v;
    size_t vn;
    rc = dexa__pg_column_value(c, r, i, 2, &v, &vn);
    if (rc == DEXA_OK)
      rc = visit(ctx, PQgetvalue(r, i, 0), (size_t)PQgetlength(r, i, 0), dexa__pg_int(r, i, 1), v,
                 vn);
  }
  PQclear(r);
  return rc;
}

/* What the schema promises and a check can see from rows: every value
 * belongs to a session, every Step row to a session, and every packed
 * value unpacks. Each finding is one problem with the number of rows. */
static const struct {
  pg_stmt_id stmt; /* one row, one bigint column: how many rows break it */
  const char *problem;
} row_checks[] = {
    {PG_ADMIN_ORPHAN_DATA, "session data rows that belong to no session"},
    {PG_ADMIN_ORPHAN_STEPS, "Step rows that belong to no session"},
    {PG_ADMIN_EVENTS_PAST, "events numbered past their session's event counter"},
};

static int count_check(pg_conn *c, pg_stmt_id stmt, const char *problem, dexa__problem_fn report,
                       void *ctx) {
  int rc;
  PGresult *r = dexa__pg_run(c, stmt, NULL, &rc);
  if (!r) return rc;
  int64_t n = PQntuples(r) == 1 ? dexa__pg_int(r, 0, 0) : 0;
  PQclear(r);
  if (n > 0) {
    char msg[200];
    snprintf(msg, sizeof msg, "PostgreSQL store: %lld %s", (long long)n, problem);
    report(ctx, msg);
  }
  return DEXA_OK;
}

/* Unpacks every stored value, a page of rows at a time in primary key
 * order, so memory stays bounded however large the store is. Each page
 * statement returns (skey, key or channel, seq, value) and starts after
 * the row it is given: its skey, then its key and its seq if the table
 * has them. */
#define UNPACK_PAGE 500 /* the LIMIT of the PG_ADMIN_*VALUES_PAGE statements */

static const struct {
  pg_stmt_id stmt;
  int has_key, has_seq;
} value_pages[] = {
    {PG_ADMIN_VALUES_PAGE, 1, 0},
    {PG_ADMIN_CHAN_VALUES_PAGE, 1, 1},
    {PG_ADMIN_EVENT_VALUES_PAGE, 0, 1},
};

/* Counts the values of one table that do not unpack into *bad. */
static int table_unpack(pg_conn *c, size_t t, int64_t *bad) {
  int64_t skey = -1, seq = -1;
  char *key = NULL;
  size_t klen = 0;
  int rc = DEXA_OK, rows = UNPACK_PAGE;
  while (rc == DEXA_OK && rows == UNPACK_PAGE) {
    pg_params p = {0};
    dexa__pg_p_int(&p, skey);
    if (value_pages[t].has_key) dexa__pg_p_bytes(&p, key ? key : "", klen);
    if (value_pages[t].has_seq) dexa__pg_p_int(&p, seq);
    PGresult *r = dexa__pg_run(c, value_pages[t].stmt, &p, &rc);
    if (!r) break;
    rows = PQntuples(r);
    for (int i = 0; i < rows; i++)
      if (dexa__pg_value_check(c, r, i, 3) == DEXA_E_CORRUPT) (*bad)++;
    if (rows > 0) {
      skey = dexa__pg_int(r, rows - 1, 0);
      seq = dexa__pg_int(r, rows - 1, 2);
      rc = dexa__pg_dup(r, rows - 1, 1, &key, &klen);
    }
    PQclear(r);
  }
  free(key);
  return rc;
}

static int values_unpack(pg_conn *c, dexa__problem_fn report, void *ctx) {
  int64_t bad = 0;
  int rc = DEXA_OK;
  for (size_t t = 0; rc == DEXA_OK && t < sizeof value_pages / sizeof value_pages[0]; t++)
    rc = table_unpack(c, t, &bad);
  if (rc == DEXA_OK && bad > 0) {
    char msg[200];
    snprintf(msg, sizeof msg, "PostgreSQL store: %lld stored values are damaged (they do not unpack)",
             (long long)bad);
    report(ctx, msg);
  }
  return rc;
}

int dexa__pg_integrity_check(dexa__store_conn *base, dexa__problem_fn report, void *ctx) {
  pg_conn *c = (pg_conn *)base;
  int rc = DEXA_OK;
  for (size_t i = 0; i < sizeof row_checks / sizeof row_checks[0] && rc == DEXA_OK; i++)
    rc = count_check(c, row_checks[i].stmt, row_checks[i].problem, report, ctx);
  if (rc == DEXA_OK) rc = values_unpack(c, report, ctx);
  return rc;
}

static int64_t store_bytes(PGconn *db) {
  PGresult *r = PQexec(db, "SELECT (pg_total_relation_size('sessions') +"
                           " pg_total_relation_size('attrs') +"
                           " pg_total_relation_size('channel_msgs') +"
                           " pg_total_relation_size('events') +"
                           " pg_total_relation_size('steps'))::text");
  int64_t n = -1;
  if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
    n = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
  PQclear(r);
  return n;
}

/* On a connection of its own, outside any transaction (VACUUM cannot run
 * in one). A plain VACUUM, not VACUUM FULL: it runs beside the workers
 * (FULL would lock every table while it rewrites them), makes dead rows'
 * space reusable and gives the tables' empty tails back to the system. */
int dexa__pg_vacuum(dexa__store *base, int64_t *before, int64_t *after) {
  pg_store *s = (pg_store *)base;
  PGconn *db = NULL;
  int rc = dexa__pg_connect(s->conninfo, &db, NULL, 0);
  if (rc != DEXA_OK) return rc;
  *before = store_bytes(db);
  PGresult *r = PQexec(db, "VACUUM (ANALYZE) sessions, attrs, channel_msgs, events, steps");
  rc = PQresultStatus(r) == PGRES_COMMAND_OK ? DEXA_OK : DEXA_E_IO;
  PQclear(r);
  if (rc == DEXA_OK) *after = store_bytes(db);
  PQfinish(db);
  return rc;
}
