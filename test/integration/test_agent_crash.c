/* Agent sessions survive kill -9 of the worker process (real processes, one
 * SQLite file). Each tool counts its calls in a file, so the counts are the
 * tool's own, not the library's:
 *   (a)+(d) killed one second into a 2-second single-attempt write whose
 *           sibling read already finished: after restart the read is not run
 *           again and the write is recorded as unknown outcome (read 1,
 *           write 1), and the turn ends with an answer;
 *   (b)     killed while waiting for an approval, an answer and a timer:
 *           each still waits after restart and completes normally;
 *   (c)     killed during compaction: no message is lost and the summary
 *           covers exactly the range it says.
 * test-needs: sqlite postgresql */
#include <cjson/cJSON.h>
#include <dexagents/dexagents.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "support/temp_store.h"
#include "testing.h"

static char dir[256];
static char store[1024]; /* a SQLite file, or a PostgreSQL schema (temp_store.h) */

static char *path_of(const char *name) {
  static char buf[4][512];
  static int i;
  char *p = buf[i++ % 4];
  snprintf(p, 512, "%s/%s", dir, name);
  return p;
}

static int count_lines(const char *name) {
  FILE *f = fopen(path_of(name), "r");
  if (!f) return 0;
  int n = 0, ch;
  while ((ch = fgetc(f)) != EOF) n += ch == '\n';
  fclose(f);
  return n;
}

/* Called by tools on worker threads at once: its own path buffer, not
 * path_of's rotating ones. */
static void append_line(const char *name, const char *line) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "a");
  if (!f) return;
  fprintf(f, "%s\n", line);
  fclose(f);
}

/* ---- tools: each call appends to its own counter file first ---- */

static int read_fast(void *u, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  append_line("reads", dexa_tool_invocation_idempotency_key(inv));
  return dexa_tool_output_set_text(out, "read ok", 7, 0);
}

static int write_slow(void *u, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  append_line("writes", dexa_tool_invocation_idempotency_key(inv));
  sleep(2);
  return dexa_tool_output_set_text(out, "written", 7, 0);
}

static int write_approved(void *u, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  append_line("approved_writes", dexa_tool_invocation_idempotency_key(inv));
  return dexa_tool_output_set_text(out, "sent", 4, 0);
}

/* A model for (c): echoes, and summarizes slowly so a kill lands inside. */
static int slow_summary_generate(void *u, const dexa_model_request *req, dexa_model_reply *reply) {
  const char *json;
  size_t len;
  dexa_model_request_json(req, &json, &len);
  int compaction = strstr(json, "\"purpose\":\"compaction\"") != NULL;
  if (compaction) {
    append_line("compactions", "start");
    sleep(2);
  }
  size_t n = dexa_model_request_message_count(req);
  char text[200];
  snprintf(text, sizeof text, compaction ? "summary of %zu messages" : "echo after %zu messages", n);
  dexa_model_reply_add_item(reply, "{\"type\":\"message\"}", 18);
  return dexa_model_reply_add_text(reply, text, strlen(text));
}

static dexa_agent *make_agent(int slow_summaries) {
  dexa_model *m;
  if (slow_summaries) {
    dexa_model_vtable vt;
    dexa_model_vtable_init(&vt, sizeof vt);
    vt.generate = slow_summary_generate;
    dexa_model_new(&m, "test/slow-summary", &vt, NULL);
  } else {
    dexa_model_demo_new(&m, "mock/dex");
  }
  dexa_tool_source *tools;
  dexa_function_tools_new(&tools, "fns");
  dexa_function_tools_add(tools, "read_fast", "", NULL, DEXA_TOOL_READ, DEXA_APPROVAL_NONE, read_fast, NULL);
  dexa_function_tools_add(tools, "write_slow", "", NULL, DEXA_TOOL_WRITE, DEXA_APPROVAL_NONE, write_slow, NULL);
  dexa_function_tools_add(tools, "send_mail", "", NULL, DEXA_TOOL_WRITE, DEXA_APPROVAL_REQUIRED,
                          write_approved, NULL);
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.models = &m;
  def.model_count = 1;
  def.tool_sources = &tools;
  def.tool_source_count = 1;
  def.builtin_tools = DEXA_BUILTIN_ALL;
  if (slow_summaries) {
    def.context_window_tokens = 600;
    def.keep_full_transcript = 1;
  }
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
  o.lease_ms = 600;
  dexa_runtime *rt = NULL;
  char err[256];
  if (dexa_runtime_new(&rt, a, &o, err, sizeof err) != DEXA_OK) fprintf(stderr, "runtime: %s\n", err);
  return rt;
}

static int call(dexa_runtime *rt, const char *session, const char *rpc, const char *input, char **out) {
  char *o = NULL;
  size_t n;
  int rc = dexa_runtime_call(rt, session, rpc, input, strlen(input), &o, &n);
  if (out) *out = o;
  else dexa_free(o);
  return rc;
}

