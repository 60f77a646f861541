/* chat: a terminal chat with one durable agent session on the embedded
 * runtime (SQLite). Every line read from stdin is one user message; the
 * answer streams from the session's event stream as it is produced.
 *
 *   chat [--store PATH] [--model NAME] [--threads N]   start a new session
 *   chat --resume SESSION_ID                          continue one after a restart
 *   chat --list                                       list the store's sessions
 *   chat --mcp-config FILE                            also the tools of MCP servers
 *
 * The demo model needs no credential: plain text is echoed, "/model" names
 * the session's model, "/fail N" fails the first N model attempts, and
 * "/tool NAME {json}" calls a tool (end a line with '\' to send several
 * lines, e.g. two /tool lines for two calls in parallel), "/ask", "/choose"
 * and "/wait" use the built-in tools. Tools: clock, note. Lines starting
 * with ':' are commands (:approve, :reject, :answer, :stop, :plan, :execute;
 * :help lists them).
 *
 * Works with stdin from a pipe; EOF ends it cleanly (exit status 0). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "chat.h"

#define RESUME_SHOW_MESSAGES 8
#define TURN_IDLE_TIMEOUT_MS 120000

typedef struct chat {
  const char *store;
  const char *model;
  const char *resume;
  int list;
  int threads;
  dexa_runtime *rt;
  char session_id[128];
  char *token; /* resume token of the next event to read (malloc'd) */
  int interactive;
  const char *mcp_config; /* "mcpServers" JSON file, or NULL */
} chat;

static void usage(FILE *f) {
  fputs("usage: chat [--store PATH] [--model NAME] [--threads N] [--resume SESSION_ID]\n"
        "            [--list] [--help]\n"
        "  --store STORE     SQLite file or PostgreSQL URI/conninfo (default: $DEX_AGENT_STORE,\n"
        "                    else dexagents-chat.db)\n"
        "  --model NAME      mock/dex (default), mock/dex-mini, or a provider model:\n"
        "                    openai/MODEL, openai-chat/MODEL, anthropic/MODEL, gemini/MODEL,\n"
        "                    vertex/MODEL, bedrock/MODEL_ID, azure/DEPLOYMENT (credentials\n"
        "                    from the environment: OPENAI_API_KEY, ANTHROPIC_API_KEY,\n"
        "                    GEMINI_API_KEY, GOOGLE_CLOUD_ACCESS_TOKEN, AWS_*,\n"
        "                    AZURE_OPENAI_API_KEY; see dexa_model_client_new(3)); give it\n"
        "                    with --resume too\n"
        "  --resume ID       continue session ID from the store\n"
        "  --list            list the sessions of the store and exit\n"
        "  --threads N       worker threads (default 2)\n"
        "  --mcp-config FILE MCP servers (\"mcpServers\" JSON) whose tools the agent gets\n"
        "Each input line is one message; end a line with '\\' to continue it.\n"
        "Demo commands: /model, /fail N, /tool clock {}, /tool note {\"text\":\"hi\"}\n",
        f);
}

/* Prints a failed operation: the code's text and the error document. */
static void report(const char *what, int rc, const char *doc) {
  fprintf(stderr, "chat: %s: %s (%s)%s%s\n", what, dexa_strerror(rc), dexa_error_name(rc),
          doc && *doc ? " " : "", doc ? doc : "");
}

static int parse_args(chat *c, int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      exit(0);
    } else if (strcmp(a, "--list") == 0) {
      c->list = 1;
      continue;
    }
    int known = strcmp(a, "--store") == 0 || strcmp(a, "--model") == 0 ||
                strcmp(a, "--resume") == 0 || strcmp(a, "--threads") == 0 ||
                strcmp(a, "--mcp-config") == 0;
    if (!known || !v) {
      fprintf(stderr, known ? "chat: %s needs a value\n" : "chat: unknown option %s\n", a);
      return -1;
    }
    if (strcmp(a, "--store") == 0) c->store = v;
    else if (strcmp(a, "--model") == 0) c->model = v;
    else if (strcmp(a, "--resume") == 0) c->resume = v;
    else if (strcmp(a, "--mcp-config") == 0) c->mcp_config = v;
    else if (strcmp(a, "--threads") == 0) {
      char *end;
      long n = strtol(v, &end, 10);
      if (*end || n < 1 || n > 256) {
        fprintf(stderr, "chat: --threads takes 1..256\n");
        return -1;
      }
      c->threads = (int)n;
    }
    i++;
  }
  return 0;
}

