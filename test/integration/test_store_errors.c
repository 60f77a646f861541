/* Store trouble names its cause and the store's path, and a store that
 * cannot be written still opens for reading:
 *   - a store on a read-only file system opens; snapshot, list_sessions
 *     and read_events work; a write fails with "read-only" and the path;
 *   - a full disk (a 512 KiB tmpfs) fails a write with "disk full" and the
 *     path, not a bare "input/output error";
 *   - a worker that cannot claim a ready Step on a read-only store reports
 *     it, with the cause and the path, through the log callback of the
 *     runtime options.
 * Tests run as root, where permissions do not stop writes: the program
 * enters a mount namespace of its own (unshare) and mounts tmpfs file
 * systems there, remounted read-only where a test needs it. Without the
 * rights to (not root, a container without CAP_SYS_ADMIN) the tests are
 * skipped, except under CI, where that is a failure.
 * test-needs: sqlite */
#include <dexagents/dexagents.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testing.h"

static char ns_error[256]; /* why the namespace could not be made ("" when it was) */
static char dir[256];
static char store[512];

static void enter_namespace(void) {
  if (unshare(CLONE_NEWNS) != 0) {
    snprintf(ns_error, sizeof ns_error, "unshare(CLONE_NEWNS): %s", strerror(errno));
    return;
  }
  /* Our mounts stay ours: nothing propagates back to the system. */
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
    snprintf(ns_error, sizeof ns_error, "mount --make-rprivate /: %s", strerror(errno));
}

/* A fresh tmpfs of the given size at a new directory; 0 on success. */
static int fresh_tmpfs(const char *size) {
  snprintf(dir, sizeof dir, "/tmp/dexa-store-errors-XXXXXX");
  if (!mkdtemp(dir)) return -1;
  char opts[64];
  snprintf(opts, sizeof opts, "size=%s,mode=0755", size);
  if (mount("tmpfs", dir, "tmpfs", 0, opts) != 0) {
    fprintf(stderr, "    mount tmpfs: %s\n", strerror(errno));
    rmdir(dir);
    return -1;
  }
  snprintf(store, sizeof store, "%s/store.db", dir);
  return 0;
}

static int remount_read_only(void) {
  if (mount(NULL, dir, NULL, MS_REMOUNT | MS_RDONLY, NULL) == 0) return 0;
  fprintf(stderr, "    remount read-only: %s\n", strerror(errno));
  return -1;
}

static void drop_tmpfs(void) {
  if (!dir[0]) return;
  umount2(dir, MNT_DETACH);
  rmdir(dir);
  dir[0] = '\0';
}

/* Skips (outside CI) when the namespace or tmpfs cannot be had. */
#define NEED_MOUNTS(size)                                                      \
  do {                                                                         \
    if (ns_error[0] && getenv("CI")) CHECK(!"a mount namespace under CI");     \
    if (ns_error[0]) SKIP(ns_error);                                           \
    if (fresh_tmpfs(size) != 0) {                                              \
      if (getenv("CI")) CHECK(!"a tmpfs under CI");                            \
      SKIP("cannot mount a tmpfs");                                            \
    }                                                                          \
  } while (0)

/* ---- the log callback ---- */

typedef struct log_box {
  pthread_mutex_t mu;
  char text[8192];
  int count;
} log_box;

static void collect_log(void *user, int32_t level, const char *message) {
  log_box *b = user;
  pthread_mutex_lock(&b->mu);
  size_t used = strlen(b->text);
  snprintf(b->text + used, sizeof b->text - used, "[%d] %s\n", (int)level, message);
  b->count++;
  pthread_mutex_unlock(&b->mu);
}

static int log_has(log_box *b, const char *a, const char *c) {
  pthread_mutex_lock(&b->mu);
  int found = 0;
  for (const char *line = b->text; line && *line && !found;) {
    const char *end = strchr(line, '\n');
    size_t n = end ? (size_t)(end - line) : strlen(line);
    char one[1200];
    snprintf(one, sizeof one, "%.*s", (int)(n < sizeof one - 1 ? n : sizeof one - 1), line);
    found = strstr(one, a) && strstr(one, c);
    line = end ? end + 1 : NULL;
  }
  pthread_mutex_unlock(&b->mu);
  return found;
}

