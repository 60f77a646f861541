/* Agent sessions against a Streamable HTTP MCP server built with the
 * official SDK (@modelcontextprotocol/sdk, pinned; test/mcp/_sdk_server.mjs)
 * on 127.0.0.1: elicitation as durable questions, sampling through the
 * session's model, roots, the server's logs, and OAuth (the SDK's
 * authorization server: registration, PKCE, refresh) with sign-ins as
 * questions. The server counts each tool's runs in files, so "ran once" is
 * counted at the server. Crash cases kill -9 a worker process while a
 * question or a sign-in waits, answer, and go on in a new worker. Also: the
 * capabilities declared at initialize only when enabled, an elicitation
 * cancelled, a sign-in whose tokens go to a token store of the host
 * (dexa_mcp_token_store_vtable), and no token in any log message.
 *
 * The SQLite store, the token file and the counters live in a temporary
 * folder; the servers are stopped at exit. Without npm or the registry the
 * tests are skipped (failed under CI).
 * test-needs: mcp-http sqlite */
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <dexagents/dexagents.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testing.h"

#define LONG_WAIT (getenv("LONG_WAIT") ? atoi(getenv("LONG_WAIT")) : 60000) /* ms: a bound for conditions on a loaded machine */

static char dir[256], store[512], tokens[512], npm_dir[1100], why_not[1200];
static int plain_port, auth_port;
static pid_t plain_pid, auth_pid, g_worker;
static dexa_mcp_config *g_cfg; /* the configuration of the running agent */
static FILE *g_log;
static char all_log[600]; /* every log message of the run */
static int g_host_store;  /* make_agent: the host's token store, not the file */

/* ---- the host's token store: records in memory ---- */

typedef struct mem_store {
  pthread_mutex_t mu;
  char *keys[16], *values[16];
  int n, puts, gets;
} mem_store;

static mem_store g_store = {PTHREAD_MUTEX_INITIALIZER, {0}, {0}, 0, 0, 0};
static _Thread_local char *t_borrowed; /* get's value: valid until the next call on this thread */

static int store_get(void *ud, const char *key, const char **value, size_t *len) {
  mem_store *m = ud;
  int rc = DEXA_E_NOT_FOUND;
  pthread_mutex_lock(&m->mu);
  m->gets++;
  for (int i = 0; i < m->n; i++) {
    if (strcmp(m->keys[i], key) != 0) continue;
    free(t_borrowed);
    t_borrowed = strdup(m->values[i]);
    *value = t_borrowed;
    *len = strlen(t_borrowed);
    rc = DEXA_OK;
  }
  pthread_mutex_unlock(&m->mu);
  return rc;
}

static int store_put(void *ud, const char *key, const char *value, size_t len) {
  mem_store *m = ud;
  pthread_mutex_lock(&m->mu);
  m->puts++;
  int i = 0;
  while (i < m->n && strcmp(m->keys[i], key) != 0) i++;
  if (i == m->n && value && m->n < 16) m->keys[m->n++] = strdup(key);
  if (i < m->n) {
    free(m->values[i]);
    m->values[i] = value ? strndup(value, len) : NULL;
    if (!value) { /* deleted: the last record moves into its place */
      free(m->keys[i]);
      m->keys[i] = m->keys[--m->n];
      m->values[i] = m->values[m->n];
    }
  }
  pthread_mutex_unlock(&m->mu);
  return DEXA_OK;
}

/* ---- the servers ---- */

static pid_t start_server(const char *flag, int *port) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    if (chdir(npm_dir) != 0) _exit(127);
    execlp("node", "node", "sdk_server.mjs", "--count-dir", dir, flag, (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  FILE *f = fdopen(fds[0], "r");
  char line[128];
  *port = 0;
  /* The first line says the port: no fixed port, no timing guess. */
  if (f && fgets(line, sizeof line, f)) sscanf(line, "PORT %d", port);
  if (f) fclose(f);
  return pid;
}

static void stop(pid_t *pid) {
  if (*pid <= 0) return;
  kill(-*pid, SIGKILL);
  kill(*pid, SIGKILL);
  waitpid(*pid, NULL, 0);
  *pid = 0;
}

static void kill_worker(void) {
  if (g_worker <= 0) return;
  kill(g_worker, SIGKILL);
  waitpid(g_worker, NULL, 0);
  g_worker = 0;
}

static void cleanup(void) {
  kill_worker();
  stop(&plain_pid);
  stop(&auth_pid);
  if (dir[0]) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "cleanup failed\n");
  }
}

static int setup(void) {
  snprintf(dir, sizeof dir, "/tmp/dexa-mcp-sdk-XXXXXX");
  if (!mkdtemp(dir)) return -1;
  snprintf(store, sizeof store, "%s/agent.db", dir);
  snprintf(tokens, sizeof tokens, "%s/state/mcp-tokens.json", dir);
  snprintf(all_log, sizeof all_log, "%s/all-log.txt", dir);
  FILE *p = popen("test/mcp/_npm_setup.sh sdk 2>&1", "r");
  char out[1024] = "";
  if (!p || !fgets(out, sizeof out, p)) out[0] = '\0';
  int st = p ? pclose(p) : -1;
  out[strcspn(out, "\n")] = '\0';
  if (st != 0) {
    snprintf(why_not, sizeof why_not, "npm packages not available: %s", out);
    return -1;
  }
  snprintf(npm_dir, sizeof npm_dir, "%.1000s/..", out);
  char cmd[2400];
  snprintf(cmd, sizeof cmd, "cp test/mcp/_sdk_server.mjs '%s/sdk_server.mjs'", npm_dir);
  if (system(cmd) != 0) return -1;
  plain_pid = start_server("--plain", &plain_port);
  auth_pid = start_server("--auth", &auth_port);
  if (!plain_port || !auth_port) {
    snprintf(why_not, sizeof why_not, "the SDK server did not start (node?)");
    return -1;
  }
  return 0;
}

