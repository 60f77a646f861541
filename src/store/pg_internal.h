/* Shared by the PostgreSQL backend's files (pg_*.c): the store and its
 * connections, the statement table, parameters and results, and the error
 * mapping.
 *
 * Many processes on many machines share one database. What SQLite gets
 * from its one write lock, this backend gets from row locks:
 *  - a write transaction locks a session's row (SELECT ... FOR UPDATE) the
 *    first time any of its operations names the session, before it touches
 *    the session's Steps or data, so writers of one session take turns and
 *    always lock in the same order (session, then its rows);
 *  - a claim locks a due Step row together with its session's row with
 *    FOR UPDATE SKIP LOCKED, so it never waits for, and never takes, a row
 *    another process's transaction holds;
 *  - a conflict PostgreSQL breaks (a deadlock between two batches that lock
 *    two sessions in opposite orders) or a connection lost before COMMIT
 *    was sent rolls the whole transaction back: DEXA_E_BUSY, and the
 *    group commit runs the batch again (store.h: batch_retry_ms).
 * Wake-ups: every write transaction NOTIFYs the sessions it changed at
 * commit; a listener thread per store hears other processes' (pg_notify.c). */
#ifndef DEXA_STORE_PG_INTERNAL_H
#define DEXA_STORE_PG_INTERNAL_H

#include <libpq-fe.h>
#include <pthread.h>

#include "store/session_memo.h"
#include "store/store.h"
#include "store/write_log.h"

typedef enum pg_stmt_id {
  PG_SESSION_INSERT,
  PG_SESSION_GET,
  PG_SESSION_LOCK,
  PG_SESSION_SET_ACTIVE,
  PG_SESSION_EXPIRED_OPEN,
  PG_SESSION_EXPIRED_CLOSED,
  PG_SESSION_PURGE_DATA, /* attributes */
  PG_SESSION_PURGE_CHANS,
  PG_SESSION_PURGE_EVENTS,
  PG_SESSION_PURGE_STEPS,
  PG_SESSION_DELETE,
  PG_SESSION_STATUS,
  PG_SESSION_SET_COUNTERS,
  PG_SESSION_DATA_VER,
  PG_SESSION_LIST_FIRST,
  PG_SESSION_LIST_AFTER,
  PG_ATTR_GET,
  PG_ATTR_PUT,
  PG_ATTR_DELETE,
  PG_ATTR_SCAN_RANGE,
  PG_ATTR_SCAN_FROM,
  PG_CHAN_PUSH,
  PG_CHAN_COUNT,
  PG_CHAN_TAKE,
  PG_STEP_INSERT,
  PG_STEP_GET,
  PG_STEP_UPDATE,
  PG_STEP_DELETE,
  PG_STEP_FIRST_DUE,
  PG_STEP_CLAIM_DUE,
  PG_STEP_NEXT_DUE,
  PG_STEP_LIST,
  PG_STEP_LIST_STATE,
  PG_STEP_RENEW,
  PG_STEP_BUSY,
  PG_EVENT_APPEND,
  PG_EVENT_TRIM,
  PG_EVENT_READ,
  PG_NOTIFY,
  /* store administration (pg_admin.c) */
  PG_ADMIN_SESSION_DUMP,
  PG_ADMIN_SESSION_RESTORE,
  PG_ADMIN_CHAN_SCAN,
  PG_ADMIN_ORPHAN_DATA,
  PG_ADMIN_ORPHAN_STEPS,
  PG_ADMIN_EVENTS_PAST,
  PG_ADMIN_VALUES_PAGE,
  PG_ATTR_PREFETCH,
  PG_ADMIN_CHAN_VALUES_PAGE,
  PG_ADMIN_EVENT_VALUES_PAGE,
  PG_COUNT
} pg_stmt_id;

/* The parameters of one statement: numbers as text, the rest as bytes. */
#define PG_MAX_PARAMS 20
typedef struct pg_params {
  int n;
  const char *v[PG_MAX_PARAMS];
  int len[PG_MAX_PARAMS];
  int fmt[PG_MAX_PARAMS];
  char num[PG_MAX_PARAMS][24];
} pg_params;

