/* Harness sessions survive kill -9 of the worker process (real processes,
 * one SQLite file), with the toy framework of test/support/toyfw.c keeping
 * its own message list in the session's state. Each tool counts its calls
 * in a file, so the counts are the tool's own:
 *   (a) killed inside a single-attempt write whose sibling read already
 *       finished: on a new process the read does not run
 *       again, the write is recorded as an unknown outcome (read 1, write 1)
 *       and the framework answers from the state it kept (5 messages);
 *   (b) killed while a write waits for approval: on a new process the
 *       approval runs it once and the framework finishes the turn;
 *   (c) killed inside a segment, during a read run inside it: the segment
 *       reruns whole on a new process (the read runs again: at least once),
 *       and only the committed attempt's read is recorded;
 *   (d) killed in the segment after a write's own Step committed: the
 *       segment reruns on a new process with the recorded result, and the
 *       write does not run again.
 * test-needs: sqlite */
#include <cjson/cJSON.h>
#include <dexagents/dexagents.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/toyfw.h"
#include "testing.h"

static char dir[256];

static void path_in_dir(char *out, size_t n, const char *name) {
  snprintf(out, n, "%s/%s", dir, name);
}

static int count_lines(const char *name) {
  char path[512];
  path_in_dir(path, sizeof path, name);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  int n = 0, ch;
  while ((ch = fgetc(f)) != EOF) n += ch == '\n';
  fclose(f);
  return n;
}

static void append_line(const char *name, const char *line) {
  char path[512];
  path_in_dir(path, sizeof path, name);
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

/* The first call outlasts any test (it is killed inside); a rerun is quick. */
static int read_slow(void *u, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  append_line("slow_reads", dexa_tool_invocation_idempotency_key(inv));
  if (count_lines("slow_reads") == 1) sleep(60);
  return dexa_tool_output_set_text(out, "slow read ok", 12, 0);
}

/* Outlasts any test: the worker is killed inside it. */
static int write_slow(void *u, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  append_line("writes", dexa_tool_invocation_idempotency_key(inv));
  sleep(60);
  return dexa_tool_output_set_text(out, "written", 7, 0);
}

static int send_mail(void *u, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  append_line("mails", dexa_tool_invocation_idempotency_key(inv));
  return dexa_tool_output_set_text(out, "sent", 4, 0);
}

static void lingers(void *ctx) { append_line("lingers", "segment"); }

/* The worker that is killed lingers where a script says so; a restarted
 * one does not. */
static dexa_agent *make_agent_for(int killed) {
  dexa_model *m;
  toyfw_options o = {DEXA_HARNESS_OWNS_TRANSCRIPT | DEXA_HARNESS_RUNS_READS,
                     0,
                     0,
                     NULL,
                     NULL,
                     killed ? lingers : NULL};
  toyfw_new(&m, "toy/fw", &o, NULL);
  dexa_tool_source *tools;
  dexa_function_tools_new(&tools, "fns");
  dexa_function_tools_add(tools, "read_fast", "", NULL, DEXA_TOOL_READ, DEXA_APPROVAL_NONE,
                          read_fast, NULL);
  dexa_function_tools_add(tools, "read_slow", "", NULL, DEXA_TOOL_READ, DEXA_APPROVAL_NONE,
                          read_slow, NULL);
  dexa_function_tools_add(tools, "write_slow", "", NULL, DEXA_TOOL_WRITE, DEXA_APPROVAL_NONE,
                          write_slow, NULL);
  dexa_function_tools_add(tools, "send_mail", "", NULL, DEXA_TOOL_WRITE, DEXA_APPROVAL_NONE,
                          send_mail, NULL);
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

static dexa_agent *make_agent(void) { return make_agent_for(0); }

static dexa_runtime *open_runtime(dexa_agent *a) {
  dexa_runtime_options o;
  dexa_runtime_options_init(&o, sizeof o);
  char store[512];
  path_in_dir(store, sizeof store, "agent.db");
  o.store = store;
  o.lease_ms = 600;
  dexa_runtime *rt = NULL;
  char err[256];
  if (dexa_runtime_new(&rt, a, &o, err, sizeof err) != DEXA_OK)
    fprintf(stderr, "runtime: %s\n", err);
  return rt;
}

static int call(dexa_runtime *rt, const char *session, const char *rpc, const char *input) {
  char *o = NULL;
  size_t n;
  int rc = dexa_runtime_call(rt, session, rpc, input, strlen(input), &o, &n);
  dexa_free(o);
  return rc;
}

static void send_text(dexa_runtime *rt, const char *session, const char *text) {
  cJSON *in = cJSON_CreateObject();
  cJSON_AddStringToObject(in, "text", text);
  char *json = cJSON_PrintUnformatted(in);
  call(rt, session, "send_message", json);
  free(json);
  cJSON_Delete(in);
}

static char *snapshot(dexa_runtime *rt, const char *session) {
  char *s = NULL;
  size_t n;
  dexa_runtime_call(rt, session, "snapshot", "{}", 2, &s, &n);
  return s;
}

/* Polls the snapshot until it contains needle: 1 when found in time. */
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

static int wait_lines(const char *name, int n, int ms) {
  for (int waited = 0; waited <= ms; waited += 10) {
    if (count_lines(name) >= n) return 1;
    usleep(10000);
  }
  return 0;
}

/* The number of durable events of the session with this type. */
static int count_events(dexa_runtime *rt, const char *session, const char *type) {
  char *out = NULL;
  size_t n;
  if (dexa_runtime_read_events(rt, session, NULL, 1000, 0, &out, &n) != DEXA_OK) return -1;
  char needle[96];
  snprintf(needle, sizeof needle, "\"type\":\"%s\"", type);
  int k = 0;
  for (const char *p = out; (p = strstr(p, needle)); p++) k++;
  dexa_free(out);
  return k;
}

/* ---- worker processes ---- */

typedef void (*child_setup)(dexa_runtime *rt);

static pid_t g_worker; /* reaped at exit even when a test fails early */

static void kill_worker(void);

static pid_t spawn_worker(child_setup setup) {
  kill_worker(); /* the worker of a test whose check failed before it killed it */
  fflush(NULL);
  pid_t pid = fork();
  if (pid != 0) return g_worker = pid;
  dexa_agent *a = make_agent_for(1);
  dexa_runtime *rt = open_runtime(a);
  if (!rt) _exit(3);
  if (setup) setup(rt);
  dexa_runtime_start(rt, 2);
  for (;;) pause();
}

static void kill_worker(void) {
  if (g_worker <= 0) return;
  kill(g_worker, SIGKILL);
  int st;
  waitpid(g_worker, &st, 0);
  g_worker = 0;
}

static void fresh_dir(void) {
  snprintf(dir, sizeof dir, "/tmp/dexa-harness-crash-XXXXXX");
  if (!mkdtemp(dir)) dir[0] = '\0';
}

static void cleanup_dir(void) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "cleanup failed\n");
}

