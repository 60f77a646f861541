/* Lost workers are not failed attempts: worker processes are killed with
 * SIGKILL during one call, again and again, and a new process takes the
 * Step each time (one store: SQLite, or PostgreSQL under test/pg/suites.sh).
 *   - three kills during one model call (RunModel: 3 attempts): the turn
 *     still ends with the model's answer;
 *   - five kills during a read tool call (CallTool: 5 attempts): the tool's
 *     result is its own, not an error;
 *   - past the bound (DEXA__MAX_LOST_WORKERS, 10), the turn fails with
 *     "worker lost 11 times".
 * Every kill waits for the call to say it started (a line in a file, written
 * by the call itself before it blocks), never for a time; every child is
 * reaped, also when a check fails.
 * test-needs: sqlite */
#include <cjson/cJSON.h>
#include <dexagents/dexagents.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/temp_store.h"
#include "testing.h"

static char dir[256];
static char store[1024];
/* How many calls hang (to be killed) before one answers; fork copies it. */
static int g_hang_calls;

static void counter_path(char *buf, size_t n, const char *name) {
  snprintf(buf, n, "%s/%s", dir, name);
}

static int count_lines(const char *name) {
  char path[512];
  counter_path(path, sizeof path, name);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  int n = 0, ch;
  while ((ch = fgetc(f)) != EOF) n += ch == '\n';
  fclose(f);
  return n;
}

/* Appends a line and returns how many the file has now. */
static int append_line(const char *name) {
  char path[512];
  counter_path(path, sizeof path, name);
  FILE *f = fopen(path, "a");
  if (!f) return 0;
  fputs("start\n", f);
  fclose(f);
  return count_lines(name);
}

/* The first g_hang_calls calls block until their process is killed. */
static void maybe_hang(const char *name) {
  if (append_line(name) <= g_hang_calls)
    for (;;) pause();
}

static int slow_generate(void *u, const dexa_model_request *req, dexa_model_reply *reply) {
  maybe_hang("model_calls");
  dexa_model_reply_add_item(reply, "{\"type\":\"message\"}", 18);
  return dexa_model_reply_add_text(reply, "answered after the kills", 24);
}

static int read_hang(void *u, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  maybe_hang("reads");
  return dexa_tool_output_set_text(out, "read ok", 7, 0);
}

/* The test's model hangs; the demo model runs "/tool read_hang {}". */
static int g_demo_model;

static dexa_agent *make_agent(void) {
  dexa_model_vtable vt;
  dexa_model_vtable_init(&vt, sizeof vt);
  vt.generate = slow_generate;
  dexa_model *m = NULL;
  if (g_demo_model)
    dexa_model_demo_new(&m, "mock/dex");
  else
    dexa_model_new(&m, "test/slow", &vt, NULL);
  dexa_tool_source *tools = NULL;
  dexa_function_tools_new(&tools, "fns");
  dexa_function_tools_add(tools, "read_hang", "", NULL, DEXA_TOOL_READ, DEXA_APPROVAL_NONE,
                          read_hang, NULL);
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.models = &m;
  def.model_count = 1;
  def.tool_sources = &tools;
  def.tool_source_count = 1;
  dexa_agent *a = NULL;
  dexa_agent_new(&a, &def, NULL, 0);
  dexa_model_free(m);
  dexa_tool_source_free(tools);
  return a;
}

static dexa_runtime *open_runtime(dexa_agent *a) {
  dexa_runtime_options o;
  dexa_runtime_options_init(&o, sizeof o);
  o.store = store;
  o.lease_ms = 500;
  dexa_runtime *rt = NULL;
  char err[256];
  if (dexa_runtime_new(&rt, a, &o, err, sizeof err) != DEXA_OK) fprintf(stderr, "runtime: %s\n", err);
  return rt;
}

static pid_t g_worker;

static pid_t spawn_worker(void) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid != 0) return g_worker = pid;
  dexa_agent *a = make_agent();
  dexa_runtime *rt = open_runtime(a);
  if (!rt) _exit(3);
  dexa_runtime_start(rt, 2);
  for (;;) pause();
}

static void reap_worker(void) {
  if (g_worker <= 0) return;
  kill(g_worker, SIGKILL);
  int st;
  waitpid(g_worker, &st, 0);
  g_worker = 0;
}

static int wait_lines(const char *name, int n, int ms) {
  for (int waited = 0; waited <= ms; waited += 10) {
    if (count_lines(name) >= n) return 1;
    usleep(10000);
  }
  return 0;
}

static char *snapshot(dexa_runtime *rt, const char *sid) {
  char *s = NULL;
  size_t n = 0;
  dexa_runtime_call(rt, sid, "snapshot", "{}", 2, &s, &n);
  return s;
}

/* Waits for the session to be idle and returns its snapshot. */
static char *idle_snapshot(dexa_runtime *rt, const char *sid) {
  if (dexa_runtime_wait_idle(rt, sid, 60000) != DEXA_OK) return NULL;
  return snapshot(rt, sid);
}

