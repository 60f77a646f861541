/* PostgreSQL backend: opening the store, connections (reconnecting with
 * backoff), the statement table, parameters, results, errors and
 * transactions. The data operations live in pg_data.c and pg_steps.c, the
 * schema in pg_schema.c, wake-ups in pg_notify.c. */
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dexagents/errors.h"
#include "store/pg_internal.h"
#include "store/session_cache.h"
#include "util/buf.h"

/* A claimed row's lock, or a transaction's first lock of a session, waits
 * at most this long for another process's transaction (a batch of a few
 * ms normally); past it the batch is rolled back and run again. */
#define LOCK_TIMEOUT "5s"
/* Reconnecting: the first retry after 50 ms, doubling up to 2 s. */
#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 2000
/* A batch that lost its connection or a conflict runs again for this long
 * (a PostgreSQL restart takes a few seconds). */
#define BATCH_RETRY_MS 30000
/* Waiters look at the store this often when no notification comes. */
#define POLL_MS 500

#define STEP_COLS                                                                          \
  "session_id, exec_id, step_type, ord, state, method, attempt, cancelled, input,"      \
  " options, wait, conditions, recovery_error, due_ms, lease_owner, lease_until, started_ms,"  \
  " lost_workers"
/* PG_STEP_UPDATE's assignments, PG_STEP_INSERT's when it reuses a slot. */
#define STEP_SET                                                                           \
  "exec_id = $2, step_type = $3, ord = $4, state = $5, method = $6, attempt = $7,"        \
  " cancelled = $8, input = $9, options = $10, wait = $11, conditions = $12,"            \
  " recovery_error = $13, due_ms = $14, lease_owner = $15, lease_until = $16,"           \
  " started_ms = $17, lost_workers = $18"
/* The state of a free slot: the row of a finished execution, kept for the
 * session's next one (no live row has state 0; store.h). */
#define STEP_FREE "0"
/* attrs, channel_msgs and events rows are keyed by the session's skey: bound by a write
 * transaction, which knows it from its memo, else found from the id. */
#define SKEY "coalesce($2::bigint, (SELECT skey FROM sessions WHERE session_id = $1::text))"