static int count(const char *tool, const char *what) {
  char path[600];
  snprintf(path, sizeof path, "%s/%s.%s", dir, tool, what);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  int n = 0, ch;
  while ((ch = fgetc(f)) != EOF) n += ch == '\n';
  fclose(f);
  return n;
}

static void server_hook(int port, const char *path) {
  char cmd[200];
  snprintf(cmd, sizeof cmd, "curl -s -o /dev/null -X POST http://127.0.0.1:%d%s", port, path);
  if (system(cmd) != 0) fprintf(stderr, "hook %s failed\n", path);
}

/* ---- the agent ---- */

static void on_log(void *ud, int level, const char *message) {
  (void)ud;
  if (getenv("DEXA_TEST_LOG")) fprintf(stderr, "    log %d %s\n", level, message);
  if (g_log) {
    fprintf(g_log, "%d %s\n", level, message);
    fflush(g_log);
  }
  FILE *all = all_log[0] ? fopen(all_log, "a") : NULL;
  if (all) {
    fprintf(all, "%d %s\n", level, message);
    fclose(all);
  }
}

/* Two entries for the plain server (sampling auto and ask), one for the
 * server that wants OAuth. */
static dexa_agent *make_agent(void) {
  char json[4096], err[512];
  snprintf(json, sizeof json,
           "{\"mcpServers\":{"
           "\"sdk\":{\"url\":\"http://127.0.0.1:%d/mcp\",\"trustAnnotations\":true,"
           "\"elicitation\":true,\"sampling\":\"auto\",\"logLevel\":\"info\","
           "\"roots\":[{\"uri\":\"file:///srv/project\",\"name\":\"project\"}]},"
           "\"sdkask\":{\"url\":\"http://127.0.0.1:%d/mcp\",\"trustAnnotations\":true,"
           "\"sampling\":\"ask\"},"
           "\"local\":{\"command\":\"node\",\"args\":[\"sdk_server.mjs\",\"--stdio\",\"--count-dir\",\"%s\"],"
           "\"cwd\":\"%s\",\"trustAnnotations\":true,\"elicitation\":true,\"sampling\":\"auto\"},"
           "\"safe\":{\"url\":\"http://127.0.0.1:%d/mcp\",\"trustAnnotations\":true,"
           "\"elicitation\":true,\"auth\":{\"clientName\":\"dexa test\"}},"
           "\"bare\":{\"url\":\"http://127.0.0.1:%d/mcp\",\"trustAnnotations\":true}}}",
           plain_port, plain_port, dir, npm_dir, auth_port, plain_port);
  dexa_mcp_config_free(g_cfg);
  g_cfg = NULL;
  if (dexa_mcp_config_load(&g_cfg, NULL, json, strlen(json), err, sizeof err) != DEXA_OK) {
    fprintf(stderr, "config: %s\n", err);
    return NULL;
  }
  dexa_mcp_auth_options o;
  dexa_mcp_auth_options_init(&o, sizeof o);
  o.redirect_uri = "http://127.0.0.1:9/oauth/callback"; /* the test is the browser */
  o.token_file = tokens;
  dexa_mcp_token_store_vtable vt;
  dexa_mcp_token_store_vtable_init(&vt, sizeof vt);
  vt.get = store_get;
  vt.put = store_put;
  if (g_host_store) {
    o.token_store = &vt;
    o.token_store_user_data = &g_store;
  }
  dexa_mcp_config_set_auth(g_cfg, &o);
  dexa_mcp_config_set_log(g_cfg, on_log, NULL);
  dexa_tool_source **sources = NULL;
  size_t n = 0;
  if (dexa_mcp_tool_sources_new(&sources, &n, g_cfg) != DEXA_OK) return NULL;
  dexa_model *m;
  dexa_model_demo_new(&m, "mock/dex");
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.models = &m;
  def.model_count = 1;
  def.tool_sources = sources;
  def.tool_source_count = n;
  def.builtin_tools = DEXA_BUILTIN_ALL;
  def.tool_timeout_ms = 120000;
  dexa_agent *a = NULL;
  if (dexa_agent_new(&a, &def, err, sizeof err) != DEXA_OK) fprintf(stderr, "agent: %s\n", err);
  dexa_model_free(m);
  dexa_mcp_tool_sources_free(sources, n);
  return a;
}

static dexa_runtime *open_runtime(dexa_agent *a) {
  dexa_runtime_options o;
  dexa_runtime_options_init(&o, sizeof o);
  o.store = store;
  o.lease_ms = 1000;
  dexa_runtime *rt = NULL;
  char err[256];
  if (dexa_runtime_new(&rt, a, &o, err, sizeof err) != DEXA_OK) fprintf(stderr, "runtime: %s\n", err);
  return rt;
}

