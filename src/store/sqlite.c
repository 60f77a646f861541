/* SQLite backend: opening, schema, connections, transactions and the
 * statement cache. The data operations live in sqlite_data.c and
 * sqlite_steps.c. WAL mode so readers never block the writer. */
#include "store/sqlite_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dexagents/errors.h"

/* The SQL is plain enough for PostgreSQL too (partial indexes, scalar
 * subqueries); only the BEGIN form, WITHOUT ROWID and INSERT OR REPLACE
 * (ON CONFLICT ... DO UPDATE there) differ. */
/* session_data is keyed by the session's skey (sqlite_schema.c). A write
 * transaction knows it from its session memo and binds it; otherwise the
 * statement finds it from the session id once, as a constant subquery. */
#define SKEY "coalesce(?20, (SELECT skey FROM sessions WHERE session_id = ?1))"
_Static_assert(DEXA__SQ_SKEY_PARAM == 20, "SKEY's parameter");

static const char *const sql_text[SQ_COUNT] = {
    [SQ_BEGIN_WRITE] = "BEGIN IMMEDIATE",
    [SQ_BEGIN_READ] = "BEGIN",
    [SQ_COMMIT] = "COMMIT",
    [SQ_ROLLBACK] = "ROLLBACK",
    [SQ_SAVEPOINT] = "SAVEPOINT sp",
    [SQ_RELEASE] = "RELEASE sp",
    [SQ_ROLLBACK_TO] = "ROLLBACK TO sp",
    /* A session's skey, its short key in session_data, is one more than the
     * largest so far. The newest session's skey comes back when the sweep
     * deletes it, but only after every row of it is gone. */
    [SQ_SESSION_INSERT] = "INSERT INTO sessions(session_id, flow_type, created_ms, status,"
                          " event_seq, step_ord, settings, skey, active_ms)"
                          " VALUES(?1, ?2, ?3, 0, 0, 0, ?4,"
                          " (SELECT coalesce(max(skey), 0) + 1 FROM sessions), ?3)"
                          " ON CONFLICT(session_id) DO NOTHING",
    [SQ_SESSION_GET] = "SELECT flow_type, created_ms, status, event_seq, data_ver, step_ord, skey,"
                       " active_ms FROM sessions WHERE session_id = ?1",
    [SQ_SESSION_SET_ACTIVE] = "UPDATE sessions SET active_ms = ?2 WHERE session_id = ?1",
    [SQ_SESSION_EXPIRED_OPEN] = "SELECT session_id, flow_type, created_ms, status, event_seq,"
                                " active_ms FROM sessions WHERE status = 0 AND active_ms < ?1"
                                " ORDER BY status, active_ms LIMIT ?2",
    [SQ_SESSION_EXPIRED_CLOSED] = "SELECT session_id, flow_type, created_ms, status, event_seq,"
                                  " active_ms FROM sessions WHERE status IN (1, 2, 3)"
                                  " AND active_ms < ?1 LIMIT ?2",
    /* At most ?2 rows of one session per statement: the sweep's batches. */
    [SQ_SESSION_PURGE_DATA] = "DELETE FROM session_data WHERE skey = ?1 AND (kind, key, seq) IN"
                              " (SELECT kind, key, seq FROM session_data WHERE skey = ?1"
                              " ORDER BY kind, key, seq LIMIT ?2)",
    [SQ_SESSION_PURGE_STEPS] = "DELETE FROM steps WHERE session_id = ?1",
    [SQ_SESSION_DELETE] = "DELETE FROM sessions WHERE session_id = ?1",
    [SQ_SESSION_STATUS] = "UPDATE sessions SET status = ?2 WHERE session_id = ?1",
    /* A transaction raises the counters in its session memo and writes
     * them with this once, before it commits (session_memo.h). */
    [SQ_SESSION_SET_COUNTERS] = "UPDATE sessions SET event_seq = ?2, step_ord = ?3, data_ver = ?4"
                                " WHERE session_id = ?1",
    [SQ_SESSION_DATA_VER] = "SELECT data_ver FROM sessions WHERE session_id = ?1",
    [SQ_SESSION_LIST_FIRST] = "SELECT session_id, flow_type, created_ms, status, event_seq,"
                              " active_ms FROM sessions ORDER BY created_ms DESC, session_id DESC"
                              " LIMIT ?1",
    [SQ_SESSION_LIST_AFTER] = "SELECT session_id, flow_type, created_ms, status, event_seq,"
                              " active_ms FROM sessions WHERE created_ms < ?2 OR (created_ms = ?2"
                              " AND session_id < ?3)"
                              " ORDER BY created_ms DESC, session_id DESC LIMIT ?1",
    [SQ_ATTR_GET] = "SELECT value FROM session_data WHERE skey = " SKEY " AND kind = 0"
                    " AND key = ?2 AND seq = 0",
    [SQ_ATTR_PUT] = "INSERT OR REPLACE INTO session_data(skey, kind, key, seq, value)"
                    " VALUES(" SKEY ", 0, ?2, 0, ?3)",
    [SQ_ATTR_DELETE] = "DELETE FROM session_data WHERE skey = " SKEY " AND kind = 0 AND key = ?2"
                       " AND seq = 0",
    [SQ_ATTR_SCAN_RANGE] = "SELECT key, value FROM session_data WHERE skey = " SKEY
                           " AND kind = 0 AND key >= ?2 AND key < ?3 ORDER BY key",
    [SQ_ATTR_SCAN_FROM] = "SELECT key, value FROM session_data WHERE skey = " SKEY
                          " AND kind = 0 AND key >= ?2 ORDER BY key",
    [SQ_CHAN_PUSH] = "INSERT INTO session_data(skey, kind, key, seq, value)"
                     " VALUES(" SKEY ", 1, ?2, (SELECT coalesce(max(seq), 0) + 1 FROM session_data"
                     " WHERE skey = " SKEY " AND kind = 1 AND key = ?2), ?3)",
    [SQ_CHAN_COUNT] = "SELECT count(*) FROM session_data WHERE skey = " SKEY " AND kind = 1"
                      " AND key = ?2",
    [SQ_CHAN_PEEK] = "SELECT seq, value FROM session_data WHERE skey = " SKEY " AND kind = 1"
                     " AND key = ?2 ORDER BY seq LIMIT ?3",
    [SQ_CHAN_DELETE_UPTO] = "DELETE FROM session_data WHERE skey = " SKEY " AND kind = 1"
                            " AND key = ?2 AND seq <= ?3",
    [SQ_STEP_INSERT] = "INSERT INTO steps(session_id, exec_id, step_type, ord, state, method,"
                       " attempt, cancelled, input, options, wait, conditions, recovery_error,"
                       " due_ms, lease_owner, lease_until, started_ms, lost_workers) VALUES(?1, ?2,"
                       " ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
    [SQ_STEP_GET] = "SELECT session_id, exec_id, step_type, ord, state, method, attempt,"
                    " cancelled, input, options, wait, conditions, recovery_error, due_ms,"
                    " lease_owner, lease_until, started_ms, lost_workers FROM steps"
                    " WHERE session_id = ?1 AND exec_id = ?2",
    [SQ_STEP_UPDATE] = "UPDATE steps SET step_type = ?3, ord = ?4, state = ?5, method = ?6,"
                       " attempt = ?7, cancelled = ?8, input = ?9, options = ?10, wait = ?11,"
                       " conditions = ?12, recovery_error = ?13, due_ms = ?14,"
                       " lease_owner = ?15, lease_until = ?16, started_ms = ?17,"
                       " lost_workers = ?18 WHERE session_id = ?1 AND exec_id = ?2",
    [SQ_STEP_DELETE] = "DELETE FROM steps WHERE session_id = ?1 AND exec_id = ?2",
    [SQ_STEP_FIRST_DUE] = "SELECT session_id, exec_id, step_type, ord, state, method, attempt,"
                          " cancelled, input, options, wait, conditions, recovery_error, due_ms,"
                          " lease_owner, lease_until, started_ms, lost_workers FROM steps"
                          " WHERE due_ms IS NOT NULL AND due_ms <= ?1 ORDER BY due_ms LIMIT 1",
    [SQ_STEP_NEXT_DUE] = "SELECT min(due_ms) FROM steps WHERE due_ms IS NOT NULL",
    [SQ_STEP_LIST] = "SELECT session_id, exec_id, step_type, ord, state, method, attempt,"
                     " cancelled, input, options, wait, conditions, recovery_error, due_ms,"
                     " lease_owner, lease_until, started_ms, lost_workers FROM steps"
                     " WHERE session_id = ?1 ORDER BY ord",
    [SQ_STEP_LIST_STATE] = "SELECT session_id, exec_id, step_type, ord, state, method, attempt,"
                           " cancelled, input, options, wait, conditions, recovery_error,"
                           " due_ms, lease_owner, lease_until, started_ms, lost_workers FROM steps"
                           " WHERE session_id = ?1 AND state = ?2 ORDER BY ord",
    [SQ_STEP_RENEW] = "UPDATE steps SET lease_until = ?6, due_ms = ?6 WHERE session_id = ?1"
                      " AND exec_id = ?2 AND state = 3 AND lease_owner = ?3 AND attempt = ?4"
                      " AND cancelled = 0 AND lease_until > ?5",
    [SQ_STEP_BUSY] = "SELECT count(*) FROM steps WHERE session_id = ?1 AND state IN (1, 3)",
    [SQ_EVENT_APPEND] = "INSERT INTO session_data(skey, kind, key, seq, value)"
                        " VALUES(" SKEY ", 2, x'', ?2, ?3)",
    [SQ_EVENT_TRIM] = "DELETE FROM session_data WHERE skey = " SKEY " AND kind = 2"
                      " AND key = x'' AND seq <= ?2",
    [SQ_EVENT_READ] = "SELECT seq, value FROM session_data WHERE skey = " SKEY " AND kind = 2"
                      " AND key = x'' AND seq > ?2 ORDER BY seq LIMIT ?3",
};