static const char *const sql_text[PG_COUNT] = {
    [PG_SESSION_INSERT] = "INSERT INTO sessions(session_id, flow_type, created_ms, status,"
                          " event_seq, step_ord, settings, active_ms)"
                          " VALUES($1, $2, $3, 0, 0, 0, $4, $3)"
                          " ON CONFLICT(session_id) DO NOTHING",
    [PG_SESSION_GET] = "SELECT flow_type, created_ms, status, event_seq, data_ver, step_ord, skey,"
                       " active_ms FROM sessions WHERE session_id = $1",
    [PG_SESSION_LOCK] = "SELECT flow_type, created_ms, status, event_seq, data_ver, step_ord,"
                        " skey, active_ms FROM sessions WHERE session_id = $1 FOR UPDATE",
    [PG_SESSION_SET_ACTIVE] = "UPDATE sessions SET active_ms = $2 WHERE session_id = $1",
    /* The sweep lists without locks; each session it ends or deletes is
     * locked and looked at again in that transaction. */
    [PG_SESSION_EXPIRED_OPEN] = "SELECT session_id, flow_type, created_ms, status, event_seq,"
                                " active_ms FROM sessions WHERE status = 0 AND active_ms < $1"
                                " ORDER BY status, active_ms LIMIT $2",
    [PG_SESSION_EXPIRED_CLOSED] = "SELECT session_id, flow_type, created_ms, status, event_seq,"
                                  " active_ms FROM sessions WHERE status IN (1, 2, 3)"
                                  " AND active_ms < $1 LIMIT $2",
    /* At most $2 rows of one session per statement: the sweep's batches. */
    [PG_SESSION_PURGE_DATA] = "DELETE FROM attrs WHERE skey = $1 AND key IN"
                              " (SELECT key FROM attrs WHERE skey = $1 ORDER BY key LIMIT $2)",
    [PG_SESSION_PURGE_CHANS] = "DELETE FROM channel_msgs WHERE skey = $1 AND (channel, seq) IN"
                               " (SELECT channel, seq FROM channel_msgs WHERE skey = $1"
                               " ORDER BY channel, seq LIMIT $2)",
    [PG_SESSION_PURGE_EVENTS] = "DELETE FROM events WHERE skey = $1 AND seq IN"
                                " (SELECT seq FROM events WHERE skey = $1 ORDER BY seq LIMIT $2)",
    [PG_SESSION_PURGE_STEPS] = "DELETE FROM steps WHERE session_id = $1",
    [PG_SESSION_DELETE] = "DELETE FROM sessions WHERE session_id = $1",
    [PG_SESSION_STATUS] = "UPDATE sessions SET status = $2 WHERE session_id = $1",
    [PG_SESSION_SET_COUNTERS] = "UPDATE sessions SET event_seq = $2, step_ord = $3, data_ver = $4"
                                " WHERE session_id = $1",
    [PG_SESSION_DATA_VER] = "SELECT data_ver FROM sessions WHERE session_id = $1",
    [PG_SESSION_LIST_FIRST] = "SELECT session_id, flow_type, created_ms, status, event_seq,"
                              " active_ms FROM sessions ORDER BY created_ms DESC, session_id DESC"
                              " LIMIT $1",
    [PG_SESSION_LIST_AFTER] = "SELECT session_id, flow_type, created_ms, status, event_seq,"
                              " active_ms FROM sessions WHERE (created_ms, session_id) < ($2, $3::text)"
                              " ORDER BY created_ms DESC, session_id DESC LIMIT $1",
    [PG_ATTR_GET] = "SELECT value FROM attrs WHERE skey = " SKEY " AND key = $3",
    [PG_ATTR_PUT] = "INSERT INTO attrs(skey, key, value) VALUES(" SKEY ", $3, $4)"
                    " ON CONFLICT(skey, key) DO UPDATE SET value = excluded.value",
    [PG_ATTR_DELETE] = "DELETE FROM attrs WHERE skey = " SKEY " AND key = $3",
    [PG_ATTR_SCAN_RANGE] = "SELECT key, value FROM attrs WHERE skey = " SKEY
                           " AND key >= $3 AND key < $4 ORDER BY key",
    [PG_ATTR_SCAN_FROM] = "SELECT key, value FROM attrs WHERE skey = " SKEY
                          " AND key >= $3 ORDER BY key",
    [PG_CHAN_PUSH] = "INSERT INTO channel_msgs(skey, channel, seq, value)"
                     " SELECT k.skey, $3::bytea, coalesce((SELECT max(seq) FROM channel_msgs"
                     " WHERE skey = k.skey AND channel = $3::bytea), 0) + 1, $4::bytea"
                     " FROM (SELECT " SKEY " AS skey) AS k",
    [PG_CHAN_COUNT] = "SELECT count(*) FROM channel_msgs WHERE skey = " SKEY " AND channel = $3",
    /* The oldest n messages, deleted and returned in one statement. */
    [PG_CHAN_TAKE] = "WITH t AS (SELECT skey, channel, seq FROM channel_msgs"
                     " WHERE skey = " SKEY " AND channel = $3 ORDER BY seq LIMIT $4),"
                     " d AS (DELETE FROM channel_msgs AS d USING t WHERE d.skey = t.skey"
                     " AND d.channel = t.channel AND d.seq = t.seq"
                     " RETURNING d.seq, d.value) SELECT seq, value FROM d ORDER BY seq",
    /* A new execution takes a free slot of its session (STEP_FREE) when
     * there is one: an UPDATE finds room on the slot's own page once the
     * page is pruned, where an INSERT goes where the free space map points
     * (nowhere until a VACUUM) and the table grows with every Step ever run. */
    [PG_STEP_INSERT] = "WITH slot AS (UPDATE steps SET " STEP_SET " WHERE ctid ="
                       " (SELECT ctid FROM steps WHERE session_id = $1 AND state = " STEP_FREE
                       " LIMIT 1) AND session_id = $1 AND state = " STEP_FREE " RETURNING 1)"
                       " INSERT INTO steps(" STEP_COLS ") SELECT $1, $2, $3, $4, $5, $6, $7, $8,"
                       " $9, $10, $11, $12, $13, $14, $15, $16, $17, $18"
                       " WHERE NOT EXISTS (SELECT 1 FROM slot)",
    [PG_STEP_GET] = "SELECT " STEP_COLS " FROM steps WHERE session_id = $1 AND exec_id = $2"
                    " AND state <> " STEP_FREE,
    [PG_STEP_UPDATE] = "UPDATE steps SET " STEP_SET " WHERE session_id = $1 AND exec_id = $2"
                       " AND state <> " STEP_FREE,
    /* A finished execution's row becomes a free slot (PG_STEP_INSERT), its
     * values cleared so it holds little. */
    [PG_STEP_DELETE] = "UPDATE steps SET state = " STEP_FREE ", input = NULL, options = NULL,"
                       " wait = NULL, conditions = NULL, recovery_error = NULL, due_ms = NULL,"
                       " lease_owner = NULL WHERE session_id = $1 AND exec_id = $2"
                       " AND state <> " STEP_FREE,
    /* Read-only (outside a write transaction): no locks. */
    [PG_STEP_FIRST_DUE] = "SELECT " STEP_COLS " FROM steps WHERE due_ms <= $1"
                          " ORDER BY due_ms LIMIT 1",
    /* A write transaction's claim: the due row and its session's row, both
     * locked, skipping any that another transaction holds. */
    [PG_STEP_CLAIM_DUE] = "SELECT st.session_id, st.exec_id, st.step_type, st.ord, st.state,"
                          " st.method, st.attempt, st.cancelled, st.input, st.options, st.wait,"
                          " st.conditions, st.recovery_error, st.due_ms, st.lease_owner,"
                          " st.lease_until, st.started_ms, st.lost_workers FROM steps AS st"
                          " JOIN sessions AS se ON se.session_id = st.session_id"
                          " WHERE st.due_ms <= $1 ORDER BY st.due_ms LIMIT 1"
                          " FOR UPDATE SKIP LOCKED",
    [PG_STEP_NEXT_DUE] = "SELECT min(due_ms) FROM steps",
    [PG_STEP_LIST] = "SELECT " STEP_COLS " FROM steps WHERE session_id = $1"
                     " AND state <> " STEP_FREE " ORDER BY ord",
    [PG_STEP_LIST_STATE] = "SELECT " STEP_COLS " FROM steps WHERE session_id = $1"
                           " AND state = $2 ORDER BY ord",
    [PG_STEP_RENEW] = "UPDATE steps SET lease_until = $6, due_ms = $6 WHERE session_id = $1"
                      " AND exec_id = $2 AND state = 3 AND lease_owner = $3 AND attempt = $4"
                      " AND cancelled = 0 AND lease_until > $5",
    [PG_STEP_BUSY] = "SELECT count(*) FROM steps WHERE session_id = $1 AND state IN (1, 3)",
    [PG_EVENT_APPEND] = "INSERT INTO events(skey, seq, value) VALUES(" SKEY ", $3, $4)",
    [PG_EVENT_TRIM] = "DELETE FROM events WHERE skey = " SKEY " AND seq <= $3",
    [PG_EVENT_READ] = "SELECT seq, value FROM events WHERE skey = " SKEY " AND seq > $3"
                      " ORDER BY seq LIMIT $4",
    [PG_NOTIFY] = "SELECT pg_notify('" DEXA__PG_CHANNEL "', $1)",
    [PG_ADMIN_SESSION_DUMP] = "SELECT flow_type, created_ms, status, event_seq, step_ord, settings"
                              " FROM sessions WHERE session_id = $1",
    [PG_ADMIN_SESSION_RESTORE] = "UPDATE sessions SET status = $2, event_seq = $3, step_ord = $4"
                                 " WHERE session_id = $1",
    [PG_ADMIN_CHAN_SCAN] = "SELECT channel, seq, value FROM channel_msgs WHERE skey ="
                           " (SELECT skey FROM sessions WHERE session_id = $1)"
                           " ORDER BY channel, seq",
    [PG_ADMIN_ORPHAN_DATA] = "SELECT (SELECT count(*) FROM attrs d WHERE NOT EXISTS"
                             " (SELECT 1 FROM sessions s WHERE s.skey = d.skey)) +"
                             " (SELECT count(*) FROM channel_msgs d WHERE NOT EXISTS"
                             " (SELECT 1 FROM sessions s WHERE s.skey = d.skey)) +"
                             " (SELECT count(*) FROM events d WHERE NOT EXISTS"
                             " (SELECT 1 FROM sessions s WHERE s.skey = d.skey))",
    [PG_ADMIN_ORPHAN_STEPS] = "SELECT count(*) FROM steps t WHERE NOT EXISTS"
                              " (SELECT 1 FROM sessions s WHERE s.session_id = t.session_id)",
    [PG_ADMIN_EVENTS_PAST] = "SELECT count(*) FROM events d JOIN sessions s ON s.skey = d.skey"
                             " WHERE d.seq > s.event_seq",
    /* A page of each data table's values after a row (skey, then the key
     * or channel and the seq the table has), in primary key order
     * (pg_admin.c). */
    [PG_ADMIN_VALUES_PAGE] = "SELECT skey, key, 0::bigint, value FROM attrs"
                             " WHERE (skey, key) > ($1::bigint, $2::bytea)"
                             " ORDER BY skey, key LIMIT 500",
    [PG_ADMIN_CHAN_VALUES_PAGE] = "SELECT skey, channel, seq, value FROM channel_msgs"
                                  " WHERE (skey, channel, seq) > ($1::bigint, $2::bytea, $3::bigint)"
                                  " ORDER BY skey, channel, seq LIMIT 500",
    [PG_ADMIN_EVENT_VALUES_PAGE] = "SELECT skey, '\\x'::bytea, seq, value FROM events"
                                   " WHERE (skey, seq) > ($1::bigint, $2::bigint)"
                                   " ORDER BY skey, seq LIMIT 500",
    /* Sent right after PG_SESSION_LOCK: the attributes write transactions
     * usually read ($2: their keys in hex). */
    [PG_ATTR_PREFETCH] = "SELECT key, value FROM attrs WHERE skey ="
                         " (SELECT skey FROM sessions WHERE session_id = $1)"
                         " AND key = ANY(ARRAY(SELECT decode(k, 'hex') FROM unnest($2::text[]) AS k))",
};

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- parameters and results ------------------------------------------------ */