static void fresh(const char *name, int hang_calls) {
  snprintf(dir, sizeof dir, "/tmp/dexa-lost-XXXXXX");
  if (!mkdtemp(dir)) dir[0] = '\0';
  temp_store_path(store, sizeof store, name);
  g_hang_calls = hang_calls;
  g_demo_model = 0;
}

static void cleanup(void) {
  char cmd[600];
  temp_store_remove(store);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "cleanup failed\n");
}

/* Starts the session from the parent, then kills `kills` workers, each once
 * its call has started (the counter file has one more line), and starts one
 * more worker that is left running. Returns 1 when every call started. */
static int kill_during(dexa_runtime *client, const char *sid, const char *text,
                       const char *counter, int kills) {
  if (dexa_runtime_start_session(client, sid, NULL, 0, NULL, NULL) != DEXA_OK) return 0;
  cJSON *in = cJSON_CreateObject();
  cJSON_AddStringToObject(in, "text", text);
  char *json = cJSON_PrintUnformatted(in);
  cJSON_Delete(in);
  char *out = NULL;
  size_t n = 0;
  int rc = dexa_runtime_call(client, sid, "send_message", json, strlen(json), &out, &n);
  free(json);
  dexa_free(out);
  if (rc != DEXA_OK) return 0;
  for (int i = 0; i < kills; i++) {
    spawn_worker();
    int started = wait_lines(counter, i + 1, 60000);
    reap_worker();
    if (!started) {
      fprintf(stderr, "call %d of %s did not start\n", i + 1, counter);
      return 0;
    }
  }
  spawn_worker();
  return 1;
}

static void test_three_kills_during_a_model_call_do_not_fail_the_turn(void) {
  fresh("lost3", 3);
  dexa_agent *a = make_agent();
  dexa_runtime *client = open_runtime(a); /* no workers: RPCs and snapshots */
  CHECK(client != NULL);
  int ok = kill_during(client, "s-model", "hello", "model_calls", 3);
  char *snap = ok ? idle_snapshot(client, "s-model") : NULL;
  reap_worker();
  dexa_runtime_free(client);
  dexa_agent_free(a);
  CHECK(ok);
  CHECK(snap != NULL);
  if (!strstr(snap, "answered after the kills")) fprintf(stderr, "snapshot: %s\n", snap);
  CHECK_CONTAINS(snap, "answered after the kills");
  CHECK(!strstr(snap, "\"status\":\"failed\""));
  dexa_free(snap);
  CHECK_EQ_INT(count_lines("model_calls"), 4);
  cleanup();
}

static void test_five_kills_during_a_read_do_not_make_it_an_error(void) {
  fresh("lost5", 5);
  g_demo_model = 1;
  dexa_agent *a = make_agent();
  dexa_runtime *client = open_runtime(a);
  CHECK(client != NULL);
  int ok = kill_during(client, "s-read", "/tool read_hang {}", "reads", 5);
  char *snap = ok ? idle_snapshot(client, "s-read") : NULL;
  reap_worker();
  dexa_runtime_free(client);
  dexa_agent_free(a);
  CHECK(ok);
  CHECK(snap != NULL);
  if (!strstr(snap, "Tool read_hang (ok): read ok")) fprintf(stderr, "snapshot: %s\n", snap);
  CHECK_CONTAINS(snap, "\"name\":\"read_hang\",\"status\":\"ok\"");
  CHECK_CONTAINS(snap, "Tool read_hang (ok): read ok");
  dexa_free(snap);
  CHECK_EQ_INT(count_lines("reads"), 6);
  cleanup();
}

static void test_past_the_bound_the_turn_fails_with_the_lost_worker_message(void) {
  fresh("lost11", 100);
  dexa_agent *a = make_agent();
  dexa_runtime *client = open_runtime(a);
  CHECK(client != NULL);
  int ok = kill_during(client, "s-bound", "hello", "model_calls", 11);
  char *snap = ok ? idle_snapshot(client, "s-bound") : NULL;
  reap_worker();
  dexa_runtime_free(client);
  dexa_agent_free(a);
  CHECK(ok);
  CHECK(snap != NULL);
  if (!strstr(snap, "worker lost 11 times")) fprintf(stderr, "snapshot: %s\n", snap);
  CHECK_CONTAINS(snap, "\"status\":\"failed\"");
  CHECK_CONTAINS(snap, "worker lost 11 times");
  dexa_free(snap);
  CHECK_EQ_INT(count_lines("model_calls"), 11);
  cleanup();
}

int main(void) {
  atexit(reap_worker);
  RUN(test_three_kills_during_a_model_call_do_not_fail_the_turn);
  reap_worker();
  RUN(test_five_kills_during_a_read_do_not_make_it_an_error);
  reap_worker();
  RUN(test_past_the_bound_the_turn_fails_with_the_lost_worker_message);
  reap_worker();
  TEST_MAIN_END();
}
