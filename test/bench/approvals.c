/* Benchmark W2: resuming sessions that wait for an approval.
 *
 *   approvals [-s SESSIONS] [-w WORKERS] [-y full|normal] [--store PATH]
 *             [--phase prepare|resume]
 *
 * Phase 1 (this process): S sessions each ask for a write tool that needs
 * approval (demo model, "/tool send_mail {...}") and stop in
 * AwaitToolApproval. Phase 2 (a fresh process, exec'd): opens the same
 * store, approves every session (from 8 client threads, as concurrent
 * requests would) and runs each to its final answer
 * (AwaitToolApproval -> CallSingleAttemptTool -> ResumeTurn -> RunModel).
 * Prints the resume loop's seconds, resumes/s, per-resume latency p50/p99
 * (approve call to final answer committed) and the fresh process's
 * spawn-to-exit seconds. For scale: LangGraph.js on SQLite does about 110
 * resumes/s and 1.4 s spawn to exit on this machine.
 *
 * Workers: 8 by default. Each resume runs a single-attempt write tool,
 * whose claim must be durable before the tool starts, and a thread that
 * waits for that sync runs nothing else: with instant tools every worker
 * starts at most one tool per sync, whatever the cores (see "Choosing the
 * number of threads" in dexa_runtime_start(3)). Two threads measure the
 * disk's sync latency more than the library; -w 2 still shows it.
 *
 * With DEXA_TEST_STORE naming a PostgreSQL database the store is a new
 * schema of it (test/pg/_bench.sh starts a throwaway cluster).
 *
 * --phase prepare (with --store) runs phase 1 only and keeps the store, so
 * that phase 2 can be run, copied and profiled on its own with
 * --phase resume. */
#include <dexagents/dexagents.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "support/temp_store.h"

#define MAX_SESSIONS 10000

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int send_mail(void *user, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  return dexa_tool_output_set_text(out, "sent", 4, 0);
}

static dexa_agent *make_agent(void) {
  dexa_model *m = NULL;
  dexa_tool_source *tools = NULL;
  dexa_model_demo_new(&m, "mock/dex");
  dexa_function_tools_new(&tools, "mail");
  dexa_function_tools_add(tools, "send_mail", "Sends mail", NULL, DEXA_TOOL_WRITE,
                          DEXA_APPROVAL_REQUIRED, send_mail, NULL);
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.models = &m;
  def.model_count = 1;
  def.tool_sources = &tools;
  def.tool_source_count = 1;
  dexa_agent *a = NULL;
  char err[256];
  if (dexa_agent_new(&a, &def, err, sizeof err) != DEXA_OK) fprintf(stderr, "agent: %s\n", err);
  dexa_model_free(m);
  dexa_tool_source_free(tools);
  return a;
}

static dexa_runtime *open_runtime(const dexa_agent *a, const char *store, const char *sync) {
  dexa_runtime_options o;
  dexa_runtime_options_init(&o, sizeof o);
  o.store = store;
  o.sqlite_synchronous = sync;
  dexa_runtime *rt = NULL;
  char err[256];
  if (dexa_runtime_new(&rt, a, &o, err, sizeof err) != DEXA_OK) fprintf(stderr, "runtime: %s\n", err);
  return rt;
}

static void session_id(char *out, size_t n, int i) { snprintf(out, n, "w2-%06d", i); }

static int call(dexa_runtime *rt, const char *sid, const char *rpc, const char *input) {
  char *out = NULL;
  size_t n;
  int rc = dexa_runtime_call(rt, sid, rpc, input, strlen(input), &out, &n);
  if (rc != DEXA_OK) fprintf(stderr, "%s %s: %s\n", sid, rpc, out ? out : dexa_strerror(rc));
  dexa_free(out);
  return rc;
}

