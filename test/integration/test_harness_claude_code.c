/* The Claude Code harness against the real CLI (@anthropic-ai/claude-code,
 * pinned, installed into build/npm-claude by _claude_code_setup.sh) talking
 * to the mock LLM server @copilotkit/aimock on 127.0.0.1 (a free port, a
 * dummy key from the environment, telemetry and non-essential traffic off,
 * the CLI's config in a temporary directory). Each tool counts its calls
 * in a file, so the counts are the tool's own, across processes:
 *   - a read runs inside the segment (one RunModel, recorded as an event);
 *   - a write that needs approval ends the segment, waits, runs once, and
 *     the resumed session gets its recorded result;
 *   - two writes in one reply: one per segment, the second asked again;
 *   - a failed segment is retried whole: the read repeats, the write not;
 *   - kill -9 of the worker mid-segment (inside a read) and after the write
 *     Step: a new process resumes, the write never runs twice, and the
 *     killed worker's CLI does not outlive it;
 *   - Stop during a segment ends the CLI: no process of its group is left;
 *   - a write from a subagent is denied and the model is told why;
 *   - the state limit ends a session whose transcript outgrows it;
 *   - an MCP tool source's read (test/mcp/_fake_server.py) is offered to the
 *     CLI and runs inside the segment;
 *   - an idempotent write ends the segment and runs in CallTool (a
 *     transient failure is retried there, which CallSingleAttemptTool would
 *     not do);
 *   - ask_user ends the segment: the CLI exits, the question waits, the
 *     answer reaches the resumed Claude session;
 *   - a segment that outlasts the harness's timeout_ms is ended (its CLI
 *     group reaped), retried, and fails the turn with the timeout.
 * The scripted conversations are aimock fixtures matched on the request
 * (the user's text, or the id of the tool result the request ends with).
 * test-needs: sqlite providers */
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <dexagents/dexagents.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testing.h"

static char dir[256];
static char claude[1024];
static pid_t aimock_pid;
static int port;
static const char *skip_reason;

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- counter files: one line per tool call ---- */

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

static void append_line(const char *name, const char *line, size_t len) {
  char path[512];
  path_in_dir(path, sizeof path, name);
  FILE *f = fopen(path, "a");
  if (!f) return;
  fprintf(f, "%.*s\n", (int)len, line);
  fclose(f);
}

static int wait_lines(const char *name, int n, int ms) {
  for (int64_t end = now_ms() + ms; now_ms() < end; usleep(20000))
    if (count_lines(name) >= n) return 1;
  return count_lines(name) >= n;
}

/* ---- the host's tools ---- */

static int counted(const dexa_tool_invocation *inv, const char *file, dexa_tool_output *out,
                   const char *reply) {
  const char *args;
  size_t len;
  dexa_tool_invocation_arguments(inv, &args, &len);
  append_line(file, args, len);
  char text[256];
  int k = snprintf(text, sizeof text, "%s %.*s", reply, (int)len, args);
  return dexa_tool_output_set_text(out, text, (size_t)k, 0);
}

static int lookup(void *u, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  return counted(inv, "lookups", out, "lookup found: shipped;");
}

/* 1 when file has the line already. */
static int seen(const char *name, const char *line, size_t len) {
  char path[512], buf[1024];
  path_in_dir(path, sizeof path, name);
  FILE *f = fopen(path, "r");
  int found = 0;
  while (f && !found && fgets(buf, sizeof buf, f))
    found = strlen(buf) == len + 1 && memcmp(buf, line, len) == 0;
  if (f) fclose(f);
  return found;
}

/* Its first call with given arguments outlasts any test (the worker is
 * killed inside it); a rerun is quick. */
static int slow_lookup(void *u, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  const char *args;
  size_t len;
  dexa_tool_invocation_arguments(inv, &args, &len);
  int first = !seen("slow_lookups", args, len);
  int rc = counted(inv, "slow_lookups", out, "slow lookup found: shipped;");
  if (first) sleep(60);
  return rc;
}

static int send_mail(void *u, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  return counted(inv, "mails", out, "mail delivered;");
}

static int delete_all(void *u, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  return counted(inv, "deletes", out, "deleted everything;");
}

/* An idempotent write whose first call fails transiently: CallTool runs it
 * again (CallSingleAttemptTool would record the error). */
static int tag_order(void *u, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  int first = count_lines("tags") == 0;
  int rc = counted(inv, "tags", out, "order tagged;");
  if (!first) return rc;
  static const char busy[] = "the tag service is busy";
  dexa_tool_output_set_text(out, busy, sizeof busy - 1, 1);
  return DEXA_E_TRANSIENT;
}

static char mcp_script[600];

/* The fake MCP server's stdio source (its tools: fake__echo, a trusted read,
 * and more), or NULL. */
static dexa_tool_source *mcp_source(void) {
  char json[2048], log[300], err[256];
  path_in_dir(log, sizeof log, "mcp.log");
  snprintf(json, sizeof json,
           "{\"mcpServers\":{\"fake\":{\"command\":\"python3\",\"args\":[\"%s\",\"stdio\",\"legacy\"],"
           "\"env\":{\"FAKE_LOG\":\"%s\"},\"trustAnnotations\":true}}}",
           mcp_script, log);
  dexa_mcp_config *cfg = NULL;
  if (dexa_mcp_config_load(&cfg, NULL, json, strlen(json), err, sizeof err) != DEXA_OK) {
    fprintf(stderr, "    mcp config: %s\n", err);
    return NULL;
  }
  dexa_tool_source **v = NULL;
  size_t n = 0;
  dexa_mcp_tool_sources_new(&v, &n, cfg);
  dexa_mcp_config_free(cfg);
  dexa_tool_source *s = n == 1 ? v[0] : NULL;
  for (size_t i = 1; i < n; i++) dexa_tool_source_free(v[i]);
  free(v);
  return s;
}