int dexa__sq_err(int rc) {
  /* A row for a session that does not exist: its skey subquery was NULL. */
  if (rc == SQLITE_CONSTRAINT_NOTNULL) return DEXA_E_NOT_FOUND;
  switch (rc & 0xff) {
  case SQLITE_OK:
  case SQLITE_DONE:
  case SQLITE_ROW:
    return DEXA_OK;
  case SQLITE_BUSY:
  case SQLITE_LOCKED:
    return DEXA_E_BUSY;
  case SQLITE_NOMEM:
    return DEXA_E_NOMEM;
  case SQLITE_CORRUPT:
  case SQLITE_NOTADB:
    return DEXA_E_CORRUPT;
  case SQLITE_CONSTRAINT:
    return DEXA_E_ALREADY_EXISTS;
  case SQLITE_MISUSE:
  case SQLITE_RANGE:
    return DEXA_E_INTERNAL;
  default:
    return DEXA_E_IO;
  }
}

/* ---- error causes ------------------------------------------------------ */

/* Open stores, so that a failed statement finds the store of its file
 * (sqlite3_db_filename) to note its cause on. */
static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static sq_store *registry;

static void reg_add(sq_store *s) {
  pthread_mutex_lock(&reg_mu);
  s->reg_next = registry;
  registry = s;
  pthread_mutex_unlock(&reg_mu);
}