typedef struct world {
  dexa_agent *agent;
  dexa_runtime *rt;
} world;

static int world_open(world *w, int workers) {
  w->agent = make_agent();
  w->rt = w->agent ? open_runtime(w->agent) : NULL;
  if (w->rt && workers) dexa_runtime_start(w->rt, workers);
  return w->rt ? 0 : -1;
}

static void world_close(world *w) {
  if (w->rt) dexa_runtime_stop(w->rt);
  dexa_runtime_free(w->rt);
  dexa_agent_free(w->agent);
  w->rt = NULL;
  w->agent = NULL;
}

static int call(dexa_runtime *rt, const char *sid, const char *rpc, const char *input, char **out) {
  char *o = NULL;
  size_t n;
  int rc = dexa_runtime_call(rt, sid, rpc, input, strlen(input), &o, &n);
  if (out) *out = o;
  else dexa_free(o);
  return rc;
}

static int say(dexa_runtime *rt, const char *sid, const char *text) {
  cJSON *in = cJSON_CreateObject();
  cJSON_AddStringToObject(in, "text", text);
  char *json = cJSON_PrintUnformatted(in);
  int rc = call(rt, sid, "send_message", json, NULL);
  free(json);
  cJSON_Delete(in);
  return rc;
}

static char *snapshot(dexa_runtime *rt, const char *sid) {
  char *s = NULL;
  call(rt, sid, "snapshot", "{}", &s);
  return s;
}

static int wait_for(dexa_runtime *rt, const char *sid, const char *needle) {
  for (int waited = 0; waited <= LONG_WAIT; waited += 50) {
    char *s = snapshot(rt, sid);
    int found = s && strstr(s, needle);
    if (found || waited + 50 > LONG_WAIT)
      if (!found) fprintf(stderr, "    no \"%s\" in %s\n", needle, s ? s : "(no snapshot)");
    dexa_free(s);
    if (found) return 1;
    usleep(50000);
  }
  return 0;
}

/* The pending question of the session (a new object), or NULL. */
static cJSON *pending_question(dexa_runtime *rt, const char *sid) {
  for (int waited = 0; waited <= LONG_WAIT; waited += 50) {
    char *s = snapshot(rt, sid);
    if (waited + 50 > LONG_WAIT) fprintf(stderr, "    no question in %s\n", s ? s : "(no snapshot)");
    cJSON *doc = s ? cJSON_Parse(s) : NULL;
    dexa_free(s);
    cJSON *p, *found = NULL;
    cJSON_ArrayForEach(p, cJSON_GetObjectItem(doc, "pending")) {
      const char *k = cJSON_GetStringValue(cJSON_GetObjectItem(p, "kind"));
      if (k && !strcmp(k, "question") && !found) found = cJSON_Duplicate(p, 1);
    }
    cJSON_Delete(doc);
    if (found) return found;
    usleep(50000);
  }
  return NULL;
}

static int approve(dexa_runtime *rt, const char *sid, const char *call_id) {
  char in[300];
  snprintf(in, sizeof in, "{\"call_id\":\"%s\",\"decision\":\"approve\"}", call_id);
  for (int waited = 0; waited <= LONG_WAIT; waited += 50) {
    if (call(rt, sid, "resolve_approval", in, NULL) == DEXA_OK) return 0;
    usleep(50000);
  }
  return -1;
}

static int answer(dexa_runtime *rt, const char *sid, const char *call_id, const char *extra) {
  char in[600];
  snprintf(in, sizeof in, "{\"call_id\":\"%s\"%s}", call_id, extra);
  return call(rt, sid, "answer_question", in, NULL);
}

/* Every event of the session so far, as one text. */
static char *events(dexa_runtime *rt, const char *sid) {
  char *out = NULL;
  size_t n;
  dexa_runtime_read_events(rt, sid, "", 1000, 0, &out, &n);
  return out;
}

static int start(dexa_runtime *rt, const char *sid) {
  return dexa_runtime_start_session(rt, sid, NULL, 0, NULL, NULL);
}

/* ---- the person at the sign-in page ---- */

static size_t on_header(char *buf, size_t size, size_t n, void *ud) {
  char *location = ud;
  size_t len = size * n;
  if (len > 9 && strncasecmp(buf, "location:", 9) == 0)
    snprintf(location, 4096, "%.*s", (int)strcspn(buf + 10, "\r\n"), buf + 10);
  return len;
}

static size_t drop(char *b, size_t s, size_t n, void *u) {
  (void)b;
  (void)u;
  return s * n;
}

/* Opens the page (the authorization server signs in at once and
 * redirects), then does what the host's redirect route does. */
static int sign_in(const char *url, char *done, size_t done_size) {
  char location[4096] = "";
  CURL *curl = curl_easy_init();
  curl_easy_setopt(curl, CURLOPT_URL, url);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, location);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, drop);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, 60L);
  CURLcode cc = curl_easy_perform(curl);
  curl_easy_cleanup(curl);
  if (cc != CURLE_OK || !location[0]) return -1;
  char *out = NULL, err[300];
  int rc = dexa_mcp_authorization_complete(g_cfg, location, &out, NULL, err, sizeof err);
  if (rc != DEXA_OK) fprintf(stderr, "    complete: %s: %s\n", dexa_error_name(rc), err);
  snprintf(done, done_size, "%s", out ? out : "");
  dexa_free(out);
  return rc == DEXA_OK ? 0 : -1;
}

