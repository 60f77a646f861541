/* Many processes on one PostgreSQL database (DEXA_TEST_STORE, set by
 * test/pg/suites.sh): three worker processes and this client process, which
 * never starts workers of its own.
 *
 *  - Sessions with parallel tools (a read and a single-attempt write),
 *    approvals, questions and timers run while worker processes are killed
 *    with SIGKILL at random and replaced: every session finishes, every
 *    acknowledged message is in its transcript, no single-attempt write ran
 *    twice (each tool call appends its idempotency key to a file first), the
 *    approved write ran exactly once.
 *  - The server is restarted in the middle of a run (DEXA_TEST_PG_RESTART):
 *    the workers reconnect and finish, none crashes, and the client's calls
 *    during the restart fail with a retryable error or succeed.
 * test-needs: postgresql sqlite */
#include <cjson/cJSON.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dexagents/agent.h"
#include "dexagents/errors.h"
#include "dexagents/model.h"
#include "dexagents/runtime.h"
#include "dexagents/tools.h"
#include "support/temp_store.h"
#include "testing.h"

enum { WORKERS = 3 };

static char dir[256];
static char store[1024];
static pid_t workers[WORKERS];

static void append_line(const char *name, const char *line) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "a");
  if (!f) return;
  fprintf(f, "%s\n", line);
  fclose(f);
}

static int read_tool(void *u, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  append_line("reads", dexa_tool_invocation_idempotency_key(inv));
  return dexa_tool_output_set_text(out, "read ok", 7, 0);
}

static int write_tool(void *u, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  append_line("writes", dexa_tool_invocation_idempotency_key(inv));
  usleep(300 * 1000); /* long enough for a kill to land inside now and then */
  return dexa_tool_output_set_text(out, "written", 7, 0);
}

static int mail_tool(void *u, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  append_line("mails", dexa_tool_invocation_idempotency_key(inv));
  return dexa_tool_output_set_text(out, "sent", 4, 0);
}

static dexa_agent *make_agent(void) {
  dexa_model *m;
  dexa_model_demo_new(&m, "mock/dex");
  dexa_tool_source *tools;
  dexa_function_tools_new(&tools, "fns");
  dexa_function_tools_add(tools, "read_it", "", NULL, DEXA_TOOL_READ, DEXA_APPROVAL_NONE, read_tool, NULL);
  dexa_function_tools_add(tools, "write_it", "", NULL, DEXA_TOOL_WRITE, DEXA_APPROVAL_NONE, write_tool, NULL);
  dexa_function_tools_add(tools, "send_mail", "", NULL, DEXA_TOOL_WRITE, DEXA_APPROVAL_REQUIRED,
                          mail_tool, NULL);
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.models = &m;
  def.model_count = 1;
  def.tool_sources = &tools;
  def.tool_source_count = 1;
  def.builtin_tools = DEXA_BUILTIN_ALL;
  dexa_agent *a = NULL;
  dexa_agent_new(&a, &def, NULL, 0);
  dexa_model_free(m);
  dexa_tool_source_free(tools);
  return a;
}

static dexa_runtime *open_runtime(dexa_agent *a, const char *worker_id) {
  dexa_runtime_options o;
  dexa_runtime_options_init(&o, sizeof o);
  o.store = store;
  o.lease_ms = 800;
  o.worker_id = worker_id;
  dexa_runtime *rt = NULL;
  char err[512];
  if (dexa_runtime_new(&rt, a, &o, err, sizeof err) != DEXA_OK) fprintf(stderr, "    runtime: %s\n", err);
  return rt;
}

/* ---- the worker processes (this program run as "worker STORE DIR N") ---- */

static int worker_main(int n) {
  char id[64];
  snprintf(id, sizeof id, "worker-%d-%ld", n, (long)getpid());
  dexa_agent *a = make_agent();
  dexa_runtime *rt = open_runtime(a, id);
  if (!rt) return 3;
  if (dexa_runtime_start(rt, 2) != DEXA_OK) return 4;
  for (;;) pause();
}

static pid_t spawn_worker(int n) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid != 0) return pid;
  char num[16];
  snprintf(num, sizeof num, "%d", n);
  execl("/proc/self/exe", "test_pg_processes", "worker", store, dir, num, (char *)NULL);
  _exit(127);
}

static void kill_worker(int i) {
  if (workers[i] <= 0) return;
  kill(workers[i], SIGKILL);
  waitpid(workers[i], NULL, 0);
  workers[i] = 0;
}

static void stop_workers(void) {
  for (int i = 0; i < WORKERS; i++) kill_worker(i);
}

/* 1 when every worker process is still running (none crashed). */
static int workers_alive(void) {
  for (int i = 0; i < WORKERS; i++) {
    int st;
    if (workers[i] <= 0 || waitpid(workers[i], &st, WNOHANG) != 0) return 0;
  }
  return 1;
}