/* ---- --list ---------------------------------------------------------------- */

static int list_sessions(chat *c) {
  char *after = NULL;
  int rc = DEXA_OK, count = 0;
  for (;;) {
    char *out = NULL;
    size_t len = 0;
    rc = dexa_runtime_list_sessions(c->rt, after, 100, &out, &len);
    if (rc != DEXA_OK) {
      report("list_sessions", rc, out);
      dexa_free(out);
      break;
    }
    cJSON *doc = cJSON_ParseWithLength(out, len);
    dexa_free(out);
    const cJSON *s;
    cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(doc, "sessions")) {
      const cJSON *ms = cJSON_GetObjectItemCaseSensitive(s, "created_ms");
      time_t t = cJSON_IsNumber(ms) ? (time_t)(ms->valuedouble / 1000) : 0;
      struct tm tm;
      char when[32];
      gmtime_r(&t, &tm);
      strftime(when, sizeof when, "%Y-%m-%d %H:%M:%SZ", &tm);
      const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "session_id"));
      const char *ft = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "flow_type"));
      printf("%s  %s  %s\n", id ? id : "?", when, ft ? ft : "");
      count++;
    }
    const char *next = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "next"));
    free(after);
    after = next && *next ? strdup(next) : NULL;
    cJSON_Delete(doc);
    if (!after) break;
  }
  free(after);
  if (rc == DEXA_OK) printf("%d session%s\n", count, count == 1 ? "" : "s");
  return rc;
}

/* ---- events ------------------------------------------------------------------ */

/* Reads one batch of events after c->token, prints them (render may be
 * NULL: skip them) and advances the token. *count receives how many. */
static int read_batch(chat *c, chat_render *render, int64_t timeout_ms, int *count) {
  char *out = NULL;
  size_t len = 0;
  *count = 0;
  int rc = dexa_runtime_read_events(c->rt, c->session_id, c->token, 200, timeout_ms, &out, &len);
  if (rc != DEXA_OK) {
    report("read_events", rc, out);
    dexa_free(out);
    return rc;
  }
  cJSON *doc = cJSON_ParseWithLength(out, len);
  dexa_free(out);
  const cJSON *item;
  cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(doc, "events")) {
    (*count)++;
    if (!render) continue;
    char *ev = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(item, "event"));
    if (ev) chat_render_event(render, ev, strlen(ev));
    cJSON_free(ev);
  }
  const char *token = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "token"));
  if (token) {
    free(c->token);
    c->token = strdup(token);
  }
  cJSON_Delete(doc);
  return DEXA_OK;
}

/* Skips every event already in the stream (used when no snapshot token). */
static int skip_old_events(chat *c) {
  int n, rc;
  do rc = read_batch(c, NULL, 0, &n);
  while (rc == DEXA_OK && n > 0);
  return rc;
}

/* Prints the stream until the running turn ends, then waits for the
 * session to be idle (waiting for the next message). */
