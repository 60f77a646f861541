/* Shared by the SQLite backend's files: the connection, its cache of
 * prepared statements, and the helpers that bind and map errors. */
#ifndef DEXA_STORE_SQLITE_INTERNAL_H
#define DEXA_STORE_SQLITE_INTERNAL_H

#include <pthread.h>
#include <sqlite3.h>

#include "store/store.h"
#include "store/session_memo.h"
#include "store/write_log.h"

/* Every statement the backend runs; prepared once per connection. */
typedef enum sq_stmt_id {
  SQ_BEGIN_WRITE,
  SQ_BEGIN_READ,
  SQ_COMMIT,
  SQ_ROLLBACK,
  SQ_SAVEPOINT,
  SQ_RELEASE,
  SQ_ROLLBACK_TO,
  SQ_SESSION_INSERT,
  SQ_SESSION_GET,
  SQ_SESSION_SET_ACTIVE,
  SQ_SESSION_EXPIRED_OPEN,
  SQ_SESSION_EXPIRED_CLOSED,
  SQ_SESSION_PURGE_DATA,
  SQ_SESSION_PURGE_STEPS,
  SQ_SESSION_DELETE,
  SQ_SESSION_STATUS,
  SQ_SESSION_SET_COUNTERS,
  SQ_SESSION_DATA_VER,
  SQ_SESSION_LIST_FIRST,
  SQ_SESSION_LIST_AFTER,
  SQ_ATTR_GET,
  SQ_ATTR_PUT,
  SQ_ATTR_DELETE,
  SQ_ATTR_SCAN_RANGE,
  SQ_ATTR_SCAN_FROM,
  SQ_CHAN_PUSH,
  SQ_CHAN_COUNT,
  SQ_CHAN_PEEK,
  SQ_CHAN_DELETE_UPTO,
  SQ_STEP_INSERT,
  SQ_STEP_GET,
  SQ_STEP_UPDATE,
  SQ_STEP_DELETE,
  SQ_STEP_FIRST_DUE,
  SQ_STEP_NEXT_DUE,
  SQ_STEP_LIST,
  SQ_STEP_LIST_STATE,
  SQ_STEP_RENEW,
  SQ_STEP_BUSY,
  SQ_EVENT_APPEND,
  SQ_EVENT_TRIM,
  SQ_EVENT_READ,
  SQ_COUNT
} sq_stmt_id;

/* The parameter of a session_data statement that takes the session's skey
 * when the caller knows it (NULL: looked up from ?1, the session id). */
#define DEXA__SQ_SKEY_PARAM 20

typedef struct sq_store sq_store;

typedef struct sq_conn {
  dexa__store_conn base; /* first: the store code casts between them */
  sq_store *store;
  sqlite3 *db;
  sqlite3_stmt *stmts[SQ_COUNT];
  char *valbuf; /* attr_get's borrowed copy */
  size_t valcap;
  char *rowbuf; /* a visited row's unpacked value */
  size_t rowcap;
  char *packbuf; /* the packed form of the value being written */
  size_t packcap;
  dexa__write_log log;     /* the open transaction's attribute writes */
  dexa__session_memo memo; /* the open transaction's session rows */
  int writing;             /* inside begin_write ... commit or rollback */
} sq_conn;

/* The store's background WAL checkpoints (sqlite_checkpoint.c). */
typedef struct sq_checkpointer sq_checkpointer;

struct sq_store {
  dexa__store base;
  char *path;
  char *wal_path; /* path + "-wal", the file sq_sync makes durable */
  /* Opened for reading only (the file or its directory cannot be
   * written): connections open ro_uri, writes fail naming ro_why. */
  int read_only;
  char *ro_uri;
  char ro_why[300];
  char full_path[4096]; /* as SQLite names the file, to find the store by */
  sq_store *reg_next;   /* the registry of open stores (sqlite.c) */
  int temporary; /* remove the files at close */
  sq_checkpointer *checkpointer;
  /* sync: a descriptor of the WAL file, reopened if the file was replaced */
  pthread_mutex_t sync_mu;
  int wal_fd;
};