static int send_text(dexa_runtime *rt, const char *session, const char *text) {
  cJSON *in = cJSON_CreateObject();
  cJSON_AddStringToObject(in, "text", text);
  char *json = cJSON_PrintUnformatted(in);
  int rc = call(rt, session, "send_message", json, NULL);
  free(json);
  cJSON_Delete(in);
  return rc;
}

static char *snapshot(dexa_runtime *rt, const char *session) {
  char *s = NULL;
  call(rt, session, "snapshot", "{}", &s);
  return s;
}

/* Polls the snapshot until it contains needle (or timeout): 1 when found. */
static int wait_snapshot(dexa_runtime *rt, const char *session, const char *needle, int ms) {
  for (int waited = 0; waited <= ms; waited += 50) {
    char *s = snapshot(rt, session);
    int found = s && strstr(s, needle);
    dexa_free(s);
    if (found) return 1;
    usleep(50000);
  }
  return 0;
}

/* A child process: opens the runtime, runs `setup` (start, messages), runs
 * workers until killed. */
typedef void (*child_setup)(dexa_runtime *rt);

/* The worker process of the running test; a test that fails early leaves
 * it to reap_worker, so no child outlives its test. */
static pid_t g_worker;

static void kill_worker(pid_t pid);

static pid_t spawn_worker(int slow_summaries, child_setup setup) {
  kill_worker(g_worker); /* the worker of a test whose check failed before it killed it */
  fflush(NULL);
  pid_t pid = fork();
  if (pid != 0) return g_worker = pid;
  dexa_agent *a = make_agent(slow_summaries);
  dexa_runtime *rt = open_runtime(a);
  if (!rt) _exit(3);
  if (setup) setup(rt);
  dexa_runtime_start(rt, 2);
  for (;;) pause();
}

static void kill_worker(pid_t pid) {
  if (pid <= 0) return;
  kill(pid, SIGKILL);
  int st;
  waitpid(pid, &st, 0);
  if (pid == g_worker) g_worker = 0;
}

static void reap_worker(void) { kill_worker(g_worker); }

static int wait_lines(const char *name, int n, int ms) {
  for (int waited = 0; waited <= ms; waited += 10) {
    if (count_lines(name) >= n) return 1;
    usleep(10000);
  }
  return 0;
}

static void fresh_dir(void) {
  snprintf(dir, sizeof dir, "/tmp/dexa-agent-crash-XXXXXX");
  if (!mkdtemp(dir)) dir[0] = '\0';
  temp_store_path(store, sizeof store, "agent");
}

static void cleanup_dir(void) {
  char cmd[600];
  temp_store_remove(store);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "cleanup failed\n");
}

/* ---- (a) + (d) ---- */

static void setup_write(dexa_runtime *rt) {
  dexa_runtime_start_session(rt, "s-write", NULL, 0, NULL, NULL);
  send_text(rt, "s-write", "/tool read_fast {}\n/tool write_slow {\"x\":1}");
}

static void test_kill_during_single_attempt_write_records_unknown_outcome(void) {
  fresh_dir();
  pid_t pid = spawn_worker(0, setup_write);
  CHECK(wait_lines("writes", 1, 10000));
  CHECK(wait_lines("reads", 1, 5000));
  usleep(1000 * 1000); /* one second into the 2-second write */
  kill_worker(pid);
  dexa_agent *a = make_agent(0);
  dexa_runtime *rt = open_runtime(a);
  CHECK(rt != NULL);
  dexa_runtime_start(rt, 2);
  int answered = wait_snapshot(rt, "s-write", "Tool write_slow (unknown_outcome)", 15000);
  char *snap = snapshot(rt, "s-write");
  dexa_runtime_free(rt);
  dexa_agent_free(a);
  if (!answered) fprintf(stderr, "snapshot: %s\n", snap ? snap : "(none)");
  CHECK(answered);
  CHECK_CONTAINS(snap, "\"name\":\"write_slow\",\"status\":\"unknown_outcome\"");
  CHECK_CONTAINS(snap, "\"name\":\"read_fast\",\"status\":\"ok\"");
  dexa_free(snap);
  CHECK_EQ_INT(count_lines("reads"), 1);
  CHECK_EQ_INT(count_lines("writes"), 1);
  cleanup_dir();
}

/* ---- (b) ---- */

static void setup_waits(dexa_runtime *rt) {
  dexa_runtime_start_session(rt, "s-approve", NULL, 0, NULL, NULL);
  dexa_runtime_start_session(rt, "s-ask", NULL, 0, NULL, NULL);
  dexa_runtime_start_session(rt, "s-wait", NULL, 0, NULL, NULL);
  send_text(rt, "s-approve", "/tool send_mail {\"to\":\"ops\"}");
  send_text(rt, "s-ask", "/ask Which colour?");
  send_text(rt, "s-wait", "/wait 3 restart test");
}

