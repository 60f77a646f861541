/* The MCP client against fake servers (test/mcp/_fake_server.py) that
 * misbehave on purpose: pagination, list_changed before the initialize
 * response, garbage on stdout, unknown ids, oversized messages, servers that
 * never answer or die, server pings, both eras over stdio and HTTP, SSE
 * resumption with Last-Event-ID and retry. Every test checks that no
 * descriptor and no child process is left behind.
 * test-needs: mcp-http sqlite */
#include <dexagents/dexagents.h>
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testing.h"
#include "tools/mcp_internal.h"
#include "iface/tool_source.h"

static char script[4096], logfile[512], dir[256];

static int count_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) n += e->d_name[0] != '.';
  if (d) closedir(d);
  return n - 1; /* the DIR's own */
}

/* Processes whose parent is this process. */
static int count_children(void) {
  DIR *d = opendir("/proc");
  int n = 0;
  struct dirent *e;
  char path[300], buf[512];
  while (d && (e = readdir(d))) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    size_t r = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[r] = '\0';
    char *p = strrchr(buf, ')');
    int ppid = 0;
    if (p && sscanf(p + 2, "%*c %d", &ppid) == 1 && ppid == getpid()) n++;
  }
  if (d) closedir(d);
  return n;
}

static int log_has(const char *needle) {
  FILE *f = fopen(logfile, "r");
  if (!f) return 0;
  char line[1024];
  int n = 0;
  while (fgets(line, sizeof line, f)) n += strstr(line, needle) != NULL;
  fclose(f);
  return n;
}

/* Waits up to ms for a line of the server's log with needle: the server
 * writes it when it gets to it, which a loaded machine can delay. */
static int wait_log(const char *needle, int ms) {
  for (int waited = 0; waited < ms; waited += 20) {
    if (log_has(needle) > 0) return 1;
    usleep(20000);
  }
  return log_has(needle) > 0;
}

/* One source from a one-server configuration; extra: more keys. */
static dexa_tool_source *source_for(const char *server, const char *extra, const char *era) {
  char json[8192];
  snprintf(json, sizeof json,
           "{\"mcpServers\":{\"%s\":{\"command\":\"python3\",\"args\":[\"%s\",\"stdio\",\"%s\"],"
           "\"env\":{\"FAKE_LOG\":\"%s\"}%s}}}",
           server, script, era, logfile, extra ? extra : "");
  dexa_mcp_config *cfg = NULL;
  char err[256];
  if (dexa_mcp_config_load(&cfg, NULL, json, strlen(json), err, sizeof err) != DEXA_OK) {
    fprintf(stderr, "config: %s\n", err);
    return NULL;
  }
  dexa_tool_source **v = NULL;
  size_t n = 0;
  dexa_mcp_tool_sources_new(&v, &n, cfg);
  dexa_mcp_config_free(cfg);
  dexa_tool_source *s = n == 1 ? v[0] : NULL;
  free(v);
  return s;
}

static int list(dexa_tool_source *s, dexa_tool_list *l) {
  dexa__tool_list_init(l);
  return s->vt.list_tools(s->user_data, l);
}

typedef struct call_out {
  int rc;
  int is_error;
  char text[1024];
  char content[4096];
} call_out;

static void call(dexa_tool_source *s, const char *name, const char *args, call_out *o) {
  dexa_tool_invocation inv = {.name = name, .call_id = "c1", .session_id = "s1",
                              .idempotency_key = "s1:c1", .arguments = args,
                              .arguments_len = strlen(args), .attempt = 1};
  dexa_tool_output out;
  dexa__tool_output_init(&out);
  o->rc = s->vt.call_tool(s->user_data, &inv, &out);
  o->is_error = out.is_error;
  snprintf(o->text, sizeof o->text, "%s", out.text.data ? out.text.data : "");
  snprintf(o->content, sizeof o->content, "%s", out.content.data ? out.content.data : "");
  dexa__tool_output_free(&out);
}

static int fds0, kids0;
static void begin(void) {
  unlink(logfile);
  fds0 = count_fds();
  kids0 = count_children();
}
static int no_leaks(void) {
  int fds = count_fds(), kids = count_children();
  if (fds != fds0 || kids != kids0)
    fprintf(stderr, "    leak: fds %d -> %d, children %d -> %d\n", fds0, fds, kids0, kids);
  return fds == fds0 && kids == kids0;
}

