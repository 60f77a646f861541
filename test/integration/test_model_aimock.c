/* Full agent sessions through every provider client against a server we
 * did not write: @copilotkit/aimock (npm, pinned, bound to 127.0.0.1),
 * installed into build/npm on first use and stopped at the end. It serves
 * the OpenAI Responses and Chat Completions, Anthropic Messages, Gemini
 * (streamGenerateContent), Vertex AI, Bedrock ConverseStream (AWS event
 * stream) and Azure OpenAI shapes. Each client runs, on the embedded
 * runtime with a temporary SQLite store:
 *   a plain answer with streamed deltas and usage summed in the snapshot;
 *   its request on the wire (endpoint, credentials: Bearer, x-api-key,
 *   x-goog-api-key, a token from a command, SigV4, api-key; the custom
 *   header, query parameter and sampling options; prompt caching);
 *   two parallel tool calls after reasoning whose items (encrypted
 *   reasoning, thinking and thought signatures, reasoning signatures) are
 *   replayed byte for byte on the next call;
 *   a 429 with Retry-After recovered; a 500 then success; a disconnect in
 *   the middle of the stream retried; a 401 failing the turn with the
 *   provider's message;
 *   a truncated answer (finish reason length) shown as truncated;
 *   an image attachment and a tool's image result in the provider's format;
 *   a session with an output schema (and strict tools) asking for it.
 * And one session whose model keeps failing moves to its fallback.
 * Every fault is aimock's own (fixtures with status, sequenceIndex,
 * truncateAfterChunks). aimock's journal keeps requests only normalized, so
 * the wire checks read the raw requests from a small recording proxy
 * (_record_proxy.mjs, node, 127.0.0.1) between the clients and aimock; the
 * proxy also adds the thought signatures (Gemini) and reasoning signatures
 * (Bedrock) that aimock does not produce.
 * test-needs: providers sqlite */
#include <cjson/cJSON.h>
#include <dexagents/dexagents.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testing.h"

#define AIMOCK_VERSION "1.43.0"
#define NPM_DIR "build/npm"
#define AIMOCK_CLI NPM_DIR "/node_modules/@copilotkit/aimock/dist/cli.js"

static pid_t server_pid, proxy_pid;
static int port, proxy_port;
static char dir[256];
static const char *skip_reason;

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the clients ---- */

typedef struct client {
  const char *model;
  const char *tag;        /* fixture group */
  const char *options;    /* members added to the client's options */
  const char *path;       /* the endpoint path the request must go to */
  const char *auth;       /* "header: value prefix" the request must carry */
  const char *replay;     /* a needle of the stored item replayed byte for byte */
  const char *image;      /* how an image attachment looks on the wire */
  const char *tool_image; /* how a tool's image result looks on the wire */
  const char *sampling;   /* how temperature looks on the wire */
  const char *caching;    /* how prompt caching looks on the wire (NULL: none) */
  const char *schema;     /* how the session's output schema looks on the wire (NULL: refused) */
} client;

#define PNG "iVBORw0KGgoAAAANSUhEUg=="
/* The thought signature the proxy gives a Gemini function call part. */
#define GEMINI_CALL_SIGNATURE "\"thoughtSignature\":\"c2lnLWdlbWluaS1jYWxs"
#define COMMON ",\"headers\":{\"X-Dexa-Test\":\"wire\"},\"query\":{\"trace\":\"on\"}"
/* The output schema of the structured-output sessions. */
#define SCHEMA                                                                                     \
  "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"],"   \
  "\"additionalProperties\":false}"