extern const dexa__store_ops dexa__sqlite_ops;

/* BIND(rc, bind): runs the bind only while rc is DEXA_OK and keeps its
 * result, so a statement's binds are all checked by one test of rc before
 * it runs (a failed bind would run it with a parameter left NULL). */
#define BIND(rc, bind)                                                                 \
  do {                                                                                 \
    if ((rc) == DEXA_OK) (rc) = (bind);                                                \
  } while (0)
/* Integer and NULL binds as DEXA_* codes (SQLITE_RANGE: a bug). */
int dexa__sq_int64(sqlite3_stmt *st, int i, int64_t v);
int dexa__sq_int(sqlite3_stmt *st, int i, int v);
int dexa__sq_null(sqlite3_stmt *st, int i);
/* The cached statement id of c, prepared on first use and reset; NULL on
 * error (*rc set). */
sqlite3_stmt *dexa__sq_stmt(sq_conn *c, sq_stmt_id id, int *rc);
/* Creates the schema of a new file or upgrades an older one, in one write
 * transaction (sqlite_schema.c). DEXA_E_BUSY: try again. */
int dexa__sq_schema_ensure(sqlite3 *db, char *errmsg, size_t n);
/* A read-only store's check: its schema is this library's version. */
int dexa__sq_schema_check(sqlite3 *db, char *errmsg, size_t n);
/* Checkpoints the WAL on a thread of the store instead of inside commits:
 * new/free own the thread, the hook goes on every connection. */
int dexa__sq_checkpointer_new(sq_checkpointer **out);
void dexa__sq_checkpointer_free(sq_checkpointer *k);
void dexa__sq_checkpoint_hook(sq_store *s, sqlite3 *db);
/* Keeps the WAL file when db closes last (sqlite_checkpoint.c). */
void dexa__sq_keep_wal(sqlite3 *db);
/* Maps a SQLite result code to DEXA_OK / DEXA_E_*. */
int dexa__sq_err(int rc);
/* dexa__sq_err for a failure on db (or st's), which also notes its cause
 * (disk full, read-only, permission denied, with the path) on the store of
 * that file (dexa__store_note). */
int dexa__sq_db_err(sqlite3 *db, int rc);
int dexa__sq_st_err(sqlite3_stmt *st, int rc);
/* Steps a statement that returns no row; resets it. */
int dexa__sq_exec(sqlite3_stmt *st);
/* Binds text (a NULL pointer binds SQL NULL). */
int dexa__sq_text(sqlite3_stmt *st, int i, const char *s, size_t n);
int dexa__sq_blob(sqlite3_stmt *st, int i, const char *s, size_t n);
/* Copies column i into *slot (NULL column -> NULL slot). */
int dexa__sq_col_dup(sqlite3_stmt *st, int i, char **slot, size_t *len);

/* The operations, by file. */
int dexa__sq_session_insert(dexa__store_conn *c, const char *id, const char *flow_type,
                            int64_t created_ms, const char *settings, size_t settings_len);
int dexa__sq_session_get(dexa__store_conn *c, const char *id, dexa__session_row *out);
int dexa__sq_session_set_status(dexa__store_conn *c, const char *id, int32_t status);
int dexa__sq_session_bump_events(dexa__store_conn *c, const char *id, int64_t n, int64_t *seq);
int dexa__sq_session_next_ord(dexa__store_conn *c, const char *id, int64_t *ord);
int dexa__sq_session_touch(dexa__store_conn *c, const char *id, int64_t now, int64_t step);
int dexa__sq_session_expired(dexa__store_conn *c, int closed, int64_t before_ms, int32_t limit,
                             dexa__session_visit_fn visit, void *ctx);