static const char *const obj_schema = "{\"type\":\"object\",\"properties\":{}}";

static dexa_agent *make_agent_with(int64_t max_state_bytes, int64_t timeout_ms, int with_mcp) {
  char opts[2048], home[300], err[256] = "";
  snprintf(home, sizeof home, "%s/home", dir);
  snprintf(opts, sizeof opts,
           "{\"cli_path\":\"%s\",\"model\":\"claude-test\",\"timeout_ms\":%lld,"
           "\"allowed_tools\":[\"Agent\"],\"cwd\":\"%s\",\"env\":{"
           "\"ANTHROPIC_BASE_URL\":\"http://127.0.0.1:%d\",\"HOME\":\"%s\","
           "\"DISABLE_TELEMETRY\":\"1\",\"DISABLE_ERROR_REPORTING\":\"1\","
           "\"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC\":\"1\",\"DISABLE_AUTOUPDATER\":\"1\","
           "\"CLAUDE_CODE_MAX_RETRIES\":\"0\"}}",
           claude, (long long)timeout_ms, dir, port, home);
  dexa_model *m = NULL;
  if (dexa_harness_claude_code_new(&m, "claude-code/test", opts, strlen(opts), err,
                                   sizeof err) != DEXA_OK) {
    fprintf(stderr, "    harness: %s\n", err);
    return NULL;
  }
  dexa_tool_source *tools;
  dexa_function_tools_new(&tools, "fns");
  dexa_function_tools_add(tools, "lookup", "Looks an order up", obj_schema, DEXA_TOOL_READ,
                          DEXA_APPROVAL_NONE, lookup, NULL);
  dexa_function_tools_add(tools, "slow_lookup", "Looks an order up, slowly", obj_schema,
                          DEXA_TOOL_READ, DEXA_APPROVAL_NONE, slow_lookup, NULL);
  dexa_function_tools_add(tools, "send_mail", "Sends a mail", obj_schema, DEXA_TOOL_WRITE,
                          DEXA_APPROVAL_NONE, send_mail, NULL);
  dexa_function_tools_add(tools, "delete_all", "Deletes every order", obj_schema,
                          DEXA_TOOL_WRITE, DEXA_APPROVAL_REQUIRED, delete_all, NULL);
  dexa_function_tools_add(tools, "tag_order", "Tags an order (idempotent)", obj_schema,
                          DEXA_TOOL_IDEMPOTENT_WRITE, DEXA_APPROVAL_NONE, tag_order, NULL);
  dexa_tool_source *sources[2] = {tools, with_mcp ? mcp_source() : NULL};
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.instructions = "You are a test agent.";
  def.models = &m;
  def.model_count = 1;
  def.tool_sources = sources;
  def.tool_source_count = sources[1] ? 2 : 1;
  def.builtin_tools = DEXA_BUILTIN_ASK_USER;
  if (max_state_bytes) {
    def.max_state_bytes = max_state_bytes;
    def.max_message_bytes = 4096;
  }
  dexa_agent *a = NULL;
  if (dexa_agent_new(&a, &def, err, sizeof err) != DEXA_OK) fprintf(stderr, "    agent: %s\n", err);
  dexa_model_free(m);
  dexa_tool_source_free(tools);
  dexa_tool_source_free(sources[1]);
  return a;
}

static dexa_agent *make_agent(int64_t max_state_bytes) {
  return make_agent_with(max_state_bytes, 180000, 0);
}

/* ---- aimock ---- */

/* One conversation per test, told apart by the user's first text and by
 * the tool-use ids (unique across the file). Fixtures matched on a tool
 * result come first: a request that ends with one still has the user's
 * text before it. */