static void reg_remove(sq_store *s) {
  pthread_mutex_lock(&reg_mu);
  for (sq_store **p = &registry; *p; p = &(*p)->reg_next)
    if (*p == s) {
      *p = s->reg_next;
      break;
    }
  pthread_mutex_unlock(&reg_mu);
}

/* What went wrong, in words, from SQLite's code and the system's errno;
 * NULL when it is not a matter of the file (busy, constraint, misuse). */
static const char *cause_of(int r, int sys) {
  int primary = r & 0xff;
  if (primary == SQLITE_FULL || sys == ENOSPC) return "disk full";
  if (sys == EDQUOT) return "disk quota exceeded";
  if (sys == EROFS) return "read-only file system";
  if (primary == SQLITE_READONLY) return "read-only";
  if (primary == SQLITE_PERM || primary == SQLITE_AUTH || sys == EACCES || sys == EPERM)
    return "permission denied";
  if (primary == SQLITE_CANTOPEN) return "cannot open the file";
  if (primary == SQLITE_IOERR) return "input/output error";
  if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB) return "damaged or not a store";
  return NULL;
}

/* "disk full: /path (database or disk is full; No space left on device)" */
static void describe(char *buf, size_t n, const char *path, int r, int sys, const char *what) {
  const char *cause = cause_of(r, sys);
  snprintf(buf, n, "%s: the store %s%s%s (%s%s%s)", cause ? cause : "error", path,
           what ? ": " : "", what ? what : "", sqlite3_errstr(r), sys ? "; " : "",
           sys ? strerror(sys) : "");
}

static void note_on(sq_store *s, int rc, int r, int sys, const char *what) {
  char msg[400];
  describe(msg, sizeof msg, s->path, r, sys, what);
  dexa__store_note(&s->base, rc, "%s", msg);
}

int dexa__sq_db_err(sqlite3 *db, int r) {
  int rc = dexa__sq_err(r);
  if (rc == DEXA_OK || !db || !cause_of(r, sqlite3_system_errno(db))) return rc;
  const char *file = sqlite3_db_filename(db, "main");
  int sys = sqlite3_system_errno(db);
  pthread_mutex_lock(&reg_mu);
  for (sq_store *s = registry; s; s = s->reg_next)
    if (file && strcmp(s->full_path, file) == 0) note_on(s, rc, r, sys, NULL);
  pthread_mutex_unlock(&reg_mu);
  return rc;
}

int dexa__sq_st_err(sqlite3_stmt *st, int r) {
  return dexa__sq_db_err(st ? sqlite3_db_handle(st) : NULL, r);
}

sqlite3_stmt *dexa__sq_stmt(sq_conn *c, sq_stmt_id id, int *rc) {
  sqlite3_stmt *st = c->stmts[id];
  if (st) {
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return st;
  }
  int r = sqlite3_prepare_v3(c->db, sql_text[id], -1, SQLITE_PREPARE_PERSISTENT, &st, NULL);
  if (r != SQLITE_OK) {
    *rc = dexa__sq_db_err(c->db, r);
    return NULL;
  }
  c->stmts[id] = st;
  return st;
}