#define NEED_SERVERS()               \
  do {                               \
    if (!plain_port || !auth_port) { \
      if (getenv("CI")) CHECK(!why_not[0]); \
      SKIP(why_not);                 \
    }                                \
  } while (0)

/* ---- elicitation ---- */

static void test_an_elicitation_waits_and_the_same_server_call_goes_on(void) {
  NEED_SERVERS();
  world w;
  CHECK(world_open(&w, 2) == 0);
  CHECK_EQ_INT(start(w.rt, "s-elicit"), DEXA_OK);
  CHECK_EQ_INT(say(w.rt, "s-elicit", "/tool sdk__ask_name {}"), DEXA_OK);
  cJSON *q = pending_question(w.rt, "s-elicit");
  CHECK(q);
  char *qs = cJSON_PrintUnformatted(q);
  CHECK_CONTAINS(qs, "\"prompt\":\"What is your name?\"");
  CHECK_CONTAINS(qs, "\"purpose\":\"elicitation\"");
  CHECK_CONTAINS(qs, "{\"name\":\"color\",\"type\":\"string\",\"required\":false,\"enum\":[\"red\",\"green\",\"blue\"],\"default\":\"blue\"}");
  free(qs);
  const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(q, "call_id"));
  /* A wrong answer changes nothing; the color is left out: its default. */
  CHECK_EQ_INT(answer(w.rt, "s-elicit", id, ",\"fields\":{\"color\":\"pink\"}"), DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(answer(w.rt, "s-elicit", id, ",\"fields\":{\"name\":\"Ada\"}"), DEXA_OK);
  cJSON_Delete(q);
  CHECK(wait_for(w.rt, "s-elicit", "Hello Ada (blue)"));
  world_close(&w);
  CHECK_EQ_INT(count("ask_name", "start"), 1); /* parked and resumed, not run again */
  CHECK_EQ_INT(count("ask_name", "done"), 1);
}

/* Over stdio the server's requests come on the same pipe: they belong to
 * the one tool call in flight. */
static void test_elicitation_and_sampling_over_stdio(void) {
  NEED_SERVERS();
  world w;
  CHECK(world_open(&w, 2) == 0);
  CHECK_EQ_INT(start(w.rt, "s-stdio"), DEXA_OK);
  CHECK_EQ_INT(say(w.rt, "s-stdio", "/tool local__ask_name {}"), DEXA_OK);
  cJSON *q = pending_question(w.rt, "s-stdio");
  CHECK(q);
  CHECK_EQ_INT(answer(w.rt, "s-stdio", cJSON_GetStringValue(cJSON_GetObjectItem(q, "call_id")),
                      ",\"fields\":{\"name\":\"Lin\",\"color\":\"red\"}"),
               DEXA_OK);
  cJSON_Delete(q);
  CHECK(wait_for(w.rt, "s-stdio", "Hello Lin (red)"));
  CHECK_EQ_INT(say(w.rt, "s-stdio", "/tool local__summarize {\"text\":\"over a pipe\"}"), DEXA_OK);
  CHECK(wait_for(w.rt, "s-stdio", "model mock/dex said: Local demo response: over a pipe"));
  world_close(&w);
}

/* ask_name answered with action (decline, cancel): the server sees it. */
static void refuse_elicitation(const char *sid, const char *action, const char *said) {
  world w;
  CHECK(world_open(&w, 2) == 0);
  CHECK_EQ_INT(start(w.rt, sid), DEXA_OK);
  CHECK_EQ_INT(say(w.rt, sid, "/tool sdk__ask_name {}"), DEXA_OK);
  cJSON *q = pending_question(w.rt, sid);
  CHECK(q);
  char extra[64];
  snprintf(extra, sizeof extra, ",\"action\":\"%s\"", action);
  CHECK_EQ_INT(answer(w.rt, sid, cJSON_GetStringValue(cJSON_GetObjectItem(q, "call_id")), extra),
               DEXA_OK);
  cJSON_Delete(q);
  CHECK(wait_for(w.rt, sid, said));
  world_close(&w);
}

static void test_a_decline_reaches_the_server(void) {
  NEED_SERVERS();
  refuse_elicitation("s-decline", "decline", "no name: decline");
}

static void test_a_cancel_reaches_the_server(void) {
  NEED_SERVERS();
  refuse_elicitation("s-cancel", "cancel", "no name: cancel");
}

/* initialize declares elicitation, sampling and roots only for a server
 * whose entry turns them on. */