/* Phase 1: every session stops at its approval. */
static int prepare(const char *store, const char *sync, int sessions, int workers) {
  dexa_agent *a = make_agent();
  dexa_runtime *rt = a ? open_runtime(a, store, sync) : NULL;
  int rc = rt ? DEXA_OK : DEXA_E_IO;
  char sid[32];
  for (int i = 0; i < sessions && rc == DEXA_OK; i++) {
    session_id(sid, sizeof sid, i);
    rc = dexa_runtime_start_session(rt, sid, NULL, 0, NULL, NULL);
    if (rc == DEXA_OK) rc = call(rt, sid, "send_message", "{\"text\":\"/tool send_mail {\\\"to\\\":\\\"ops\\\"}\"}");
  }
  if (rc == DEXA_OK) rc = dexa_runtime_start(rt, workers);
  for (int i = 0; i < sessions && rc == DEXA_OK; i++) {
    session_id(sid, sizeof sid, i);
    rc = dexa_runtime_wait_idle(rt, sid, 60000);
  }
  dexa_runtime_free(rt);
  dexa_agent_free(a);
  return rc;
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

/* Approvals come from several client threads at once, as from a server's
 * concurrent requests, so their commits share group commits. Each client
 * then waits for its sessions to finish, in order, blocking in
 * dexa_runtime_wait_idle (no polling loop competes with the workers for the
 * two cores). A session's latency runs from its approval to the moment its
 * client sees it idle, so a session that finished while its client waited
 * on an earlier one is counted late: the figures err on the slow side. */
#define CLIENTS 8

typedef struct client {
  dexa_runtime *rt;
  double *approved, *latency;
  int index, sessions, rc;
} client;

static void *approve_some(void *arg) {
  client *c = arg;
  char sid[32];
  for (int i = c->index; i < c->sessions && c->rc == DEXA_OK; i += CLIENTS) {
    session_id(sid, sizeof sid, i);
    c->approved[i] = now_s();
    c->rc = call(c->rt, sid, "resolve_approval", "{\"call_id\":\"demo-t1r1c1\",\"decision\":\"approve\"}");
  }
  for (int i = c->index; i < c->sessions && c->rc == DEXA_OK; i += CLIENTS) {
    session_id(sid, sizeof sid, i);
    c->rc = dexa_runtime_wait_idle(c->rt, sid, 60000);
    c->latency[i] = now_s() - c->approved[i];
  }
  return NULL;
}

/* Phase 2, in a fresh process: approve every session, run each to its end. */
static int resume_all(const char *store, const char *sync, int sessions, int workers) {
  dexa_agent *a = make_agent();
  dexa_runtime *rt = a ? open_runtime(a, store, sync) : NULL;
  if (!rt) return 2;
  double *approved = calloc((size_t)sessions, sizeof *approved);
  double *latency = calloc((size_t)sessions, sizeof *latency);
  int rc = dexa_runtime_start(rt, workers);
  double t0 = now_s();
  client clients[CLIENTS];
  pthread_t th[CLIENTS];
  int started = 0;
  for (int i = 0; i < CLIENTS && rc == DEXA_OK; i++, started++) {
    clients[i] = (client){rt, approved, latency, i, sessions, DEXA_OK};
    pthread_create(&th[i], NULL, approve_some, &clients[i]);
  }
  for (int i = 0; i < started; i++) {
    pthread_join(th[i], NULL);
    if (clients[i].rc != DEXA_OK) rc = clients[i].rc;
  }
  double loop = now_s() - t0;
  dexa_runtime_free(rt);
  dexa_agent_free(a);
  qsort(latency, (size_t)sessions, sizeof *latency, cmp_double);
  printf("  resume loop                      %8.3f s\n", loop);
  printf("  resumes                          %8.0f /s      (LangGraph.js + SQLite: ~110 /s; aim >= 1100 /s)\n",
         sessions / loop);
  printf("  per-resume latency p50           %8.1f ms\n", latency[sessions / 2] * 1000);
  printf("  per-resume latency p99           %8.1f ms\n", latency[(sessions * 99) / 100 - (sessions >= 100)] * 1000);
  free(approved);
  free(latency);
  return rc == DEXA_OK ? 0 : 1;
}

int main(int argc, char **argv) {
  int sessions = 100, workers = 8;
  const char *sync = "full", *store = NULL, *phase = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-s") && i + 1 < argc) sessions = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-w") && i + 1 < argc) workers = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-y") && i + 1 < argc) sync = argv[++i];
    else if (!strcmp(argv[i], "--store") && i + 1 < argc) store = argv[++i];
    else if (!strcmp(argv[i], "--phase") && i + 1 < argc) phase = argv[++i];
    else {
      fprintf(stderr, "usage: approvals [-s SESSIONS] [-w WORKERS] [-y full|normal] [--store PATH]"
                      " [--phase prepare|resume]\n");
      return 2;
    }
  }
  if (sessions < 1 || sessions > MAX_SESSIONS || workers < 1) return 2;
  if (phase && store && strcmp(phase, "prepare") == 0)
    return prepare(store, sync, sessions, workers) == DEXA_OK ? 0 : 1;
  if (phase && store) return resume_all(store, sync, sessions, workers);
  char tmp[1024];
  if (!store) {
    /* DEXA_TEST_STORE naming PostgreSQL (test/pg/_bench.sh): a new schema. */
    if (temp_store_is_pg())
      temp_store_path(tmp, sizeof tmp, "w2");
    else
      snprintf(tmp, sizeof tmp, "/tmp/dexa-bench-w2-%d.db", (int)getpid());
    store = tmp;
  }
  printf("W2: %d sessions stopped at an approval; a fresh process approves all, %d workers, "
         "synchronous=%s\n", sessions, workers, sync);
  if (prepare(store, sync, sessions, workers) != DEXA_OK) return 1;
  char s[16], w[16];
  snprintf(s, sizeof s, "%d", sessions);
  snprintf(w, sizeof w, "%d", workers);
  fflush(stdout);
  double spawn = now_s();
  pid_t pid = fork();
  if (pid == 0) {
    execl("/proc/self/exe", argv[0], "-s", s, "-w", w, "-y", sync, "--store", store, "--phase",
          "resume", (char *)NULL);
    _exit(127);
  }
  int status = 1;
  waitpid(pid, &status, 0);
  printf("  process spawn to exit            %8.3f s      (LangGraph.js + SQLite: ~1.4 s)\n",
         now_s() - spawn);
  if (store == tmp) temp_store_remove(tmp);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
