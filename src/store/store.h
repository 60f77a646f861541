/* The store: the runtime's durable state behind one internal interface.
 *
 * A backend (SQLite: sqlite*.c, PostgreSQL: pg_*.c) implements dexa__store_ops. The
 * operations are semantic (insert a session, take the oldest channel
 * messages, find the first due Step row), not SQL, so nothing above this
 * header depends on one database's dialect. Every operation runs on a
 * connection, inside the transaction the caller opened on it (begin_write /
 * begin_read) or, outside one, as its own statement.
 *
 * Threads: a connection is used by one thread at a time; the store handle
 * may open connections from any thread. Every call returns DEXA_OK or a
 * negative DEXA_E_* code (DEXA_E_NOT_FOUND, DEXA_E_ALREADY_EXISTS,
 * DEXA_E_BUSY, DEXA_E_IO, DEXA_E_NOMEM, DEXA_E_CORRUPT). */
#ifndef DEXA_STORE_STORE_H
#define DEXA_STORE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "dexagents/flow.h"
#include "dexagents/runtime.h"

/* Step execution states. A row exists only while the execution is live;
 * a finished execution's row is deleted. */
enum {
  DEXA__STEP_READY = 1,   /* method may run once due_ms has passed */
  DEXA__STEP_WAITING = 2, /* wait stored; due_ms = next timer deadline or none */
  DEXA__STEP_RUNNING = 3  /* leased; due_ms = lease_until */
};

enum {
  DEXA__SESSION_RUNNING = 0,
  DEXA__SESSION_COMPLETED = 1,
  DEXA__SESSION_FAILED = 2,
  DEXA__SESSION_ENDED = 3 /* end_session, or the idle timeout (runtime/sweep.c) */
};

/* due_ms of a row that has nothing due (stored as SQL NULL, so the due
 * index holds only rows that need the scheduler). */
#define DEXA__NO_DUE INT64_MAX

/* One live Step execution. Strings are malloc'd, owned by the row, and
 * released by dexa__step_row_free; JSON fields may be NULL (absent). */
typedef struct dexa__step_row {
  char *session_id;
  char *exec_id;
  char *step_type;
  int64_t ord; /* creation order within the session */
  int32_t state;
  int32_t method; /* DEXA_CALL_WAIT_FOR or DEXA_CALL_EXECUTE */
  int32_t attempt;
  int32_t cancelled;
  char *input;
  size_t input_len;
  char *options; /* the decision's override of the defaults, or NULL */
  size_t options_len;
  char *wait; /* normalized, absolute timer deadlines */
  size_t wait_len;
  char *conditions; /* condition results for Execute */
  size_t conditions_len;
  char *recovery_error;
  size_t recovery_error_len;
  int64_t due_ms;
  char *lease_owner;
  int64_t lease_until;
  int64_t started_ms;
  /* Attempts whose worker was lost (its lease expired before the Step's
   * timeout: a crash, kill -9): counted apart from failed attempts, so
   * failed attempts = attempt - lost_workers (runtime/failures.c). */
  int32_t lost_workers;
} dexa__step_row;

void dexa__step_row_free(dexa__step_row *row);
/* Copies s[0..n) into *slot (freeing what was there); NULL s clears it. */
int dexa__row_set(char **slot, size_t *slot_len, const char *s, size_t n);

typedef struct dexa__session_row {
  char *session_id;
  char *flow_type;
  int64_t created_ms;
  int32_t status; /* DEXA__SESSION_* */
  int64_t event_seq; /* sequence of the newest durable event (0: none) */
  int64_t data_ver;  /* session_get only: see session_data_version */
  /* The time of the session's last activity while it runs; of its end
   * once it is closed (session_touch). */
  int64_t active_ms;
} dexa__session_row;

void dexa__session_row_free(dexa__session_row *row);

typedef int (*dexa__session_visit_fn)(void *ctx, const dexa__session_row *row);
typedef int (*dexa__value_visit_fn)(void *ctx, int64_t seq, const char *json, size_t len);

/* Every stored field of a session, for copying a store (store_admin.c).
 * Strings are malloc'd and released by dexa__session_dump_free. */
typedef struct dexa__session_dump {
  dexa__session_row row; /* data_ver is not copied: each store counts its own */
  int64_t step_ord;      /* the order of the newest Step execution */
  char *settings;        /* as given to session_insert, or NULL */
  size_t settings_len;
} dexa__session_dump;