static const client clients[] = {
    {"openai/gpt-5-mini", "oair",
     ",\"api_key\":\"sk-test\",\"reasoning_effort\":\"low\",\"temperature\":0.5" COMMON,
     "/v1/responses?trace=on", "authorization: Bearer sk-test", "encrypted_content",
     "{\"type\":\"input_image\",\"image_url\":\"data:image/png;base64," PNG "\"}",
     "\"output\":[{\"type\":\"input_text\",\"text\":\"chart\"},{\"type\":\"input_image\",\"image_url\":"
     "\"data:image/png;base64," PNG "\"}]",
     "\"temperature\":0.5", "\"prompt_cache_key\":\"s-gpt-5-mini\"",
     "\"text\":{\"format\":{\"type\":\"json_schema\",\"name\":\"city\",\"schema\":" SCHEMA ",\"strict\":true}}"},
    {"openai-chat/llama3", "chat", ",\"api_key\":\"sk-test\",\"temperature\":0.5,\"seed\":7,\"stop\":[\"##\"]" COMMON,
     "/v1/chat/completions?trace=on", "authorization: Bearer sk-test", "\"tool_calls\"",
     "{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64," PNG "\"}}",
     "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Images returned by the tool calls "
     "above:\"},{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64," PNG "\"}}]}",
     "\"temperature\":0.5,\"seed\":7,\"stop\":[\"##\"]", NULL,
     "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"city\",\"schema\":" SCHEMA},
    {"anthropic/claude-sonnet-4-5", "anth",
     ",\"api_key\":\"sk-test\",\"thinking_budget_tokens\":2048,\"temperature\":1" COMMON,
     "/v1/messages?trace=on", "x-api-key: sk-test", "\"signature\"",
     "{\"type\":\"image\",\"source\":{\"type\":\"base64\",\"media_type\":\"image/png\",\"data\":\"" PNG "\"}}",
     "\"content\":[{\"type\":\"text\",\"text\":\"chart\"},{\"type\":\"image\",\"source\":{\"type\":\"base64\","
     "\"media_type\":\"image/png\",\"data\":\"" PNG "\"}}]",
     "\"temperature\":1", "\"cache_control\":{\"type\":\"ephemeral\"}",
     "\"output_config\":{\"format\":{\"type\":\"json_schema\",\"schema\":" SCHEMA "}}"},
    {"gemini/gemini-2.5-flash", "gemi",
     ",\"api_key\":\"g-test\",\"thinking_budget_tokens\":1024,\"temperature\":0.5,\"seed\":7" COMMON,
     "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse&trace=on", "x-goog-api-key: g-test",
     GEMINI_CALL_SIGNATURE, "{\"inlineData\":{\"mimeType\":\"image/png\",\"data\":\"" PNG "\"}}",
     "\"response\":{\"output\":\"chart\"}}},{\"inlineData\":{\"mimeType\":\"image/png\",\"data\":\"" PNG "\"}}",
     "\"temperature\":0.5,\"seed\":7", NULL,
     "\"responseMimeType\":\"application/json\",\"responseJsonSchema\":" SCHEMA},
    {"vertex/gemini-2.5-pro", "vrtx",
     ",\"project\":\"test-proj\",\"location\":\"europe-west4\",\"token_command\":\"printf vertex-token-1\","
     "\"temperature\":0.5" COMMON,
     "/v1/projects/test-proj/locations/europe-west4/publishers/google/models/gemini-2.5-pro:"
     "streamGenerateContent?alt=sse&trace=on",
     "authorization: Bearer vertex-token-1", GEMINI_CALL_SIGNATURE,
     "{\"inlineData\":{\"mimeType\":\"image/png\",\"data\":\"" PNG "\"}}",
     "\"response\":{\"output\":\"chart\"}}},{\"inlineData\":{\"mimeType\":\"image/png\",\"data\":\"" PNG "\"}}",
     "\"temperature\":0.5", NULL, "\"responseMimeType\":\"application/json\",\"responseJsonSchema\":" SCHEMA},
    {"bedrock/anthropic.claude-sonnet-4-5-v1:0", "bdrk",
     ",\"region\":\"us-east-1\",\"thinking_budget_tokens\":2048,\"stop\":[\"##\"]" COMMON,
     "/model/anthropic.claude-sonnet-4-5-v1%3A0/converse-stream?trace=on",
     "authorization: AWS4-HMAC-SHA256 Credential=AKIDDEXATEST/", "\"signature\"",
     "{\"image\":{\"format\":\"png\",\"source\":{\"bytes\":\"" PNG "\"}}}",
     "\"content\":[{\"text\":\"chart\"},{\"image\":{\"format\":\"png\",\"source\":{\"bytes\":\"" PNG "\"}}}]",
     "\"stopSequences\":[\"##\"]", NULL, /* aimock cannot read a cachePoint among tools */
     NULL},
    {"azure/dep-chat", "azdc",
     ",\"api_key\":\"az-key\",\"api_version\":\"2024-10-21\",\"temperature\":0.5,\"prompt_caching\":true" COMMON,
     "/openai/deployments/dep-chat/chat/completions?api-version=2024-10-21&trace=on", "api-key: az-key",
     "\"tool_calls\"", "{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64," PNG "\"}}",
     "{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64," PNG "\"}}]}",
     "\"temperature\":0.5", "\"prompt_cache_key\":\"s-dep-chat\"",
     "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"city\",\"schema\":" SCHEMA},
    {"azure/dep-resp", "azvr",
     ",\"api_key\":\"az-key\",\"api\":\"responses\",\"reasoning_effort\":\"low\",\"temperature\":0.5,"
     "\"prompt_caching\":true" COMMON,
     "/openai/v1/responses?trace=on", "api-key: az-key", "encrypted_content",
     "{\"type\":\"input_image\",\"image_url\":\"data:image/png;base64," PNG "\"}",
     "\"output\":[{\"type\":\"input_text\",\"text\":\"chart\"},{\"type\":\"input_image\",\"image_url\":"
     "\"data:image/png;base64," PNG "\"}]",
     "\"temperature\":0.5", "\"prompt_cache_key\":\"s-dep-resp\"",
     "\"text\":{\"format\":{\"type\":\"json_schema\",\"name\":\"city\",\"schema\":" SCHEMA ",\"strict\":true}}"},
};
#define NCLIENTS (sizeof clients / sizeof *clients)

/* ---- aimock: install, fixtures, start, requests ---- */

static int install_aimock(void) {
  if (access(AIMOCK_CLI, R_OK) == 0) return 0;
  if (system("command -v npm >/dev/null 2>&1") != 0) return -1;
  mkdir("build", 0755);
  mkdir(NPM_DIR, 0755);
  FILE *f = fopen(NPM_DIR "/package.json", "wx");
  if (f) {
    fputs("{\"private\":true}\n", f);
    fclose(f);
  }
  int rc = system("cd " NPM_DIR " && npm install -E --no-audit --no-fund --loglevel=error "
                  "@copilotkit/aimock@" AIMOCK_VERSION " >npm-install.log 2>&1");
  return rc == 0 && access(AIMOCK_CLI, R_OK) == 0 ? 0 : -1;
}