int dexa__sq_exec(sqlite3_stmt *st) {
  int r = sqlite3_step(st);
  int rc = (r == SQLITE_DONE || r == SQLITE_ROW) ? DEXA_OK : dexa__sq_st_err(st, r);
  sqlite3_reset(st);
  return rc;
}

int dexa__sq_int64(sqlite3_stmt *st, int i, int64_t v) {
  return dexa__sq_err(sqlite3_bind_int64(st, i, v));
}

int dexa__sq_int(sqlite3_stmt *st, int i, int v) { return dexa__sq_err(sqlite3_bind_int(st, i, v)); }

int dexa__sq_null(sqlite3_stmt *st, int i) { return dexa__sq_err(sqlite3_bind_null(st, i)); }

/* Text and blob lengths reach SQLite as int: a longer value is refused
 * here instead of being bound cut short (or with a negative length). */
int dexa__sq_text(sqlite3_stmt *st, int i, const char *s, size_t n) {
  if (n > INT_MAX) return DEXA_E_TOO_LARGE;
  int r = s ? sqlite3_bind_text(st, i, s, (int)n, SQLITE_STATIC) : sqlite3_bind_null(st, i);
  return dexa__sq_err(r);
}

int dexa__sq_blob(sqlite3_stmt *st, int i, const char *s, size_t n) {
  if (n > INT_MAX) return DEXA_E_TOO_LARGE;
  /* A zero-length blob with a NULL pointer would bind SQL NULL. */
  int r = sqlite3_bind_blob(st, i, n ? (const void *)s : (const void *)"", (int)n,
                            SQLITE_STATIC);
  return dexa__sq_err(r);
}

int dexa__sq_col_dup(sqlite3_stmt *st, int i, char **slot, size_t *len) {
  if (sqlite3_column_type(st, i) == SQLITE_NULL) {
    return dexa__row_set(slot, len, NULL, 0);
  }
  const char *p = (const char *)sqlite3_column_blob(st, i);
  size_t n = (size_t)sqlite3_column_bytes(st, i);
  return dexa__row_set(slot, len, p ? p : "", n);
}

static int exec_simple(dexa__store_conn *base, sq_stmt_id id) {
  int rc = DEXA_OK;
  sqlite3_stmt *st = dexa__sq_stmt((sq_conn *)base, id, &rc);
  return st ? dexa__sq_exec(st) : rc;
}

/* The write log and the session memo follow the transaction: emptied when
 * one begins or rolls back, marked at each savepoint. At commit the memo's
 * counters are written first, and the write log goes to the session cache
 * after. */
static void end_transaction(sq_conn *c) {
  dexa__write_log_clear(&c->log);
  dexa__session_memo_clear(&c->memo);
  c->writing = 0;
}

static int sq_begin_write(dexa__store_conn *c) {
  sq_conn *sc = (sq_conn *)c;
  end_transaction(sc);
  if (sc->store->read_only) {
    dexa__store_note(&sc->store->base, DEXA_E_IO,
                     "read-only: the store %s was opened for reading only (%s); it cannot be"
                     " written",
                     sc->store->path, sc->store->ro_why);
    return DEXA_E_IO;
  }
  int rc = exec_simple(c, SQ_BEGIN_WRITE);
  sc->writing = rc == DEXA_OK;
  return rc;
}

static int sq_begin_read(dexa__store_conn *c) { return exec_simple(c, SQ_BEGIN_READ); }

static int sq_commit(dexa__store_conn *c) {
  sq_conn *sc = (sq_conn *)c;
  int rc = dexa__sq_session_write_counters(sc);
  if (rc == DEXA_OK) rc = exec_simple(c, SQ_COMMIT);
  /* A failed COMMIT leaves the transaction to the caller's rollback. */
  if (rc != DEXA_OK) return rc;
  if (sc->store->base.cache) dexa__write_log_publish(&sc->log, sc->store->base.cache);
  end_transaction(sc);
  return rc;
}

static int sq_savepoint(dexa__store_conn *c) {
  sq_conn *sc = (sq_conn *)c;
  if (dexa__session_memo_savepoint(&sc->memo) != 0) return DEXA_E_NOMEM;
  int rc = exec_simple(c, SQ_SAVEPOINT);
  if (rc == DEXA_OK)
    dexa__write_log_savepoint(&sc->log);
  else
    dexa__session_memo_release(&sc->memo);
  return rc;
}

static int sq_release(dexa__store_conn *c) {
  sq_conn *sc = (sq_conn *)c;
  int rc = exec_simple(c, SQ_RELEASE);
  if (rc == DEXA_OK) {
    dexa__write_log_release(&sc->log);
    dexa__session_memo_release(&sc->memo);
  }
  return rc;
}