/* A second process on the same store: a runtime with two workers. */
typedef struct restarted {
  dexa_agent *agent;
  dexa_runtime *rt;
} restarted;

static restarted restart(void) {
  restarted r = {make_agent(), NULL};
  r.rt = open_runtime(r.agent);
  if (r.rt) dexa_runtime_start(r.rt, 2);
  return r;
}

static void stop(restarted *r) {
  dexa_runtime_free(r->rt);
  dexa_agent_free(r->agent);
}

/* ---- (a) ---- */

static void setup_write(dexa_runtime *rt) {
  dexa_runtime_start_session(rt, "s-write", NULL, 0, NULL, NULL);
  send_text(rt, "s-write", "call read_fast {}\ncall write_slow {\"x\":1}");
}

static void test_kill_after_one_of_two_tools_finished(void) {
  fresh_dir();
  spawn_worker(setup_write);
  dexa_agent *a = make_agent();
  dexa_runtime *probe = open_runtime(a); /* reads only, while the child works */
  CHECK(probe != NULL);
  /* the read's result is committed and the write is running */
  int read_done =
      wait_snapshot(probe, "s-write", "\"name\":\"read_fast\",\"status\":\"ok\"", 20000);
  dexa_runtime_free(probe);
  dexa_agent_free(a);
  CHECK(read_done);
  CHECK(wait_lines("writes", 1, 20000));
  kill_worker(); /* inside the write */
  restarted r = restart();
  CHECK(r.rt != NULL);
  int answered = wait_snapshot(r.rt, "s-write", "results: ", 30000);
  char *snap = snapshot(r.rt, "s-write");
  stop(&r);
  if (!answered) fprintf(stderr, "snapshot: %s\n", snap ? snap : "(none)");
  CHECK(answered);
  CHECK_CONTAINS(snap, "results: read_fast=ok:read ok | write_slow=unknown_outcome:");
  CHECK_CONTAINS(snap, "[5 messages]"); /* its own list came back from the store */
  dexa_free(snap);
  CHECK_EQ_INT(count_lines("reads"), 1);
  CHECK_EQ_INT(count_lines("writes"), 1);
  cleanup_dir();
}