void dexa__session_dump_free(dexa__session_dump *d);

typedef int (*dexa__chan_visit_fn)(void *ctx, const char *ch, size_t chlen, int64_t seq,
                                   const char *json, size_t len);
/* Receives one problem a check found, as a sentence. */
typedef void (*dexa__problem_fn)(void *ctx, const char *problem);

typedef struct dexa__store_conn dexa__store_conn;
typedef struct dexa__store dexa__store;

/* A log sink for what a store handles itself; level as DEXA_LOG_*. */
typedef void (*dexa__store_log_fn)(void *ctx, int32_t level, const char *kind, const char *message);

/* Called by a store, on a thread of its own, when another process committed
 * a change to session sid (NULL: to any session, e.g. after the store lost
 * and regained its way of hearing of changes). Must not block. */
typedef void (*dexa__store_wake_fn)(void *ctx, const char *sid);

typedef struct dexa__store_ops {
  /* Transactions. begin_write takes the store's write lock at once (SQLite
   * BEGIN IMMEDIATE); savepoints nest inside it so one batched operation can
   * be undone without the others. */
  int (*begin_write)(dexa__store_conn *c);
  int (*begin_read)(dexa__store_conn *c);
  int (*commit)(dexa__store_conn *c);
  int (*rollback)(dexa__store_conn *c);
  int (*savepoint)(dexa__store_conn *c);
  int (*release)(dexa__store_conn *c);
  int (*rollback_to)(dexa__store_conn *c);

  /* Sessions. session_bump_events adds n to event_seq and returns the new
   * value (the last of the n sequence numbers now taken); it and
   * session_next_ord belong inside a write transaction. A backend may hold
   * a transaction's counters in memory and write them when it commits
   * (SQLite: session_memo.h); other connections see them after the commit
   * either way. */
  int (*session_insert)(dexa__store_conn *c, const char *id, const char *flow_type,
                        int64_t created_ms, const char *settings, size_t settings_len);
  int (*session_get)(dexa__store_conn *c, const char *id, dexa__session_row *out);
  int (*session_set_status)(dexa__store_conn *c, const char *id, int32_t status);
  int (*session_bump_events)(dexa__store_conn *c, const char *id, int64_t n, int64_t *seq);
  int (*session_next_ord)(dexa__store_conn *c, const char *id, int64_t *ord);
  /* The session's data version: raised by one by every write transaction
   * that puts or deletes any of its attributes (attr_put and attr_delete
   * do it, once per transaction), in any process. The session cache
   * (session_cache.h) is valid for a session while it holds this version. */
  int (*session_data_version)(dexa__store_conn *c, const char *id, int64_t *ver);
  /* Lifetime (runtime/sweep.c). session_touch raises active_ms to now
   * when it is at least step older (step 0: always), inside a write
   * transaction; the raise is rare by design (step is a fraction of the
   * idle timeout), so it costs no write on most commits. */
  int (*session_touch)(dexa__store_conn *c, const char *id, int64_t now, int64_t step);
  /* Visits up to limit sessions with active_ms < before_ms: running ones
   * (closed 0: idle) or closed ones (closed 1: completed, failed, ended). */
  int (*session_expired)(dexa__store_conn *c, int closed, int64_t before_ms, int32_t limit,
                         dexa__session_visit_fn visit, void *ctx);
  /* Deletes up to max_rows of the session's attributes, channel messages
   * and events; once none remain, its Step rows and its row too (*gone 1).
   * *deleted: the rows deleted. Inside a write transaction. */
  int (*session_purge)(dexa__store_conn *c, const char *id, int64_t max_rows, int64_t *deleted,
                       int *gone);
  /* Newest first, strictly older than (before_ms, before_id) unless
   * before_id is NULL. */
  int (*session_list)(dexa__store_conn *c, int64_t before_ms, const char *before_id,
                      int32_t limit, dexa__session_visit_fn visit, void *ctx);

  /* Attributes. get's value is borrowed until the next call on c; scan is
   * bytewise ascending over keys starting with prefix. */
  int (*attr_get)(dexa__store_conn *c, const char *sid, const char *key, size_t klen,
                  const char **val, size_t *vlen);
  int (*attr_put)(dexa__store_conn *c, const char *sid, const char *key, size_t klen,
                  const char *val, size_t vlen);
  int (*attr_delete)(dexa__store_conn *c, const char *sid, const char *key, size_t klen);
  int (*attr_scan)(dexa__store_conn *c, const char *sid, const char *prefix, size_t plen,
                   dexa_attr_visit_fn visit, void *ctx);

  /* Channels: FIFO per (session, channel). take visits the oldest n
   * messages in order, then deletes them. */
  int (*chan_push)(dexa__store_conn *c, const char *sid, const char *ch, size_t chlen,
                   const char *val, size_t vlen);
  int (*chan_count)(dexa__store_conn *c, const char *sid, const char *ch, size_t chlen,
                    int64_t *n);
  int (*chan_take)(dexa__store_conn *c, const char *sid, const char *ch, size_t chlen,
                   int64_t n, dexa__value_visit_fn visit, void *ctx);

  /* Step rows, keyed by (session_id, exec_id). */
  int (*step_insert)(dexa__store_conn *c, const dexa__step_row *row);
  int (*step_get)(dexa__store_conn *c, const char *sid, const char *exec_id,
                  dexa__step_row *out);
  int (*step_update)(dexa__store_conn *c, const dexa__step_row *row);
  int (*step_delete)(dexa__store_conn *c, const char *sid, const char *exec_id);
  /* The row with the smallest due_ms <= now (DEXA_E_NOT_FOUND if none). */
  int (*step_first_due)(dexa__store_conn *c, int64_t now, dexa__step_row *out);
  /* The smallest due_ms of any row, DEXA__NO_DUE if none. */
  int (*step_next_due)(dexa__store_conn *c, int64_t *due);
  /* Every row of a session in creation order (state 0: any state). *rows
   * is a new array the caller frees with dexa__step_rows_free. */
  int (*step_list)(dexa__store_conn *c, const char *sid, int32_t state,
                   dexa__step_row **rows, size_t *n);
  /* Extends a lease that is still ours and unexpired at now; NOT_FOUND
   * otherwise. */
  int (*step_renew)(dexa__store_conn *c, const char *sid, const char *exec_id,
                    const char *owner, int32_t attempt, int64_t now, int64_t until);
  /* Rows of the session that are READY or RUNNING. */
  int (*step_busy_count)(dexa__store_conn *c, const char *sid, int64_t *n);

  /* Durable events of a session's stream. */
  int (*event_append)(dexa__store_conn *c, const char *sid, int64_t seq, const char *json,
                      size_t len);
  /* Optional (NULL: event_append each): appends the n events json[i]
   * (len[i] bytes) at seqs last_seq - n + 1 .. last_seq, for a store
   * where one row for them all costs less than a row each (pg_data.c). */
  int (*event_append_batch)(dexa__store_conn *c, const char *sid, int64_t last_seq,
                            const char *const *json, const size_t *len, size_t n);
  int (*event_trim)(dexa__store_conn *c, const char *sid, int64_t upto_seq);
  int (*event_read)(dexa__store_conn *c, const char *sid, int64_t after_seq, int32_t limit,
                    dexa__value_visit_fn visit, void *ctx);

  /* Makes every commit made so far, on any connection, durable. Needed
   * only when the store's sync_after_commit is set; any thread, outside
   * transactions. */
  int (*sync)(dexa__store *s);

  /* Registers fn (NULL: none) to hear of other processes' commits. NULL
   * op: the store cannot tell (its users poll; see poll_ms). */
  void (*set_wake)(dexa__store *s, dexa__store_wake_fn fn, void *ctx);

  /* Connections. */
  int (*conn_open)(dexa__store *s, dexa__store_conn **out);
  void (*conn_close)(dexa__store_conn *c);
  void (*close)(dexa__store *s);

  /* Administration (dexa_store_check, dexa_store_vacuum, dexa_store_copy
   * in store_admin.c). A backend without them leaves them NULL and those
   * functions say DEXA_E_UNSUPPORTED. */
  /* Every field of a session's row (DEXA_E_NOT_FOUND if none). */
  int (*session_dump)(dexa__store_conn *c, const char *id, dexa__session_dump *out);
  /* Inserts a session with the fields of a dump, inside a write
   * transaction, before any other operation on it there. */
  int (*session_restore)(dexa__store_conn *c, const dexa__session_dump *d);
  /* Visits every channel message of a session, by channel name then in
   * FIFO order, and keeps them. */
  int (*chan_scan)(dexa__store_conn *c, const char *sid, dexa__chan_visit_fn visit, void *ctx);
  /* The backend's own consistency check (SQLite: integrity_check); each
   * problem goes to report. DEXA_OK when it could run. */
  int (*integrity_check)(dexa__store_conn *c, dexa__problem_fn report, void *ctx);
  /* Gives free space back to the system, outside any transaction; the
   * store's size in bytes before and after. */
  int (*vacuum)(dexa__store *s, int64_t *bytes_before, int64_t *bytes_after);
} dexa__store_ops;