static int follow_turn(chat *c) {
  chat_render r = {0, 0, 0};
  int rc = DEXA_OK, n, timer_said = 0;
  while (!r.turn_done) {
    rc = read_batch(c, &r, 250, &n);
    if (rc != DEXA_OK) break;
    /* No turn end seen, nothing new, and nothing left to run: the session
     * waits for the person (an approval, an answer), for a timer (keep
     * following: it fires by itself), or for nothing (events trimmed). */
    if (n == 0 && dexa_runtime_wait_idle(c->rt, c->session_id, 0) == DEXA_OK) {
      rc = read_batch(c, &r, 0, &n);
      if (rc != DEXA_OK || r.turn_done) break;
      chat_render_end_line(&r);
      if (chat_show_pending(c->rt, c->session_id, &timer_said) != 0) break;
    }
  }
  chat_render_end_line(&r);
  int idle = dexa_runtime_wait_idle(c->rt, c->session_id, TURN_IDLE_TIMEOUT_MS);
  if (idle != DEXA_OK) report("wait_idle", idle, dexa_runtime_errmsg(c->rt));
  return rc != DEXA_OK ? rc : idle;
}

/* ---- sessions ------------------------------------------------------------------ */

static int new_session(chat *c) {
  cJSON *settings = cJSON_CreateObject();
  cJSON_AddStringToObject(settings, "model", c->model);
  char *json = cJSON_PrintUnformatted(settings);
  cJSON_Delete(settings);
  char *out = NULL;
  size_t len = 0;
  int rc = json ? dexa_runtime_start_session(c->rt, NULL, json, strlen(json), &out, &len)
                : DEXA_E_NOMEM;
  cJSON_free(json);
  if (rc != DEXA_OK) {
    report("start_session", rc, out);
    dexa_free(out);
    return rc;
  }
  cJSON *doc = cJSON_ParseWithLength(out, len);
  const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "session_id"));
  snprintf(c->session_id, sizeof c->session_id, "%s", id ? id : "");
  cJSON_Delete(doc);
  dexa_free(out);
  if (!c->session_id[0]) {
    report("start_session", DEXA_E_INTERNAL, "no session_id in the response");
    return DEXA_E_INTERNAL;
  }
  c->token = strdup(""); /* a new session: read its stream from the start */
  return dexa_runtime_wait_idle(c->rt, c->session_id, TURN_IDLE_TIMEOUT_MS);
}

/* Prints the newest messages of the snapshot and positions the event
 * reader after the snapshot's events. */
static int resume_session(chat *c) {
  snprintf(c->session_id, sizeof c->session_id, "%s", c->resume);
  char *out = NULL;
  size_t len = 0;
  int rc = dexa_runtime_call(c->rt, c->session_id, "snapshot", "{}", 2, &out, &len);
  if (rc != DEXA_OK) {
    report("snapshot", rc, out);
    dexa_free(out);
    return rc;
  }
  cJSON *doc = cJSON_ParseWithLength(out, len);
  dexa_free(out);
  const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(doc, "messages");
  int n = cJSON_GetArraySize(msgs);
  const char *model = cJSON_GetStringValue(
      cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "session"), "model"));
  printf("resumed %s (model %s, %d message%s; the last %d:)\n", c->session_id,
         model ? model : "?", n, n == 1 ? "" : "s",
         n < RESUME_SHOW_MESSAGES ? n : RESUME_SHOW_MESSAGES);
  for (int i = n > RESUME_SHOW_MESSAGES ? n - RESUME_SHOW_MESSAGES : 0; i < n; i++) {
    char *m = cJSON_PrintUnformatted(cJSON_GetArrayItem(msgs, i));
    if (m) chat_render_message(m, strlen(m));
    cJSON_free(m);
  }
  const char *token = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "resume_token"));
  if (!token) token = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "token"));
  c->token = strdup(token ? token : "");
  cJSON_Delete(doc);
  fflush(stdout);
  if (!token && (rc = skip_old_events(c)) != DEXA_OK) return rc;
  /* A turn that was running when the last process stopped continues now. */
  if (dexa_runtime_wait_idle(c->rt, c->session_id, 0) != DEXA_OK) {
    printf("(a turn was in progress; continuing it)\n");
    rc = follow_turn(c);
  }
  return rc;
}

/* ---- the loop ---------------------------------------------------------------------- */