void dexa__pg_p_text(pg_params *p, const char *s) {
  dexa__pg_p_bytes(p, s, s ? strlen(s) : 0);
}

void dexa__pg_p_bytes(pg_params *p, const char *s, size_t n) {
  int i = p->n++;
  p->v[i] = s ? (n ? s : "") : NULL;
  p->len[i] = (int)n;
  p->fmt[i] = 1; /* binary: bytea and text take the bytes as they are */
}

void dexa__pg_p_int(pg_params *p, int64_t v) {
  int i = p->n++;
  snprintf(p->num[i], sizeof p->num[i], "%lld", (long long)v);
  p->v[i] = p->num[i];
  p->len[i] = 0;
  p->fmt[i] = 0;
}

void dexa__pg_p_null(pg_params *p) {
  int i = p->n++;
  p->v[i] = NULL;
  p->len[i] = 0;
  p->fmt[i] = 0;
}

/* Results come in binary: integer columns are bigint, integer or smallint
 * (schema), counts bigint, all in network order. */
int64_t dexa__pg_int(const PGresult *r, int row, int col) {
  if (PQgetisnull(r, row, col)) return 0;
  const char *v = PQgetvalue(r, row, col);
  int len = PQgetlength(r, row, col);
  if (len == 8) {
    uint64_t x;
    memcpy(&x, v, 8);
    return (int64_t)be64toh(x);
  }
  if (len == 4) {
    uint32_t x;
    memcpy(&x, v, 4);
    return (int32_t)be32toh(x);
  }
  if (len == 2) {
    uint16_t x;
    memcpy(&x, v, 2);
    return (int16_t)be16toh(x);
  }
  return 0;
}

int dexa__pg_dup(const PGresult *r, int row, int col, char **slot, size_t *len) {
  if (PQgetisnull(r, row, col)) return dexa__row_set(slot, len, NULL, 0);
  return dexa__row_set(slot, len, PQgetvalue(r, row, col), (size_t)PQgetlength(r, row, col));
}

/* ---- errors ---------------------------------------------------------------- */

static int class_is(const char *state, const char *cls) {
  return state && strncmp(state, cls, 2) == 0;
}

/* SQLSTATE to store error. A broken connection, a conflict PostgreSQL
 * broke and a server shutting down all roll the transaction back: BUSY,
 * which the group commit takes as "run the batch again". */
int dexa__pg_err(pg_conn *c, const PGresult *res) {
  if (!c->db || PQstatus(c->db) != CONNECTION_OK) {
    c->lost = 1;
    return c->in_tx ? DEXA_E_BUSY : DEXA_E_IO;
  }
  const char *st = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
  if (!st) return DEXA_E_IO;
  if (strcmp(st, "23505") == 0) return DEXA_E_ALREADY_EXISTS;
  /* A row for a session that does not exist: its skey subquery was NULL. */
  if (strcmp(st, "23502") == 0) return DEXA_E_NOT_FOUND;
  if (strcmp(st, "40P01") == 0 || strcmp(st, "40001") == 0 || strcmp(st, "55P03") == 0)
    return DEXA_E_BUSY;
  if (class_is(st, "08") || class_is(st, "57")) {
    c->lost = 1;
    return DEXA_E_BUSY;
  }
  if (class_is(st, "28") || strcmp(st, "42501") == 0) return DEXA_E_AUTH;
  if (class_is(st, "53")) return DEXA_E_NOMEM;
  if (class_is(st, "XX") || class_is(st, "22")) return DEXA_E_CORRUPT;
  return DEXA_E_IO;
}

/* ---- connecting -------------------------------------------------------------- */

static void quiet(void *arg, const char *message) {
  (void)arg;
  (void)message;
}