/* ---- the client ---- */

static int call(dexa_runtime *rt, const char *sid, const char *rpc, const char *input, char **out) {
  char *o = NULL;
  size_t n;
  int rc = dexa_runtime_call(rt, sid, rpc, input, strlen(input), &o, &n);
  if (out)
    *out = o;
  else
    dexa_free(o);
  return rc;
}

/* A retryable error (the store was briefly unreachable) is tried again;
 * other errors are returned. */
static int call_retrying(dexa_runtime *rt, const char *sid, const char *rpc, const char *input) {
  int rc = DEXA_OK;
  for (int i = 0; i < 600; i++) {
    rc = call(rt, sid, rpc, input, NULL);
    if (rc != DEXA_E_BUSY && rc != DEXA_E_IO) return rc;
    usleep(100 * 1000);
  }
  return rc;
}

static int send_text(dexa_runtime *rt, const char *sid, const char *text) {
  cJSON *in = cJSON_CreateObject();
  cJSON_AddStringToObject(in, "text", text);
  char *json = cJSON_PrintUnformatted(in);
  int rc = call_retrying(rt, sid, "send_message", json);
  free(json);
  cJSON_Delete(in);
  return rc;
}

static int snapshot_has(dexa_runtime *rt, const char *sid, const char *needle) {
  char *s = NULL;
  call(rt, sid, "snapshot", "{}", &s);
  int found = s && strstr(s, needle);
  dexa_free(s);
  return found;
}

static int wait_snapshot(dexa_runtime *rt, const char *sid, const char *needle, int ms) {
  for (int waited = 0; waited <= ms; waited += 50) {
    if (snapshot_has(rt, sid, needle)) return 1;
    usleep(50000);
  }
  fprintf(stderr, "    %s: no \"%s\" after %d ms\n", sid, needle, ms);
  return 0;
}

/* Lines of a counter file, and whether any line repeats. */
static int count_lines(const char *name, int *dups) {
  char path[512], line[256], seen[512][64];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "r");
  int n = 0;
  *dups = 0;
  if (!f) return 0;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    for (int i = 0; i < n && i < 512; i++) *dups += strcmp(seen[i], line) == 0;
    if (n < 512) snprintf(seen[n], sizeof seen[n], "%.63s", line);
    n++;
  }
  fclose(f);
  return n;
}

static void fresh(const char *name) {
  snprintf(dir, sizeof dir, "%s/dexa-pgproc-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(dir)) dir[0] = '\0';
  temp_store_path(store, sizeof store, name);
}

static void cleanup(void) {
  stop_workers();
  temp_store_remove(store);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "    cleanup failed\n");
}

enum { SESSIONS = 8 };

/* Starts the sessions of a run: parallel tools (two turns each),
 * approvals, questions and timers, two of each. */
static int start_sessions(dexa_runtime *rt) {
  char sid[32], text[200];
  for (int i = 0; i < SESSIONS; i++) {
    snprintf(sid, sizeof sid, "s%d", i);
    if (dexa_runtime_start_session(rt, sid, NULL, 0, NULL, NULL) != DEXA_OK) return 0;
    switch (i % 4) {
    case 0:
      snprintf(text, sizeof text, "/tool read_it {\"n\":%d}\n/tool write_it {\"n\":%d}", i, i);
      break;
    case 1:
      snprintf(text, sizeof text, "/tool send_mail {\"to\":\"ops%d\"}", i);
      break;
    case 2:
      snprintf(text, sizeof text, "/ask Which colour for %d?", i);
      break;
    default:
      snprintf(text, sizeof text, "/wait 1 timer %d", i);
    }
    if (send_text(rt, sid, text) != DEXA_OK) return 0;
  }
  return 1;
}

/* Answers the approvals and questions once they wait, sends the second
 * turns, and checks every session ends as it should. */
static int finish_sessions(dexa_runtime *rt, int ms) {
  char sid[32], text[200];
  int ok = 1;
  for (int i = 0; i < SESSIONS && ok; i++) {
    snprintf(sid, sizeof sid, "s%d", i);
    switch (i % 4) {
    case 0:
      ok = wait_snapshot(rt, sid, "Tool write_it (", ms);
      snprintf(text, sizeof text, "/tool write_it {\"again\":%d}", i);
      ok = ok && send_text(rt, sid, text) == DEXA_OK;
      ok = ok && wait_snapshot(rt, sid, "\"turn\":{\"turn\":2,\"status\":\"idle\"", ms);
      break;
    case 1:
      ok = wait_snapshot(rt, sid, "\"kind\":\"approval\"", ms) &&
           call_retrying(rt, sid, "resolve_approval",
                         "{\"call_id\":\"demo-t1r1c1\",\"decision\":\"approve\"}") == DEXA_OK &&
           wait_snapshot(rt, sid, "Tool send_mail (", ms);
      break;
    case 2:
      ok = wait_snapshot(rt, sid, "\"kind\":\"question\"", ms) &&
           call_retrying(rt, sid, "answer_question",
                         "{\"call_id\":\"demo-t1r1c1\",\"answer\":\"teal\"}") == DEXA_OK &&
           wait_snapshot(rt, sid, "Tool ask_user (ok): teal", ms);
      break;
    default:
      ok = wait_snapshot(rt, sid, "Waited 1 seconds.", ms);
    }
  }
  return ok;
}