static int sq_rollback(dexa__store_conn *c) {
  sq_conn *sc = (sq_conn *)c;
  end_transaction(sc);
  /* After some errors SQLite has already rolled back; that is not an error. */
  if (sqlite3_get_autocommit(sc->db)) return DEXA_OK;
  return exec_simple(c, SQ_ROLLBACK);
}

static int sq_rollback_to(dexa__store_conn *c) {
  sq_conn *sc = (sq_conn *)c;
  dexa__write_log_rollback_to(&sc->log);
  dexa__session_memo_rollback_to(&sc->memo);
  int rc = exec_simple(c, SQ_ROLLBACK_TO);
  /* ROLLBACK TO keeps the savepoint open; release it so nesting stays flat. */
  return rc ? rc : exec_simple(c, SQ_RELEASE);
}

/* Runs SQL that another process opening the same file at the same moment
 * can refuse with SQLITE_BUSY without calling the busy handler (switching
 * to WAL, WAL recovery, schema creation): tries again for up to 10 s. */
static int exec_while_busy(sqlite3 *db, const char *sql, char **err) {
  int r = SQLITE_BUSY;
  for (int attempt = 0; attempt < 1000; attempt++) {
    if (err) {
      sqlite3_free(*err);
      *err = NULL;
    }
    r = sqlite3_exec(db, sql, NULL, NULL, err);
    if ((r & 0xff) != SQLITE_BUSY && (r & 0xff) != SQLITE_LOCKED) break;
    usleep(10000);
  }
  return r;
}

/* Busy handler: SQLite's own sleeps 1, 2, 5, 10 ms ... between tries, so a
 * writer held back a moment by a checkpoint's RESTART or another process's
 * commit lost up to 8 ms. Tries every 100 us for the first 5 ms, then every
 * millisecond, for 10 s in all. */
static int busy_wait(void *unused, int count) {
  (void)unused;
  if (count >= 50 + 9995) return 0;
  usleep(count < 50 ? 100 : 1000);
  return 1;
}

static int apply_pragmas(sq_conn *c, sq_store *s) {
  /* Durable stores commit with NORMAL too (no fsync inside COMMIT, which
   * holds the write lock) and make commits durable with sq_sync before
   * anyone hears of them (store.h: sync_after_commit). */
  const char *sync = "PRAGMA synchronous=NORMAL";
  sqlite3_busy_handler(c->db, busy_wait, NULL);
  if (!s->read_only) {
    int r = exec_while_busy(c->db, "PRAGMA journal_mode=WAL", NULL);
    if (r != SQLITE_OK) return dexa__sq_db_err(c->db, r);
    if (exec_while_busy(c->db, sync, NULL) != SQLITE_OK) return dexa__sq_db_err(c->db, SQLITE_IOERR);
  }
  /* Reads of checkpointed pages through a memory map instead of pread, and
   * a larger page cache per connection. */
  sqlite3_exec(c->db, "PRAGMA mmap_size=268435456", NULL, NULL, NULL);
  sqlite3_exec(c->db, "PRAGMA cache_size=-16384", NULL, NULL, NULL);
  /* Savepoint journals stay in memory: a batch runs each operation in a
   * savepoint, and past 64 KB SQLite spilled their journal to a temporary
   * file, about 4400 small writes per 100 resumes of W2 (test/bench). */
  sqlite3_exec(c->db, "PRAGMA temp_store=MEMORY", NULL, NULL, NULL);
  dexa__sq_keep_wal(c->db);
  dexa__sq_checkpoint_hook(s, c->db);
  return DEXA_OK;
}

static int sq_conn_open(dexa__store *base, dexa__store_conn **out) {
  sq_store *s = (sq_store *)base;
  *out = NULL;
  sq_conn *c = calloc(1, sizeof *c);
  if (!c) return DEXA_E_NOMEM;
  c->base.ops = &dexa__sqlite_ops;
  c->store = s;
  int flags = s->read_only ? SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX
                           : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
  int r = sqlite3_open_v2(s->read_only ? s->ro_uri : s->path, &c->db, flags, NULL);
  if (r == SQLITE_OK) sqlite3_extended_result_codes(c->db, 1);
  int rc = DEXA_OK;
  if (r != SQLITE_OK) {
    rc = dexa__sq_err(r);
    note_on(s, rc, c->db ? sqlite3_extended_errcode(c->db) : r, c->db ? sqlite3_system_errno(c->db) : 0,
            "cannot open");
  } else {
    rc = apply_pragmas(c, s);
    if (rc != DEXA_OK && !cause_of(sqlite3_extended_errcode(c->db), sqlite3_system_errno(c->db)))
      note_on(s, rc, sqlite3_extended_errcode(c->db), sqlite3_system_errno(c->db), "cannot set it up");
  }
  if (rc != DEXA_OK) {
    sqlite3_close_v2(c->db);
    free(c);
    return rc;
  }
  *out = &c->base;
  return DEXA_OK;
}