int dexa__pg_connect(const char *conninfo, PGconn **out, char *errmsg, size_t n) {
  *out = NULL;
  /* connect_timeout: an unreachable server fails in seconds, not minutes. */
  /* Before dbname, so the caller's own values (expanded from it) win. */
  const char *keys[] = {"connect_timeout", "application_name", "dbname", NULL};
  const char *vals[] = {"10", "dexagents", conninfo, NULL};
  PGconn *db = PQconnectdbParams(keys, vals, 1);
  if (!db) {
    if (errmsg) snprintf(errmsg, n, "PostgreSQL: out of memory");
    return DEXA_E_NOMEM;
  }
  if (PQstatus(db) == CONNECTION_OK) {
    /* libpq prints the server's notices to stderr by default; a library
     * never prints. */
    PQsetNoticeProcessor(db, quiet, NULL);
    *out = db;
    return DEXA_OK;
  }
  /* libpq's message names host, port and user; it never includes the
   * password. The conninfo itself is not repeated. */
  const char *why = PQerrorMessage(db);
  int auth = PQconnectionUsedPassword(db) || strstr(why, "authentication") ||
             strstr(why, "password") || strstr(why, "permission denied");
  if (errmsg) {
    snprintf(errmsg, n, "cannot connect to PostgreSQL (database \"%s\", user \"%s\"): %s",
             PQdb(db) ? PQdb(db) : "?", PQuser(db) ? PQuser(db) : "?", why);
    size_t len = strlen(errmsg);
    while (len && (errmsg[len - 1] == '\n' || errmsg[len - 1] == ' ')) errmsg[--len] = '\0';
  }
  PQfinish(db);
  return auth ? DEXA_E_AUTH : DEXA_E_IO;
}

static int prepare_all(PGconn *db);

/* Outside a transaction: a lost connection is opened again, at most once
 * per backoff period (doubling), so a server that is down is not hammered.
 * Prepared statements went with the old connection. */
static int ensure_connected(pg_conn *c) {
  if (c->db && !c->lost && PQstatus(c->db) == CONNECTION_OK) return DEXA_OK;
  int64_t now = mono_ms();
  if (now < c->retry_at_ms) return DEXA_E_IO;
  int again = c->db != NULL || c->lost;
  if (c->db) PQfinish(c->db);
  c->db = NULL;
  c->pipe = 0;
  c->lost = 0;
  PGconn *db = NULL;
  char why[512] = "";
  int rc = dexa__pg_connect(c->store->conninfo, &db, why, sizeof why);
  if (rc == DEXA_OK) rc = prepare_all(db);
  if (rc != DEXA_OK) {
    if (db) PQfinish(db);
    c->backoff_ms = c->backoff_ms ? c->backoff_ms * 2 : BACKOFF_MIN_MS;
    if (c->backoff_ms > BACKOFF_MAX_MS) c->backoff_ms = BACKOFF_MAX_MS;
    c->retry_at_ms = now + c->backoff_ms;
    c->lost = 1;
    dexa__store_note(&c->store->base, DEXA_E_IO, "%s", why[0] ? why : "PostgreSQL: cannot configure the connection");
    dexa__store_log(&c->store->base, DEXA_LOG_WARNING, "pg-reconnect",
                    "PostgreSQL: the connection is lost: %s; connecting again in %lld ms",
                    why[0] ? why : "cannot configure the connection", (long long)c->backoff_ms);
    return DEXA_E_IO;
  }
  if (again || c->backoff_ms)
    dexa__store_log(&c->store->base, DEXA_LOG_INFO, "pg-reconnected", "PostgreSQL: connected again");
  c->db = db;
  c->backoff_ms = 0;
  c->retry_at_ms = 0;
  return DEXA_OK;
}

/* ---- statements ---------------------------------------------------------------- *
 *
 * Pipelining. A write transaction runs in libpq's pipeline mode: a statement
 * whose result its caller does not look at (an INSERT, UPDATE or DELETE of
 * known rows, SAVEPOINT, RELEASE, the counters and the NOTIFY before COMMIT)
 * is sent and not waited for; its result is read, with every other queued
 * one, when the transaction next needs an answer (a read) or at COMMIT. A
 * batch of Step completions that was some 150 round trips is then a few: the
 * reads that decide something, and COMMIT.
 *
 * A queued statement that fails (none should: each writes rows its
 * transaction already locked) makes the server skip what follows until the
 * next sync point. The failure is found later than it would be without the
 * pipeline; when it is found:
 *  - inside the savepoint it failed in, the operation fails with its error
 *    as before (the group commit rolls the savepoint back);
 *  - after that savepoint was released, the operation it belonged to was
 *    already taken as done: the whole transaction is rolled back (BUSY,
 *    nothing applied) and the connection runs its next transaction without
 *    deferring anything (strict), so the group commit's retry of the batch
 *    gives each operation its own outcome, exactly as without pipelining.
 * Read transactions pipeline their BEGIN with their first statement. */

/* Queued results at most: past this the queue is read (the server's replies
 * to it stay far below what a socket buffers, so neither side blocks). */
#define PIPE_MAX_PENDING 512

static const char *stmt_name(pg_stmt_id id, char name[16]) {
  snprintf(name, 16, "d%d", (int)id);
  return name;
}

/* Every statement of the table, prepared in one round trip, and the
 * connection's settings. */
static int prepare_all(PGconn *db) {
  if (!PQenterPipelineMode(db)) return DEXA_E_IO;
  char name[16];
  int ok = PQsendQueryParams(db, "SET lock_timeout = '" LOCK_TIMEOUT "'", 0, NULL, NULL, NULL,
                             NULL, 0);
  for (int i = 0; ok && i < PG_COUNT; i++)
    ok = PQsendPrepare(db, stmt_name((pg_stmt_id)i, name), sql_text[i], 0, NULL);
  ok = ok && PQpipelineSync(db);
  int results = 0;
  while (ok) {
    PGresult *r = PQgetResult(db);
    if (!r) {
      if (PQstatus(db) != CONNECTION_OK) ok = 0;
      continue;
    }
    ExecStatusType st = PQresultStatus(r);
    PQclear(r);
    if (st == PGRES_PIPELINE_SYNC) break;
    if (st != PGRES_COMMAND_OK) ok = 0;
    results++;
  }
  ok = ok && results == PG_COUNT + 1 && PQexitPipelineMode(db);
  return ok ? DEXA_OK : DEXA_E_IO;
}

/* The statements of the open savepoints start at these sequence numbers. */
static int64_t window_start(const pg_conn *c) {
  if (c->sp_depth > 0) return c->sp_seq[c->sp_depth - 1];
  return c->sp_used ? INT64_MAX : 0;
}

/* Notes the failure of queued statement seq (the first one counts). */
static void pipe_failed(pg_conn *c, int64_t seq, int rc) {
  if (c->failed_rc) return;
  c->failed_rc = rc;
  c->failed_seq = seq;
}

/* Reads one queued statement's result (and the NULL that ends it). Returns
 * the result when keep, else clears it. */