/* ---- helpers ---- */

static dexa_agent *make_agent(void) {
  dexa_model *m = NULL;
  dexa_model_demo_new(&m, "mock/dex");
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.models = &m;
  def.model_count = 1;
  dexa_agent *a = NULL;
  dexa_agent_new(&a, &def, NULL, 0);
  dexa_model_free(m);
  return a;
}

static dexa_runtime *open_runtime(dexa_agent *a, log_box *logs, char *err, size_t n) {
  dexa_runtime_options o;
  dexa_runtime_options_init(&o, sizeof o);
  o.store = store;
  o.lease_ms = 2000;
  if (logs) {
    o.log = collect_log;
    o.log_user_data = logs;
  }
  dexa_runtime *rt = NULL;
  err[0] = '\0';
  if (dexa_runtime_new(&rt, a, &o, err, n) != DEXA_OK) fprintf(stderr, "    runtime: %s\n", err);
  return rt;
}

static int send_text(dexa_runtime *rt, const char *sid, const char *text, char **out) {
  char in[9000];
  snprintf(in, sizeof in, "{\"text\":\"%s\"}", text);
  size_t n = 0;
  char *mine = NULL;
  int rc = dexa_runtime_call(rt, sid, "send_message", in, strlen(in), out ? out : &mine, &n);
  dexa_free(mine);
  return rc;
}

/* A session with one answered turn, then the runtime closed. */
static int make_session(dexa_agent *a) {
  char err[256];
  dexa_runtime *rt = open_runtime(a, NULL, err, sizeof err);
  if (!rt) return -1;
  int rc = dexa_runtime_start_session(rt, "s1", NULL, 0, NULL, NULL);
  if (rc == DEXA_OK) rc = send_text(rt, "s1", "first message", NULL);
  if (rc == DEXA_OK) rc = dexa_runtime_run_ready(rt, NULL);
  dexa_runtime_free(rt);
  return rc;
}

/* ---- tests ---- */

static void test_read_only_store_opens_for_reading_and_names_the_cause(void) {
  NEED_MOUNTS("4m");
  dexa_agent *a = make_agent();
  CHECK_EQ_INT(make_session(a), DEXA_OK);
  CHECK_EQ_INT(remount_read_only(), 0);
  char err[256];
  dexa_runtime *rt = open_runtime(a, NULL, err, sizeof err);
  CHECK(rt != NULL);
  char *out = NULL;
  size_t n = 0;
  CHECK_EQ_INT(dexa_runtime_call(rt, "s1", "snapshot", "{}", 2, &out, &n), DEXA_OK);
  CHECK_CONTAINS(out, "first message");
  dexa_free(out);
  CHECK_EQ_INT(dexa_runtime_list_sessions(rt, NULL, 10, &out, &n), DEXA_OK);
  CHECK_CONTAINS(out, "\"session_id\":\"s1\"");
  dexa_free(out);
  CHECK_EQ_INT(dexa_runtime_read_events(rt, "s1", NULL, 10, 0, &out, &n), DEXA_OK);
  CHECK_CONTAINS(out, "\"events\":[{");
  dexa_free(out);
  /* A write: the error says read-only and where. */
  out = NULL;
  CHECK_EQ_INT(send_text(rt, "s1", "second message", &out), DEXA_E_IO);
  CHECK_CONTAINS(out, "read-only");
  CHECK_CONTAINS(out, store);
  CHECK(!strstr(out, "\"message\":\"input/output error\""));
  dexa_free(out);
  CHECK_CONTAINS(dexa_runtime_errmsg(rt), "read-only");
  CHECK_EQ_INT(dexa_runtime_start_session(rt, "s2", NULL, 0, NULL, NULL), DEXA_E_IO);
  CHECK_CONTAINS(dexa_runtime_errmsg(rt), store);
  dexa_runtime_free(rt);
  dexa_agent_free(a);
  drop_tmpfs();
}