typedef struct pg_listener pg_listener;

#define PG_HOT_KEYS 16
#define PG_HOT_KEY_MAX 128

/* An attribute as the open write transaction knows it (read with the
 * session's lock, read before, or written by it). */
typedef struct pg_txattr {
  int64_t skey;
  char *key;
  size_t klen;
  char *val; /* NULL when not found */
  size_t vlen;
} pg_txattr;

typedef struct pg_store {
  dexa__store base;
  char *conninfo; /* as the caller gave it: never printed (it may hold a password) */
  char instance[40]; /* names this store in notifications, so it ignores its own */
  pg_listener *listener;
  pthread_mutex_t wake_mu;
  dexa__store_wake_fn wake;
  void *wake_ctx;
  int pipeline; /* write and read transactions in libpq's pipeline mode */
  /* Attribute keys write transactions read (pg_data.c: fetched with the
   * session's lock, in the same round trip). */
  pthread_mutex_t hot_mu;
  char *hot[PG_HOT_KEYS];
  size_t hot_len[PG_HOT_KEYS];
  int nhot;
} pg_store;

#define PG_MAX_SAVEPOINTS 16

typedef struct pg_conn {
  dexa__store_conn base; /* first: the store code casts between them */
  pg_store *store;
  PGconn *db;
  PGresult *held; /* keeps attr_get's borrowed value */
  int in_tx;      /* inside begin_write/begin_read ... commit/rollback */
  int writing;
  int lost;       /* the connection broke inside the open transaction */
  /* Pipelining (pg_conn.c): statements sent and results read in this
   * transaction (their sequence numbers), queued results, the first
   * failure found among them, where each open savepoint starts. */
  int pipe;
  int64_t nsent, nread, npending;
  int failed_rc;
  int64_t failed_seq;
  int64_t sp_seq[PG_MAX_SAVEPOINTS];
  int sp_depth, sp_used;
  int strict_next; /* the next transaction defers nothing */
  int64_t retry_at_ms, backoff_ms; /* reconnecting: not before retry_at */
  char *buf;      /* an unpacked value */
  size_t cap;
  char *packbuf;  /* the packed form of the value being written */
  size_t packcap;
  pg_txattr *txa; /* the transaction's attributes (pg_data.c) */
  size_t ntxa, txa_cap;
  char **touched; /* sessions this transaction changed, for NOTIFY */
  size_t ntouched, touched_cap;
  dexa__write_log log;
  dexa__session_memo memo;
} pg_conn;

extern const dexa__store_ops dexa__pg_ops;

/* ---- pg_conn.c: connections, statements, errors ---------------------------- */
/* Opens a libpq connection; on failure writes why into errmsg (naming the
 * server and user, never the password) and returns DEXA_E_IO or
 * DEXA_E_AUTH. */
int dexa__pg_connect(const char *conninfo, PGconn **out, char *errmsg, size_t n);
/* The store error for a failed result (or for none: the connection's). */
int dexa__pg_err(pg_conn *c, const PGresult *res);
/* Runs statement id with p; returns the result (PGRES_TUPLES_OK or
 * PGRES_COMMAND_OK, the caller PQclears it) or NULL with *rc set. */
PGresult *dexa__pg_run(pg_conn *c, pg_stmt_id id, const pg_params *p, int *rc);
/* Runs two statements in one round trip (pipeline mode; else one after the
 * other); both results or neither (*r1, *r2 NULL, the error returned). */
int dexa__pg_run2(pg_conn *c, pg_stmt_id id1, const pg_params *p1, pg_stmt_id id2,
                  const pg_params *p2, PGresult **r1, PGresult **r2);
/* Forgets the transaction's attributes (pg_data.c). */
void dexa__pg_txattr_clear(pg_conn *c);
/* Runs a statement that returns no row; *changed (may be NULL) gets the
 * number of rows it changed. */