static void test_capabilities_are_declared_only_when_enabled(void) {
  NEED_SERVERS();
  world w;
  CHECK(world_open(&w, 2) == 0);
  CHECK_EQ_INT(start(w.rt, "s-caps"), DEXA_OK);
  CHECK_EQ_INT(say(w.rt, "s-caps", "/tool bare__client_caps {}"), DEXA_OK);
  CHECK(wait_for(w.rt, "s-caps", "Tool bare__client_caps (ok): {}"));
  CHECK_EQ_INT(say(w.rt, "s-caps", "/tool sdk__client_caps {}"), DEXA_OK);
  CHECK(wait_for(w.rt, "s-caps", "Tool sdk__client_caps (ok): {"));
  char *snap = snapshot(w.rt, "s-caps");
  CHECK_CONTAINS(snap, "\\\"elicitation\\\":{");
  CHECK_CONTAINS(snap, "\\\"sampling\\\":{}");
  CHECK_CONTAINS(snap, "\\\"roots\\\":{\\\"listChanged\\\":false}");
  dexa_free(snap);
  /* sampling "ask" without elicitation or roots: sampling only */
  CHECK_EQ_INT(say(w.rt, "s-caps", "/tool sdkask__client_caps {}"), DEXA_OK);
  CHECK(wait_for(w.rt, "s-caps", "Tool sdkask__client_caps (ok): {\\\"sampling\\\":{}}"));
  world_close(&w);
}

static void test_an_approved_write_asks_and_runs_once(void) {
  NEED_SERVERS();
  int before = count("delete_files", "start");
  world w;
  CHECK(world_open(&w, 2) == 0);
  CHECK_EQ_INT(start(w.rt, "s-write"), DEXA_OK);
  CHECK_EQ_INT(say(w.rt, "s-write", "/tool sdk__delete_files {}"), DEXA_OK);
  CHECK(wait_for(w.rt, "s-write", "\"kind\":\"approval\""));
  CHECK(approve(w.rt, "s-write", "demo-t1r1c1") == 0);
  cJSON *q = pending_question(w.rt, "s-write");
  CHECK(q);
  CHECK_CONTAINS(cJSON_GetStringValue(cJSON_GetObjectItem(q, "resume")), "CallSingleAttemptTool");
  CHECK_EQ_INT(answer(w.rt, "s-write", "demo-t1r1c1", ",\"fields\":{\"sure\":true}"), DEXA_OK);
  cJSON_Delete(q);
  CHECK(wait_for(w.rt, "s-write", "(ok): deleted"));
  world_close(&w);
  CHECK_EQ_INT(count("delete_files", "start") - before, 1);
}

/* ---- crashes while a question waits ---- */

static void worker_with(const char *sid, const char *text) {
  fflush(NULL);
  g_worker = fork();
  if (g_worker != 0) return;
  world w;
  if (world_open(&w, 2) != 0) _exit(3);
  if (sid) {
    start(w.rt, sid);
    say(w.rt, sid, text);
  }
  for (;;) pause();
}

static void test_kill_while_a_read_asks_runs_it_again_and_answers_from_the_record(void) {
  NEED_SERVERS();
  int before = count("ask_twice", "start");
  worker_with("s-crash-read", "/tool sdk__ask_twice {}");
  world probe;
  CHECK(world_open(&probe, 0) == 0);
  cJSON *q = pending_question(probe.rt, "s-crash-read");
  CHECK(q);
  CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(q, "prompt")), "First: your name?");
  cJSON_Delete(q);
  kill_worker();
  CHECK_EQ_INT(answer(probe.rt, "s-crash-read", "demo-t1r1c1", ",\"fields\":{\"name\":\"Bob\"}"), DEXA_OK);
  world_close(&probe);
  world w;
  CHECK(world_open(&w, 2) == 0); /* the new worker runs the call again */
  q = pending_question(w.rt, "s-crash-read");
  CHECK(q); /* the first elicitation was answered from the record: the second waits */
  CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(q, "prompt")), "Second: your city?");
  cJSON_Delete(q);
  CHECK_EQ_INT(answer(w.rt, "s-crash-read", "demo-t1r1c1", ",\"fields\":{\"city\":\"Paris\"}"), DEXA_OK);
  CHECK(wait_for(w.rt, "s-crash-read", "accept:Bob accept:Paris"));
  world_close(&w);
  CHECK_EQ_INT(count("ask_twice", "start") - before, 2); /* the lost run and this one */
}

static void test_kill_while_a_write_asks_does_not_run_it_again(void) {
  NEED_SERVERS();
  int before = count("delete_files", "start"), done_before = count("delete_files", "done");
  worker_with("s-crash-write", "/tool sdk__delete_files {}");
  world probe;
  CHECK(world_open(&probe, 0) == 0);
  CHECK(wait_for(probe.rt, "s-crash-write", "\"kind\":\"approval\""));
  CHECK(approve(probe.rt, "s-crash-write", "demo-t1r1c1") == 0);
  cJSON *q = pending_question(probe.rt, "s-crash-write");
  CHECK(q);
  cJSON_Delete(q);
  kill_worker();
  CHECK_EQ_INT(answer(probe.rt, "s-crash-write", "demo-t1r1c1", ",\"fields\":{\"sure\":true}"), DEXA_OK);
  world_close(&probe);
  world w;
  CHECK(world_open(&w, 2) == 0);
  CHECK(wait_for(w.rt, "s-crash-write", "It was not run again because it is a write"));
  world_close(&w);
  CHECK_EQ_INT(count("delete_files", "start") - before, 1);
  CHECK_EQ_INT(count("delete_files", "done") - done_before, 0);
}

/* ---- sampling, roots, logs ---- */