static PGresult *pipe_read_one(pg_conn *c, int keep) {
  PGresult *r = PQgetResult(c->db);
  int64_t seq = c->nread++;
  c->npending--;
  if (!r) {
    /* Nothing where a result should be: the connection is gone. */
    c->lost = 1;
    pipe_failed(c, seq, DEXA_E_BUSY);
    return NULL;
  }
  PGresult *end;
  while ((end = PQgetResult(c->db)) != NULL) PQclear(end);
  ExecStatusType st = PQresultStatus(r);
  if (st == PGRES_FATAL_ERROR) pipe_failed(c, seq, dexa__pg_err(c, r));
  else if (st == PGRES_PIPELINE_ABORTED) pipe_failed(c, seq, DEXA_E_BUSY);
  if (keep) return r;
  PQclear(r);
  return NULL;
}

/* After a failure the server skips statements until a sync point: sends
 * one and reads up to it, so that what comes next (ROLLBACK TO, ROLLBACK)
 * runs. The transaction stays open, failed. */
static void pipe_resync(pg_conn *c) {
  if (c->lost || PQstatus(c->db) != CONNECTION_OK) {
    c->lost = 1;
    return;
  }
  if (!PQpipelineSync(c->db)) {
    c->lost = 1;
    return;
  }
  for (;;) {
    PGresult *r = PQgetResult(c->db);
    if (!r) {
      if (PQstatus(c->db) != CONNECTION_OK) {
        c->lost = 1;
        return;
      }
      continue;
    }
    ExecStatusType st = PQresultStatus(r);
    PQclear(r);
    if (st == PGRES_PIPELINE_SYNC) return;
  }
}

/* Reads every queued result. */
static void pipe_drain(pg_conn *c) {
  if (c->npending == 0) return;
  if (!c->lost && PQflush(c->db) != 0) c->lost = 1;
  if (!c->lost && !PQsendFlushRequest(c->db)) c->lost = 1;
  if (!c->lost && PQflush(c->db) != 0) c->lost = 1;
  while (c->npending > 0 && !c->lost) pipe_read_one(c, 0);
  if (c->lost) {
    pipe_failed(c, c->nread, DEXA_E_BUSY);
    c->npending = 0;
  }
}

/* What a failure found in the queue means for the caller now: its own
 * error inside its savepoint; otherwise the transaction must go (BUSY) and
 * the next one runs strict. */
static int pipe_verdict(pg_conn *c) {
  if (!c->failed_rc) return DEXA_OK;
  if (c->failed_rc == DEXA_E_BUSY) return DEXA_E_BUSY;
  if (c->failed_seq >= window_start(c)) return c->failed_rc;
  c->strict_next = 1;
  return DEXA_E_BUSY;
}

static int pipe_send(pg_conn *c, pg_stmt_id id, const pg_params *p) {
  char name[16];
  if (!PQsendQueryPrepared(c->db, stmt_name(id, name), p->n, p->v, p->len, p->fmt, 1)) {
    c->lost = PQstatus(c->db) != CONNECTION_OK;
    return c->lost ? DEXA_E_BUSY : DEXA_E_IO;
  }
  c->npending++;
  c->nsent++;
  return DEXA_OK;
}

static int pipe_send_sql(pg_conn *c, const char *sql) {
  if (!PQsendQueryParams(c->db, sql, 0, NULL, NULL, NULL, NULL, 0)) {
    c->lost = PQstatus(c->db) != CONNECTION_OK;
    return c->lost ? DEXA_E_BUSY : DEXA_E_IO;
  }
  c->npending++;
  c->nsent++;
  if (c->npending >= PIPE_MAX_PENDING) pipe_drain(c);
  return DEXA_OK;
}

/* Statements whose answers the caller needs, in the pipeline: sent
 * together, then the queue is read, then their results (in r[0..n)). A
 * failure of one of them is the caller's error, as without the pipeline. */
static int pipe_run_n(pg_conn *c, int n, const pg_stmt_id *ids, const pg_params *const *ps,
                      PGresult **r) {
  for (int i = 0; i < n; i++) r[i] = NULL;
  if (c->failed_rc) {
    int rc = pipe_verdict(c);
    return rc == DEXA_OK ? DEXA_E_BUSY : rc;
  }
  for (int i = 0; i < n; i++) {
    int rc = pipe_send(c, ids[i], ps[i]);
    if (rc != DEXA_OK) return rc;
  }
  int64_t first = c->nsent - n;
  if (PQsendFlushRequest(c->db) == 0 || PQflush(c->db) != 0) c->lost = 1;
  while (!c->lost && c->nread < first) pipe_read_one(c, 0);
  int earlier = c->failed_rc != 0;
  for (int i = 0; i < n && !c->lost; i++) r[i] = pipe_read_one(c, 1);
  if (c->lost) {
    pipe_failed(c, first, DEXA_E_BUSY);
    c->npending = 0;
  }
  if (!c->failed_rc) return DEXA_OK;
  for (int i = 0; i < n; i++) {
    if (r[i]) PQclear(r[i]);
    r[i] = NULL;
  }
  int rc;
  if (!earlier && c->failed_seq >= first && c->failed_rc != DEXA_E_BUSY) {
    rc = c->failed_rc; /* its own failure */
  } else {
    rc = pipe_verdict(c);
    if (rc == DEXA_OK) rc = DEXA_E_BUSY;
  }
  pipe_resync(c);
  return rc;
}

static PGresult *pipe_run(pg_conn *c, pg_stmt_id id, const pg_params *p, int *rc) {
  PGresult *r = NULL;
  *rc = pipe_run_n(c, 1, &id, &p, &r);
  return r;
}

int dexa__pg_run2(pg_conn *c, pg_stmt_id id1, const pg_params *p1, pg_stmt_id id2,
                  const pg_params *p2, PGresult **r1, PGresult **r2) {
  *r1 = *r2 = NULL;
  if (c->pipe) {
    pg_stmt_id ids[2] = {id1, id2};
    const pg_params *ps[2] = {p1, p2};
    PGresult *r[2];
    int rc = pipe_run_n(c, 2, ids, ps, r);
    *r1 = r[0];
    *r2 = r[1];
    return rc;
  }
  int rc;
  *r1 = dexa__pg_run(c, id1, p1, &rc);
  if (!*r1) return rc;
  *r2 = dexa__pg_run(c, id2, p2, &rc);
  if (!*r2) {
    PQclear(*r1);
    *r1 = NULL;
  }
  return rc;
}