int dexa__pg_exec(pg_conn *c, pg_stmt_id id, const pg_params *p, int64_t *changed);

void dexa__pg_p_text(pg_params *p, const char *s);
void dexa__pg_p_bytes(pg_params *p, const char *s, size_t n); /* NULL s: SQL NULL */
void dexa__pg_p_int(pg_params *p, int64_t v);
void dexa__pg_p_null(pg_params *p);
/* Binary result columns. */
int64_t dexa__pg_int(const PGresult *r, int row, int col);
int dexa__pg_dup(const PGresult *r, int row, int col, char **slot, size_t *len);

/* ---- pg_schema.c ------------------------------------------------------------ */
/* Creates the schema in a new database or upgrades an older one; refuses a
 * newer one (DEXA_E_UNSUPPORTED). Many processes may run it at once. */
int dexa__pg_schema_ensure(PGconn *db, char *errmsg, size_t n);

/* ---- pg_data.c: sessions, attributes, channels, events ---------------------- */
/* The session's row as the open write transaction holds it: read and
 * locked on first use, from the memo after. */
int dexa__pg_memo_row(pg_conn *c, const char *sid, dexa__memo_row **out);
/* Locks sid in a write transaction (no-op outside one). NOT_FOUND when the
 * session does not exist. */
int dexa__pg_lock_session(pg_conn *c, const char *sid);
/* Notes that the transaction changed sid (announced at commit). */
int dexa__pg_touch(pg_conn *c, const char *sid);
int dexa__pg_write_counters(pg_conn *c);
int dexa__pg_session_insert(dexa__store_conn *c, const char *id, const char *flow_type,
                            int64_t created_ms, const char *settings, size_t settings_len);
int dexa__pg_session_get(dexa__store_conn *c, const char *id, dexa__session_row *out);
int dexa__pg_session_touch(dexa__store_conn *c, const char *id, int64_t now, int64_t step);
int dexa__pg_session_expired(dexa__store_conn *c, int closed, int64_t before_ms, int32_t limit,
                             dexa__session_visit_fn visit, void *ctx);
int dexa__pg_session_purge(dexa__store_conn *c, const char *id, int64_t max_rows,
                           int64_t *deleted, int *gone);
int dexa__pg_session_set_status(dexa__store_conn *c, const char *id, int32_t status);
int dexa__pg_session_bump_events(dexa__store_conn *c, const char *id, int64_t n, int64_t *seq);
int dexa__pg_session_next_ord(dexa__store_conn *c, const char *id, int64_t *ord);
int dexa__pg_session_data_version(dexa__store_conn *c, const char *id, int64_t *ver);
int dexa__pg_session_list(dexa__store_conn *c, int64_t before_ms, const char *before_id,
                          int32_t limit, dexa__session_visit_fn visit, void *ctx);
int dexa__pg_attr_get(dexa__store_conn *c, const char *sid, const char *key, size_t klen,
                      const char **val, size_t *vlen);
int dexa__pg_attr_put(dexa__store_conn *c, const char *sid, const char *key, size_t klen,
                      const char *val, size_t vlen);
int dexa__pg_attr_delete(dexa__store_conn *c, const char *sid, const char *key, size_t klen);
int dexa__pg_attr_scan(dexa__store_conn *c, const char *sid, const char *prefix, size_t plen,
                       dexa_attr_visit_fn visit, void *ctx);
int dexa__pg_chan_push(dexa__store_conn *c, const char *sid, const char *ch, size_t chlen,
                       const char *val, size_t vlen);
int dexa__pg_chan_count(dexa__store_conn *c, const char *sid, const char *ch, size_t chlen,
                        int64_t *n);
int dexa__pg_chan_take(dexa__store_conn *c, const char *sid, const char *ch, size_t chlen,
                       int64_t n, dexa__value_visit_fn visit, void *ctx);