static const dexa__tool_def *find(const dexa_tool_list *l, const char *name) {
  return dexa__tool_list_find(l, name, strlen(name));
}

static void test_lists_every_page_with_stable_names_and_effects(void) {
  begin();
  dexa_tool_source *s = source_for("fake", ",\"trustAnnotations\":true", "legacy");
  CHECK(s);
  dexa_tool_list l;
  CHECK_EQ_INT(list(s, &l), DEXA_OK);
  CHECK_EQ_INT(l.count, 11); /* 3 pages, list_changed before the init response ignored */
  CHECK_EQ_INT(find(&l, "fake__echo")->effect, DEXA_TOOL_READ);
  CHECK_EQ_INT(find(&l, "fake__echo")->approval, DEXA_APPROVAL_NONE);
  CHECK_EQ_INT(find(&l, "fake__write")->effect, DEXA_TOOL_WRITE);
  CHECK_EQ_INT(find(&l, "fake__write")->approval, DEXA_APPROVAL_REQUIRED);
  CHECK_EQ_INT(find(&l, "fake__idem")->effect, DEXA_TOOL_IDEMPOTENT_WRITE);
  CHECK_EQ_INT(find(&l, "fake__idem")->approval, DEXA_APPROVAL_REQUIRED);
  char hashed[65];
  dexa__mcp_tool_name("fake", "a tool with spaces and a very long name that does not fit in sixty-four bytes", hashed);
  CHECK(find(&l, hashed));
  CHECK(strlen(hashed) == 64 && strncmp(hashed, "fake__a_tool_with_spaces", 24) == 0);
  /* A dot is not allowed by OpenAI or Anthropic: sanitised and hashed. */
  CHECK(find(&l, "fake__files_read_421fd0376a62"));
  CHECK(!find(&l, "fake__files.read"));
  for (size_t i = 0; i < l.count; i++)
    for (const char *p = l.defs[i].name; *p; p++)
      CHECK((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '_' || *p == '-');
  dexa__tool_list_free(&l);
  /* Listed again from the cache: no second tools/list. */
  CHECK_EQ_INT(list(s, &l), DEXA_OK);
  CHECK_EQ_INT(l.count, 11);
  dexa__tool_list_free(&l);
  CHECK_EQ_INT(log_has("recv tools/list"), 3);
  CHECK_EQ_INT(log_has("recv initialize"), 1);
  dexa_tool_source_free(s);
  CHECK(no_leaks());
}

/* Calls recorded under the names 1.0 offered (a dot kept; a hash with a
 * digit missing from the FNV offset basis) still run the right tool. */
static void test_names_of_1_0_still_resolve(void) {
  begin();
  dexa_tool_source *s = source_for("fake", ",\"trustAnnotations\":true", "legacy");
  CHECK(s);
  call_out o;
  call(s, "fake__files.read", "{}", &o);
  CHECK_EQ_INT(o.rc, DEXA_OK);
  CHECK_STR(o.text, "read");
  call(s, "fake__files_read_421fd0376a62", "{}", &o);
  CHECK_STR(o.text, "read");
  char old[65];
  const char *spaced = "a tool with spaces and a very long name that does not fit in sixty-four bytes";
  dexa__mcp_tool_name_1_0("fake", spaced, old);
  char now[65];
  dexa__mcp_tool_name("fake", spaced, now);
  CHECK(strcmp(old, now) != 0);
  call(s, old, "{}", &o);
  CHECK_EQ_INT(o.rc, DEXA_OK);
  CHECK_EQ_INT(o.is_error, 1); /* the fake answers "no such tool" for it: it was called */
  CHECK_CONTAINS(o.text, "no such tool");
  CHECK_EQ_INT(log_has(spaced), 1); /* called by its original name */
  CHECK_EQ_INT(log_has(" files.read"), 2);
  CHECK_EQ_INT(log_has("recv tools/call"), 3);
  call(s, "fake__nothing_like_it", "{}", &o);
  CHECK_CONTAINS(o.text, "no longer offers");
  dexa_tool_source_free(s);
  CHECK(no_leaks());
}

static void test_untrusted_server_tools_are_writes_that_need_approval(void) {
  begin();
  dexa_tool_source *s = source_for("u", NULL, "legacy");
  CHECK(s);
  dexa_tool_list l;
  CHECK_EQ_INT(list(s, &l), DEXA_OK);
  for (size_t i = 0; i < l.count; i++) {
    CHECK_EQ_INT(l.defs[i].effect, DEXA_TOOL_WRITE);
    CHECK_EQ_INT(l.defs[i].approval, DEXA_APPROVAL_REQUIRED);
  }
  dexa__tool_list_free(&l);
  dexa_tool_source_free(s);
  CHECK(no_leaks());
}

static void test_call_carries_idempotency_key_and_keeps_content(void) {
  begin();
  dexa_tool_source *s = source_for("fake", NULL, "legacy");
  call_out o;
  call(s, "fake__write", "{}", &o);
  CHECK_EQ_INT(o.rc, DEXA_OK);
  CHECK_STR(o.text, "written");
  CHECK_CONTAINS(o.content, "\"content\":[{\"type\":\"text\",\"text\":\"written\"}]");
  CHECK_EQ_INT(log_has("write s1:c1"), 1);
  call(s, "fake__nope", "{}", &o);
  CHECK_EQ_INT(o.rc, DEXA_OK);
  CHECK(o.is_error);
  CHECK_CONTAINS(o.text, "no longer offers");
  dexa_tool_source_free(s);
  CHECK(no_leaks());
}

/* ---- Stop: a running call learns its turn was stopped ---- */

typedef struct stop_call {
  dexa_tool_source *s;
  const char *name;
  atomic_int stop;
  call_out o;
  dexa_call call;
} stop_call;

static int stop_flag(void *user) { return atomic_load((atomic_int *)user); }

static void *run_stop_call(void *arg) {
  stop_call *sc = arg;
  dexa_call_init(&sc->call, sizeof sc->call);
  sc->call.cancel_user_data = &sc->stop;
  sc->call.cancelled = stop_flag;
  dexa_tool_invocation inv = {.name = sc->name, .call_id = "c1", .session_id = "s1",
                              .idempotency_key = "s1:c1", .arguments = "{}", .arguments_len = 2,
                              .attempt = 1, .call = &sc->call};
  dexa_tool_output out;
  dexa__tool_output_init(&out);
  sc->o.rc = sc->s->vt.call_tool(sc->s->user_data, &inv, &out);
  sc->o.is_error = out.is_error;
  snprintf(sc->o.text, sizeof sc->o.text, "%s", out.text.data ? out.text.data : "");
  dexa__tool_output_free(&out);
  return NULL;
}

/* Runs "never" (no answer for 60 s), stops it once the server has it. */
static void stop_a_running_call(dexa_tool_source *s, const char *name, const char *received,
                                const char *cancelled) {
  stop_call sc;
  memset(&sc, 0, sizeof sc);
  sc.s = s;
  sc.name = name;
  atomic_init(&sc.stop, 0);
  pthread_t th;
  CHECK(pthread_create(&th, NULL, run_stop_call, &sc) == 0);
  int got = wait_log(received, 60000);
  int64_t t0 = dexa__mcp_now_ms();
  atomic_store(&sc.stop, 1);
  pthread_join(th, NULL);
  int64_t took = dexa__mcp_now_ms() - t0;
  CHECK(got);
  CHECK(took < 50000); /* not the 60 s timeout: it stopped */
  CHECK_EQ_INT(sc.o.rc, DEXA_OK); /* a result for the model, not a retry */
  CHECK_EQ_INT(sc.o.is_error, 1);
  CHECK_CONTAINS(sc.o.text, "MCP call cancelled (the turn was stopped");
  CHECK(wait_log(cancelled, 30000));
}

static void test_stop_cancels_a_running_stdio_call(void) {
  begin();
  dexa_tool_source *s = source_for("fake", ",\"trustAnnotations\":true", "legacy");
  CHECK(s);
  stop_a_running_call(s, "fake__never", "recv tools/call", "recv notifications/cancelled");
  /* The connection goes on. */
  call_out o;
  call(s, "fake__echo", "{\"text\":\"after\"}", &o);
  CHECK_STR(o.text, "echo: after");
  dexa_tool_source_free(s);
  CHECK(no_leaks());
}

static void test_garbage_and_unknown_ids_are_ignored(void) {
  begin();
  dexa_tool_source *s = source_for("fake", NULL, "legacy");
  call_out o;
  call(s, "fake__garbage", "{}", &o);
  CHECK_EQ_INT(o.rc, DEXA_OK);
  CHECK_STR(o.text, "after garbage");
  dexa_tool_source_free(s);
  CHECK(no_leaks());
}

static void test_timeout_cancels_and_session_goes_on(void) {
  begin();
  dexa_tool_source *s = source_for("fake", ",\"timeoutMs\":500", "legacy");
  call_out o;
  /* A first call starts the server, so the timeout below is the call's
   * own and not a slow start's (python3 can take longer than 500 ms). */
  call(s, "fake__echo", "{\"text\":\"up\"}", &o);
  CHECK_EQ_INT(o.rc, DEXA_OK);
  call(s, "fake__never", "{}", &o);
  CHECK_EQ_INT(o.rc, DEXA_E_TIMEOUT);
  CHECK_CONTAINS(o.text, "timed out");
  CHECK(wait_log("recv notifications/cancelled", 10000));
  CHECK_EQ_INT(log_has("recv notifications/cancelled"), 1);
  call(s, "fake__echo", "{\"text\":\"still here\"}", &o);
  CHECK_EQ_INT(o.rc, DEXA_OK);
  CHECK_STR(o.text, "echo: still here");
  dexa_tool_source_free(s);
  CHECK(no_leaks());
}

static void test_progress_keeps_a_long_call_alive(void) {
  begin();
  /* The call takes 2.5 times its timeout; progress every 100 ms keeps it
   * alive, with room for a server that a loaded machine holds back. */
  dexa_tool_source *s = source_for("fake", ",\"timeoutMs\":1000", "legacy");
  call_out o;
  call(s, "fake__echo", "{\"text\":\"up\"}", &o); /* the server's start is not timed */
  CHECK_EQ_INT(o.rc, DEXA_OK);
  call(s, "fake__slow", "{\"ms\":2500}", &o);
  CHECK_EQ_INT(o.rc, DEXA_OK);
  CHECK_STR(o.text, "slow done");
  dexa_tool_source_free(s);
  CHECK(no_leaks());
}

static void test_oversized_message_is_refused_and_server_restarts(void) {
  begin();
  dexa_tool_source *s = source_for("fake", NULL, "legacy");
  call_out o;
  call(s, "fake__huge", "{}", &o);
  CHECK_EQ_INT(o.rc, DEXA_OK);
  CHECK(o.is_error);
  CHECK_CONTAINS(o.text, "size limit");
  call(s, "fake__echo", "{\"text\":\"after\"}", &o);
  CHECK_EQ_INT(o.rc, DEXA_OK);
  CHECK_STR(o.text, "echo: after");
  dexa_tool_source_free(s);
  CHECK(no_leaks());
}

static void test_dead_server_is_restarted_on_next_use(void) {
  begin();
  dexa_tool_source *s = source_for("fake", NULL, "legacy");
  call_out o;
  call(s, "fake__die", "{}", &o);
  CHECK_EQ_INT(o.rc, DEXA_E_IO);
  CHECK_CONTAINS(o.text, "unavailable");
  usleep(1100000); /* a failed start is not retried within a second */
  call(s, "fake__echo", "{\"text\":\"back\"}", &o);
  CHECK_EQ_INT(o.rc, DEXA_OK);
  CHECK_STR(o.text, "echo: back");
  CHECK_EQ_INT(log_has("recv initialize"), 2);
  dexa_tool_source_free(s);
  CHECK(no_leaks());
}

static void test_server_ping_is_answered(void) {
  begin();
  dexa_tool_source *s = source_for("fake", NULL, "legacy");
  call_out o;
  call(s, "fake__ping_first", "{}", &o);
  CHECK_EQ_INT(o.rc, DEXA_OK);
  CHECK_STR(o.text, "pong received");
  dexa_tool_source_free(s);
  CHECK(no_leaks());
}

static void test_modern_era_over_stdio(void) {
  begin();
  dexa_tool_source *s = source_for("m", ",\"trustAnnotations\":true", "modern");
  dexa_tool_list l;
  CHECK_EQ_INT(list(s, &l), DEXA_OK);
  CHECK_EQ_INT(l.count, 11);
  dexa__tool_list_free(&l);
  call_out o;
  call(s, "m__echo", "{\"text\":\"new\"}", &o);
  CHECK_EQ_INT(o.rc, DEXA_OK);
  CHECK_STR(o.text, "echo: new");
  CHECK_EQ_INT(log_has("recv server/discover"), 1);
  CHECK_EQ_INT(log_has("recv initialize"), 0);
  dexa_tool_source_free(s);
  CHECK(no_leaks());
}

static void test_missing_command_fails_listing_quickly(void) {
  begin();
  const char *json = "{\"mcpServers\":{\"gone\":{\"command\":\"/nonexistent/mcp-server\"}}}";
  dexa_mcp_config *cfg = NULL;
  CHECK_EQ_INT(dexa_mcp_config_load(&cfg, NULL, json, strlen(json), NULL, 0), DEXA_OK);
  dexa_tool_source **v = NULL;
  size_t n = 0;
  CHECK_EQ_INT(dexa_mcp_tool_sources_new(&v, &n, cfg), DEXA_OK);
  dexa_mcp_config_free(cfg);
  dexa_tool_list l;
  int64_t t0 = dexa__mcp_now_ms();
  CHECK(list(v[0], &l) != DEXA_OK);
  CHECK(dexa__mcp_now_ms() - t0 < 2000);
  dexa__tool_list_free(&l);
  call_out o;
  call(v[0], "gone__x", "{}", &o);
  CHECK_EQ_INT(o.rc, DEXA_E_IO);
  CHECK_CONTAINS(o.text, "nonexistent");
  dexa_mcp_tool_sources_free(v, n);
  CHECK(no_leaks());
}

typedef struct par {
  dexa_tool_source *s;
  int i;
  int ok;
} par;

static void *par_main(void *arg) {
  par *p = arg;
  call_out o;
  char args[64], want[64];
  snprintf(args, sizeof args, "{\"text\":\"t%d\"}", p->i);
  snprintf(want, sizeof want, "echo: t%d", p->i);
  if (p->i % 2) {
    call(p->s, "fake__slow", "{\"ms\":300}", &o);
    p->ok = o.rc == DEXA_OK && strcmp(o.text, "slow done") == 0;
  } else {
    call(p->s, "fake__echo", args, &o);
    p->ok = o.rc == DEXA_OK && strcmp(o.text, want) == 0;
  }
  return NULL;
}

static void test_concurrent_calls_share_one_connection(void) {
  begin();
  dexa_tool_source *s = source_for("fake", NULL, "legacy");
  pthread_t th[8];
  par p[8];
  for (int i = 0; i < 8; i++) {
    p[i] = (par){s, i, 0};
    pthread_create(&th[i], NULL, par_main, &p[i]);
  }
  for (int i = 0; i < 8; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < 8; i++) CHECK(p[i].ok);
  CHECK_EQ_INT(log_has("recv initialize"), 1);
  dexa_tool_source_free(s);
  CHECK(no_leaks());
}

/* ---- HTTP ---- */

static pid_t http_pid;
static char http_url[128];

static int start_http(void) {
  char port_file[512];
  snprintf(port_file, sizeof port_file, "%s/port", dir);
  unlink(port_file);
  fflush(NULL);
  http_pid = fork();
  if (http_pid == 0) {
    setenv("FAKE_LOG", logfile, 1);
    execlp("python3", "python3", script, "http", port_file, (char *)NULL);
    _exit(127);
  }
  for (int i = 0; i < 100; i++) {
    FILE *f = fopen(port_file, "r");
    int port = 0;
    if (f) {
      if (fscanf(f, "%d", &port) != 1) port = 0;
      fclose(f);
    }
    if (port) {
      snprintf(http_url, sizeof http_url, "http://127.0.0.1:%d/mcp", port);
      return 1;
    }
    usleep(50000);
  }
  return 0;
}

static void stop_http(void) {
  if (http_pid > 0) {
    kill(http_pid, SIGTERM);
    waitpid(http_pid, NULL, 0);
  }
  http_pid = 0;
}

static dexa_tool_source *http_source(const char *extra) {
  char json[1024];
  snprintf(json, sizeof json,
           "{\"mcpServers\":{\"web\":{\"url\":\"%s\",\"headers\":{\"Authorization\":\"Bearer x\"},"
           "\"trustAnnotations\":true%s}}}",
           http_url, extra);
  dexa_mcp_config *cfg = NULL;
  if (dexa_mcp_config_load(&cfg, NULL, json, strlen(json), NULL, 0) != DEXA_OK) return NULL;
  dexa_tool_source **v = NULL;
  size_t n = 0;
  dexa_mcp_tool_sources_new(&v, &n, cfg);
  dexa_mcp_config_free(cfg);
  dexa_tool_source *s = v ? v[0] : NULL;
  free(v);
  return s;
}

static void test_http_legacy_sessions_sse_resume_and_delete(void) {
  begin();
  dexa_tool_source *s = http_source(",\"protocolVersion\":\"2025-11-25\"");
  CHECK(s);
  dexa_tool_list l;
  CHECK_EQ_INT(list(s, &l), DEXA_OK);
  CHECK_EQ_INT(l.count, 11);
  dexa__tool_list_free(&l);
  call_out o;
  call(s, "web__echo", "{\"text\":\"h\"}", &o);
  CHECK_EQ_INT(o.rc, DEXA_OK);
  CHECK_STR(o.text, "http echo: h");
  int64_t t0 = dexa__mcp_now_ms();
  call(s, "web__slow", "{}", &o); /* the stream closes early: GET + Last-Event-ID after retry */
  CHECK_EQ_INT(o.rc, DEXA_OK);
  CHECK_STR(o.text, "resumed result");
  CHECK(dexa__mcp_now_ms() - t0 >= 300);
  CHECK(log_has("http GET ev-"));
  CHECK(log_has("version=2025-11-25"));
  dexa_tool_source_free(s);
  CHECK_EQ_INT(log_has("http DELETE known"), 1);
  CHECK(no_leaks());
}

static void test_stop_cancels_a_running_http_call(void) {
  begin();
  dexa_tool_source *s = http_source(",\"protocolVersion\":\"2025-11-25\"");
  CHECK(s);
  stop_a_running_call(s, "web__never", "http POST tools/call",
                      "http POST notifications/cancelled");
  CHECK(wait_log("http stream of", 30000)); /* its stream was closed too */
  dexa_tool_source_free(s);
  CHECK(no_leaks());
}

static void test_http_modern_era_headers(void) {
  begin();
  dexa_tool_source *s = http_source("");
  CHECK(s);
  dexa_tool_list l;
  CHECK_EQ_INT(list(s, &l), DEXA_OK);
  CHECK_EQ_INT(l.count, 2);
  dexa__tool_list_free(&l);
  call_out o;
  call(s, "web__echo", "{\"text\":\"m\"}", &o);
  CHECK_EQ_INT(o.rc, DEXA_OK);
  CHECK_STR(o.text, "modern echo: m");
  CHECK_EQ_INT(log_has("recv initialize"), 0);
  CHECK_EQ_INT(log_has("http POST initialize"), 0);
  dexa_tool_source_free(s);
  CHECK(no_leaks());
}

static void test_http_server_down_is_an_error_not_a_hang(void) {
  stop_http(); /* its URL now refuses connections */
  begin();
  dexa_tool_source *s = http_source(",\"timeoutMs\":2000");
  dexa_tool_list l;
  int64_t t0 = dexa__mcp_now_ms();
  CHECK(list(s, &l) != DEXA_OK);
  CHECK(dexa__mcp_now_ms() - t0 < 3000);
  dexa__tool_list_free(&l);
  dexa_tool_source_free(s);
  CHECK(no_leaks());
}

/* ---- through the runtime ---- */

static char *snapshot(dexa_runtime *rt, const char *sid) {
  char *out = NULL;
  size_t n;
  dexa_runtime_call(rt, sid, "snapshot", "{}", 2, &out, &n);
  return out;
}

static int wait_for(dexa_runtime *rt, const char *sid, const char *needle, int ms) {
  for (int t = 0; t <= ms; t += 50) {
    char *s = snapshot(rt, sid);
    int found = s && strstr(s, needle);
    dexa_free(s);
    if (found) return 1;
    usleep(50000);
  }
  return 0;
}

static void send_text(dexa_runtime *rt, const char *sid, const char *text) {
  char json[512], *out = NULL;
  size_t n;
  snprintf(json, sizeof json, "{\"text\":\"%s\"}", text);
  dexa_runtime_call(rt, sid, "send_message", json, strlen(json), &out, &n);
  dexa_free(out);
}

static void test_session_with_a_down_server_and_an_approved_write(void) {
  begin();
  char json[8192];
  snprintf(json, sizeof json,
           "{\"mcpServers\":{\"down\":{\"command\":\"/nonexistent/mcp\"},"
           "\"fake\":{\"command\":\"python3\",\"args\":[\"%s\",\"stdio\"],\"env\":{\"FAKE_LOG\":\"%s\"},"
           "\"trustAnnotations\":true}}}",
           script, logfile);
  dexa_mcp_config *cfg = NULL;
  CHECK_EQ_INT(dexa_mcp_config_load(&cfg, NULL, json, strlen(json), NULL, 0), DEXA_OK);
  dexa_tool_source **v = NULL;
  size_t n = 0;
  CHECK_EQ_INT(dexa_mcp_tool_sources_new(&v, &n, cfg), DEXA_OK);
  dexa_mcp_config_free(cfg);
  dexa_model *demo = NULL;
  dexa_model_demo_new(&demo, "mock/dex");
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.models = &demo;
  def.model_count = 1;
  def.tool_sources = v;
  def.tool_source_count = n;
  dexa_agent *agent = NULL;
  char err[256];
  CHECK_EQ_INT(dexa_agent_new(&agent, &def, err, sizeof err), DEXA_OK);
  dexa_model_free(demo);
  dexa_mcp_tool_sources_free(v, n);
  dexa_runtime_options o;
  dexa_runtime_options_init(&o, sizeof o);
  char db[512];
  snprintf(db, sizeof db, "%s/agent.db", dir);
  o.store = db;
  dexa_runtime *rt = NULL;
  CHECK_EQ_INT(dexa_runtime_new(&rt, agent, &o, err, sizeof err), DEXA_OK);
  CHECK_EQ_INT(dexa_runtime_start(rt, 3), DEXA_OK);
  dexa_runtime_start_session(rt, "s-mcp", NULL, 0, NULL, NULL);
  send_text(rt, "s-mcp", "/tool fake__echo {\\\"text\\\":\\\"hi\\\"}");
  CHECK(wait_for(rt, "s-mcp", "echo: hi", 15000));
  send_text(rt, "s-mcp", "/tool fake__write {}");
  CHECK(wait_for(rt, "s-mcp", "\"kind\":\"approval\"", 15000));
  CHECK_EQ_INT(log_has("write "), 0); /* waits for approval */
  char *out = NULL;
  size_t len;
  const char *dec = "{\"call_id\":\"demo-t2r1c1\",\"decision\":\"approve\"}";
  CHECK_EQ_INT(dexa_runtime_call(rt, "s-mcp", "resolve_approval", dec, strlen(dec), &out, &len), DEXA_OK);
  dexa_free(out);
  CHECK(wait_for(rt, "s-mcp", "Tool fake__write (ok): written", 15000));
  CHECK_EQ_INT(log_has("write s-mcp:demo-t2r1c1"), 1);
  dexa_runtime_wait_idle(rt, "s-mcp", 10000);
  dexa_runtime_free(rt);
  dexa_agent_free(agent);
  unlink(db);
  CHECK(no_leaks());
}

/* Stop during an MCP call: the server gets notifications/cancelled, the
 * call's result is recorded, and the turn ends cancelled. */
static void test_stop_of_a_session_cancels_its_mcp_call(void) {
  begin();
  char json[8192];
  snprintf(json, sizeof json,
           "{\"mcpServers\":{\"fake\":{\"command\":\"python3\",\"args\":[\"%s\",\"stdio\"],"
           "\"env\":{\"FAKE_LOG\":\"%s\"},\"trustAnnotations\":true}}}",
           script, logfile);
  dexa_mcp_config *cfg = NULL;
  CHECK_EQ_INT(dexa_mcp_config_load(&cfg, NULL, json, strlen(json), NULL, 0), DEXA_OK);
  dexa_tool_source **v = NULL;
  size_t n = 0;
  CHECK_EQ_INT(dexa_mcp_tool_sources_new(&v, &n, cfg), DEXA_OK);
  dexa_mcp_config_free(cfg);
  dexa_model *demo = NULL;
  dexa_model_demo_new(&demo, "mock/dex");
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.models = &demo;
  def.model_count = 1;
  def.tool_sources = v;
  def.tool_source_count = n;
  dexa_agent *agent = NULL;
  CHECK_EQ_INT(dexa_agent_new(&agent, &def, NULL, 0), DEXA_OK);
  dexa_model_free(demo);
  dexa_mcp_tool_sources_free(v, n);
  dexa_runtime_options o;
  dexa_runtime_options_init(&o, sizeof o);
  char db[512];
  snprintf(db, sizeof db, "%s/stop.db", dir);
  unlink(db);
  o.store = db;
  dexa_runtime *rt = NULL;
  CHECK_EQ_INT(dexa_runtime_new(&rt, agent, &o, NULL, 0), DEXA_OK);
  CHECK_EQ_INT(dexa_runtime_start(rt, 2), DEXA_OK);
  dexa_runtime_start_session(rt, "s-stop", NULL, 0, NULL, NULL);
  send_text(rt, "s-stop", "/tool fake__never {}");
  int started = wait_log("recv tools/call", 60000);
  char *out = NULL;
  size_t len;
  int rc = dexa_runtime_call(rt, "s-stop", "cancel_turn", "{}", 2, &out, &len);
  dexa_free(out);
  int recorded = wait_for(rt, "s-stop", "MCP call cancelled", 30000);
  int cancelled = wait_log("recv notifications/cancelled", 30000);
  int ended = wait_for(rt, "s-stop", "\"status\":\"cancelled\"", 30000);
  dexa_runtime_wait_idle(rt, "s-stop", 30000);
  dexa_runtime_free(rt);
  dexa_agent_free(agent);
  unlink(db);
  CHECK(started);
  CHECK_EQ_INT(rc, DEXA_OK);
  CHECK(recorded);
  CHECK(cancelled);
  CHECK(ended);
  CHECK(no_leaks());
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/dexa-mcp-fake-XXXXXX");
  if (!mkdtemp(dir)) return 1;
  snprintf(logfile, sizeof logfile, "%s/log", dir);
  if (!realpath("test/mcp/_fake_server.py", script)) {
    printf("0 passed, 1 failed\n");
    return 1;
  }
  if (system("python3 -c 'import http.server' >/dev/null 2>&1") != 0) {
    printf("skip all\n    skipped: python3 is not installed\n0 passed, 0 failed, 1 skipped\n");
    return 0;
  }
  RUN(test_lists_every_page_with_stable_names_and_effects);
  RUN(test_names_of_1_0_still_resolve);
  RUN(test_untrusted_server_tools_are_writes_that_need_approval);
  RUN(test_call_carries_idempotency_key_and_keeps_content);
  RUN(test_stop_cancels_a_running_stdio_call);
  RUN(test_garbage_and_unknown_ids_are_ignored);
  RUN(test_timeout_cancels_and_session_goes_on);
  RUN(test_progress_keeps_a_long_call_alive);
  RUN(test_oversized_message_is_refused_and_server_restarts);
  RUN(test_dead_server_is_restarted_on_next_use);
  RUN(test_server_ping_is_answered);
  RUN(test_modern_era_over_stdio);
  RUN(test_missing_command_fails_listing_quickly);
  RUN(test_concurrent_calls_share_one_connection);
  RUN(test_session_with_a_down_server_and_an_approved_write);
  RUN(test_stop_of_a_session_cancels_its_mcp_call);
  if (start_http()) {
    RUN(test_http_legacy_sessions_sse_resume_and_delete);
    RUN(test_stop_cancels_a_running_http_call);
    RUN(test_http_modern_era_headers);
    RUN(test_http_server_down_is_an_error_not_a_hang);
  } else {
    printf("FAIL start_http\n");
    t_failed++;
  }
  stop_http();
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) fprintf(stderr, "cleanup failed\n");
  TEST_MAIN_END();
}
