/* SQLite backend: WAL checkpoints off the commit path.
 *
 * SQLite's automatic checkpoint runs inside the COMMIT that passes the
 * threshold, holding the write lock while it copies about a thousand pages
 * into the database file and syncs it (about 9 ms here, a fifth of all
 * commit time under load). Instead every connection's WAL hook wakes one
 * thread per store, which checkpoints on its own connection: the bulk of
 * the copy runs without the write lock, so writers go on committing.
 *
 * Should the thread fall behind (a reader pinning an old snapshot, a slow
 * disk), a writer whose WAL passes CKPT_INLINE_PAGES checkpoints inline as
 * SQLite would, so the WAL stays bounded. */
#include <pthread.h>
#include <stdlib.h>

#include "dexagents/errors.h"
#include "store/sqlite_internal.h"

#define CKPT_PAGES 1000        /* SQLite's default autocheckpoint */
#define CKPT_INLINE_PAGES 8000 /* about 32 MB of WAL at 4 KB pages */
#define CKPT_RESTART_GAP 256   /* frames a RESTART may copy under the lock */

struct sq_checkpointer {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t thread;
  int started, wanted, stopping;
  sqlite3 *db;
};

/* Copies the WAL into the database without the write lock (PASSIVE);
 * when little is left, finishes with a RESTART so that the next writer
 * starts the WAL over. The RESTART holds writers back while it copies the
 * last frames and syncs the database (a few ms, up to about 20 ms measured
 * under W1), once per WAL cycle; without it a steady load never lets the
 * WAL start over, and W1 measured 10 to 15% fewer turns/s. Busy results are
 * fine: the next wake-up tries again. */
static void checkpoint_once(sqlite3 *db) {
  int log = 0, done = 0;
  int r = sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
  if (r == SQLITE_OK && log - done <= CKPT_RESTART_GAP)
    sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_RESTART, &log, &done);
}

static void *checkpoint_main(void *arg) {
  sq_checkpointer *k = arg;
  pthread_setname_np(pthread_self(), "dexa-checkpoint");
  pthread_mutex_lock(&k->mu);
  for (;;) {
    while (!k->wanted && !k->stopping) pthread_cond_wait(&k->cv, &k->mu);
    if (k->stopping) break;
    k->wanted = 0;
    pthread_mutex_unlock(&k->mu);
    checkpoint_once(k->db);
    pthread_mutex_lock(&k->mu);
  }
  pthread_mutex_unlock(&k->mu);
  return NULL;
}

/* Starts the thread and its connection on first use (k->mu held). */
static int start_locked(sq_store *s, sq_checkpointer *k) {
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;
  if (sqlite3_open_v2(s->path, &k->db, flags, NULL) != SQLITE_OK) {
    sqlite3_close_v2(k->db);
    k->db = NULL;
    return DEXA_E_IO;
  }
  sqlite3_busy_timeout(k->db, 1000);
  dexa__sq_keep_wal(k->db);
  sqlite3_wal_autocheckpoint(k->db, 0);
  /* A connection knows the file is in WAL mode only once it has read it. */
  if (sqlite3_exec(k->db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL) != SQLITE_OK) {
    sqlite3_close_v2(k->db);
    k->db = NULL;
    return DEXA_E_IO;
  }
  if (pthread_create(&k->thread, NULL, checkpoint_main, k) != 0) {
    sqlite3_close_v2(k->db);
    k->db = NULL;
    return DEXA_E_NOMEM;
  }
  k->started = 1;
  return DEXA_OK;
}

int dexa__sq_checkpointer_new(sq_checkpointer **out) {
  sq_checkpointer *k = calloc(1, sizeof *k);
  if (!k) return DEXA_E_NOMEM;
  pthread_mutex_init(&k->mu, NULL);
  pthread_cond_init(&k->cv, NULL);
  *out = k;
  return DEXA_OK;
}

void dexa__sq_checkpointer_free(sq_checkpointer *k) {
  if (!k) return;
  pthread_mutex_lock(&k->mu);
  k->stopping = 1;
  int started = k->started;
  pthread_cond_signal(&k->cv);
  pthread_mutex_unlock(&k->mu);
  if (started) pthread_join(k->thread, NULL);
  sqlite3_close_v2(k->db);
  pthread_cond_destroy(&k->cv);
  pthread_mutex_destroy(&k->mu);
  free(k);
}

/* sqlite3_wal_hook callback, after every commit of a store connection. */
static int on_commit(void *arg, sqlite3 *db, const char *name, int pages) {
  sq_store *s = arg;
  sq_checkpointer *k = s->checkpointer;
  if (pages < CKPT_PAGES) return SQLITE_OK;
  if (pages >= CKPT_INLINE_PAGES) {
    sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    return SQLITE_OK;
  }
  pthread_mutex_lock(&k->mu);
  int rc = k->started || k->stopping ? DEXA_OK : start_locked(s, k);
  k->wanted = 1;
  pthread_cond_signal(&k->cv);
  pthread_mutex_unlock(&k->mu);
  /* No thread: checkpoint here, as SQLite's own hook would have. */
  if (rc != DEXA_OK) sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
  return SQLITE_OK;
}

/* The WAL file outlives the last connection (emptied by the checkpoint at
 * close, not deleted), so the next process overwrites its blocks instead of
 * growing a new file: an fdatasync then has no file size to write, and W2's
 * fresh process (test/bench/approvals) resumes about 10% faster. The file
 * keeps the size it reached, bounded by CKPT_INLINE_PAGES. Every connection
 * says so: the last one to close decides. */
void dexa__sq_keep_wal(sqlite3 *db) {
  int keep = 1;
  sqlite3_file_control(db, "main", SQLITE_FCNTL_PERSIST_WAL, &keep);
}

void dexa__sq_checkpoint_hook(sq_store *s, sqlite3 *db) {
  sqlite3_wal_hook(db, on_commit, s);
}