static int kills_done;

/* Kills a random worker every 300 to 900 ms for `ms`, replacing it. */
static void kill_randomly(int ms) {
  for (int waited = 0; waited < ms;) {
    int pause_ms = 300 + rand() % 600;
    usleep((useconds_t)pause_ms * 1000);
    waited += pause_ms;
    int i = rand() % WORKERS;
    kill_worker(i);
    workers[i] = spawn_worker(i);
    kills_done++;
  }
}

static void test_workers_killed_at_random_lose_nothing_and_write_once(void) {
  fresh("kills");
  dexa_agent *a = make_agent();
  dexa_runtime *rt = open_runtime(a, "client"); /* client only: never started */
  CHECK(rt != NULL);
  for (int i = 0; i < WORKERS; i++) workers[i] = spawn_worker(i);
  int started = start_sessions(rt);
  kill_randomly(4000);
  int finished = started && finish_sessions(rt, 60000);
  int dups = 0, mail_dups = 0;
  int writes = count_lines("writes", &dups);
  int mails = count_lines("mails", &mail_dups);
  /* Every acknowledged message is in its transcript. */
  int kept = 1;
  for (int i = 0; i < SESSIONS; i += 4) {
    char sid[32], text[64];
    snprintf(sid, sizeof sid, "s%d", i);
    snprintf(text, sizeof text, "write_it {\\\"again\\\":%d}", i);
    kept = kept && snapshot_has(rt, sid, text);
  }
  dexa_runtime_free(rt);
  dexa_agent_free(a);
  cleanup();
  CHECK(started);
  CHECK(finished);
  CHECK(kept);
  CHECK(kills_done >= 3);
  CHECK_EQ_INT(dups, 0);       /* no single-attempt write ran twice */
  CHECK(writes <= 2 * (SESSIONS / 4));
  CHECK_EQ_INT(mail_dups, 0);
  CHECK_EQ_INT(mails, SESSIONS / 4); /* each approved mail sent exactly once */
}

static void test_server_restart_mid_run(void) {
  const char *restart = getenv("DEXA_TEST_PG_RESTART");
  if (!restart) {
    if (getenv("CI")) CHECK(!"DEXA_TEST_PG_RESTART is not set (run through test/pg/suites.sh)");
    SKIP("DEXA_TEST_PG_RESTART is not set");
  }
  fresh("restart");
  dexa_agent *a = make_agent();
  dexa_runtime *rt = open_runtime(a, "client");
  CHECK(rt != NULL);
  for (int i = 0; i < WORKERS; i++) workers[i] = spawn_worker(i);
  int started = start_sessions(rt);
  usleep(300 * 1000);
  int restarted = system(restart) == 0;
  /* A call made right after: succeeds, or fails with a retryable error. */
  char *out = NULL;
  int rc = call(rt, "s0", "snapshot", "{}", &out);
  dexa_free(out);
  int retryable = rc == DEXA_OK || rc == DEXA_E_BUSY || rc == DEXA_E_IO;
  int finished = started && finish_sessions(rt, 60000);
  int alive = workers_alive();
  int dups = 0, mail_dups = 0;
  count_lines("writes", &dups);
  int mails = count_lines("mails", &mail_dups);
  dexa_runtime_free(rt);
  dexa_agent_free(a);
  cleanup();
  CHECK(started);
  CHECK(restarted);
  CHECK(retryable);
  CHECK(finished);
  CHECK(alive);
  CHECK_EQ_INT(dups, 0);
  CHECK_EQ_INT(mails, SESSIONS / 4);
}

int main(int argc, char **argv) {
  if (argc == 5 && strcmp(argv[1], "worker") == 0) {
    snprintf(store, sizeof store, "%s", argv[2]);
    snprintf(dir, sizeof dir, "%s", argv[3]);
    return worker_main(atoi(argv[4]));
  }
  if (!temp_store_is_pg()) {
    fprintf(stderr, "    DEXA_TEST_STORE must name a PostgreSQL database (test/pg/suites.sh)\n");
    printf("0 passed, %d failed\n", getenv("CI") ? 1 : 0);
    return getenv("CI") ? 1 : 0;
  }
  srand((unsigned)time(NULL));
  atexit(stop_workers);
  RUN(test_workers_killed_at_random_lose_nothing_and_write_once);
  RUN(test_server_restart_mid_run);
  TEST_MAIN_END();
}
