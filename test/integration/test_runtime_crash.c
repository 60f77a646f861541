/* Crash recovery with real processes: a child runs a worker that claims a
 * Step and is killed with SIGKILL while the Step runs; a new runtime on the
 * same file finishes the session. A retryable Step runs again (attempt 1
 * again: a lost worker is not a failed attempt);
 * a single-attempt Step is never run again: its recovery Step gets
 * DEXA_E_TIMEOUT. Also: workers that open one new file at the same moment
 * all get a working store.
 * test-needs: sqlite postgresql */
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "testing.h"
#include "unit/test_runtime_fake.h"

static const char *DESC =
    "{\"flow_type\":\"Fake\",\"start_step\":\"Start\",\"steps\":["
    "{\"name\":\"Start\",\"options\":{\"locked\":true}},"
    "{\"name\":\"Slow\",\"options\":{\"max_attempts\":3,\"initial_backoff_ms\":10}},"
    "{\"name\":\"SlowOnce\",\"options\":{\"max_attempts\":1,\"recovery\":\"Rec\"}},"
    "{\"name\":\"Rec\"}]," FAKE_RPCS "}";

static char marker[600];
static int in_child;

static int h_crash(fake *f, const dexa_call *c, dexa_result *r) {
  if (is(c, DEXA_CALL_EXECUTE, "Start")) {
    cJSON *in = fake_input(c);
    cJSON *step = cJSON_GetObjectItem(cJSON_GetObjectItem(in, "settings"), "step");
    char d[200];
    snprintf(d, sizeof d, "{\"next\":[{\"step\":\"%s\",\"input\":{\"k\":1}}]}", step->valuestring);
    cJSON_Delete(in);
    put_decision(r, d);
    return DEXA_OK;
  }
  if (is(c, DEXA_CALL_EXECUTE, "Rec")) {
    dexa__result_add_write(r, "rec_error", 9, c->recovery_error, c->recovery_error_len);
    return DEXA_OK;
  }
  if (in_child) {
    FILE *m = fopen(marker, "w");
    if (m) fclose(m);
    sleep(60); /* killed here */
    return DEXA_OK;
  }
  char v[64];
  snprintf(v, sizeof v, "\"%s\"", c->step_execution_id);
  put_write(r, "ran", v);
  return DEXA_OK;
}

static int open_real(dexa_runtime **rt, fake *f, const char *path) {
  dexa_runtime_options o;
  dexa_runtime_options_init(&o, sizeof o);
  o.store = path;
  o.lease_ms = 400;
  char err[256];
  return dexa__runtime_new_with_dispatch(rt, DESC, fake_dispatch, f, &o, err, sizeof err);
}

static void child_main(const char *path) {
  fake f;
  fake_init(&f, h_crash);
  in_child = 1;
  dexa_runtime *rt = NULL;
  if (open_real(&rt, &f, path) != DEXA_OK) _exit(3);
  dexa_task *t = NULL;
  if (dexa_runtime_poll(rt, &t, 10000) != DEXA_OK) _exit(4);
  dexa_result *res = NULL;
  fake_dispatch(&f, &res, dexa_task_call(t)); /* sleeps until killed */
  _exit(5);
}

static int wait_for_file(const char *p, int ms) {
  struct stat st;
  for (int i = 0; i < ms / 10; i++) {
    if (stat(p, &st) == 0) return 1;
    usleep(10000);
  }
  return 0;
}

/* Starts session sid whose first step is step, kills a worker inside it, and
 * finishes it in this process. Returns the parent's fake (log) via f. */
static int crash_and_resume(fake *f, const char *path, const char *sid, const char *step) {
  fake_init(f, h_crash);
  dexa_runtime *rt = NULL;
  char settings[100], *out = NULL;
  size_t n;
  if (open_real(&rt, f, path) != DEXA_OK) return -1;
  snprintf(settings, sizeof settings, "{\"step\":\"%s\"}", step);
  int rc = dexa_runtime_start_session(rt, sid, settings, strlen(settings), &out, &n);
  dexa_free(out);
  dexa_runtime_free(rt); /* no SQLite handle may cross fork */
  if (rc != DEXA_OK) return -2;
  unlink(marker);
  pid_t pid = fork();
  if (pid == 0) child_main(path);
  int started = wait_for_file(marker, 10000);
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!started || !WIFSIGNALED(status)) return -3;
  if (open_real(&rt, f, path) != DEXA_OK) return -4;
  /* Bounded: the dead worker's lease (400 ms) runs out, then the step goes on. */
  rc = -5;
  for (int i = 0; i < 500 && rc != DEXA_OK; i++) {
    run_ready(rt);
    if (dexa_runtime_wait_idle(rt, sid, 0) == DEXA_OK && fake_count(f, "E ") > 0) rc = DEXA_OK;
    else usleep(10000);
  }
  dexa_runtime_free(rt);
  return rc;
}