/* Every backend connection and store starts with its ops table. */
struct dexa__store_conn {
  const dexa__store_ops *ops;
};
struct dexa__store {
  const dexa__store_ops *ops;
  /* Set by a durable store whose COMMIT returns before the data is on disk:
   * the caller must call sync before it tells anyone the commit happened
   * (the runtime does, on its own thread, while the next batch is written). */
  int sync_after_commit;
  /* The backend's session cache: its commits put their attribute writes
   * in; readers use it through dexa__session_cache_load/get/scan. */
  struct dexa__session_cache *cache;
  /* How long waiters for other processes' commits sleep between looks at
   * the store (the fallback when no wake-up comes; SQLite has none). */
  int64_t poll_ms;
  /* DEXA_E_BUSY from an operation or COMMIT means the whole transaction
   * was rolled back by a conflict or a lost connection and nothing of it
   * was applied: the caller may run it again, for up to this long (0: it
   * never retries). */
  int64_t batch_retry_ms;
  /* From dexa__store_config: where the backend reports what it handles
   * itself (reconnects, checkpoints). NULL: nowhere. */
  dexa__store_log_fn log;
  void *log_ctx;
  /* The cause of the latest error noted (dexa__store_note), under a lock
   * of store.c; cause_rc 0: none. */
  int cause_rc;
  int64_t cause_ms; /* when it was noted (monotonic): older ones go unused */
  char cause[400];
};