static void test_sampling_runs_the_session_model(void) {
  NEED_SERVERS();
  world w;
  CHECK(world_open(&w, 2) == 0);
  CHECK_EQ_INT(start(w.rt, "s-sample"), DEXA_OK);
  CHECK_EQ_INT(say(w.rt, "s-sample", "/tool sdk__summarize {\"text\":\"tea at five\"}"), DEXA_OK);
  CHECK(wait_for(w.rt, "s-sample", "model mock/dex said: Local demo response: tea at five"));
  char *ev = events(w.rt, "s-sample");
  CHECK_CONTAINS(ev, "\"type\":\"sampling_finished\"");
  dexa_free(ev);
  /* "ask": the person allows or denies each request */
  CHECK_EQ_INT(say(w.rt, "s-sample", "/tool sdkask__summarize {\"text\":\"secret plans\"}"), DEXA_OK);
  cJSON *q = pending_question(w.rt, "s-sample");
  CHECK(q);
  CHECK_CONTAINS(cJSON_GetStringValue(cJSON_GetObjectItem(q, "prompt")), "secret plans");
  CHECK_EQ_INT(answer(w.rt, "s-sample", cJSON_GetStringValue(cJSON_GetObjectItem(q, "call_id")),
                      ",\"answer\":\"Deny\""),
               DEXA_OK);
  cJSON_Delete(q);
  CHECK(wait_for(w.rt, "s-sample", "sampling refused: MCP error -1: User rejected sampling request"));
  world_close(&w);
}

static void test_roots_come_from_the_configuration_and_logs_go_to_the_host(void) {
  NEED_SERVERS();
  char path[600];
  snprintf(path, sizeof path, "%s/log.txt", dir);
  g_log = fopen(path, "w");
  world w;
  CHECK(world_open(&w, 2) == 0);
  CHECK_EQ_INT(start(w.rt, "s-roots"), DEXA_OK);
  CHECK_EQ_INT(say(w.rt, "s-roots", "/tool sdk__show_roots {}"), DEXA_OK);
  CHECK(wait_for(w.rt, "s-roots", "file:///srv/project"));
  CHECK_EQ_INT(say(w.rt, "s-roots", "/tool sdk__chatty {}"), DEXA_OK);
  CHECK(wait_for(w.rt, "s-roots", "(ok): logged"));
  world_close(&w);
  fclose(g_log);
  g_log = NULL;
  FILE *f = fopen(path, "r");
  char buf[4096] = "";
  size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
  buf[n] = '\0';
  if (f) fclose(f);
  CHECK_CONTAINS(buf, "3 mcp:sdk: info chatty: one");
  CHECK_CONTAINS(buf, "2 mcp:sdk: warning chatty: two");
  CHECK_CONTAINS(buf, "1 mcp:sdk: error chatty: {\"n\":3}");
}

/* ---- OAuth ---- */

static void test_sign_in_before_the_tools_are_listed(void) {
  NEED_SERVERS();
  world w;
  CHECK(world_open(&w, 2) == 0);
  CHECK_EQ_INT(start(w.rt, "s-auth"), DEXA_OK);
  /* The server refuses to list: the model sees only safe__sign_in. */
  CHECK_EQ_INT(say(w.rt, "s-auth", "/tool safe__whoami {}"), DEXA_OK);
  CHECK(wait_for(w.rt, "s-auth", "it is not offered to this session"));
  CHECK_EQ_INT(say(w.rt, "s-auth", "/tool safe__sign_in {}"), DEXA_OK);
  cJSON *q = pending_question(w.rt, "s-auth");
  CHECK(q);
  CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(q, "purpose")), "sign_in");
  const char *url = cJSON_GetStringValue(cJSON_GetObjectItem(q, "url"));
  CHECK(url && strstr(url, "code_challenge_method=S256") && strstr(url, "resource="));
  char done[600];
  CHECK(sign_in(url, done, sizeof done) == 0);
  CHECK_CONTAINS(done, "\"session_id\":\"s-auth\"");
  CHECK_CONTAINS(done, "\"signed_in\":true");
  CHECK_EQ_INT(answer(w.rt, "s-auth", cJSON_GetStringValue(cJSON_GetObjectItem(q, "call_id")),
                      ",\"action\":\"accept\""),
               DEXA_OK);
  cJSON_Delete(q);
  CHECK(wait_for(w.rt, "s-auth", "Signed in to safe"));
  CHECK_EQ_INT(say(w.rt, "s-auth", "/tool safe__whoami {}"), DEXA_OK);
  CHECK(wait_for(w.rt, "s-auth", "Tool safe__whoami (ok): ok"));
  /* An expired access token is refreshed without asking anyone. */
  server_hook(auth_port, "/__test/expire");
  CHECK_EQ_INT(say(w.rt, "s-auth", "/tool safe__whoami {\"again\":1}"), DEXA_OK);
  CHECK(wait_for(w.rt, "s-auth", "\"turn\":{\"turn\":4,\"status\":\"idle\""));
  char *snap = snapshot(w.rt, "s-auth");
  CHECK(strstr(snap, "\"pending\":[]") != NULL);
  dexa_free(snap);
  world_close(&w);
  struct stat st;
  CHECK(stat(tokens, &st) == 0);
  CHECK_EQ_INT(st.st_mode & 0777, 0600);
}