/* Reads one message: a line, or several joined where a line ends in '\'.
 * Returns NULL at EOF. */
static char *read_message(void) {
  char *msg = NULL, *line = NULL;
  size_t msg_len = 0, cap = 0;
  ssize_t n;
  while ((n = getline(&line, &cap, stdin)) >= 0) {
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
    int more = n > 0 && line[n - 1] == '\\';
    if (more) line[--n] = '\0';
    char *grown = realloc(msg, msg_len + (size_t)n + 2);
    if (!grown) break;
    msg = grown;
    memcpy(msg + msg_len, line, (size_t)n);
    msg_len += (size_t)n;
    if (more) msg[msg_len++] = '\n';
    msg[msg_len] = '\0';
    if (!more) break;
  }
  free(line);
  if (n < 0 && msg_len == 0) {
    free(msg);
    return NULL;
  }
  return msg;
}

static void send_and_follow(chat *c, const char *text) {
  cJSON *in = cJSON_CreateObject();
  cJSON_AddStringToObject(in, "text", text);
  char *json = cJSON_PrintUnformatted(in);
  cJSON_Delete(in);
  char *out = NULL;
  size_t len = 0;
  int rc = json ? dexa_runtime_call(c->rt, c->session_id, "send_message", json, strlen(json),
                                    &out, &len)
                : DEXA_E_NOMEM;
  cJSON_free(json);
  if (rc != DEXA_OK) report("send_message", rc, out);
  dexa_free(out);
  if (rc == DEXA_OK) follow_turn(c);
}

static void chat_loop(chat *c) {
  for (;;) {
    if (c->interactive) {
      fputs("you> ", stdout);
      fflush(stdout);
    }
    char *text = read_message();
    if (!text) break;
    if (text[strspn(text, " \t\n")] != '\0') {
      if (!c->interactive) printf("you> %s\n", text); /* keep piped transcripts readable */
      if (text[0] == ':') {
        if (chat_command(c->rt, c->session_id, text)) follow_turn(c);
      } else {
        send_and_follow(c, text);
      }
    }
    free(text);
  }
  if (c->interactive) fputc('\n', stdout);
}

/* A PostgreSQL store: a URI, or a key/value conninfo (has "="). */
static int is_postgres(const char *store) {
  return strncmp(store, "postgres", 8) == 0 || strchr(store, '=') != NULL;
}

/* "<store>.notes.txt" next to the store file; with PostgreSQL in the
 * current directory. */
static char *notes_path_for(const char *store) {
  if (is_postgres(store)) store = "dexagents-chat";
  if (strncmp(store, "sqlite:", 7) == 0) store += 7;
  if (strcmp(store, ":memory:") == 0) store = "dexagents-chat";
  size_t n = strlen(store) + sizeof ".notes.txt";
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s.notes.txt", store);
  return p;
}