static void sq_conn_close(dexa__store_conn *base) {
  sq_conn *c = (sq_conn *)base;
  if (!c) return;
  for (int i = 0; i < SQ_COUNT; i++) sqlite3_finalize(c->stmts[i]);
  sqlite3_close_v2(c->db);
  free(c->valbuf);
  free(c->rowbuf);
  free(c->packbuf);
  dexa__write_log_free(&c->log);
  dexa__session_memo_free(&c->memo);
  free(c);
}

/* Keeps s->wal_fd on the current WAL file: the file is kept when the last
 * connection closes (dexa__sq_keep_wal), but another program or an older
 * version of the library may delete it and create a new one later. A new
 * WAL's directory entry is synced once, so the file survives a power loss. */
static int track_wal(sq_store *s, const char *wal) {
  struct stat now, have;
  if (stat(wal, &now) != 0) {
    if (s->wal_fd >= 0) close(s->wal_fd);
    s->wal_fd = -1;
    return errno == ENOENT ? DEXA_OK : DEXA_E_IO;
  }
  if (s->wal_fd >= 0 && fstat(s->wal_fd, &have) == 0 && have.st_ino == now.st_ino &&
      have.st_dev == now.st_dev)
    return DEXA_OK;
  if (s->wal_fd >= 0) close(s->wal_fd);
  /* The WAL carries no locks of SQLite's (those are on the database and
   * -shm files), so a descriptor of our own can be opened and closed. */
  s->wal_fd = open(wal, O_RDWR | O_CLOEXEC);
  if (s->wal_fd < 0) return DEXA_E_IO;
  /* A copy of the path of any length: a path cut to a fixed buffer would
   * sync another directory, or none. */
  char *dir = strdup(s->path);
  if (!dir) return DEXA_E_NOMEM;
  char *slash = strrchr(dir, '/');
  if (slash) *(slash == dir ? slash + 1 : slash) = '\0';
  int dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  free(dir);
  int rc = dfd >= 0 && fsync(dfd) == 0 ? DEXA_OK : DEXA_E_IO;
  if (dfd >= 0) close(dfd);
  return rc;
}

/* fdatasync of the WAL through our own descriptor covers every frame any
 * connection of this process or another has written: the page cache is the
 * file's, not the descriptor's. */
static int sq_sync(dexa__store *base) {
  sq_store *s = (sq_store *)base;
  if (!s->base.sync_after_commit) return DEXA_OK;
  pthread_mutex_lock(&s->sync_mu);
  int rc = track_wal(s, s->wal_path);
  int sys = rc != DEXA_OK ? errno : 0;
  if (rc == DEXA_OK && s->wal_fd >= 0 && fdatasync(s->wal_fd) != 0) rc = DEXA_E_IO, sys = errno;
  pthread_mutex_unlock(&s->sync_mu);
  if (rc != DEXA_OK) note_on(s, rc, SQLITE_IOERR_FSYNC, sys, "cannot sync its WAL");
  return rc;
}

/* path + suffix in a new string (NULL when out of memory): SQLite names
 * its side files so, and a path of any length must reach the same file. */
static char *path_with_suffix(const char *path, const char *suffix) {
  size_t n = strlen(path), k = strlen(suffix);
  char *out = malloc(n + k + 1);
  if (!out) return NULL;
  memcpy(out, path, n);
  memcpy(out + n, suffix, k + 1);
  return out;
}

static void remove_files(const char *path) {
  unlink(path);
  const char *suffixes[] = {"-wal", "-shm"};
  for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
    char *side = path_with_suffix(path, suffixes[i]);
    if (side) unlink(side);
    free(side);
  }
}

static void sq_close(dexa__store *base) {
  sq_store *s = (sq_store *)base;
  if (!s) return;
  reg_remove(s);
  dexa__sq_checkpointer_free(s->checkpointer);
  dexa__session_cache_free(s->base.cache);
  if (s->wal_fd >= 0) close(s->wal_fd);
  pthread_mutex_destroy(&s->sync_mu);
  if (s->temporary) remove_files(s->path);
  free(s->path);
  free(s->wal_path);
  free(s->ro_uri);
  free(s);
}

/* The file cannot be written, though it may be read. */
static int unwritable(int r, int sys) {
  const char *c = cause_of(r, sys);
  return c && (strcmp(c, "read-only") == 0 || strcmp(c, "read-only file system") == 0 ||
               strcmp(c, "permission denied") == 0 || strcmp(c, "cannot open the file") == 0);
}