static const char *const fixtures =
    "{\"fixtures\":[\n"
    /* a read inside the segment */
    "{\"match\":{\"toolCallId\":\"toolu_rd1\"},\"response\":{\"content\":\"Order 42 has shipped.\"}},\n"
    "{\"match\":{\"userMessage\":\"cc-read\"},\"response\":{\"toolCalls\":[{\"id\":\"toolu_rd1\","
    "\"name\":\"mcp__dex__lookup\",\"arguments\":\"{\\\"order\\\":\\\"42\\\"}\"}]}},\n"
    /* a write that needs approval */
    "{\"match\":{\"toolCallId\":\"toolu_ap1\",\"toolResultContains\":\"deleted everything\"},"
    "\"response\":{\"content\":\"Every order is deleted.\"}},\n"
    "{\"match\":{\"userMessage\":\"cc-approve\"},\"response\":{\"toolCalls\":[{\"id\":\"toolu_ap1\","
    "\"name\":\"mcp__dex__delete_all\",\"arguments\":\"{\\\"scope\\\":\\\"all\\\"}\"}]}},\n"
    /* two writes in one reply */
    "{\"match\":{\"toolCallId\":\"toolu_tw3\",\"toolResultContains\":\"mail delivered\"},"
    "\"response\":{\"content\":\"Both mails are sent.\"}},\n"
    "{\"match\":{\"toolCallId\":\"toolu_tw2\",\"toolResultContains\":\"one call that changes\"},"
    "\"response\":{\"toolCalls\":[{\"id\":\"toolu_tw3\",\"name\":\"mcp__dex__send_mail\","
    "\"arguments\":\"{\\\"to\\\":\\\"bea\\\"}\"}]}},\n"
    "{\"match\":{\"userMessage\":\"cc-two\"},\"response\":{\"toolCalls\":["
    "{\"id\":\"toolu_tw1\",\"name\":\"mcp__dex__send_mail\",\"arguments\":\"{\\\"to\\\":\\\"ann\\\"}\"},"
    "{\"id\":\"toolu_tw2\",\"name\":\"mcp__dex__send_mail\",\"arguments\":\"{\\\"to\\\":\\\"bea\\\"}\"}]}},\n"
    /* a failed segment, twice: before and after the write */
    "{\"match\":{\"toolCallId\":\"toolu_rt2\",\"sequenceIndex\":0},\"response\":{\"error\":"
    "{\"message\":\"upstream exploded\",\"type\":\"api_error\"},\"status\":500}},\n"
    "{\"match\":{\"toolCallId\":\"toolu_rt2\"},\"response\":{\"content\":\"Looked up and mailed.\"}},\n"
    "{\"match\":{\"toolCallId\":\"toolu_rt1\",\"sequenceIndex\":0},\"response\":{\"error\":"
    "{\"message\":\"upstream exploded\",\"type\":\"api_error\"},\"status\":500}},\n"
    "{\"match\":{\"toolCallId\":\"toolu_rt1\"},\"response\":{\"toolCalls\":[{\"id\":\"toolu_rt2\","
    "\"name\":\"mcp__dex__send_mail\",\"arguments\":\"{\\\"to\\\":\\\"retry\\\"}\"}]}},\n"
    "{\"match\":{\"userMessage\":\"cc-retry\"},\"response\":{\"toolCalls\":[{\"id\":\"toolu_rt1\","
    "\"name\":\"mcp__dex__lookup\",\"arguments\":\"{\\\"order\\\":\\\"7\\\"}\"}]}},\n"
    /* Stop during a segment: an answer 30 s late */
    "{\"match\":{\"userMessage\":\"cc-stop\"},\"response\":{\"content\":"
    "\"This answer streams slowly and is never finished.\"},\"chaos\":{\"latencyMs\":30000}},\n"
    /* kill -9 inside a read inside the segment */
    "{\"match\":{\"toolCallId\":\"toolu_km1\"},\"response\":{\"content\":\"The slow order has shipped.\"}},\n"
    "{\"match\":{\"userMessage\":\"cc-kill-mid\"},\"response\":{\"toolCalls\":[{\"id\":\"toolu_km1\","
    "\"name\":\"mcp__dex__slow_lookup\",\"arguments\":\"{\\\"order\\\":\\\"9\\\"}\"}]}},\n"
    /* kill -9 in the segment after the write's Step, inside a slow read */
    "{\"match\":{\"toolCallId\":\"toolu_ka2\"},\"response\":{\"content\":\"The mail went out once.\"}},\n"
    "{\"match\":{\"toolCallId\":\"toolu_ka1\",\"toolResultContains\":\"mail delivered\"},"
    "\"response\":{\"toolCalls\":[{\"id\":\"toolu_ka2\",\"name\":\"mcp__dex__slow_lookup\","
    "\"arguments\":\"{\\\"order\\\":\\\"crash\\\"}\"}]}},\n"
    "{\"match\":{\"userMessage\":\"cc-kill-after\"},\"response\":{\"toolCalls\":[{\"id\":\"toolu_ka1\","
    "\"name\":\"mcp__dex__send_mail\",\"arguments\":\"{\\\"to\\\":\\\"crash\\\"}\"}]}},\n"
    /* a subagent's write */
    "{\"match\":{\"toolCallId\":\"toolu_sb2\",\"toolResultContains\":\"main conversation\"},"
    "\"response\":{\"content\":\"I may not send mail here; the main conversation must.\"}},\n"
    "{\"match\":{\"toolCallId\":\"toolu_sb1\"},\"response\":{\"content\":\"The subagent left the mail to me.\"}},\n"
    "{\"match\":{\"userMessage\":\"sub-task-mail\"},\"response\":{\"toolCalls\":[{\"id\":\"toolu_sb2\","
    "\"name\":\"mcp__dex__send_mail\",\"arguments\":\"{\\\"to\\\":\\\"sub\\\"}\"}]}},\n"
    "{\"match\":{\"userMessage\":\"cc-subagent\"},\"response\":{\"toolCalls\":[{\"id\":\"toolu_sb1\","
    "\"name\":\"Agent\",\"arguments\":\"{\\\"description\\\":\\\"mail it\\\",\\\"prompt\\\":"
    "\\\"sub-task-mail\\\",\\\"subagent_type\\\":\\\"general-purpose\\\"}\"}]}},\n"
    /* queued and steered messages: the first answers are 4 s late */
    "{\"match\":{\"userMessage\":\"cc-queue-2\"},\"response\":{\"content\":\"Second answer.\"}},\n"
    "{\"match\":{\"userMessage\":\"cc-queue-1\"},\"response\":{\"content\":\"First answer.\"},"
    "\"chaos\":{\"latencyMs\":4000}},\n"
    "{\"match\":{\"userMessage\":\"cc-steer-2\"},\"response\":{\"content\":\"Answer to the steer.\"}},\n"
    "{\"match\":{\"userMessage\":\"cc-steer-1\"},\"response\":{\"content\":\"Steered-away answer.\"},"
    "\"chaos\":{\"latencyMs\":4000}},\n"
    /* an MCP tool source's read */
    "{\"match\":{\"toolCallId\":\"toolu_mc1\",\"toolResultContains\":\"hello mcp\"},"
    "\"response\":{\"content\":\"The server echoed it.\"}},\n"
    "{\"match\":{\"userMessage\":\"cc-mcp\"},\"response\":{\"toolCalls\":[{\"id\":\"toolu_mc1\","
    "\"name\":\"mcp__dex__fake__echo\",\"arguments\":\"{\\\"text\\\":\\\"hello mcp\\\"}\"}]}},\n"
    /* an idempotent write */
    "{\"match\":{\"toolCallId\":\"toolu_id1\",\"toolResultContains\":\"order tagged\"},"
    "\"response\":{\"content\":\"The order is tagged.\"}},\n"
    "{\"match\":{\"userMessage\":\"cc-idem\"},\"response\":{\"toolCalls\":[{\"id\":\"toolu_id1\","
    "\"name\":\"mcp__dex__tag_order\",\"arguments\":\"{\\\"order\\\":\\\"5\\\"}\"}]}},\n"
    /* ask_user */
    "{\"match\":{\"toolCallId\":\"toolu_as1\",\"toolResultContains\":\"blue\"},"
    "\"response\":{\"content\":\"Blue it is.\"}},\n"
    "{\"match\":{\"userMessage\":\"cc-ask\"},\"response\":{\"toolCalls\":[{\"id\":\"toolu_as1\","
    "\"name\":\"mcp__dex__ask_user\",\"arguments\":\"{\\\"prompt\\\":\\\"Which color?\\\"}\"}]}},\n"
    /* a segment past its timeout: an answer 30 s late */
    "{\"match\":{\"userMessage\":\"cc-timeout\"},\"response\":{\"content\":"
    "\"This answer is far too late.\"},\"chaos\":{\"latencyMs\":30000}},\n"
    /* anything else (the state-limit session, the CLI's side requests) */
    "{\"match\":{},\"response\":{\"content\":\"Noted.\"}}\n"
    "]}\n";