/* One fixture group per client tag, so sequence counters stay apart. */
static void write_group(FILE *f, const char *t) {
  fprintf(f,
          "{\"match\":{\"userMessage\":\"hello-%s\"},\"response\":{\"content\":"
          "\"Hello from the mock, %s.\",\"usage\":{\"prompt_tokens\":120,\"completion_tokens\":30,"
          "\"input_tokens\":120,\"output_tokens\":30,\"promptTokenCount\":120,"
          "\"candidatesTokenCount\":30}},\"chunkSize\":4},\n"
          "{\"match\":{\"userMessage\":\"weather-%s\",\"hasToolResult\":true},\"response\":"
          "{\"content\":\"It is sunny in Paris at noon.\"}},\n"
          "{\"match\":{\"userMessage\":\"weather-%s\"},\"response\":{\"reasoning\":\"I should "
          "call both tools.\",\"reasoningSignature\":\"sig-%s-42\",\"toolCalls\":["
          "{\"name\":\"get_weather\",\"arguments\":{\"location\":\"Paris\"}},"
          "{\"name\":\"get_time\",\"arguments\":{\"tz\":\"CET\"}}]}},\n",
          t, t, t, t, t);
  fprintf(f,
          "{\"match\":{\"userMessage\":\"ratelimit-%s\",\"sequenceIndex\":0},\"response\":"
          "{\"error\":{\"message\":\"Rate limit exceeded\",\"type\":\"rate_limit_error\","
          "\"code\":\"rate_limit_exceeded\"},\"status\":429}},\n"
          "{\"match\":{\"userMessage\":\"ratelimit-%s\"},\"response\":{\"content\":"
          "\"Recovered after the rate limit.\"}},\n"
          "{\"match\":{\"userMessage\":\"flaky-%s\",\"sequenceIndex\":0},\"response\":"
          "{\"error\":{\"message\":\"upstream exploded\",\"type\":\"server_error\"},"
          "\"status\":500}},\n"
          "{\"match\":{\"userMessage\":\"flaky-%s\"},\"response\":{\"content\":"
          "\"Recovered after a 500.\"}},\n"
          "{\"match\":{\"userMessage\":\"cut-%s\",\"sequenceIndex\":0},\"response\":{\"content\":"
          "\"This answer is cut in the middle of its stream.\"},\"chunkSize\":3,"
          "\"truncateAfterChunks\":3,\"latency\":30},\n"
          "{\"match\":{\"userMessage\":\"cut-%s\"},\"response\":{\"content\":"
          "\"Complete after the disconnect.\"}},\n"
          "{\"match\":{\"userMessage\":\"denied-%s\"},\"response\":{\"error\":{\"message\":"
          "\"Incorrect API key provided: sk-te****\",\"type\":\"authentication_error\","
          "\"code\":\"invalid_api_key\"},\"status\":401}},\n",
          t, t, t, t, t, t, t);
  fprintf(f,
          "{\"match\":{\"userMessage\":\"long-%s\"},\"response\":{\"content\":"
          "\"This answer stops in the mid\",\"finishReason\":\"length\"}},\n"
          "{\"match\":{\"userMessage\":\"image-%s\"},\"response\":{\"content\":\"I see a red dot.\"}},\n"
          "{\"match\":{\"userMessage\":\"chart-%s\",\"hasToolResult\":true},\"response\":"
          "{\"content\":\"The chart shows growth.\"}},\n"
          "{\"match\":{\"userMessage\":\"chart-%s\"},\"response\":{\"toolCalls\":["
          "{\"name\":\"get_chart\",\"arguments\":{}}]}},\n"
          "{\"match\":{\"userMessage\":\"schema-%s\"},\"response\":{\"content\":"
          "\"{\\\"city\\\":\\\"Paris\\\"}\"}},\n",
          t, t, t, t, t);
}

static void write_fixtures(const char *path) {
  FILE *f = fopen(path, "w");
  fputs("{\"fixtures\":[\n", f);
  for (size_t i = 0; i < NCLIENTS; i++) write_group(f, clients[i].tag);
  /* The fallback session: its model always fails, the fallback answers. */
  fputs("{\"match\":{\"userMessage\":\"fallback-go\",\"model\":\"always-503\"},\"response\":"
        "{\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"},\"status\":503}},\n"
        "{\"match\":{\"userMessage\":\"fallback-go\"},\"response\":{\"content\":"
        "\"Answered by the fallback.\"}},\n"
        /* Chat Completions: a tool's images follow its results in a user message */
        "{\"match\":{\"userMessage\":\"Images returned by the tool calls above:\"},\"response\":"
        "{\"content\":\"The chart shows growth.\"}},\n"
        "{\"match\":{\"userMessage\":\"never-matches-anything\"},\"response\":{\"content\":\"x\"}}\n"
        "]}\n",
        f);
  fclose(f);
}

/* Starts argv, reads its output until a line has "listening on
 * http://127.0.0.1:PORT"; keeps draining the output in a child. */
static int spawn_listening(char *const argv[], pid_t *pid, int *port_out) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  *pid = fork();
  if (*pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    setpgid(0, 0);
    execvp(argv[0], argv);
    _exit(127);
  }
  close(fds[1]);
  FILE *out = fdopen(fds[0], "r");
  char line[1024];
  int64_t deadline = now_ms() + 20000;
  static const char key[] = "listening on http://127.0.0.1:";
  while (!*port_out && now_ms() < deadline && fgets(line, sizeof line, out)) {
    char *p = strstr(line, key);
    if (p) *port_out = atoi(p + strlen(key));
    else fprintf(stderr, "    %s: %s", argv[1], line);
  }
  if (*port_out && fork() == 0) {
    while (fgets(line, sizeof line, out)) {
    }
    _exit(0);
  }
  fclose(out);
  return *port_out ? 0 : -1;
}