static void test_waits_survive_kill_and_complete(void) {
  fresh_dir();
  pid_t pid = spawn_worker(0, setup_waits);
  dexa_agent *a = make_agent(0);
  dexa_runtime *probe = open_runtime(a); /* read-only use while the child works */
  CHECK(probe != NULL);
  int waiting = wait_snapshot(probe, "s-approve", "\"kind\":\"approval\"", 10000) &&
                wait_snapshot(probe, "s-ask", "\"kind\":\"question\"", 10000) &&
                wait_snapshot(probe, "s-wait", "\"kind\":\"timer\"", 10000);
  dexa_runtime_free(probe);
  kill_worker(pid);
  CHECK(waiting);
  dexa_runtime *rt = open_runtime(a);
  dexa_runtime_start(rt, 2);
  CHECK(wait_snapshot(rt, "s-approve", "\"kind\":\"approval\"", 1000));
  CHECK_EQ_INT(call(rt, "s-approve", "resolve_approval",
                    "{\"call_id\":\"demo-t1r1c1\",\"decision\":\"approve\"}", NULL), DEXA_OK);
  CHECK_EQ_INT(call(rt, "s-ask", "answer_question", "{\"call_id\":\"demo-t1r1c1\",\"answer\":\"teal\"}", NULL),
               DEXA_OK);
  CHECK(wait_snapshot(rt, "s-approve", "Tool send_mail (ok): sent", 10000));
  CHECK(wait_snapshot(rt, "s-ask", "Tool ask_user (ok): teal", 10000));
  CHECK(wait_snapshot(rt, "s-wait", "Waited 3 seconds.", 15000));
  dexa_runtime_free(rt);
  dexa_agent_free(a);
  CHECK_EQ_INT(count_lines("approved_writes"), 1);
  cleanup_dir();
}

/* ---- (c) ---- */

static void setup_compaction(dexa_runtime *rt) {
  dexa_runtime_start_session(rt, "s-compact", NULL, 0, NULL, NULL);
  char text[600];
  for (int i = 0; i < 8; i++) {
    snprintf(text, sizeof text, "message %d %0300d", i, i);
    send_text(rt, "s-compact", text);
  }
}

/* Every message 1..last is present exactly once, across chunks and recent
 * messages, paging back from the newest. */
static int all_messages_present(dexa_runtime *rt, int *last_out) {
  char *snap = snapshot(rt, "s-compact");
  cJSON *s = cJSON_Parse(snap);
  dexa_free(snap);
  int last = cJSON_GetObjectItem(cJSON_GetObjectItem(s, "transcript"), "next_seq")->valueint - 1;
  cJSON_Delete(s);
  *last_out = last;
  char input[80];
  snprintf(input, sizeof input, "{\"before_seq\":%d,\"limit\":200}", last + 1);
  char *page = NULL;
  call(rt, "s-compact", "list_agent_messages", input, &page);
  cJSON *p = cJSON_Parse(page);
  dexa_free(page);
  const cJSON *msgs = cJSON_GetObjectItem(p, "messages");
  int ok = cJSON_GetArraySize(msgs) == last;
  for (int i = 0; ok && i < last; i++)
    ok = cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, i), "seq")->valueint == i + 1;
  cJSON_Delete(p);
  return ok;
}

static void test_kill_during_compaction_loses_nothing(void) {
  fresh_dir();
  pid_t pid = spawn_worker(1, setup_compaction);
  CHECK(wait_lines("compactions", 1, 20000));
  usleep(500 * 1000);
  kill_worker(pid);
  dexa_agent *a = make_agent(1);
  dexa_runtime *rt = open_runtime(a);
  dexa_runtime_start(rt, 2);
  int done = wait_snapshot(rt, "s-compact", "message 7 ", 30000) &&
             wait_snapshot(rt, "s-compact", "\"turn\":{\"turn\":8,\"status\":\"idle\"", 30000);
  CHECK(done);
  int last = 0;
  CHECK(all_messages_present(rt, &last));
  CHECK_EQ_INT(last, 16);
  char *snap = snapshot(rt, "s-compact");
  cJSON *s = cJSON_Parse(snap);
  dexa_free(snap);
  const cJSON *sum = cJSON_GetObjectItem(s, "summary");
  CHECK(cJSON_IsObject(sum));
  int through = cJSON_GetObjectItem(sum, "through_seq")->valueint;
  const cJSON *msgs = cJSON_GetObjectItem(s, "messages");
  int first_recent = cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, 0), "seq")->valueint;
  cJSON_Delete(s);
  /* the snapshot's messages start right after the range the summary covers */
  CHECK_EQ_INT(first_recent, through + 1);
  dexa_runtime_free(rt);
  dexa_agent_free(a);
  CHECK(count_lines("compactions") >= 2); /* the killed attempt ran again */
  cleanup_dir();
}

int main(void) {
  atexit(reap_worker);
  RUN(test_kill_during_single_attempt_write_records_unknown_outcome);
  reap_worker();
  RUN(test_waits_survive_kill_and_complete);
  reap_worker();
  RUN(test_kill_during_compaction_loses_nothing);
  reap_worker();
  TEST_MAIN_END();
}
