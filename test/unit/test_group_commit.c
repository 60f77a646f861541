/* Group commit with a durable store: nothing is acknowledged before the
 * WAL is synced, a failed sync fails the operations it covered, and a
 * single-attempt Step never starts before its lease is durable.
 *
 * This program defines fdatasync itself, so the library's (and SQLite's)
 * calls come here: a gate can hold every sync, or make it fail.
 * test-needs: sqlite */
#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "testing.h"
#include "test_runtime_fake.h"

static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int gate_closed, gate_fail, syncs_waiting;

int fdatasync(int fd) {
  pthread_mutex_lock(&gate_mu);
  syncs_waiting++;
  pthread_cond_broadcast(&gate_cv);
  while (gate_closed) pthread_cond_wait(&gate_cv, &gate_mu);
  syncs_waiting--;
  int fail = gate_fail;
  pthread_mutex_unlock(&gate_mu);
  if (fail) {
    errno = EIO;
    return -1;
  }
  return (int)syscall(SYS_fdatasync, fd);
}

static void gate_set(int closed, int fail) {
  pthread_mutex_lock(&gate_mu);
  gate_closed = closed;
  gate_fail = fail;
  pthread_cond_broadcast(&gate_cv);
  pthread_mutex_unlock(&gate_mu);
}

/* Waits until a sync is held at the gate (a test hangs, not passes, if the
 * library never syncs). */
static void wait_for_held_sync(void) {
  pthread_mutex_lock(&gate_mu);
  while (syncs_waiting == 0) pthread_cond_wait(&gate_cv, &gate_mu);
  pthread_mutex_unlock(&gate_mu);
}

static const char *DESC =
    "{\"flow_type\":\"Fake\",\"start_step\":\"Start\",\"steps\":["
    "{\"name\":\"Start\",\"options\":{\"locked\":true,\"max_attempts\":1}},"
    "{\"name\":\"Once\",\"options\":{\"max_attempts\":1}},"
    "{\"name\":\"Again\",\"options\":{\"max_attempts\":3}}]," FAKE_RPCS "}";

static int h_once(fake *f, const dexa_call *c, dexa_result *r) {
  if (is(c, DEXA_CALL_EXECUTE, "Start")) {
    cJSON *in = fake_input(c);
    cJSON *next = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(in, "settings"), "next");
    char *n = next ? cJSON_PrintUnformatted(next) : NULL;
    char doc[1024];
    snprintf(doc, sizeof doc, "{\"next\":%s}", n ? n : "[]");
    put_decision(r, doc);
    free(n);
    cJSON_Delete(in);
  } else if (is(c, DEXA_CALL_EXECUTE, "Once")) {
    put_write(r, "once", "\"done\"");
  } else if (is(c, DEXA_CALL_EXECUTE, "Again")) {
    put_write(r, "again", "\"done\"");
  }
  return DEXA_OK;
}

static char dbpath[512];

static dexa_runtime *open_durable(fake *f, const char *sync) {
  dexa_runtime_options o;
  dexa_runtime_options_init(&o, sizeof o);
  temp_db(dbpath, sizeof dbpath, "gc");
  o.store = dbpath;
  o.sqlite_synchronous = sync;
  o.worker_id = "test-worker";
  o.clock = fake_clock;
  o.clock_user_data = f;
  fake_init(f, h_once);
  dexa_runtime *rt = NULL;
  char err[256];
  if (dexa__runtime_new_with_dispatch(&rt, DESC, fake_dispatch, f, &o, err, sizeof err)) return NULL;
  return rt;
}

typedef struct call_thread {
  dexa_runtime *rt;
  int rc, returned;
} call_thread;

static void *put_value(void *arg) {
  call_thread *t = arg;
  const char *in = "{\"key\":\"k\",\"value\":7}";
  char *out = NULL;
  size_t n;
  t->rc = dexa_runtime_call(t->rt, "s", "put", in, strlen(in), &out, &n);
  dexa_free(out);
  __atomic_store_n(&t->returned, 1, __ATOMIC_SEQ_CST);
  return NULL;
}