static void test_a_full_disk_is_named_with_the_path(void) {
  NEED_MOUNTS("512k");
  dexa_agent *a = make_agent();
  char err[256];
  dexa_runtime *rt = open_runtime(a, NULL, err, sizeof err);
  CHECK(rt != NULL);
  CHECK_EQ_INT(dexa_runtime_start_session(rt, "s1", NULL, 0, NULL, NULL), DEXA_OK);
  char text[4001];
  memset(text, 'x', sizeof text - 1);
  text[sizeof text - 1] = '\0';
  int rc = DEXA_OK;
  char *out = NULL;
  /* 512 KiB fill up after about a hundred 4 KB messages (and replies). */
  int sent = 1;
  for (int i = 0; i < 2000 && rc == DEXA_OK; i++) {
    dexa_free(out);
    out = NULL;
    rc = send_text(rt, "s1", text, &out);
    sent = rc == DEXA_OK;
    if (rc == DEXA_OK) rc = dexa_runtime_run_ready(rt, NULL);
  }
  CHECK_EQ_INT(rc, DEXA_E_IO);
  /* The send's error document, or run_ready's message. */
  const char *msg = !sent && out ? out : dexa_runtime_errmsg(rt);
  if (!strstr(msg, "disk full")) fprintf(stderr, "    error: %s\n", msg);
  CHECK_CONTAINS(msg, "disk full");
  CHECK_CONTAINS(msg, store);
  dexa_free(out);
  dexa_runtime_free(rt);
  dexa_agent_free(a);
  drop_tmpfs();
}

static void test_a_worker_reports_store_errors_through_the_log_callback(void) {
  NEED_MOUNTS("4m");
  dexa_agent *a = make_agent();
  /* A ready model call waits in the store: sent with no worker running. */
  char err[256];
  dexa_runtime *rt = open_runtime(a, NULL, err, sizeof err);
  CHECK(rt != NULL);
  CHECK_EQ_INT(dexa_runtime_start_session(rt, "s1", NULL, 0, NULL, NULL), DEXA_OK);
  CHECK_EQ_INT(send_text(rt, "s1", "left for a worker", NULL), DEXA_OK);
  dexa_runtime_free(rt);
  CHECK_EQ_INT(remount_read_only(), 0);
  log_box logs;
  memset(&logs, 0, sizeof logs);
  pthread_mutex_init(&logs.mu, NULL);
  rt = open_runtime(a, &logs, err, sizeof err);
  CHECK(rt != NULL);
  CHECK(log_has(&logs, "opened for reading only", store));
  CHECK_EQ_INT(dexa_runtime_start(rt, 1), DEXA_OK);
  int seen = 0;
  for (int waited = 0; waited < 30000 && !seen; waited += 20) {
    seen = log_has(&logs, "cannot claim ready Steps: read-only", store);
    if (!seen) usleep(20000);
  }
  /* Rate-limited: the worker tries every 50 ms, the log hears of it once
   * in the first 10 s. */
  usleep(300 * 1000);
  dexa_runtime_stop(rt);
  pthread_mutex_lock(&logs.mu);
  int count = logs.count;
  if (!seen) fprintf(stderr, "    log:\n%s", logs.text);
  pthread_mutex_unlock(&logs.mu);
  dexa_runtime_free(rt);
  dexa_agent_free(a);
  drop_tmpfs();
  CHECK(seen);
  CHECK(count < 10);
  pthread_mutex_destroy(&logs.mu);
}

int main(void) {
  enter_namespace();
  RUN(test_read_only_store_opens_for_reading_and_names_the_cause);
  drop_tmpfs();
  RUN(test_a_full_disk_is_named_with_the_path);
  drop_tmpfs();
  RUN(test_a_worker_reports_store_errors_through_the_log_callback);
  drop_tmpfs();
  TEST_MAIN_END();
}