int main(int argc, char **argv) {
  const char *env_store = getenv("DEX_AGENT_STORE");
  chat c = {env_store && *env_store ? env_store : "dexagents-chat.db", "mock/dex", NULL, 0, 2,
            NULL, {0}, NULL, 0, NULL};
  if (parse_args(&c, argc, argv) != 0) {
    usage(stderr);
    return 2;
  }
  c.interactive = isatty(STDIN_FILENO);
  int status = 1;
  dexa_model *models[3] = {NULL, NULL, NULL};
  size_t model_count = 0;
  dexa_tool_source *tools = NULL;
  dexa_agent *agent = NULL;
  char *notes = notes_path_for(c.store);
  char err[256] = "";

  int rc = notes ? DEXA_OK : DEXA_E_NOMEM;
  /* A provider model named by --model (openai/..., openai-chat/...,
   * anthropic/...; the key comes from the environment) is the default; the
   * demo models stay in the allow-list. */
  static const char *const demos[] = {"mock/dex", "mock/dex-mini"};
  if (rc == DEXA_OK && c.model && strncmp(c.model, "mock/", 5) != 0) {
    rc = dexa_model_client_new(&models[0], c.model, NULL, 0, err, sizeof err);
    if (rc == DEXA_OK) model_count++;
  }
  for (size_t i = 0; i < 2 && rc == DEXA_OK; i++) {
    rc = dexa_model_client_new(&models[model_count], demos[i], NULL, 0, err, sizeof err);
    if (rc == DEXA_OK) model_count++;
  }
  if (rc == DEXA_OK) rc = chat_tools_new(&tools, notes);
  /* MCP servers: one tool source each, after the host tools. */
  dexa_tool_source **mcp = NULL, **sources = NULL;
  size_t mcp_count = 0;
  if (rc == DEXA_OK && c.mcp_config) {
    dexa_mcp_config *mc = NULL;
    char *shown = NULL;
    rc = dexa_mcp_config_load(&mc, c.mcp_config, NULL, 0, err, sizeof err);
    if (rc == DEXA_OK && dexa_mcp_config_redacted_json(mc, &shown, NULL) == DEXA_OK)
      fprintf(stderr, "chat: MCP servers %s\n", shown); /* never the secrets */
    dexa_free(shown);
    if (rc == DEXA_OK) rc = dexa_mcp_tool_sources_new(&mcp, &mcp_count, mc);
    dexa_mcp_config_free(mc);
  }
  if (rc == DEXA_OK && !(sources = calloc(mcp_count + 1, sizeof *sources))) rc = DEXA_E_NOMEM;
  if (rc == DEXA_OK) {
    sources[0] = tools;
    for (size_t i = 0; i < mcp_count; i++) sources[i + 1] = mcp[i];
  }
  if (rc == DEXA_OK) {
    dexa_agent_def def;
    dexa_agent_def_init(&def, sizeof def);
    def.instructions = "You are a helpful assistant in a terminal chat.";
    def.models = models;
    def.model_count = model_count;
    def.tool_sources = sources;
    def.tool_source_count = 1 + mcp_count;
    def.builtin_tools = DEXA_BUILTIN_ALL; /* ask_user, durable_wait, write_todos */
    def.plan_mode_enabled = 1;
    rc = dexa_agent_new(&agent, &def, err, sizeof err);
  }
  if (rc != DEXA_OK) {
    report("agent", rc, err);
    goto cleanup;
  }
  dexa_runtime_options opts;
  dexa_runtime_options_init(&opts, sizeof opts);
  opts.store = c.store;
  rc = dexa_runtime_new(&c.rt, agent, &opts, err, sizeof err);
  if (rc != DEXA_OK) {
    report("runtime", rc, err);
    goto cleanup;
  }
  if (c.list) {
    status = list_sessions(&c) == DEXA_OK ? 0 : 1;
    goto cleanup;
  }
  rc = dexa_runtime_start(c.rt, c.threads);
  if (rc != DEXA_OK) {
    report("start workers", rc, dexa_runtime_errmsg(c.rt));
    goto cleanup;
  }
  rc = c.resume ? resume_session(&c) : new_session(&c);
  if (rc != DEXA_OK && !c.session_id[0]) goto cleanup;
  if (rc != DEXA_OK && c.resume && !c.token) goto cleanup; /* no such session */
  /* A PostgreSQL URI may hold a password: never printed. */
  printf("session %s (store %s; --resume %s to continue it)\n", c.session_id,
         is_postgres(c.store) ? "PostgreSQL" : c.store, c.session_id);
  fflush(stdout);
  chat_loop(&c);
  status = 0;

cleanup:
  if (c.rt) dexa_runtime_stop(c.rt);
  dexa_runtime_free(c.rt);
  dexa_agent_free(agent);
  dexa_tool_source_free(tools);
  dexa_mcp_tool_sources_free(mcp, mcp_count);
  free(sources);
  for (size_t i = 0; i < model_count; i++) dexa_model_free(models[i]);
  free(c.token);
  free(notes);
  return status;
}