/* "file:/path?mode=ro": the path %-escaped where a URI needs it. */
static char *file_uri(const char *path, const char *query) {
  size_t n = strlen(path), cap = 3 * n + strlen(query) + 16;
  char *u = malloc(cap), *p = u;
  if (!u) return NULL;
  p += sprintf(p, "file:");
  for (const unsigned char *q = (const unsigned char *)path; *q; q++) {
    if (*q == '%' || *q == '?' || *q == '#' || *q < 0x21 || *q >= 0x7f)
      p += sprintf(p, "%%%02X", *q);
    else
      *p++ = (char)*q;
  }
  sprintf(p, "?%s", query);
  return u;
}

/* Opens the store for reading only: mode=ro, or, when even that needs
 * to write (a WAL file without its -shm in a directory that cannot be
 * written), immutable=1: nothing is locked, so the file must not change
 * meanwhile (a read-only mount). */
static int open_read_only(sq_store *s, const char *why, char *errmsg, size_t n) {
  static const char *const queries[] = {"mode=ro", "immutable=1"};
  snprintf(s->ro_why, sizeof s->ro_why, "%s", why);
  s->read_only = 1;
  s->base.sync_after_commit = 0;
  int rc = DEXA_E_IO;
  char detail[256] = "";
  for (size_t i = 0; i < 2; i++) {
    free(s->ro_uri);
    s->ro_uri = file_uri(s->path, queries[i]);
    if (!s->ro_uri) return DEXA_E_NOMEM;
    dexa__store_conn *c = NULL;
    rc = sq_conn_open(&s->base, &c);
    if (rc == DEXA_OK) {
      rc = dexa__sq_schema_check(((sq_conn *)c)->db, detail, sizeof detail);
      if (rc == DEXA_OK) {
        const char *f = sqlite3_db_filename(((sq_conn *)c)->db, "main");
        snprintf(s->full_path, sizeof s->full_path, "%s", f ? f : s->path);
      } else if (sqlite3_errcode(((sq_conn *)c)->db) == SQLITE_OK ||
                 (sqlite3_errcode(((sq_conn *)c)->db) & 0xff) != SQLITE_CANTOPEN) {
        sq_conn_close(c);
        break; /* a schema we cannot use: immutable would not help */
      }
      sq_conn_close(c);
    } else {
      dexa__store_cause(&s->base, rc, detail, sizeof detail);
    }
    if (rc == DEXA_OK) break;
  }
  if (rc != DEXA_OK && errmsg)
    snprintf(errmsg, n, "cannot open %s (%s) even for reading: %s", s->path, why, detail);
  if (rc == DEXA_OK)
    dexa__store_log(&s->base, DEXA_LOG_WARNING, "sqlite-read-only",
                    "the store %s is opened for reading only (%s): reads work, writes fail",
                    s->path, why);
  return rc;
}

/* Creates or upgrades the schema; another process opening the same new
 * file can hold it busy for a moment without calling the busy handler. A
 * file (or directory) that cannot be written is opened for reading. */
static int create_schema(sq_store *s, char *errmsg, size_t n) {
  dexa__store_conn *c = NULL;
  char why[400] = "";
  int rc = sq_conn_open(&s->base, &c);
  if (rc != DEXA_OK) {
    int exists = access(s->path, F_OK) == 0;
    dexa__store_cause(&s->base, rc, why, sizeof why);
    /* why names the path already; the reason is its cause. */
    if (exists && (strstr(why, "read-only") || strstr(why, "permission denied") ||
                   strstr(why, "cannot open the file") || rc == DEXA_E_IO)) {
      char reason[300];
      snprintf(reason, sizeof reason, "%s", why[0] ? why : "it cannot be written");
      return open_read_only(s, reason, errmsg, n);
    }
    if (errmsg) snprintf(errmsg, n, "cannot open %s: %s", s->path, why[0] ? why : dexa_strerror(rc));
    return rc;
  }
  sqlite3 *db = ((sq_conn *)c)->db;
  if (sqlite3_db_readonly(db, "main") == 1) {
    /* SQLite fell back to reading: say why the file cannot be written. */
    sq_conn_close(c);
    const char *reason = "the file cannot be written";
    if (access(s->path, W_OK) != 0)
      reason = errno == EROFS ? "read-only file system"
               : errno == EACCES || errno == EPERM ? "permission denied" : strerror(errno);
    return open_read_only(s, reason, errmsg, n);
  }
  for (int attempt = 0; attempt < 1000; attempt++) {
    rc = dexa__sq_schema_ensure(db, why, sizeof why);
    if (rc != DEXA_E_BUSY) break;
    usleep(10000);
  }
  int r = sqlite3_extended_errcode(db), sys = sqlite3_system_errno(db);
  if (rc != DEXA_OK && unwritable(r, sys)) {
    char reason[300];
    snprintf(reason, sizeof reason, "%s: %s%s%s", cause_of(r, sys), sqlite3_errstr(r),
             sys ? "; " : "", sys ? strerror(sys) : "");
    sq_conn_close(c);
    return open_read_only(s, reason, errmsg, n);
  }
  if (rc != DEXA_OK && errmsg) {
    char cause[300] = "";
    if (cause_of(r, sys)) describe(cause, sizeof cause, s->path, r, sys, NULL);
    snprintf(errmsg, n, "schema of %s: %s%s%s", s->path, why, cause[0] ? "; " : "", cause);
  }
  if (rc == DEXA_OK) {
    const char *f = sqlite3_db_filename(db, "main");
    snprintf(s->full_path, sizeof s->full_path, "%s", f ? f : s->path);
  }
  sq_conn_close(c);
  return rc;
}