static int spawn_aimock(const char *fx) {
  char cli[600];
  snprintf(cli, sizeof cli, "build/npm-claude/node_modules/@copilotkit/aimock/dist/cli.js");
  int fds[2];
  if (pipe(fds) != 0) return -1;
  aimock_pid = fork();
  if (aimock_pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM); /* not left behind by a killed test */
    /* Node 22 from the build folder, as the CLI's install used. */
    execl("build/npm-claude/node_modules/.bin/node", "node", cli, "-h", "127.0.0.1", "-p", "0",
          "-f", fx, "--validate-on-load", (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  FILE *out = fdopen(fds[0], "r");
  char line[1024];
  static const char key[] = "listening on http://127.0.0.1:";
  while (!port && fgets(line, sizeof line, out)) {
    char *p = strstr(line, key);
    if (p) port = atoi(p + strlen(key));
    else fprintf(stderr, "    aimock: %s", line);
  }
  if (port && fork() == 0) { /* keeps draining its output */
    while (fgets(line, sizeof line, out)) {
    }
    _exit(0);
  }
  fclose(out);
  return port ? 0 : -1;
}

static void stop_aimock(void) {
  if (aimock_pid > 0) {
    kill(-aimock_pid, SIGTERM);
    waitpid(aimock_pid, NULL, 0);
    aimock_pid = 0;
  }
}

static size_t collect(char *data, size_t size, size_t n, void *user) {
  fwrite(data, size, n, user);
  return size * n;
}

/* aimock's journal of requests, as text (free with free). */
static char *journal(void) {
  char url[128], *text = NULL;
  size_t len = 0;
  snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/_requests", port);
  FILE *mem = open_memstream(&text, &len);
  CURL *c = curl_easy_init();
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, mem);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
  curl_easy_perform(c);
  curl_easy_cleanup(c);
  fclose(mem);
  return text;
}

static int wait_journal(const char *needle, int ms) {
  for (int64_t end = now_ms() + ms; now_ms() < end; usleep(50000)) {
    char *j = journal();
    int found = j && strstr(j, needle);
    free(j);
    if (found) return 1;
  }
  return 0;
}

/* ---- the CLI's processes ---- */

/* The CLI processes whose parent is parent (from /proc). */
static int cli_children(pid_t parent, pid_t *out, int max) {
  DIR *d = opendir("/proc");
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)) && n < max) {
    pid_t pid = (pid_t)atoi(e->d_name);
    if (pid <= 0) continue;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[k] = '\0';
    char *rp = strrchr(buf, ')');
    int ppid = 0;
    char state = 0;
    if (!rp || sscanf(rp + 2, "%c %d", &state, &ppid) != 2 || ppid != parent || state == 'Z')
      continue;
    if (strstr(buf, "(claude")) out[n++] = pid;
  }
  if (d) closedir(d);
  return n;
}

static pid_t wait_cli_child(pid_t parent, int ms) {
  pid_t p[4];
  for (int64_t end = now_ms() + ms; now_ms() < end; usleep(20000))
    if (cli_children(parent, p, 4) > 0) return p[0];
  return 0;
}

/* 1 when no process of group pgid is left (zombies do not count). */
static int group_gone(pid_t pgid) {
  DIR *d = opendir("/proc");
  struct dirent *e;
  int left = 0;
  while (d && (e = readdir(d)) && !left) {
    pid_t pid = (pid_t)atoi(e->d_name);
    if (pid <= 0) continue;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[k] = '\0';
    char *rp = strrchr(buf, ')');
    char state = 0;
    int ppid = 0, pg = 0;
    if (rp && sscanf(rp + 2, "%c %d %d", &state, &ppid, &pg) == 3 && pg == pgid && state != 'Z')
      left = 1;
  }
  if (d) closedir(d);
  return !left;
}

static int wait_group_gone(pid_t pgid, int ms) {
  for (int64_t end = now_ms() + ms; now_ms() < end; usleep(20000))
    if (group_gone(pgid)) return 1;
  return group_gone(pgid);
}

/* ---- sessions ---- */

static dexa_runtime *open_runtime(dexa_agent *a, const char *db_name) {
  char store[512], err[256];
  path_in_dir(store, sizeof store, db_name);
  dexa_runtime_options o;
  dexa_runtime_options_init(&o, sizeof o);
  o.store = store;
  o.lease_ms = 1000;
  dexa_runtime *rt = NULL;
  if (dexa_runtime_new(&rt, a, &o, err, sizeof err) != DEXA_OK)
    fprintf(stderr, "    runtime: %s\n", err);
  return rt;
}