PGresult *dexa__pg_run(pg_conn *c, pg_stmt_id id, const pg_params *p, int *rc) {
  static const pg_params none = {0};
  if (!p) p = &none;
  if (c->pipe) return pipe_run(c, id, p, rc);
  *rc = c->in_tx ? (c->lost ? DEXA_E_BUSY : DEXA_OK) : ensure_connected(c);
  if (*rc != DEXA_OK) return NULL;
  char name[16];
  PGresult *r = PQexecPrepared(c->db, stmt_name(id, name), p->n, p->v, p->len, p->fmt, 1);
  ExecStatusType st = PQresultStatus(r);
  if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) return r;
  *rc = dexa__pg_err(c, r);
  PQclear(r);
  return NULL;
}

int dexa__pg_exec(pg_conn *c, pg_stmt_id id, const pg_params *p, int64_t *changed) {
  if (c->pipe && !changed) {
    /* Queued: its result is read with the next answer or at COMMIT. */
    if (c->failed_rc) return pipe_verdict(c) ? pipe_verdict(c) : DEXA_E_BUSY;
    static const pg_params none = {0};
    int rc = pipe_send(c, id, p ? p : &none);
    if (rc == DEXA_OK && c->npending >= PIPE_MAX_PENDING) {
      pipe_drain(c);
      rc = pipe_verdict(c);
      if (rc != DEXA_OK) pipe_resync(c);
    }
    return rc;
  }
  int rc;
  PGresult *r = dexa__pg_run(c, id, p, &rc);
  if (!r) return rc;
  if (changed) *changed = atoll(PQcmdTuples(r));
  PQclear(r);
  return DEXA_OK;
}

/* A plain command (transaction control) on the open connection. */
static int command(pg_conn *c, const char *sql) {
  if (c->lost) return DEXA_E_BUSY;
  PGresult *r = PQexec(c->db, sql);
  int rc = PQresultStatus(r) == PGRES_COMMAND_OK ? DEXA_OK : dexa__pg_err(c, r);
  PQclear(r);
  return rc;
}

/* ---- transactions ---------------------------------------------------------------- */

static void touched_clear(pg_conn *c) {
  for (size_t i = 0; i < c->ntouched; i++) free(c->touched[i]);
  c->ntouched = 0;
}

/* Leaves pipeline mode: a sync point, every result read up to it. */
static void pipe_leave(pg_conn *c) {
  if (!c->pipe) return;
  if (!c->lost && c->db && PQstatus(c->db) == CONNECTION_OK) {
    if (c->npending > 0) pipe_drain(c);
    pipe_resync(c);
  }
  if (c->lost || !c->db || !PQexitPipelineMode(c->db)) c->lost = 1;
  c->pipe = 0;
  c->npending = 0;
}

static void end_transaction(pg_conn *c) {
  dexa__pg_txattr_clear(c);
  dexa__write_log_clear(&c->log);
  dexa__session_memo_clear(&c->memo);
  touched_clear(c);
  c->writing = 0;
  c->in_tx = 0;
  c->npending = 0;
  c->nsent = c->nread = 0;
  c->failed_rc = 0;
  c->failed_seq = 0;
  c->sp_depth = 0;
  c->sp_used = 0;
  if (c->held) PQclear(c->held);
  c->held = NULL;
}

static int begin(pg_conn *c, const char *sql, int writing) {
  end_transaction(c);
  /* No connection yet: nothing was applied, the batch may run again. */
  int rc = ensure_connected(c) == DEXA_OK ? DEXA_OK : DEXA_E_BUSY;
  if (rc != DEXA_OK) return rc;
  int strict = c->strict_next;
  c->strict_next = 0;
  if (!strict && c->store->pipeline) {
    if (!PQenterPipelineMode(c->db)) return DEXA_E_BUSY;
    c->pipe = 1;
    rc = pipe_send_sql(c, sql);
    if (rc != DEXA_OK) {
      pipe_leave(c);
      return rc;
    }
  } else {
    rc = command(c, sql);
    if (rc != DEXA_OK) return rc;
  }
  c->in_tx = 1;
  c->writing = writing;
  return DEXA_OK;
}

/* READ COMMITTED: each statement sees the newest commits; the row locks
 * (pg_internal.h) are what keeps writers of one session apart. */
static int pg_begin_write(dexa__store_conn *base) {
  return begin((pg_conn *)base, "BEGIN", 1);
}

/* A read transaction is one snapshot (the session cache loads a session's
 * version and attributes together). */
static int pg_begin_read(dexa__store_conn *base) {
  return begin((pg_conn *)base, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0);
}

/* COMMIT in the pipeline: the queued statements, COMMIT and a sync point
 * go in one round trip. */
static int pipe_commit(pg_conn *c) {
  int rc = pipe_verdict(c);
  if (rc == DEXA_OK) rc = pipe_send_sql(c, "COMMIT");
  if (rc != DEXA_OK) {
    pipe_leave(c);
    return rc == DEXA_E_IO ? DEXA_E_BUSY : rc;
  }
  int64_t commit_seq = c->nsent - 1;
  if (!PQpipelineSync(c->db)) c->lost = 1;
  while (!c->lost && c->nread < commit_seq) pipe_read_one(c, 0);
  PGresult *r = NULL;
  if (!c->lost) r = pipe_read_one(c, 1);
  int committed = r && PQresultStatus(r) == PGRES_COMMAND_OK &&
                  strcmp(PQcmdStatus(r), "ROLLBACK") != 0;
  int commit_failed_here = r && PQresultStatus(r) == PGRES_FATAL_ERROR;
  if (r) PQclear(r);
  /* The sync point's own result. */
  int synced = 0;
  while (!c->lost) {
    PGresult *s = PQgetResult(c->db);
    if (!s) {
      if (PQstatus(c->db) != CONNECTION_OK) c->lost = 1;
      continue;
    }
    ExecStatusType st = PQresultStatus(s);
    PQclear(s);
    if (st == PGRES_PIPELINE_SYNC) {
      synced = 1;
      break;
    }
  }
  if (synced && !PQexitPipelineMode(c->db)) c->lost = 1;
  c->pipe = 0;
  c->npending = 0;
  if (committed) return DEXA_OK;
  if (c->lost && !r) return DEXA_E_IO; /* lost after COMMIT was sent: unknown */
  if (commit_failed_here && !c->failed_rc) return c->lost ? DEXA_E_IO : DEXA_E_BUSY;
  rc = pipe_verdict(c);
  return rc == DEXA_OK ? DEXA_E_BUSY : rc;
}