/* Notes why an operation failed with rc (disk full, read-only, permission
 * denied, and the path), for dexa__store_cause; any thread. */
void dexa__store_note(dexa__store *s, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Forgets the noted cause. */
void dexa__store_note_clear(dexa__store *s);
/* Copies the noted cause of the latest error when that error was rc and
 * was noted in the last minute: DEXA_OK, else DEXA_E_NOT_FOUND (buf
 * untouched). */
int dexa__store_cause(dexa__store *s, int rc, char *buf, size_t n);
/* Formats a message for s->log (a no-op without one); kind is a string
 * literal naming the call site (the runtime rate-limits by it). */
void dexa__store_log(dexa__store *s, int32_t level, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

typedef struct dexa__store_config {
  /* "sqlite:PATH", PATH or ":memory:"; "postgresql://...", "postgres://..."
   * or a libpq key/value conninfo ("host=... dbname=...") */
  const char *uri;
  const char *synchronous; /* "full" (default) or "normal" */
  size_t cache_bytes;      /* the session cache's bound; 0: none */
  dexa__store_log_fn log;  /* optional (store.h: dexa__store.log) */
  void *log_ctx;
} dexa__store_config;

/* Opens the store named by cfg->uri, creating its schema when missing.
 * ":memory:" is a private temporary file removed at close (so that several
 * connections share it). On error *out is NULL and errmsg gets a message. */
int dexa__store_open(dexa__store **out, const dexa__store_config *cfg, char *errmsg,
                     size_t errmsg_size);

void dexa__step_rows_free(dexa__step_row *rows, size_t n);

/* 1 when uri names a PostgreSQL database (a URI or a key/value conninfo). */
int dexa__store_is_pg(const char *uri);

/* 1 when uri is a libpq key/value conninfo (store/pg_conn.c; without
 * WITH_POSTGRES=1, pg_absent.c knows libpq's common keywords). */
int dexa__pg_is_conninfo(const char *uri);

/* PostgreSQL backend entry point (store/pg_conn.c; pg_absent.c without
 * WITH_POSTGRES=1: DEXA_E_UNSUPPORTED). */
int dexa__pg_open(dexa__store **out, const char *conninfo, const dexa__store_config *cfg,
                  char *errmsg, size_t errmsg_size);

/* SQLite backend entry point (store/sqlite.c; sqlite_absent.c without
 * WITH_SQLITE=1: DEXA_E_UNSUPPORTED). */
int dexa__sqlite_open(dexa__store **out, const char *path, int temporary,
                      const dexa__store_config *cfg, char *errmsg, size_t errmsg_size);

#endif