static int call(dexa_runtime *rt, const char *sid, const char *rpc, const char *input) {
  char *o = NULL;
  size_t n;
  int rc = dexa_runtime_call(rt, sid, rpc, input, strlen(input), &o, &n);
  if (rc != DEXA_OK) fprintf(stderr, "    %s: %s\n", rpc, o ? o : "");
  dexa_free(o);
  return rc;
}

static int start_session(dexa_runtime *rt, const char *sid, const char *text) {
  int rc = dexa_runtime_start_session(rt, sid, NULL, 0, NULL, NULL);
  char in[256];
  snprintf(in, sizeof in, "{\"text\":\"%s\"}", text);
  return rc == DEXA_OK ? call(rt, sid, "send_message", in) : rc;
}

static char *snapshot(dexa_runtime *rt, const char *sid) {
  char *s = NULL;
  size_t n;
  dexa_runtime_call(rt, sid, "snapshot", "{}", 2, &s, &n);
  return s;
}

static int wait_snapshot(dexa_runtime *rt, const char *sid, const char *needle, int ms) {
  for (int64_t end = now_ms() + ms; now_ms() < end; usleep(50000)) {
    char *s = snapshot(rt, sid);
    int found = s && strstr(s, needle);
    dexa_free(s);
    if (found) return 1;
  }
  return 0;
}

static int count_events(dexa_runtime *rt, const char *sid, const char *type) {
  char *out = NULL;
  size_t n;
  if (dexa_runtime_read_events(rt, sid, NULL, 1000, 0, &out, &n) != DEXA_OK) return -1;
  char needle[96];
  snprintf(needle, sizeof needle, "\"type\":\"%s\"", type);
  int k = 0;
  for (const char *p = out; (p = strstr(p, needle)); p++) k++;
  dexa_free(out);
  return k;
}

static void show(dexa_runtime *rt, const char *sid) {
  char *s = snapshot(rt, sid), *ev = NULL;
  size_t n;
  dexa_runtime_read_events(rt, sid, NULL, 1000, 0, &ev, &n);
  fprintf(stderr, "    snapshot: %.3000s\n    events: %.6000s\n", s ? s : "", ev ? ev : "");
  dexa_free(s);
  dexa_free(ev);
}

/* Waits until the session's answer holds needle; shows the session if not. */
static int answered(dexa_runtime *rt, const char *sid, const char *needle, int ms) {
  int ok = wait_snapshot(rt, sid, needle, ms);
  if (!ok) show(rt, sid);
  return ok;
}

/* The runtime of the tests that need no crash (made after those, which
 * fork: a process with running threads must not fork a worker). */
static dexa_agent *agent;
static dexa_runtime *rt;

static int shared_runtime(void) {
  if (rt) return 1;
  agent = make_agent_with(0, 180000, 1);
  rt = agent ? open_runtime(agent, "shared.db") : NULL;
  return rt && dexa_runtime_start(rt, 2) == DEXA_OK;
}

/* ---- tests ---- */

static void test_a_read_runs_inside_the_segment(void) {
  if (skip_reason) SKIP(skip_reason);
  CHECK(shared_runtime());
  CHECK_EQ_INT(start_session(rt, "s-read", "cc-read"), DEXA_OK);
  CHECK(answered(rt, "s-read", "Order 42 has shipped.", 120000));
  CHECK_EQ_INT(count_lines("lookups"), 1);
  CHECK_EQ_INT(count_events(rt, "s-read", "segment_tool_call"), 1);
  /* One segment: the read did not leave it as a Step of its own. */
  CHECK_EQ_INT(count_events(rt, "s-read", "tool_call_finished"), 0);
}

static void test_a_write_waits_for_approval_and_runs_once(void) {
  if (skip_reason) SKIP(skip_reason);
  CHECK(shared_runtime());
  CHECK_EQ_INT(start_session(rt, "s-approve", "cc-approve"), DEXA_OK);
  int waiting = wait_snapshot(rt, "s-approve", "\"kind\":\"approval\"", 120000);
  if (!waiting) show(rt, "s-approve");
  CHECK(waiting);
  CHECK_EQ_INT(count_lines("deletes"), 0);
  CHECK_EQ_INT(call(rt, "s-approve", "resolve_approval",
                    "{\"call_id\":\"toolu_ap1\",\"decision\":\"approve\"}"),
               DEXA_OK);
  /* The resumed session got the recorded result (the fixture matches on it)
   * and the CLI did not run the tool again. */
  CHECK(answered(rt, "s-approve", "Every order is deleted.", 120000));
  CHECK_EQ_INT(count_lines("deletes"), 1);
}

static void test_two_writes_in_one_reply_take_two_segments(void) {
  if (skip_reason) SKIP(skip_reason);
  CHECK(shared_runtime());
  int before = count_lines("mails");
  CHECK_EQ_INT(start_session(rt, "s-two", "cc-two"), DEXA_OK);
  CHECK(answered(rt, "s-two", "Both mails are sent.", 180000));
  CHECK_EQ_INT(count_lines("mails") - before, 2); /* ann once, bea once */
  char *s = snapshot(rt, "s-two");
  CHECK_CONTAINS(s, "toolu_tw1");
  CHECK_CONTAINS(s, "toolu_tw3");
  dexa_free(s);
}

static void test_a_failed_segment_reruns_whole_but_not_the_write(void) {
  if (skip_reason) SKIP(skip_reason);
  CHECK(shared_runtime());
  int lookups = count_lines("lookups"), mails = count_lines("mails");
  CHECK_EQ_INT(start_session(rt, "s-retry", "cc-retry"), DEXA_OK);
  CHECK(answered(rt, "s-retry", "Looked up and mailed.", 180000));
  CHECK_EQ_INT(count_lines("lookups") - lookups, 2); /* the read ran again */
  CHECK_EQ_INT(count_lines("mails") - mails, 1);     /* the write did not */
  CHECK(count_events(rt, "s-retry", "step_retrying") >= 2);
  CHECK_EQ_INT(count_events(rt, "s-retry", "segment_tool_call"), 1);
}