/* COMMIT: a lost connection before it leaves nothing applied (BUSY: run
 * it again); one lost during it leaves the outcome unknown (IO). */
static int pg_commit(dexa__store_conn *base) {
  pg_conn *c = (pg_conn *)base;
  int rc = c->writing ? dexa__pg_write_counters(c) : DEXA_OK;
  if (rc == DEXA_OK && c->writing) rc = dexa__pg_notify_touched(c);
  if (c->pipe) {
    if (rc != DEXA_OK) {
      pipe_leave(c);
      return rc;
    }
    /* The window of attributable failures is closed: all operations are
     * done. */
    c->sp_depth = 0;
    c->sp_used = 1;
    rc = pipe_commit(c);
    if (rc != DEXA_OK) {
      if (PQstatus(c->db) != CONNECTION_OK) c->lost = 1;
      /* A failed transaction is still open: roll it back. */
      if (!c->lost) PQclear(PQexec(c->db, "ROLLBACK"));
      end_transaction(c);
      return rc;
    }
    if (c->store->base.cache) dexa__write_log_publish(&c->log, c->store->base.cache);
    end_transaction(c);
    return DEXA_OK;
  }
  if (rc != DEXA_OK) return rc;
  if (c->lost) return DEXA_E_BUSY;
  PGresult *r = PQexec(c->db, "COMMIT");
  ExecStatusType st = PQresultStatus(r);
  /* COMMIT of a transaction that had failed answers ROLLBACK. */
  if (st == PGRES_COMMAND_OK && strcmp(PQcmdStatus(r), "ROLLBACK") == 0) rc = DEXA_E_BUSY;
  else if (st != PGRES_COMMAND_OK) rc = PQstatus(c->db) == CONNECTION_OK ? dexa__pg_err(c, r) : DEXA_E_IO;
  PQclear(r);
  if (rc != DEXA_OK) {
    if (PQstatus(c->db) != CONNECTION_OK) c->lost = 1;
    end_transaction(c);
    return rc;
  }
  if (c->store->base.cache) dexa__write_log_publish(&c->log, c->store->base.cache);
  end_transaction(c);
  return DEXA_OK;
}

static int pg_rollback(dexa__store_conn *base) {
  pg_conn *c = (pg_conn *)base;
  int was = c->in_tx;
  pipe_leave(c);
  end_transaction(c);
  if (!was || c->lost || !c->db || PQstatus(c->db) != CONNECTION_OK) return DEXA_OK;
  PGresult *r = PQexec(c->db, "ROLLBACK");
  PQclear(r);
  return DEXA_OK;
}

static int pg_savepoint(dexa__store_conn *base) {
  pg_conn *c = (pg_conn *)base;
  if (c->pipe && c->sp_depth >= PG_MAX_SAVEPOINTS) return DEXA_E_NOMEM;
  if (dexa__session_memo_savepoint(&c->memo) != 0) return DEXA_E_NOMEM;
  int rc;
  if (c->pipe) {
    rc = c->failed_rc ? pipe_verdict(c) : DEXA_OK;
    if (rc == DEXA_OK) rc = c->failed_rc ? DEXA_E_BUSY : DEXA_OK;
    if (rc == DEXA_OK) {
      c->sp_seq[c->sp_depth++] = c->nsent;
      c->sp_used = 1;
      rc = pipe_send_sql(c, "SAVEPOINT sp");
    }
  } else {
    rc = command(c, "SAVEPOINT sp");
  }
  if (rc == DEXA_OK)
    dexa__write_log_savepoint(&c->log);
  else
    dexa__session_memo_release(&c->memo);
  return rc;
}

static int pg_release(dexa__store_conn *base) {
  pg_conn *c = (pg_conn *)base;
  int rc;
  if (c->pipe) {
    /* A failure found now still belongs to the operation ending. */
    rc = pipe_verdict(c);
    if (rc == DEXA_OK) rc = pipe_send_sql(c, "RELEASE sp");
    if (rc == DEXA_OK && c->sp_depth > 0) c->sp_depth--;
  } else {
    rc = command(c, "RELEASE sp");
  }
  if (rc == DEXA_OK) {
    dexa__write_log_release(&c->log);
    dexa__session_memo_release(&c->memo);
  }
  return rc;
}

/* Row locks taken after the savepoint go with it, and so do the memo rows
 * read after it: the next use of such a session locks it again. */
static int pg_rollback_to(dexa__store_conn *base) {
  pg_conn *c = (pg_conn *)base;
  dexa__write_log_rollback_to(&c->log);
  dexa__session_memo_rollback_to(&c->memo);
  dexa__pg_txattr_clear(c);
  if (!c->pipe) return command(c, "ROLLBACK TO sp; RELEASE sp");
  pipe_drain(c);
  /* Failures inside the savepoint are what is being undone; one before it
   * dooms the transaction. */
  int rc = DEXA_OK;
  if (c->failed_rc) {
    if (c->failed_rc == DEXA_E_BUSY || c->failed_seq < window_start(c)) {
      rc = pipe_verdict(c);
      if (rc == DEXA_OK) rc = DEXA_E_BUSY;
    }
    pipe_resync(c);
    if (rc == DEXA_OK) {
      c->failed_rc = 0;
      c->failed_seq = 0;
    }
  }
  if (c->sp_depth > 0) c->sp_depth--;
  if (rc != DEXA_OK) return rc;
  if (c->lost) return DEXA_E_BUSY;
  rc = pipe_send_sql(c, "ROLLBACK TO sp");
  if (rc == DEXA_OK) rc = pipe_send_sql(c, "RELEASE sp");
  if (rc == DEXA_OK) {
    pipe_drain(c);
    if (c->failed_rc) {
      rc = c->failed_rc == DEXA_E_BUSY ? DEXA_E_BUSY : DEXA_E_IO;
      pipe_resync(c);
    }
  }
  return rc;
}

/* Commits are durable at COMMIT (synchronous_commit is the server's). */
static int pg_sync(dexa__store *s) {
  (void)s;
  return DEXA_OK;
}

/* ---- connections and the store ------------------------------------------------------ */