int dexa__sq_session_purge(dexa__store_conn *c, const char *id, int64_t max_rows,
                           int64_t *deleted, int *gone);
int dexa__sq_session_data_version(dexa__store_conn *c, const char *id, int64_t *ver);
/* Writes the counters the memo holds changed (before a commit). */
int dexa__sq_session_write_counters(sq_conn *c);
int dexa__sq_session_list(dexa__store_conn *c, int64_t before_ms, const char *before_id,
                          int32_t limit, dexa__session_visit_fn visit, void *ctx);
int dexa__sq_attr_get(dexa__store_conn *c, const char *sid, const char *key, size_t klen,
                      const char **val, size_t *vlen);
int dexa__sq_attr_put(dexa__store_conn *c, const char *sid, const char *key, size_t klen,
                      const char *val, size_t vlen);
int dexa__sq_attr_delete(dexa__store_conn *c, const char *sid, const char *key, size_t klen);
int dexa__sq_attr_scan(dexa__store_conn *c, const char *sid, const char *prefix, size_t plen,
                       dexa_attr_visit_fn visit, void *ctx);
int dexa__sq_chan_push(dexa__store_conn *c, const char *sid, const char *ch, size_t chlen,
                       const char *val, size_t vlen);
int dexa__sq_chan_count(dexa__store_conn *c, const char *sid, const char *ch, size_t chlen,
                        int64_t *n);
int dexa__sq_chan_take(dexa__store_conn *c, const char *sid, const char *ch, size_t chlen,
                       int64_t n, dexa__value_visit_fn visit, void *ctx);
int dexa__sq_event_append(dexa__store_conn *c, const char *sid, int64_t seq, const char *json,
                          size_t len);
int dexa__sq_event_trim(dexa__store_conn *c, const char *sid, int64_t upto_seq);
int dexa__sq_event_read(dexa__store_conn *c, const char *sid, int64_t after_seq, int32_t limit,
                        dexa__value_visit_fn visit, void *ctx);
int dexa__sq_step_insert(dexa__store_conn *c, const dexa__step_row *row);
int dexa__sq_step_get(dexa__store_conn *c, const char *sid, const char *exec_id,
                      dexa__step_row *out);
int dexa__sq_step_update(dexa__store_conn *c, const dexa__step_row *row);
int dexa__sq_step_delete(dexa__store_conn *c, const char *sid, const char *exec_id);
int dexa__sq_step_first_due(dexa__store_conn *c, int64_t now, dexa__step_row *out);
int dexa__sq_step_next_due(dexa__store_conn *c, int64_t *due);
int dexa__sq_step_list(dexa__store_conn *c, const char *sid, int32_t state,
                       dexa__step_row **rows, size_t *n);
int dexa__sq_step_renew(dexa__store_conn *c, const char *sid, const char *exec_id,
                        const char *owner, int32_t attempt, int64_t now, int64_t until);
int dexa__sq_step_busy_count(dexa__store_conn *c, const char *sid, int64_t *n);
/* Column col of a session_data row as the JSON it stands for (unpacked
 * into *buf when packed), NUL-terminated (sqlite_data.c). */
int dexa__sq_column_value(sqlite3_stmt *st, int col, char **buf, size_t *cap, const char **v,
                          size_t *n);
/* Administration (sqlite_admin.c). */
int dexa__sq_session_dump(dexa__store_conn *c, const char *id, dexa__session_dump *out);
int dexa__sq_session_restore(dexa__store_conn *c, const dexa__session_dump *d);
int dexa__sq_chan_scan(dexa__store_conn *c, const char *sid, dexa__chan_visit_fn visit, void *ctx);
int dexa__sq_integrity_check(dexa__store_conn *c, dexa__problem_fn report, void *ctx);
int dexa__sq_vacuum(dexa__store *s, int64_t *bytes_before, int64_t *bytes_after);

#endif