static char record_file[512];

static int start_aimock(void) {
  char fx[512];
  snprintf(fx, sizeof fx, "%s/fixtures.json", dir);
  snprintf(record_file, sizeof record_file, "%s/requests.jsonl", dir);
  write_fixtures(fx);
  char *aimock[] = {"node", AIMOCK_CLI, "-h", "127.0.0.1", "-p", "0", "-f", fx, "--validate-on-load", NULL};
  if (spawn_listening(aimock, &server_pid, &port) != 0) return -1;
  char up[16];
  snprintf(up, sizeof up, "%d", port);
  char *proxy[] = {"node", "test/integration/_record_proxy.mjs", up, record_file, NULL};
  return spawn_listening(proxy, &proxy_pid, &proxy_port);
}

static void stop_aimock(void) {
  if (proxy_pid > 0) {
    kill(proxy_pid, SIGTERM);
    waitpid(proxy_pid, NULL, 0);
    proxy_pid = 0;
  }
  if (server_pid > 0) {
    kill(server_pid, SIGTERM);
    waitpid(server_pid, NULL, 0);
    server_pid = 0;
  }
}

/* Every request the clients sent, as recorded by the proxy: an array of
 * {"method","url","headers","body"}. */
static cJSON *recorded_requests(void) {
  FILE *f = fopen(record_file, "r");
  if (!f) return NULL;
  cJSON *all = cJSON_CreateArray();
  char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, f) > 0) {
    cJSON *r = cJSON_Parse(line);
    if (r) cJSON_AddItemToArray(all, r);
  }
  free(line);
  fclose(f);
  return all;
}

/* The newest recorded request whose body has needle (a copy of the entry). */
static cJSON *request_with(const char *needle) {
  cJSON *all = recorded_requests(), *found = NULL;
  const cJSON *r;
  cJSON_ArrayForEach(r, all) {
    const char *body = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "body"));
    if (body && strstr(body, needle)) {
      cJSON_Delete(found);
      found = cJSON_Duplicate(r, 1);
    }
  }
  cJSON_Delete(all);
  return found;
}

static const char *req_body(const cJSON *r) {
  return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "body"));
}

/* ---- the agent ---- */

static int tool_calls_seen;

static int get_weather(void *u, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  __atomic_add_fetch(&tool_calls_seen, 1, __ATOMIC_SEQ_CST);
  return dexa_tool_output_set_text(out, "{\"sky\":\"sunny\"}", 15, 0);
}

static int get_time(void *u, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  __atomic_add_fetch(&tool_calls_seen, 1, __ATOMIC_SEQ_CST);
  return dexa_tool_output_set_text(out, "12:00", 5, 0);
}

/* A tool whose result carries an image, as an MCP tool's does. */
static int get_chart(void *u, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  const char *content = "{\"content\":[{\"type\":\"text\",\"text\":\"chart\"},"
                        "{\"type\":\"image\",\"mimeType\":\"image/png\",\"data\":\"" PNG "\"}]}";
  int rc = dexa_tool_output_set_content(out, content, strlen(content));
  return rc == DEXA_OK ? dexa_tool_output_set_text(out, "chart", 5, 0) : rc;
}

typedef struct session {
  dexa_agent *agent;
  dexa_runtime *rt;
  char sid[64];
} session;

static dexa_tool_source *make_tools(void) {
  dexa_tool_source *tools = NULL;
  dexa_function_tools_new(&tools, "fns");
  const char *wp = "{\"type\":\"object\",\"properties\":{\"location\":{\"type\":\"string\"}}}";
  /* strict-ready: strict_tools sends it with strict:true */
  const char *tp = "{\"type\":\"object\",\"properties\":{\"tz\":{\"type\":\"string\"}},\"required\":[\"tz\"],"
                   "\"additionalProperties\":false}";
  dexa_function_tools_add(tools, "get_weather", "The weather at a place", wp, DEXA_TOOL_READ,
                          DEXA_APPROVAL_NONE, get_weather, NULL);
  dexa_function_tools_add(tools, "get_time", "The time in a zone", tp, DEXA_TOOL_READ,
                          DEXA_APPROVAL_NONE, get_time, NULL);
  dexa_function_tools_add(tools, "get_chart", "A chart", NULL, DEXA_TOOL_READ, DEXA_APPROVAL_NONE,
                          get_chart, NULL);
  return tools;
}

static dexa_model *make_client(const char *model, const char *extra) {
  char opts[1024], err[256] = "";
  snprintf(opts, sizeof opts, "{\"base_url\":\"http://127.0.0.1:%d%s\",\"timeout_ms\":20000%s}",
           proxy_port, strncmp(model, "openai", 6) == 0 || strncmp(model, "anthropic", 9) == 0 ? "/v1" : "",
           extra);
  dexa_model *m = NULL;
  if (dexa_model_client_new(&m, model, opts, strlen(opts), err, sizeof err) != DEXA_OK)
    fprintf(stderr, "    client %s: %s\n", model, err);
  return m;
}