static void test_stop_during_a_segment_ends_the_cli(void) {
  if (skip_reason) SKIP(skip_reason);
  CHECK(shared_runtime());
  CHECK_EQ_INT(start_session(rt, "s-stop", "cc-stop"), DEXA_OK);
  pid_t cli = wait_cli_child(getpid(), 60000);
  CHECK(cli > 0);
  /* Its model call is answered after 30 s: the Stop comes before. */
  CHECK_EQ_INT(call(rt, "s-stop", "cancel_turn", "{}"), DEXA_OK);
  CHECK_EQ_INT(dexa_runtime_wait_idle(rt, "s-stop", 60000), DEXA_OK);
  CHECK(wait_group_gone(cli, 10000)); /* the CLI and all it started */
  CHECK(count_events(rt, "s-stop", "turn_cancelled") == 1);
  char *s = snapshot(rt, "s-stop");
  CHECK(s && !strstr(s, "never finished"));
  dexa_free(s);
}

static void test_a_subagent_write_is_denied(void) {
  if (skip_reason) SKIP(skip_reason);
  CHECK(shared_runtime());
  int mails = count_lines("mails");
  CHECK_EQ_INT(start_session(rt, "s-sub", "cc-subagent"), DEXA_OK);
  /* The subagent's model was told to leave it to the main conversation
   * (its fixture matches on that text), and the main one answered. */
  CHECK(answered(rt, "s-sub", "The subagent left the mail to me.", 180000));
  CHECK_EQ_INT(count_lines("mails") - mails, 0);
  CHECK(wait_journal("main conversation", 1000));
}

/* 1 when one model request aimock received holds both texts. */
static int one_request_holds(const char *a, const char *b) {
  char *j = journal();
  cJSON *doc = j ? cJSON_Parse(j) : NULL;
  free(j);
  int found = 0;
  const cJSON *r;
  cJSON_ArrayForEach(r, doc) {
    char *body = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(r, "body"));
    found |= body && strstr(body, a) && strstr(body, b);
    free(body);
  }
  cJSON_Delete(doc);
  return found;
}

static char *send_and_get_id(dexa_runtime *r, const char *sid, const char *text) {
  char in[128], *out = NULL;
  size_t n;
  snprintf(in, sizeof in, "{\"text\":\"%s\"}", text);
  if (dexa_runtime_call(r, sid, "send_message", in, strlen(in), &out, &n) != DEXA_OK) return NULL;
  cJSON *doc = cJSON_Parse(out);
  const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "message_id"));
  char *copy = id ? strdup(id) : NULL;
  cJSON_Delete(doc);
  dexa_free(out);
  return copy;
}

static void test_queued_and_steered_messages_resume_the_claude_session(void) {
  if (skip_reason) SKIP(skip_reason);
  CHECK(shared_runtime());
  /* A message sent during a turn waits, then its turn resumes the same
   * Claude session (its request holds the first turn). */
  CHECK_EQ_INT(start_session(rt, "s-queue", "cc-queue-1"), DEXA_OK);
  char *queued = send_and_get_id(rt, "s-queue", "cc-queue-2");
  CHECK(queued != NULL);
  free(queued);
  CHECK(answered(rt, "s-queue", "Second answer.", 180000));
  char *s = snapshot(rt, "s-queue");
  CHECK_CONTAINS(s, "First answer.");
  dexa_free(s);
  CHECK(one_request_holds("cc-queue-1", "cc-queue-2"));
  /* A steered message ends the running turn at its next boundary and
   * starts the next one, on the same Claude session. */
  CHECK_EQ_INT(start_session(rt, "s-steer", "cc-steer-1"), DEXA_OK);
  char *id = send_and_get_id(rt, "s-steer", "cc-steer-2");
  CHECK(id != NULL);
  char in[128];
  snprintf(in, sizeof in, "{\"message_id\":\"%s\"}", id);
  free(id);
  CHECK_EQ_INT(call(rt, "s-steer", "steer", in), DEXA_OK);
  CHECK(answered(rt, "s-steer", "Answer to the steer.", 180000));
  CHECK(one_request_holds("cc-steer-1", "cc-steer-2"));
}

static void test_the_state_limit_ends_the_session(void) {
  if (skip_reason) SKIP(skip_reason);
  dexa_agent *a = make_agent(16 * 1024);
  dexa_runtime *small = a ? open_runtime(a, "small.db") : NULL;
  CHECK(small && dexa_runtime_start(small, 1) == DEXA_OK);
  CHECK_EQ_INT(start_session(small, "s-small", "cc-small-1"), DEXA_OK);
  int failed = wait_snapshot(small, "s-small", "\"code\":-304", 120000);
  if (!failed) show(small, "s-small");
  CHECK(failed);
  /* The session takes no more messages. */
  char *o = NULL;
  size_t n;
  CHECK_EQ_INT(dexa_runtime_call(small, "s-small", "send_message", "{\"text\":\"more\"}", 15, &o, &n),
               DEXA_E_STATE_LIMIT);
  dexa_free(o);
  dexa_runtime_free(small);
  dexa_agent_free(a);
}

static int file_has(const char *name, const char *needle) {
  char path[512], buf[4096];
  path_in_dir(path, sizeof path, name);
  FILE *f = fopen(path, "r");
  int found = 0;
  while (f && !found && fgets(buf, sizeof buf, f)) found = strstr(buf, needle) != NULL;
  if (f) fclose(f);
  return found;
}