static int64_t committed_rows(const char *sql) {
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  int64_t n = -1;
  if (sqlite3_open(dbpath, &db) == SQLITE_OK && sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return n;
}

static void test_an_rpc_returns_only_after_its_commit_is_synced(void) {
  fake f;
  dexa_runtime *rt = open_durable(&f, "full");
  CHECK(rt);
  if (!rt) return;
  CHECK_EQ_INT(fake_start(rt, "s"), DEXA_OK);
  gate_set(1, 0);
  call_thread t = {rt, -1, 0};
  pthread_t th;
  pthread_create(&th, NULL, put_value, &t);
  wait_for_held_sync();
  usleep(50000);
  /* Committed (another connection sees it) but not durable: not told yet. */
  CHECK_EQ_INT(__atomic_load_n(&t.returned, __ATOMIC_SEQ_CST), 0);
  CHECK_EQ_INT(committed_rows("SELECT count(*) FROM session_data WHERE kind = 0 AND key = CAST('k' AS BLOB)"), 1);
  gate_set(0, 0);
  pthread_join(th, NULL);
  CHECK_EQ_INT(t.rc, DEXA_OK);
  dexa_runtime_free(rt);
}

static void test_a_failed_sync_fails_the_operations_it_covered(void) {
  fake f;
  dexa_runtime *rt = open_durable(&f, "full");
  CHECK(rt);
  if (!rt) return;
  CHECK_EQ_INT(fake_start(rt, "s"), DEXA_OK);
  gate_set(0, 1);
  call_thread t = {rt, -1, 0};
  put_value(&t);
  gate_set(0, 0);
  CHECK_EQ_INT(t.rc, DEXA_E_IO);
  dexa_runtime_free(rt);
}

static void test_synchronous_normal_does_not_wait_for_a_sync(void) {
  fake f;
  dexa_runtime *rt = open_durable(&f, "normal");
  CHECK(rt);
  if (!rt) return;
  CHECK_EQ_INT(fake_start(rt, "s"), DEXA_OK);
  gate_set(1, 0);
  call_thread t = {rt, -1, 0};
  put_value(&t); /* would hang at the gate if it synced */
  gate_set(0, 0);
  CHECK_EQ_INT(t.rc, DEXA_OK);
  dexa_runtime_free(rt);
}

static void test_single_attempt_step_starts_only_once_its_lease_is_durable(void) {
  fake f;
  dexa_runtime *rt = open_durable(&f, "full");
  CHECK(rt);
  if (!rt) return;
  const char *settings = "{\"next\":[{\"step\":\"Once\"}]}";
  CHECK_EQ_INT(dexa_runtime_start_session(rt, "s", settings, strlen(settings), NULL, NULL), DEXA_OK);
  gate_set(1, 0);
  CHECK_EQ_INT(dexa_runtime_start(rt, 1), DEXA_OK);
  wait_for_held_sync(); /* the worker's claim of Once waits for this sync */
  usleep(50000);
  CHECK_EQ_INT(fake_count(&f, "E Once "), 0);
  gate_set(0, 0);
  CHECK_EQ_INT(dexa_runtime_wait_idle(rt, "s", 10000), DEXA_OK);
  CHECK_EQ_INT(fake_count(&f, "E Once "), 1);
  dexa_runtime_free(rt);
}

/* A worker's commits of a retryable Step wait for no sync (no thread waits
 * on them), yet are made durable within DEXA__LAZY_SYNC_MS with no RPC
 * to carry them (the test hangs if the syncer never syncs them). */
static void test_retryable_steps_do_not_wait_for_a_sync_which_still_follows(void) {
  fake f;
  dexa_runtime *rt = open_durable(&f, "full");
  CHECK(rt);
  if (!rt) return;
  const char *settings = "{\"next\":[{\"step\":\"Again\"}]}";
  CHECK_EQ_INT(dexa_runtime_start_session(rt, "s", settings, strlen(settings), NULL, NULL), DEXA_OK);
  gate_set(1, 0);
  CHECK_EQ_INT(dexa_runtime_start(rt, 1), DEXA_OK);
  CHECK_EQ_INT(dexa_runtime_wait_idle(rt, "s", 10000), DEXA_OK);
  CHECK_EQ_INT(fake_count(&f, "E Again "), 1);
  wait_for_held_sync();
  gate_set(0, 0);
  dexa_runtime_free(rt);
}

int main(void) {
  RUN(test_an_rpc_returns_only_after_its_commit_is_synced);
  RUN(test_a_failed_sync_fails_the_operations_it_covered);
  RUN(test_synchronous_normal_does_not_wait_for_a_sync);
  RUN(test_single_attempt_step_starts_only_once_its_lease_is_durable);
  RUN(test_retryable_steps_do_not_wait_for_a_sync_which_still_follows);
  unlink(dbpath);
  TEST_MAIN_END();
}