/* A runtime on its own store with models (the first is the session's). */
static int open_session(session *s, dexa_model **models, size_t n, const char *sid,
                        const char *settings) {
  memset(s, 0, sizeof *s);
  dexa_tool_source *tools = make_tools();
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.instructions = "You are a test agent.";
  def.models = models;
  def.model_count = n;
  def.tool_sources = &tools;
  def.tool_source_count = 1;
  char err[256] = "";
  int rc = dexa_agent_new(&s->agent, &def, err, sizeof err);
  for (size_t i = 0; i < n; i++) dexa_model_free(models[i]);
  dexa_tool_source_free(tools);
  if (rc != DEXA_OK) {
    fprintf(stderr, "    agent: %s\n", err);
    return rc;
  }
  char db[512];
  snprintf(db, sizeof db, "%s/%s.db", dir, sid);
  dexa_runtime_options o;
  dexa_runtime_options_init(&o, sizeof o);
  o.store = db;
  o.sqlite_synchronous = "normal";
  rc = dexa_runtime_new(&s->rt, s->agent, &o, err, sizeof err);
  if (rc == DEXA_OK) rc = dexa_runtime_start(s->rt, 2);
  snprintf(s->sid, sizeof s->sid, "%s", sid);
  if (rc == DEXA_OK)
    rc = dexa_runtime_start_session(s->rt, s->sid, settings, strlen(settings), NULL, NULL);
  if (rc != DEXA_OK) fprintf(stderr, "    session: %s %s\n", dexa_error_name(rc), err);
  return rc;
}

static void close_session(session *s) {
  dexa_runtime_free(s->rt);
  dexa_agent_free(s->agent);
}

/* Sends a message (JSON input) and waits until the session is idle again. */
static int send_json(session *s, const char *in) {
  char *out = NULL;
  size_t n;
  int rc = dexa_runtime_call(s->rt, s->sid, "send_message", in, strlen(in), &out, &n);
  dexa_free(out);
  if (rc != DEXA_OK) return rc;
  usleep(50000);
  return dexa_runtime_wait_idle(s->rt, s->sid, 30000);
}

static int turn(session *s, const char *text) {
  char in[256];
  snprintf(in, sizeof in, "{\"text\":\"%s\"}", text);
  return send_json(s, in);
}

/* Every event so far, as one text. */
static char *events(session *s) {
  char *out = NULL;
  size_t n;
  if (dexa_runtime_read_events(s->rt, s->sid, "", 1000, 0, &out, &n) != DEXA_OK) return NULL;
  return out;
}

static char *snapshot(session *s) {
  char *out = NULL;
  size_t n;
  if (dexa_runtime_call(s->rt, s->sid, "snapshot", "{}", 2, &out, &n) != DEXA_OK) return NULL;
  return out;
}

/* The concatenated text deltas of turn t. */
static void deltas_of_turn(const char *ev_text, int t, char *out, size_t n, int *count) {
  cJSON *doc = cJSON_Parse(ev_text);
  out[0] = '\0';
  *count = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, "events")) {
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(e, "event");
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "type"));
    const cJSON *tn = cJSON_GetObjectItemCaseSensitive(ev, "turn");
    if (!type || strcmp(type, "text_delta") != 0 || !cJSON_IsNumber(tn) || tn->valueint != t) continue;
    const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "text"));
    if (text) strncat(out, text, n - strlen(out) - 1);
    (*count)++;
  }
  cJSON_Delete(doc);
}

/* The stored item of the first model message whose item contains needle,
 * as it was stored (the span inside the raw snapshot text). */
static char *stored_item(const char *snap, const char *needle) {
  const char *p = snap;
  while ((p = strstr(p, "\"item\":")) != NULL) {
    p += 7;
    int depth = 0, in_str = 0;
    const char *q = p;
    for (; *q; q++) {
      if (in_str) {
        if (*q == '\\') q++;
        else if (*q == '"') in_str = 0;
        continue;
      }
      if (*q == '"') in_str = 1;
      else if (*q == '{') depth++;
      else if (*q == '}' && --depth == 0) break;
    }
    if (!*q) return NULL;
    char *item = strndup(p, (size_t)(q - p + 1));
    if (strstr(item, needle)) return item;
    free(item);
  }
  return NULL;
}

/* ---- scenarios, each run for every client ---- */

static session sessions[NCLIENTS];
static int opened[NCLIENTS];

static session *get_session(size_t i) {
  if (!opened[i]) {
    dexa_model *m = make_client(clients[i].model, clients[i].options);
    if (!m) return NULL;
    char sid[64];
    snprintf(sid, sizeof sid, "s-%s", strchr(clients[i].model, '/') + 1);
    for (char *p = sid; *p; p++)
      if (*p == '/' || *p == '.' || *p == ':') *p = '-';
    if (open_session(&sessions[i], &m, 1, sid, "{}") != DEXA_OK) return NULL;
    opened[i] = 1;
  }
  return &sessions[i];
}