static void test_an_mcp_tool_source_is_offered_to_the_cli(void) {
  if (skip_reason) SKIP(skip_reason);
  CHECK(shared_runtime());
  CHECK_EQ_INT(start_session(rt, "s-mcp", "cc-mcp"), DEXA_OK);
  /* The fixture answers only once the CLI got the server's own result. */
  CHECK(answered(rt, "s-mcp", "The server echoed it.", 120000));
  CHECK(file_has("mcp.log", "tools/call"));
  CHECK_EQ_INT(count_events(rt, "s-mcp", "segment_tool_call"), 1); /* a read: inside */
  CHECK_EQ_INT(count_events(rt, "s-mcp", "tool_call_finished"), 0);
  /* The CLI's request listed it with its MCP name. */
  CHECK(wait_journal("mcp__dex__fake__echo", 1000));
}

static void test_an_idempotent_write_runs_in_call_tool(void) {
  if (skip_reason) SKIP(skip_reason);
  CHECK(shared_runtime());
  CHECK_EQ_INT(start_session(rt, "s-idem", "cc-idem"), DEXA_OK);
  CHECK(answered(rt, "s-idem", "The order is tagged.", 180000));
  /* It left the segment for its own Step (no approval needed), where the
   * transient failure of its first run was retried: CallTool. */
  CHECK_EQ_INT(count_lines("tags"), 2);
  CHECK_EQ_INT(count_events(rt, "s-idem", "tool_call_finished"), 1);
  CHECK_EQ_INT(count_events(rt, "s-idem", "segment_tool_call"), 0);
  char *s = snapshot(rt, "s-idem");
  CHECK_CONTAINS(s, "\"status\":\"ok\"");
  dexa_free(s);
}

static void test_ask_user_ends_the_segment(void) {
  if (skip_reason) SKIP(skip_reason);
  CHECK(shared_runtime());
  CHECK_EQ_INT(start_session(rt, "s-ask", "cc-ask"), DEXA_OK);
  int asked = wait_snapshot(rt, "s-ask", "\"kind\":\"question\"", 120000);
  if (!asked) show(rt, "s-ask");
  CHECK(asked);
  /* The segment is over: no CLI runs while the question waits. */
  pid_t left[4];
  int gone = 0;
  for (int64_t end = now_ms() + 30000; !gone && now_ms() < end; usleep(50000))
    gone = cli_children(getpid(), left, 4) == 0;
  CHECK(gone);
  CHECK_EQ_INT(call(rt, "s-ask", "answer_question", "{\"call_id\":\"toolu_as1\",\"answer\":\"blue\"}"),
               DEXA_OK);
  CHECK(answered(rt, "s-ask", "Blue it is.", 120000));
}

static void test_a_segment_past_its_timeout_fails_the_turn(void) {
  if (skip_reason) SKIP(skip_reason);
  dexa_agent *a = make_agent_with(0, 5000, 0);
  dexa_runtime *quick = a ? open_runtime(a, "timeout.db") : NULL;
  CHECK(quick && dexa_runtime_start(quick, 1) == DEXA_OK);
  CHECK_EQ_INT(start_session(quick, "s-timeout", "cc-timeout"), DEXA_OK);
  pid_t cli = wait_cli_child(getpid(), 60000);
  CHECK(cli > 0);
  /* Three attempts of 5 s each (the answer is 30 s late), then the turn fails. */
  int failed = wait_snapshot(quick, "s-timeout", "ran past 5000 ms", 180000) &&
               dexa_runtime_wait_idle(quick, "s-timeout", 120000) == DEXA_OK;
  if (!failed) show(quick, "s-timeout");
  CHECK(failed);
  CHECK(wait_group_gone(cli, 10000));
  CHECK(count_events(quick, "s-timeout", "step_retrying") >= 2);
  CHECK_EQ_INT(count_events(quick, "s-timeout", "turn_failed"), 1);
  char *s = snapshot(quick, "s-timeout");
  CHECK(s && !strstr(s, "far too late"));
  dexa_free(s);
  dexa_runtime_free(quick);
  dexa_agent_free(a);
}

/* ---- kill -9 of a worker process ---- */

static pid_t worker;

static void kill_worker(void) {
  if (worker <= 0) return;
  kill(worker, SIGKILL);
  waitpid(worker, NULL, 0);
  worker = 0;
}

static pid_t spawn_worker(const char *sid, const char *text) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid != 0) return worker = pid;
  dexa_agent *a = make_agent(0);
  dexa_runtime *w = a ? open_runtime(a, "crash.db") : NULL;
  if (!w || start_session(w, sid, text) != DEXA_OK || dexa_runtime_start(w, 2) != DEXA_OK) _exit(3);
  for (;;) pause();
}

typedef struct restarted {
  dexa_agent *agent;
  dexa_runtime *rt;
} restarted;

static restarted restart(void) {
  restarted r = {make_agent(0), NULL};
  r.rt = r.agent ? open_runtime(r.agent, "crash.db") : NULL;
  if (r.rt) dexa_runtime_start(r.rt, 2);
  return r;
}

static void stop_restarted(restarted *r) {
  dexa_runtime_free(r->rt);
  dexa_agent_free(r->agent);
}

static void test_kill_9_mid_segment_reruns_it_on_a_new_process(void) {
  if (skip_reason) SKIP(skip_reason);
  spawn_worker("s-kill-mid", "cc-kill-mid");
  CHECK(wait_lines("slow_lookups", 1, 120000)); /* inside the read, inside the segment */
  pid_t cli = wait_cli_child(worker, 1000);
  kill_worker();
  CHECK(cli > 0);
  CHECK(wait_group_gone(cli, 10000)); /* died with its worker */
  restarted r = restart();
  CHECK(r.rt != NULL);
  int ok = answered(r.rt, "s-kill-mid", "The slow order has shipped.", 180000);
  int recorded = count_events(r.rt, "s-kill-mid", "segment_tool_call");
  stop_restarted(&r);
  CHECK(ok);
  CHECK_EQ_INT(count_lines("slow_lookups"), 2); /* at least once: it ran again */
  CHECK_EQ_INT(recorded, 1);                    /* the committed attempt's */
}