static char dbpath[1024];

static void test_killed_worker_step_runs_again(void) {
  fake f;
  CHECK_EQ_INT(crash_and_resume(&f, dbpath, "retry", "Slow"), DEXA_OK);
  CHECK_EQ_INT(fake_count(&f, "E Slow Slow-2 1"), 1);
  dexa_runtime *rt = NULL;
  CHECK_EQ_INT(open_real(&rt, &f, dbpath), DEXA_OK);
  char *v = fake_get(rt, "retry", "ran");
  CHECK_STR(v, "{\"value\":\"Slow-2\"}");
  dexa_free(v);
  dexa_runtime_free(rt);
}

static void test_killed_single_attempt_step_never_runs_again(void) {
  fake f;
  CHECK_EQ_INT(crash_and_resume(&f, dbpath, "once", "SlowOnce"), DEXA_OK);
  CHECK_EQ_INT(fake_count(&f, "E SlowOnce "), 0);
  CHECK_EQ_INT(fake_count(&f, "E Rec Rec-3 1"), 1);
  dexa_runtime *rt = NULL;
  CHECK_EQ_INT(open_real(&rt, &f, dbpath), DEXA_OK);
  char *v = fake_get(rt, "once", "rec_error");
  CHECK_CONTAINS(v, "\"code\":-202");
  dexa_free(v);
  v = fake_get(rt, "once", "ran");
  CHECK_STR(v, "{\"value\":null}");
  dexa_free(v);
  dexa_runtime_free(rt);
}

/* Several worker processes started together on a store file that does not
 * exist yet: one creates it, the others wait for it (switching to WAL and
 * creating the schema can be refused with SQLITE_BUSY without the busy
 * handler), and every one of them can then write. */
static int open_together_child(const char *path, const char *go, int i) {
  fake f;
  fake_init(&f, h_crash);
  if (!wait_for_file(go, 10000)) return 2;
  dexa_runtime *rt = NULL;
  int rc = open_real(&rt, &f, path);
  if (rc != DEXA_OK) {
    fprintf(stderr, "    worker %d: open: %s\n", i, dexa_error_name(rc));
    return 3;
  }
  char sid[32], *out = NULL;
  size_t n;
  snprintf(sid, sizeof sid, "together-%d", i);
  rc = dexa_runtime_start_session(rt, sid, "{\"step\":\"Slow\"}", 15, &out, &n);
  if (rc != DEXA_OK) fprintf(stderr, "    worker %d: start: %s\n", i, dexa_error_name(rc));
  dexa_free(out);
  dexa_runtime_free(rt);
  return rc == DEXA_OK ? 0 : 4;
}

static void test_processes_open_new_store_together(void) {
  enum { WORKERS = 6, ROUNDS = 4 };
  for (int round = 0; round < ROUNDS; round++) {
    char path[1024], go[700];
    char name[32];
    snprintf(name, sizeof name, "together%d", round);
    temp_store_path(path, sizeof path, name);
    snprintf(go, sizeof go, "%s.go", marker);
    pid_t pids[WORKERS];
    for (int i = 0; i < WORKERS; i++) {
      pids[i] = fork();
      if (pids[i] == 0) _exit(open_together_child(path, go, i));
    }
    FILE *g = fopen(go, "w");
    if (g) fclose(g);
    int ok = 0;
    for (int i = 0; i < WORKERS; i++) {
      int status = 0;
      waitpid(pids[i], &status, 0);
      ok += WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    CHECK_EQ_INT(ok, WORKERS);
    fake f;
    fake_init(&f, h_crash);
    dexa_runtime *rt = NULL;
    CHECK_EQ_INT(open_real(&rt, &f, path), DEXA_OK);
    char *list = NULL;
    size_t n = 0;
    CHECK_EQ_INT(dexa_runtime_list_sessions(rt, NULL, 100, &list, &n), DEXA_OK);
    for (int i = 0; i < WORKERS; i++) {
      char sid[32];
      snprintf(sid, sizeof sid, "together-%d", i);
      CHECK_CONTAINS(list, sid);
    }
    dexa_free(list);
    dexa_runtime_free(rt);
    temp_store_remove(path);
    unlink(go);
  }
}

int main(void) {
  temp_db(dbpath, sizeof dbpath, "crash");
  const char *tmp = getenv("TMPDIR");
  snprintf(marker, sizeof marker, "%s/dexa-crash-%ld.started", tmp && *tmp ? tmp : "/tmp",
           (long)getpid());
  RUN(test_killed_worker_step_runs_again);
  RUN(test_killed_single_attempt_step_never_runs_again);
  RUN(test_processes_open_new_store_together);
  temp_store_remove(dbpath);
  unlink(marker);
  TEST_MAIN_END();
}