static void plain_answer_streams(size_t i) {
  if (skip_reason) SKIP(skip_reason);
  session *s = get_session(i);
  CHECK(s);
  char msg[64];
  snprintf(msg, sizeof msg, "hello-%s", clients[i].tag);
  CHECK_EQ_INT(turn(s, msg), DEXA_OK);
  char *snap = snapshot(s), *ev = events(s);
  char want[96], got[512];
  snprintf(want, sizeof want, "Hello from the mock, %s.", clients[i].tag);
  int deltas;
  deltas_of_turn(ev, 1, got, sizeof got, &deltas);
  int ok_text = strstr(snap, want) != NULL;
  int ok_usage = strstr(snap, "\"usage\":{\"input_tokens\":120,") != NULL &&
                 strstr(snap, "\"session\":{\"calls\":1,\"input_tokens\":120,") != NULL;
  int ok_finish = strstr(snap, "\"finish_reason\":\"stop\"") != NULL;
  int failed = strstr(ev, "turn_failed") != NULL;
  if (!ok_text || !ok_usage || !ok_finish || failed || deltas < 3 || strcmp(got, want) != 0)
    fprintf(stderr, "    deltas %d \"%s\"\n    snapshot %.2500s\n", deltas, got, snap);
  dexa_free(snap);
  dexa_free(ev);
  CHECK(ok_text);
  CHECK(ok_usage);
  CHECK(ok_finish);
  CHECK(!failed);
  CHECK(deltas >= 3);
  CHECK_STR(got, want);
}

/* The request of the plain answer: endpoint, credentials, options, caching. */
static void request_on_the_wire(size_t i) {
  if (skip_reason) SKIP(skip_reason);
  const client *c = &clients[i];
  char needle[64];
  snprintf(needle, sizeof needle, "hello-%s", c->tag);
  cJSON *r = request_with(needle);
  CHECK(r);
  const char *url = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "url"));
  const cJSON *h = cJSON_GetObjectItemCaseSensitive(r, "headers");
  char name[64];
  const char *colon = strchr(c->auth, ':');
  snprintf(name, sizeof name, "%.*s", (int)(colon - c->auth), c->auth);
  const char *auth = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(h, name));
  const char *custom = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(h, "x-dexa-test"));
  const char *body = req_body(r);
  int ok_url = url && strcmp(url, c->path) == 0;
  int ok_auth = auth && strncmp(auth, colon + 2, strlen(colon + 2)) == 0;
  int ok_custom = custom && strcmp(custom, "wire") == 0;
  int ok_sampling = body && strstr(body, c->sampling);
  int ok_caching = c->caching ? body && strstr(body, c->caching) != NULL
                              : body && !strstr(body, "cache_control") && !strstr(body, "prompt_cache_key");
  if (!ok_url || !ok_auth || !ok_custom || !ok_sampling || !ok_caching) {
    char *t = cJSON_PrintUnformatted(r);
    fprintf(stderr, "    request %.3000s\n", t);
    free(t);
  }
  if (strncmp(c->model, "bedrock/", 8) == 0) { /* SigV4: scope and signed headers */
    CHECK(auth && strstr(auth, "/us-east-1/bedrock/aws4_request, SignedHeaders=host;x-amz-date, "
                               "Signature="));
    CHECK(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(h, "x-amz-date")));
  }
  cJSON_Delete(r);
  CHECK(ok_url);
  CHECK(ok_auth);
  CHECK(ok_custom);
  CHECK(ok_sampling);
  CHECK(ok_caching);
}

static void parallel_tools_and_verbatim_replay(size_t i) {
  if (skip_reason) SKIP(skip_reason);
  session *s = get_session(i);
  CHECK(s);
  int before = tool_calls_seen;
  char msg[64];
  snprintf(msg, sizeof msg, "weather-%s", clients[i].tag);
  CHECK_EQ_INT(turn(s, msg), DEXA_OK);
  char *snap = snapshot(s), *ev = events(s);
  int answered = strstr(snap, "It is sunny in Paris at noon.") != NULL;
  if (!answered) fprintf(stderr, "    snapshot %.3000s\n    events %.3000s\n", snap, ev);
  char *item = stored_item(snap, clients[i].replay);
  cJSON *later = item ? request_with(item) : NULL; /* the request that replayed it */
  int replayed = later && strstr(req_body(later), "get_weather") && strstr(req_body(later), "sunny");
  if (!replayed) fprintf(stderr, "    item %s\n    not found in the requests sent\n", item ? item : "(none)");
  int has_reasoning_delta = strstr(ev, "\"reasoning_delta\"") != NULL;
  free(item);
  cJSON_Delete(later);
  dexa_free(snap);
  dexa_free(ev);
  CHECK(answered);
  CHECK_EQ_INT(tool_calls_seen - before, 2);
  CHECK(replayed);
  CHECK(has_reasoning_delta);
}

static void recovers(size_t i, const char *prefix, const char *answer, int64_t min_ms) {
  session *s = get_session(i);
  CHECK(s);
  char msg[64];
  snprintf(msg, sizeof msg, "%s-%s", prefix, clients[i].tag);
  int64_t t0 = now_ms();
  CHECK_EQ_INT(turn(s, msg), DEXA_OK);
  int64_t took = now_ms() - t0;
  char *snap = snapshot(s), *ev = events(s);
  int ok = strstr(snap, answer) != NULL;
  int failed = strstr(ev, "turn_failed") != NULL;
  if (!ok || failed) fprintf(stderr, "    snapshot %.2000s\n", snap);
  dexa_free(snap);
  dexa_free(ev);
  CHECK(ok);
  CHECK(!failed);
  if (took < min_ms) fprintf(stderr, "    recovered after %lld ms, expected >= %lld\n",
                             (long long)took, (long long)min_ms);
  CHECK(took >= min_ms);
}

static void rate_limit_429_retry_after_recovered(size_t i) {
  if (skip_reason) SKIP(skip_reason);
  recovers(i, "ratelimit", "Recovered after the rate limit.", 900); /* Retry-After: 1 */
}