static void test_a_refused_token_makes_the_call_ask_for_a_sign_in(void) {
  NEED_SERVERS();
  world w;
  CHECK(world_open(&w, 2) == 0);
  CHECK_EQ_INT(start(w.rt, "s-reauth"), DEXA_OK);
  CHECK_EQ_INT(say(w.rt, "s-reauth", "/tool safe__whoami {}"), DEXA_OK); /* lists the tools */
  CHECK(wait_for(w.rt, "s-reauth", "Tool safe__whoami (ok): ok"));
  /* Every token refused, the refresh token too: a person must sign in. */
  server_hook(auth_port, "/__test/revoke");
  int before = count("whoami", "start");
  CHECK_EQ_INT(say(w.rt, "s-reauth", "/tool safe__whoami {\"n\":2}"), DEXA_OK);
  cJSON *q = pending_question(w.rt, "s-reauth");
  CHECK(q);
  CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(q, "name")), "safe__whoami");
  char done[600];
  CHECK(sign_in(cJSON_GetStringValue(cJSON_GetObjectItem(q, "url")), done, sizeof done) == 0);
  CHECK_EQ_INT(answer(w.rt, "s-reauth", cJSON_GetStringValue(cJSON_GetObjectItem(q, "call_id")),
                      ",\"action\":\"accept\""),
               DEXA_OK);
  cJSON_Delete(q);
  CHECK(wait_for(w.rt, "s-reauth", "\"turn\":{\"turn\":2,\"status\":\"idle\""));
  CHECK(wait_for(w.rt, "s-reauth", "\"seq\":8,\"turn\":2,\"round\":2,\"role\":\"model\",\"model\":\"mock/dex\",\"at\""));
  char *snap = snapshot(w.rt, "s-reauth");
  CHECK_CONTAINS(snap, "\"seq\":7,\"turn\":2,\"round\":1,\"role\":\"tool\",\"call_id\":\"demo-t2r1c1\",\"name\":\"safe__whoami\",\"status\":\"ok\"");
  dexa_free(snap);
  world_close(&w);
  CHECK_EQ_INT(count("whoami", "start") - before, 1); /* refused calls never ran */
}

static void test_kill_while_a_sign_in_waits(void) {
  NEED_SERVERS();
  worker_with("s-crash-auth", "/tool safe__whoami {}"); /* lists the tools, runs */
  world probe;
  CHECK(world_open(&probe, 0) == 0);
  CHECK(wait_for(probe.rt, "s-crash-auth", "Tool safe__whoami (ok): ok"));
  server_hook(auth_port, "/__test/revoke");
  int before = count("whoami", "start");
  CHECK_EQ_INT(say(probe.rt, "s-crash-auth", "/tool safe__whoami {\"n\":2}"), DEXA_OK);
  cJSON *q = pending_question(probe.rt, "s-crash-auth");
  CHECK(q);
  kill_worker();
  char done[600];
  CHECK(sign_in(cJSON_GetStringValue(cJSON_GetObjectItem(q, "url")), done, sizeof done) == 0);
  CHECK_CONTAINS(done, "\"session_id\":\"s-crash-auth\"");
  CHECK_EQ_INT(answer(probe.rt, "s-crash-auth", cJSON_GetStringValue(cJSON_GetObjectItem(q, "call_id")),
                      ",\"action\":\"accept\""),
               DEXA_OK);
  cJSON_Delete(q);
  world_close(&probe);
  world w;
  CHECK(world_open(&w, 2) == 0);
  CHECK(wait_for(w.rt, "s-crash-auth", "\"call_id\":\"demo-t2r1c1\",\"name\":\"safe__whoami\",\"status\":\"ok\""));
  world_close(&w);
  CHECK_EQ_INT(count("whoami", "start") - before, 1);
}

/* A host's own token store (dexa_mcp_token_store_vtable): the sign-in
 * stores the tokens there, the calls read them from there, and the next
 * world (another process would do the same) finds them without asking. */
static void test_a_sign_in_through_the_host_token_store(void) {
  NEED_SERVERS();
  g_host_store = 1;
  struct stat before;
  int had_file = stat(tokens, &before) == 0;
  world w;
  CHECK(world_open(&w, 2) == 0);
  CHECK_EQ_INT(start(w.rt, "s-store"), DEXA_OK);
  CHECK_EQ_INT(say(w.rt, "s-store", "/tool safe__sign_in {}"), DEXA_OK);
  cJSON *q = pending_question(w.rt, "s-store");
  CHECK(q);
  char done[600];
  CHECK(sign_in(cJSON_GetStringValue(cJSON_GetObjectItem(q, "url")), done, sizeof done) == 0);
  CHECK_CONTAINS(done, "\"signed_in\":true");
  CHECK_EQ_INT(answer(w.rt, "s-store", cJSON_GetStringValue(cJSON_GetObjectItem(q, "call_id")),
                      ",\"action\":\"accept\""),
               DEXA_OK);
  cJSON_Delete(q);
  CHECK(wait_for(w.rt, "s-store", "Signed in to safe"));
  world_close(&w);
  pthread_mutex_lock(&g_store.mu);
  int records = g_store.n, puts = g_store.puts, with_token = 0;
  for (int i = 0; i < g_store.n; i++) with_token += strstr(g_store.values[i], "\"access_token\"") != NULL;
  pthread_mutex_unlock(&g_store.mu);
  CHECK(records >= 1 && puts >= 1);
  CHECK_EQ_INT(with_token, 1);
  /* A new world with the same store: the call runs, no sign-in asked. */
  CHECK(world_open(&w, 2) == 0);
  CHECK_EQ_INT(say(w.rt, "s-store", "/tool safe__whoami {}"), DEXA_OK);
  CHECK(wait_for(w.rt, "s-store", "Tool safe__whoami (ok): ok"));
  char *snap = snapshot(w.rt, "s-store"), *ev = events(w.rt, "s-store");
  pthread_mutex_lock(&g_store.mu);
  for (int i = 0; i < g_store.n; i++) {
    cJSON *rec = cJSON_Parse(g_store.values[i]);
    const char *tok = cJSON_GetStringValue(cJSON_GetObjectItem(rec, "access_token"));
    if (tok) CHECK(!strstr(snap, tok) && !strstr(ev, tok));
    cJSON_Delete(rec);
  }
  pthread_mutex_unlock(&g_store.mu);
  dexa_free(snap);
  dexa_free(ev);
  world_close(&w);
  g_host_store = 0;
  /* the file store was not used */
  struct stat after;
  int has_file = stat(tokens, &after) == 0;
  CHECK_EQ_INT(has_file, had_file);
  if (had_file && has_file) CHECK(after.st_mtime == before.st_mtime && after.st_size == before.st_size);
}