int dexa__pg_event_append(dexa__store_conn *c, const char *sid, int64_t seq, const char *json,
                          size_t len);
int dexa__pg_event_append_batch(dexa__store_conn *c, const char *sid, int64_t last_seq,
                                const char *const *json, const size_t *len, size_t n);
int dexa__pg_event_trim(dexa__store_conn *c, const char *sid, int64_t upto_seq);
/* The first byte of an events row that holds several events (pg_data.c);
 * neither JSON nor a packed value (value_pack.h) starts with it. */
#define PG_EVENT_BATCH_TAG 0x1E
/* Visits the events of row `row` of r (seq, value: an events row) after
 * seq `after`, at most *budget of them (lowered for each). A batch is
 * unpacked into c's buffer. DEXA_E_CORRUPT for a damaged value. */
int dexa__pg_event_row(pg_conn *c, const PGresult *r, int row, int64_t after, int64_t *budget,
                       dexa__value_visit_fn visit, void *ctx);
/* DEXA_E_CORRUPT when the stored value at (row, col) does not unpack (a
 * packed value or an event batch). */
int dexa__pg_value_check(pg_conn *c, const PGresult *r, int row, int col);
int dexa__pg_event_read(dexa__store_conn *c, const char *sid, int64_t after_seq, int32_t limit,
                        dexa__value_visit_fn visit, void *ctx);

/* A session-data column as the JSON it stands for, NUL-terminated:
 * libpq's own copy, or a packed value unpacked into c's buffer (valid
 * until the next read on c). DEXA_E_CORRUPT for a damaged packed value. */
int dexa__pg_column_value(pg_conn *c, const PGresult *r, int row, int col, const char **v,
                          size_t *n);

/* ---- pg_admin.c: dexa_store_check, dexa_store_vacuum, dexa_store_copy ------- */
int dexa__pg_session_dump(dexa__store_conn *c, const char *id, dexa__session_dump *out);
int dexa__pg_session_restore(dexa__store_conn *c, const dexa__session_dump *d);
int dexa__pg_chan_scan(dexa__store_conn *c, const char *sid, dexa__chan_visit_fn visit, void *ctx);
int dexa__pg_integrity_check(dexa__store_conn *c, dexa__problem_fn report, void *ctx);
int dexa__pg_vacuum(dexa__store *s, int64_t *bytes_before, int64_t *bytes_after);

/* ---- pg_steps.c ------------------------------------------------------------- */
int dexa__pg_step_insert(dexa__store_conn *c, const dexa__step_row *row);
int dexa__pg_step_get(dexa__store_conn *c, const char *sid, const char *exec_id,
                      dexa__step_row *out);
int dexa__pg_step_update(dexa__store_conn *c, const dexa__step_row *row);
int dexa__pg_step_delete(dexa__store_conn *c, const char *sid, const char *exec_id);
int dexa__pg_step_first_due(dexa__store_conn *c, int64_t now, dexa__step_row *out);
int dexa__pg_step_next_due(dexa__store_conn *c, int64_t *due);
int dexa__pg_step_list(dexa__store_conn *c, const char *sid, int32_t state,
                       dexa__step_row **rows, size_t *n);
int dexa__pg_step_renew(dexa__store_conn *c, const char *sid, const char *exec_id,
                        const char *owner, int32_t attempt, int64_t now, int64_t until);
int dexa__pg_step_busy_count(dexa__store_conn *c, const char *sid, int64_t *n);

/* ---- pg_notify.c: wake-ups across processes --------------------------------- */
/* The channel every store of a database notifies and listens on. */
#define DEXA__PG_CHANNEL "dexa_wake"
/* Sends the transaction's NOTIFY (delivered at its commit, if any). */
int dexa__pg_notify_touched(pg_conn *c);
int dexa__pg_listener_start(pg_store *s, pg_listener **out);
void dexa__pg_listener_stop(pg_listener *l);
void dexa__pg_set_wake(dexa__store *s, dexa__store_wake_fn fn, void *ctx);

#endif