static void server_error_500_then_success(size_t i) {
  if (skip_reason) SKIP(skip_reason);
  recovers(i, "flaky", "Recovered after a 500.", 0);
}

static void disconnect_mid_stream_retried(size_t i) {
  if (skip_reason) SKIP(skip_reason);
  recovers(i, "cut", "Complete after the disconnect.", 0);
}

static void unauthorized_401_fails_turn_with_message(size_t i) {
  if (skip_reason) SKIP(skip_reason);
  session *s = get_session(i);
  CHECK(s);
  char msg[64];
  snprintf(msg, sizeof msg, "denied-%s", clients[i].tag);
  CHECK_EQ_INT(turn(s, msg), DEXA_OK);
  char *ev = events(s);
  const char *failed = ev ? strstr(ev, "turn_failed") : NULL;
  int has_msg = failed && strstr(failed, "Incorrect API key provided");
  int no_key = ev && !strstr(ev, "sk-test") && !strstr(ev, "az-key") && !strstr(ev, "g-test") &&
               !strstr(ev, "vertex-token-1");
  if (!has_msg) fprintf(stderr, "    events %.3000s\n", ev ? ev : "");
  dexa_free(ev);
  CHECK(has_msg);
  CHECK(no_key);
}

static void truncated_answer_is_marked(size_t i) {
  if (skip_reason) SKIP(skip_reason);
  session *s = get_session(i);
  CHECK(s);
  char msg[64];
  snprintf(msg, sizeof msg, "long-%s", clients[i].tag);
  CHECK_EQ_INT(turn(s, msg), DEXA_OK);
  char *snap = snapshot(s), *ev = events(s);
  const char *m = snap ? strstr(snap, "This answer stops in the mid") : NULL;
  const char *end = m ? strstr(m, "\"item\":") : NULL;
  const char *fin = m ? strstr(m, "\"finish_reason\":\"length\"") : NULL;
  int stored = fin && end && fin < end;
  int shown = ev && strstr(ev, "\"finish_reason\":\"length\",\"truncated\":true");
  if (!stored || !shown) fprintf(stderr, "    snapshot %.3000s\n", snap ? snap : "");
  dexa_free(snap);
  dexa_free(ev);
  CHECK(stored);
  CHECK(shown);
}

static void image_attachment_reaches_the_model(size_t i) {
  if (skip_reason) SKIP(skip_reason);
  session *s = get_session(i);
  CHECK(s);
  char in[512];
  snprintf(in, sizeof in, "{\"text\":\"image-%s\",\"attachments\":[{\"type\":\"image\","
                          "\"media_type\":\"image/png\",\"data\":\"" PNG "\"}]}", clients[i].tag);
  CHECK_EQ_INT(send_json(s, in), DEXA_OK);
  char needle[64];
  snprintf(needle, sizeof needle, "image-%s", clients[i].tag);
  cJSON *r = request_with(needle);
  int ok = r && strstr(req_body(r), clients[i].image);
  if (!ok) fprintf(stderr, "    request %.2000s\n", r ? req_body(r) : "(none)");
  cJSON_Delete(r);
  char *snap = snapshot(s);
  int answered = snap && strstr(snap, "I see a red dot.");
  dexa_free(snap);
  CHECK(ok);
  CHECK(answered);
}

static void tool_image_reaches_the_model(size_t i) {
  if (skip_reason) SKIP(skip_reason);
  session *s = get_session(i);
  CHECK(s);
  char msg[64];
  snprintf(msg, sizeof msg, "chart-%s", clients[i].tag);
  CHECK_EQ_INT(turn(s, msg), DEXA_OK);
  cJSON *r = request_with(clients[i].tool_image);
  char *snap = snapshot(s);
  int answered = snap && strstr(snap, "The chart shows growth.");
  dexa_free(snap);
  if (!r) {
    cJSON *any = request_with(msg);
    fprintf(stderr, "    no request with %s\n    last %.2500s\n", clients[i].tool_image,
            any ? req_body(any) : "(none)");
    cJSON_Delete(any);
  }
  cJSON_Delete(r);
  CHECK(r != NULL);
  CHECK(answered);
}

/* A session started with an output schema (and strict tools where the
 * provider has them): every request asks for answers of that schema;
 * Bedrock, which has none, fails the turn with the reason. */
static void structured_output_session(size_t i) {
  if (skip_reason) SKIP(skip_reason);
  const client *c = &clients[i];
  int strict = !strncmp(c->model, "openai", 6) || !strncmp(c->model, "anthropic", 9) ||
               !strncmp(c->model, "azure", 5);
  char opts[1024];
  snprintf(opts, sizeof opts, "%s%s", c->options, strict ? ",\"strict_tools\":true" : "");
  dexa_model *m = make_client(c->model, opts);
  CHECK(m);
  char sid[64];
  snprintf(sid, sizeof sid, "s-schema-%s", c->tag);
  session s;
  const char *settings = "{\"output_schema\":{\"name\":\"city\",\"schema\":" SCHEMA "}}";
  CHECK_EQ_INT(open_session(&s, &m, 1, sid, settings), DEXA_OK);
  char msg[64];
  snprintf(msg, sizeof msg, "schema-%s", c->tag);
  int rc = turn(&s, msg);
  char *ev = events(&s);
  close_session(&s);
  cJSON *r = request_with(msg);
  int ok;
  if (c->schema) {
    ok = rc == DEXA_OK && r && strstr(req_body(r), c->schema) && ev && strstr(ev, "turn_finished") &&
         strstr(ev, "{\\\"city\\\":\\\"Paris\\\"}");
    if (ok && strict) ok = strstr(req_body(r), "\"additionalProperties\":false},\"strict\":true") != NULL;
  } else {
    ok = rc == DEXA_OK && ev && strstr(ev, "turn_failed") && strstr(ev, "no structured output");
  }
  if (!ok) fprintf(stderr, "    request %.2500s\n    events %.1500s\n", r ? req_body(r) : "(none)", ev ? ev : "");
  cJSON_Delete(r);
  dexa_free(ev);
  CHECK(ok);
}