static int pg_conn_open(dexa__store *base, dexa__store_conn **out) {
  pg_store *s = (pg_store *)base;
  *out = NULL;
  pg_conn *c = calloc(1, sizeof *c);
  if (!c) return DEXA_E_NOMEM;
  c->base.ops = &dexa__pg_ops;
  c->store = s;
  int rc = ensure_connected(c);
  if (rc != DEXA_OK) {
    free(c);
    return DEXA_E_IO;
  }
  *out = &c->base;
  return DEXA_OK;
}

static void pg_conn_close(dexa__store_conn *base) {
  pg_conn *c = (pg_conn *)base;
  if (!c) return;
  end_transaction(c);
  if (c->db) PQfinish(c->db);
  free(c->buf);
  free(c->packbuf);
  free(c->touched);
  free(c->txa);
  dexa__write_log_free(&c->log);
  dexa__session_memo_free(&c->memo);
  free(c);
}

static void pg_close(dexa__store *base) {
  pg_store *s = (pg_store *)base;
  if (!s) return;
  dexa__pg_listener_stop(s->listener);
  dexa__session_cache_free(s->base.cache);
  pthread_mutex_destroy(&s->wake_mu);
  pthread_mutex_destroy(&s->hot_mu);
  for (int i = 0; i < s->nhot; i++) free(s->hot[i]);
  free(s->conninfo);
  free(s);
}

/* A random name for this store instance: notifications carry it. */
static void instance_name(char *out, size_t n) {
  unsigned char r[12] = {0};
  FILE *f = fopen("/dev/urandom", "rb");
  if (f) {
    if (fread(r, 1, sizeof r, f) != sizeof r) memset(r, 0, sizeof r);
    fclose(f);
  }
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  snprintf(out, n, "%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x.%lx", r[0], r[1], r[2],
           r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], (long)ts.tv_nsec);
}

static int open_schema(pg_store *s, char *errmsg, size_t n) {
  PGconn *db = NULL;
  int rc = dexa__pg_connect(s->conninfo, &db, errmsg, n);
  if (rc != DEXA_OK) return rc;
  rc = dexa__pg_schema_ensure(db, errmsg, n);
  PQfinish(db);
  return rc;
}

int dexa__pg_is_conninfo(const char *uri) {
  char *err = NULL;
  PQconninfoOption *o = PQconninfoParse(uri, &err);
  PQfreemem(err);
  if (!o) return 0;
  PQconninfoFree(o);
  return 1;
}

int dexa__pg_open(dexa__store **out, const char *conninfo, const dexa__store_config *cfg,
                  char *errmsg, size_t errmsg_size) {
  *out = NULL;
  pg_store *s = calloc(1, sizeof *s);
  if (!s) return DEXA_E_NOMEM;
  s->base.ops = &dexa__pg_ops;
  s->base.poll_ms = POLL_MS;
  s->base.batch_retry_ms = BATCH_RETRY_MS;
  s->base.log = cfg->log;
  s->base.log_ctx = cfg->log_ctx;
  /* DEXA_PG_PIPELINE=0: every statement its own round trip (to measure). */
  const char *pl = getenv("DEXA_PG_PIPELINE");
  s->pipeline = !(pl && strcmp(pl, "0") == 0);
  pthread_mutex_init(&s->wake_mu, NULL);
  pthread_mutex_init(&s->hot_mu, NULL);
  instance_name(s->instance, sizeof s->instance);
  s->conninfo = strdup(conninfo);
  int rc = s->conninfo ? DEXA_OK : DEXA_E_NOMEM;
  if (rc == DEXA_OK && cfg->cache_bytes)
    rc = dexa__session_cache_new(cfg->cache_bytes, &s->base.cache);
  if (rc == DEXA_OK) rc = open_schema(s, errmsg, errmsg_size);
  if (rc == DEXA_OK) rc = dexa__pg_listener_start(s, &s->listener);
  if (rc != DEXA_OK) {
    if (errmsg && !*errmsg)
      snprintf(errmsg, errmsg_size, "cannot open the PostgreSQL store: %s", dexa_strerror(rc));
    pg_close(&s->base);
    return rc;
  }
  *out = &s->base;
  return DEXA_OK;
}

const dexa__store_ops dexa__pg_ops = {
    .begin_write = pg_begin_write,
    .begin_read = pg_begin_read,
    .commit = pg_commit,
    .rollback = pg_rollback,
    .savepoint = pg_savepoint,
    .release = pg_release,
    .rollback_to = pg_rollback_to,
    .session_insert = dexa__pg_session_insert,
    .session_get = dexa__pg_session_get,
    .session_set_status = dexa__pg_session_set_status,
    .session_bump_events = dexa__pg_session_bump_events,
    .session_next_ord = dexa__pg_session_next_ord,
    .session_data_version = dexa__pg_session_data_version,
    .session_list = dexa__pg_session_list,
    .session_touch = dexa__pg_session_touch,
    .session_expired = dexa__pg_session_expired,
    .session_purge = dexa__pg_session_purge,
    .attr_get = dexa__pg_attr_get,
    .attr_put = dexa__pg_attr_put,
    .attr_delete = dexa__pg_attr_delete,
    .attr_scan = dexa__pg_attr_scan,
    .chan_push = dexa__pg_chan_push,
    .chan_count = dexa__pg_chan_count,
    .chan_take = dexa__pg_chan_take,
    .step_insert = dexa__pg_step_insert,
    .step_get = dexa__pg_step_get,
    .step_update = dexa__pg_step_update,
    .step_delete = dexa__pg_step_delete,
    .step_first_due = dexa__pg_step_first_due,
    .step_next_due = dexa__pg_step_next_due,
    .step_list = dexa__pg_step_list,
    .step_renew = dexa__pg_step_renew,
    .step_busy_count = dexa__pg_step_busy_count,
    .event_append = dexa__pg_event_append,
    .event_append_batch = dexa__pg_event_append_batch,
    .event_trim = dexa__pg_event_trim,
    .event_read = dexa__pg_event_read,
    .sync = pg_sync,
    .set_wake = dexa__pg_set_wake,
    .conn_open = pg_conn_open,
    .conn_close = pg_conn_close,
    .close = pg_close,
    .session_dump = dexa__pg_session_dump,
    .session_restore = dexa__pg_session_restore,
    .chan_scan = dexa__pg_chan_scan,
    .integrity_check = dexa__pg_integrity_check,
    .vacuum = dexa__pg_vacuum,
};