static void test_kill_9_after_the_write_step_never_repeats_it(void) {
  if (skip_reason) SKIP(skip_reason);
  int mails = count_lines("mails");
  int slow = count_lines("slow_lookups");
  spawn_worker("s-kill-after", "cc-kill-after");
  CHECK(wait_lines("mails", mails + 1, 120000)); /* the write's own Step ran */
  /* The next segment is inside a read that outlasts the test. */
  CHECK(wait_lines("slow_lookups", slow + 1, 120000));
  pid_t cli = wait_cli_child(worker, 1000);
  kill_worker();
  CHECK(cli > 0);
  CHECK(wait_group_gone(cli, 10000));
  restarted r = restart();
  CHECK(r.rt != NULL);
  int ok = answered(r.rt, "s-kill-after", "The mail went out once.", 180000);
  stop_restarted(&r);
  CHECK(ok);
  CHECK_EQ_INT(count_lines("mails") - mails, 1);          /* never again */
  CHECK_EQ_INT(count_lines("slow_lookups") - slow, 2); /* the segment reran */
}

/* ---- the harness's own checks (no CLI needed) ---- */

static void test_options_are_checked(void) {
  dexa_model *m = (dexa_model *)&m;
  char err[256];
  CHECK_EQ_INT(dexa_harness_claude_code_new(&m, "cc", "{\"api_key\":\"x\"}", 15, err, sizeof err),
               DEXA_E_UNKNOWN_KEY);
  CHECK(m == NULL);
  CHECK_CONTAINS(err, "api_key");
  const char *env = "{\"env\":{\"ANTHROPIC_API_KEY\":\"sk\"}}";
  CHECK_EQ_INT(dexa_harness_claude_code_new(&m, "cc", env, strlen(env), err, sizeof err),
               DEXA_E_INVALID_ARG);
  CHECK_CONTAINS(err, "ANTHROPIC_API_KEY");
  CHECK_EQ_INT(dexa_harness_claude_code_new(&m, "cc", "{\"timeout_ms\":0}", 16, err, sizeof err),
               DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(dexa_harness_claude_code_new(&m, "cc", "[1]", 3, err, sizeof err),
               DEXA_E_INVALID_JSON);
  CHECK_EQ_INT(dexa_harness_claude_code_new(&m, "", NULL, 0, err, sizeof err), DEXA_E_INVALID_ARG);
  const char *ok = "{\"cli_path\":\"/nonexistent/claude\",\"allowed_tools\":[\"Read\"],"
                   "\"model\":\"sonnet\",\"timeout_ms\":5000,\"env\":{\"X\":\"1\"}}";
  CHECK_EQ_INT(dexa_harness_claude_code_new(&m, "claude-code/x", ok, strlen(ok), err, sizeof err),
               DEXA_OK);
  CHECK_STR(dexa_model_name(m), "claude-code/x");
  dexa_model_free(m);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  atexit(kill_worker);
  atexit(stop_aimock);
  snprintf(dir, sizeof dir, "/tmp/dexa-claude-code-XXXXXX");
  if (!mkdtemp(dir)) return 2;
  char fx[300], home[300];
  snprintf(fx, sizeof fx, "%s/fixtures.json", dir);
  snprintf(home, sizeof home, "%s/home", dir);
  mkdir(home, 0700);
  FILE *f = fopen(fx, "w");
  if (f) {
    fputs(fixtures, f);
    fclose(f);
  }
  /* The key comes from the environment only (a dummy: aimock takes any). */
  setenv("ANTHROPIC_API_KEY", "sk-ant-test-dummy", 1);
  if (!realpath("test/mcp/_fake_server.py", mcp_script)) mcp_script[0] = '\0';
  FILE *p = popen("test/integration/_claude_code_setup.sh", "r");
  if (!p || !fgets(claude, sizeof claude, p)) claude[0] = '\0';
  int setup_rc = p ? pclose(p) : -1;
  claude[strcspn(claude, "\n")] = '\0';
  if (setup_rc != 0 || !*claude)
    skip_reason = "could not install the Claude Code CLI (see build/npm-claude/npm.log)";
  else if (spawn_aimock(fx) != 0)
    skip_reason = "aimock did not start";
  if (skip_reason && getenv("CI")) {
    printf("FAIL claude-code set-up: %s\n0 passed, 1 failed\n", skip_reason);
    return 1;
  }
  RUN(test_options_are_checked);
  /* First the tests that fork workers, while this process has no threads. */
  RUN(test_kill_9_mid_segment_reruns_it_on_a_new_process);
  kill_worker();
  RUN(test_kill_9_after_the_write_step_never_repeats_it);
  kill_worker();
  RUN(test_a_read_runs_inside_the_segment);
  RUN(test_a_write_waits_for_approval_and_runs_once);
  RUN(test_two_writes_in_one_reply_take_two_segments);
  RUN(test_a_failed_segment_reruns_whole_but_not_the_write);
  RUN(test_stop_during_a_segment_ends_the_cli);
  RUN(test_a_subagent_write_is_denied);
  RUN(test_queued_and_steered_messages_resume_the_claude_session);
  RUN(test_the_state_limit_ends_the_session);
  RUN(test_an_mcp_tool_source_is_offered_to_the_cli);
  RUN(test_an_idempotent_write_runs_in_call_tool);
  RUN(test_ask_user_ends_the_segment);
  RUN(test_a_segment_past_its_timeout_fails_the_turn);
  dexa_runtime_free(rt);
  dexa_agent_free(agent);
  stop_aimock();
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "    could not remove %s\n", dir);
  TEST_MAIN_END();
}