/* The session's model always answers 503: the first attempt retries it,
 * the second moves on to its fallback, and the reply names the fallback. */
static void failing_model_falls_back(void) {
  if (skip_reason) SKIP(skip_reason);
  dexa_model *m[2] = {make_client("openai-chat/always-503", ",\"fallbacks\":[\"anthropic/claude-fallback\"]"),
                      make_client("anthropic/claude-fallback", ",\"api_key\":\"sk-test\"")};
  CHECK(m[0] && m[1]);
  session s;
  CHECK_EQ_INT(open_session(&s, m, 2, "s-fallback", "{}"), DEXA_OK);
  CHECK_EQ_INT(turn(&s, "fallback-go"), DEXA_OK);
  char *snap = snapshot(&s), *ev = events(&s);
  int answered = snap && strstr(snap, "Answered by the fallback.") &&
                 strstr(snap, "\"model\":\"anthropic/claude-fallback\"");
  int recorded = ev && strstr(ev, "\"type\":\"model_fallback\"") &&
                 strstr(ev, "\"from\":\"openai-chat/always-503\",\"to\":\"anthropic/claude-fallback\"");
  if (!answered || !recorded) fprintf(stderr, "    events %.3000s\n", ev ? ev : "");
  dexa_free(snap);
  dexa_free(ev);
  close_session(&s);
  CHECK(answered);
  CHECK(recorded);
}

/* Runs fn for every client, each as its own test named "fn model". */
#define FOR_EACH_CLIENT(fn)                                                                  \
  static void fn##_all(void) {                                                               \
    for (size_t i = 0; i < NCLIENTS; i++) {                                                  \
      t_current_failed = t_current_skipped = 0;                                              \
      fn(i);                                                                                 \
      const char *v = t_current_skipped ? "skip" : t_current_failed ? "FAIL" : "ok  ";       \
      printf("%s %s %s\n", v, #fn, clients[i].model);                                        \
      fflush(stdout);                                                                        \
      if (t_current_skipped) t_skipped++;                                                    \
      else if (t_current_failed) t_failed++;                                                 \
      else t_passed++;                                                                       \
    }                                                                                        \
  }

FOR_EACH_CLIENT(plain_answer_streams)
FOR_EACH_CLIENT(request_on_the_wire)
FOR_EACH_CLIENT(parallel_tools_and_verbatim_replay)
FOR_EACH_CLIENT(rate_limit_429_retry_after_recovered)
FOR_EACH_CLIENT(server_error_500_then_success)
FOR_EACH_CLIENT(disconnect_mid_stream_retried)
FOR_EACH_CLIENT(unauthorized_401_fails_turn_with_message)
FOR_EACH_CLIENT(truncated_answer_is_marked)
FOR_EACH_CLIENT(image_attachment_reaches_the_model)
FOR_EACH_CLIENT(tool_image_reaches_the_model)
FOR_EACH_CLIENT(structured_output_session)

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  /* Credentials of the providers that read them from the environment. */
  setenv("AWS_ACCESS_KEY_ID", "AKIDDEXATEST", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "dexa-test-secret", 1);
  unsetenv("AWS_SESSION_TOKEN");
  unsetenv("AWS_BEARER_TOKEN_BEDROCK");
  unsetenv("GOOGLE_CLOUD_ACCESS_TOKEN");
  snprintf(dir, sizeof dir, "/tmp/dexa-aimock-XXXXXX");
  if (!mkdtemp(dir)) return 2;
  if (system("command -v node >/dev/null 2>&1") != 0) skip_reason = "node is not installed";
  else if (install_aimock() != 0)
    skip_reason = "could not install @copilotkit/aimock@" AIMOCK_VERSION " (see build/npm/npm-install.log)";
  else if (start_aimock() != 0) skip_reason = "aimock did not start";
  /* In CI the peer must be there: a skip would hide a broken setup. */
  if (skip_reason && getenv("CI")) {
    printf("FAIL aimock set-up: %s\n0 passed, 1 failed\n", skip_reason);
    stop_aimock();
    return 1;
  }
  plain_answer_streams_all();
  request_on_the_wire_all();
  parallel_tools_and_verbatim_replay_all();
  rate_limit_429_retry_after_recovered_all();
  server_error_500_then_success_all();
  disconnect_mid_stream_retried_all();
  truncated_answer_is_marked_all();
  image_attachment_reaches_the_model_all();
  tool_image_reaches_the_model_all();
  structured_output_session_all();
  /* Last: its user message stays unanswered, and the next one would join it. */
  unauthorized_401_fails_turn_with_message_all();
  RUN(failing_model_falls_back);
  for (size_t i = 0; i < NCLIENTS; i++)
    if (opened[i]) close_session(&sessions[i]);
  stop_aimock();
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "    could not remove %s\n", dir);
  TEST_MAIN_END();
}