/* No token of the store appears in any session's state or events. */
static void test_tokens_stay_out_of_session_state(void) {
  NEED_SERVERS();
  FILE *f = fopen(tokens, "r");
  CHECK(f);
  char buf[65536];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  cJSON *doc = cJSON_Parse(buf);
  CHECK(doc);
  world w;
  CHECK(world_open(&w, 0) == 0);
  const char *sessions[] = {"s-auth", "s-reauth", "s-crash-auth"};
  int checked = 0;
  const cJSON *rec;
  cJSON_ArrayForEach(rec, doc) {
    const char *vals[] = {cJSON_GetStringValue(cJSON_GetObjectItem(rec, "access_token")),
                          cJSON_GetStringValue(cJSON_GetObjectItem(rec, "refresh_token")),
                          cJSON_GetStringValue(cJSON_GetObjectItem(rec, "client_secret"))};
    for (int i = 0; i < 3; i++) {
      if (!vals[i]) continue;
      for (int s = 0; s < 3; s++) {
        char *snap = snapshot(w.rt, sessions[s]), *ev = events(w.rt, sessions[s]);
        CHECK(snap && !strstr(snap, vals[i]));
        CHECK(ev && !strstr(ev, vals[i]));
        dexa_free(snap);
        dexa_free(ev);
        checked++;
      }
    }
  }
  world_close(&w);
  CHECK(checked >= 3);
  /* ... nor in any log message of the whole run (the host's store's too) */
  FILE *lf = fopen(all_log, "r");
  static char logbuf[1 << 20];
  size_t ln = lf ? fread(logbuf, 1, sizeof logbuf - 1, lf) : 0;
  logbuf[ln] = '\0';
  if (lf) fclose(lf);
  CHECK(ln > 0); /* the run logged (the chatty tool at least) */
  int tokens_checked = 0;
  cJSON_ArrayForEach(rec, doc) {
    const char *keys[] = {"access_token", "refresh_token", "client_secret"};
    for (int i = 0; i < 3; i++) {
      const char *v = cJSON_GetStringValue(cJSON_GetObjectItem(rec, keys[i]));
      if (v) CHECK(!strstr(logbuf, v));
      tokens_checked += v != NULL;
    }
  }
  pthread_mutex_lock(&g_store.mu);
  for (int s = 0; s < g_store.n; s++) {
    cJSON *r2 = cJSON_Parse(g_store.values[s]);
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItem(r2, "access_token"));
    if (v) CHECK(!strstr(logbuf, v));
    tokens_checked += v != NULL;
    cJSON_Delete(r2);
  }
  pthread_mutex_unlock(&g_store.mu);
  cJSON_Delete(doc);
  CHECK(tokens_checked >= 3);
}

int main(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  atexit(cleanup);
  signal(SIGPIPE, SIG_IGN);
  if (setup() != 0 && !why_not[0]) snprintf(why_not, sizeof why_not, "set-up failed");
  RUN(test_an_elicitation_waits_and_the_same_server_call_goes_on);
  RUN(test_elicitation_and_sampling_over_stdio);
  RUN(test_a_decline_reaches_the_server);
  RUN(test_a_cancel_reaches_the_server);
  RUN(test_capabilities_are_declared_only_when_enabled);
  RUN(test_an_approved_write_asks_and_runs_once);
  RUN(test_kill_while_a_read_asks_runs_it_again_and_answers_from_the_record);
  kill_worker();
  RUN(test_kill_while_a_write_asks_does_not_run_it_again);
  kill_worker();
  RUN(test_sampling_runs_the_session_model);
  RUN(test_roots_come_from_the_configuration_and_logs_go_to_the_host);
  RUN(test_sign_in_before_the_tools_are_listed);
  RUN(test_a_refused_token_makes_the_call_ask_for_a_sign_in);
  RUN(test_kill_while_a_sign_in_waits);
  kill_worker();
  RUN(test_a_sign_in_through_the_host_token_store);
  RUN(test_tokens_stay_out_of_session_state);
  dexa_mcp_config_free(g_cfg);
  TEST_MAIN_END();
}