/* ---- (b) ---- */

static void setup_approval(dexa_runtime *rt) {
  dexa_runtime_start_session(rt, "s-approve", NULL, 0, NULL, NULL);
  send_text(rt, "s-approve", "call send_mail {\"to\":\"ops\"} approval=yes");
}

static void test_kill_while_waiting_for_approval_then_restart(void) {
  fresh_dir();
  spawn_worker(setup_approval);
  dexa_agent *a = make_agent();
  dexa_runtime *probe = open_runtime(a); /* reads only, while the child works */
  CHECK(probe != NULL);
  int waiting = wait_snapshot(probe, "s-approve", "\"kind\":\"approval\"", 20000);
  dexa_runtime_free(probe);
  dexa_agent_free(a);
  kill_worker();
  CHECK(waiting);
  restarted r = restart();
  CHECK(r.rt != NULL);
  CHECK_EQ_INT(call(r.rt, "s-approve", "resolve_approval",
                    "{\"call_id\":\"toy-t1-r1-c1\",\"decision\":\"approve\"}"),
               DEXA_OK);
  int answered = wait_snapshot(r.rt, "s-approve", "results: send_mail=ok:sent [4 messages]", 30000);
  stop(&r);
  CHECK(answered);
  CHECK_EQ_INT(count_lines("mails"), 1);
  cleanup_dir();
}

/* ---- (c) ---- */

static void setup_inner(dexa_runtime *rt) {
  dexa_runtime_start_session(rt, "s-inner", NULL, 0, NULL, NULL);
  send_text(rt, "s-inner", "inner read_slow {}");
}

static void test_kill_inside_a_segment_reruns_it_whole(void) {
  fresh_dir();
  spawn_worker(setup_inner);
  CHECK(wait_lines("slow_reads", 1, 20000));
  kill_worker(); /* inside the read, inside the segment */
  restarted r = restart();
  CHECK(r.rt != NULL);
  int answered =
      wait_snapshot(r.rt, "s-inner", "inner: read_slow=ok:slow read ok [2 messages]", 30000);
  int recorded = count_events(r.rt, "s-inner", "segment_tool_call");
  stop(&r);
  CHECK(answered);
  CHECK_EQ_INT(count_lines("slow_reads"), 2); /* at least once: it ran again */
  CHECK_EQ_INT(recorded, 1);                  /* the committed attempt's */
  cleanup_dir();
}

/* ---- (d) ---- */

static void setup_after_write(dexa_runtime *rt) {
  dexa_runtime_start_session(rt, "s-after", NULL, 0, NULL, NULL);
  send_text(rt, "s-after", "call send_mail {\"to\":\"ops\"}\nlinger 60000");
}

static void test_kill_after_the_write_step_never_repeats_it(void) {
  fresh_dir();
  spawn_worker(setup_after_write);
  /* the next segment lingers: the write's result is committed before it */
  CHECK(wait_lines("lingers", 1, 20000));
  kill_worker();
  CHECK_EQ_INT(count_lines("mails"), 1);
  restarted r = restart();
  CHECK(r.rt != NULL);
  int answered = wait_snapshot(r.rt, "s-after", "results: send_mail=ok:sent [4 messages]", 30000);
  stop(&r);
  CHECK(answered);
  CHECK_EQ_INT(count_lines("mails"), 1);
  cleanup_dir();
}

int main(void) {
  atexit(kill_worker);
  RUN(test_kill_after_one_of_two_tools_finished);
  kill_worker();
  RUN(test_kill_while_waiting_for_approval_then_restart);
  kill_worker();
  RUN(test_kill_inside_a_segment_reruns_it_whole);
  kill_worker();
  RUN(test_kill_after_the_write_step_never_repeats_it);
  kill_worker();
  TEST_MAIN_END();
}