int dexa__sqlite_open(dexa__store **out, const char *path, int temporary,
                      const dexa__store_config *cfg, char *errmsg, size_t errmsg_size) {
  const char *synchronous = cfg->synchronous;
  *out = NULL;
  sq_store *s = calloc(1, sizeof *s);
  if (!s) return DEXA_E_NOMEM;
  s->base.ops = &dexa__sqlite_ops;
  s->base.log = cfg->log;
  s->base.log_ctx = cfg->log_ctx;
  s->temporary = temporary;
  /* "full" (the default): every commit is made durable by sq_sync. */
  s->base.sync_after_commit = !(synchronous && strcmp(synchronous, "normal") == 0);
  s->wal_fd = -1;
  pthread_mutex_init(&s->sync_mu, NULL);
  s->path = strdup(path);
  s->wal_path = s->path ? path_with_suffix(s->path, "-wal") : NULL;
  if (!s->wal_path || dexa__sq_checkpointer_new(&s->checkpointer) != DEXA_OK ||
      (cfg->cache_bytes && dexa__session_cache_new(cfg->cache_bytes, &s->base.cache) != DEXA_OK)) {
    dexa__sq_checkpointer_free(s->checkpointer);
    pthread_mutex_destroy(&s->sync_mu);
    free(s->path);
    free(s->wal_path);
    free(s);
    return DEXA_E_NOMEM;
  }
  int rc = create_schema(s, errmsg, errmsg_size);
  if (rc == DEXA_OK) rc = sq_sync(&s->base);
  if (rc == DEXA_OK) reg_add(s);
  if (rc != DEXA_OK) {
    sq_close(&s->base);
    return rc;
  }
  *out = &s->base;
  return DEXA_OK;
}

const dexa__store_ops dexa__sqlite_ops = {
    .begin_write = sq_begin_write,
    .begin_read = sq_begin_read,
    .commit = sq_commit,
    .rollback = sq_rollback,
    .savepoint = sq_savepoint,
    .release = sq_release,
    .rollback_to = sq_rollback_to,
    .session_insert = dexa__sq_session_insert,
    .session_get = dexa__sq_session_get,
    .session_set_status = dexa__sq_session_set_status,
    .session_bump_events = dexa__sq_session_bump_events,
    .session_next_ord = dexa__sq_session_next_ord,
    .session_data_version = dexa__sq_session_data_version,
    .session_list = dexa__sq_session_list,
    .session_touch = dexa__sq_session_touch,
    .session_expired = dexa__sq_session_expired,
    .session_purge = dexa__sq_session_purge,
    .attr_get = dexa__sq_attr_get,
    .attr_put = dexa__sq_attr_put,
    .attr_delete = dexa__sq_attr_delete,
    .attr_scan = dexa__sq_attr_scan,
    .chan_push = dexa__sq_chan_push,
    .chan_count = dexa__sq_chan_count,
    .chan_take = dexa__sq_chan_take,
    .step_insert = dexa__sq_step_insert,
    .step_get = dexa__sq_step_get,
    .step_update = dexa__sq_step_update,
    .step_delete = dexa__sq_step_delete,
    .step_first_due = dexa__sq_step_first_due,
    .step_next_due = dexa__sq_step_next_due,
    .step_list = dexa__sq_step_list,
    .step_renew = dexa__sq_step_renew,
    .step_busy_count = dexa__sq_step_busy_count,
    .event_append = dexa__sq_event_append,
    .event_trim = dexa__sq_event_trim,
    .event_read = dexa__sq_event_read,
    .sync = sq_sync,
    .conn_open = sq_conn_open,
    .conn_close = sq_conn_close,
    .close = sq_close,
    .session_dump = dexa__sq_session_dump,
    .session_restore = dexa__sq_session_restore,
    .chan_scan = dexa__sq_chan_scan,
    .integrity_check = dexa__sq_integrity_check,
    .vacuum = dexa__sq_vacuum,
};
