/* Starting a segment's CLI: its command line (the SDK protocol's flags,
 * the host's tools as the in-process MCP server "dex", the session to
 * resume and where), its environment (the worker's, the host's "env", a
 * private config directory) and its first input (initialize, then the
 * results it is owed and the new user text as one user message). */
#include <cjson/cJSON.h>
#include <dexagents/harness.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dexagents/errors.h"
#include "harness/cc_segment.h"

extern char **environ;

static const char *str(const cJSON *o, const char *name) {
  return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, name));
}

/* ---- the CLI's input: recorded results owed, then the new user text ---- */

static const cJSON *new_result(const cJSON *messages, const char *call_id) {
  const cJSON *m;
  cJSON_ArrayForEach(m, messages) {
    const char *role = str(m, "role"), *id = str(m, "call_id");
    if (role && strcmp(role, "tool") == 0 && id && strcmp(id, call_id) == 0) return m;
  }
  return NULL;
}

/* A recorded result as the model reads it: text only. */
static cJSON *result_block(const char *id, const cJSON *recorded, const dexa__cc_pending *p) {
  cJSON *b = cJSON_CreateObject();
  cJSON_AddStringToObject(b, "type", "tool_result");
  cJSON_AddStringToObject(b, "tool_use_id", id);
  if (recorded) {
    const char *status = str(recorded, "status"), *output = str(recorded, "output");
    int ok = status && strcmp(status, "ok") == 0;
    char prefix[96] = "";
    if (!ok)
      snprintf(prefix, sizeof prefix, "[%s] ", status && strcmp(status, "rejected") == 0
                                                    ? "rejected by the person who reviews calls"
                                                    : status ? status : "error");
    size_t n = strlen(prefix) + strlen(output ? output : "") + 1;
    char *text = malloc(n);
    if (text) snprintf(text, n, "%s%s", prefix, output ? output : "");
    cJSON_AddStringToObject(b, "content", text ? text : "");
    free(text);
    if (!ok) cJSON_AddBoolToObject(b, "is_error", 1);
  } else if (p && p->result) {
    cJSON *content = cJSON_Parse(p->result);
    cJSON_AddItemToObject(b, "content", content ? content : cJSON_CreateString(""));
    if (p->is_error) cJSON_AddBoolToObject(b, "is_error", 1);
  } else {
    cJSON_AddStringToObject(b, "content", "Not run: one call that changes things runs per step. "
                                          "Call it again if it is still needed.");
    cJSON_AddBoolToObject(b, "is_error", 1);
  }
  return b;
}

static cJSON *user_input(const dexa__cc_segment *s) {
  const cJSON *messages = cJSON_GetObjectItemCaseSensitive(s->request, "messages");
  size_t first = dexa_model_request_first_new_message(s->req);
  cJSON *content = cJSON_CreateArray();
  for (size_t i = 0; i < s->state.pending_count; i++) {
    const dexa__cc_pending *p = &s->state.pending[i];
    cJSON_AddItemToArray(content, result_block(p->id, new_result(messages, p->id), p));
  }
  size_t i = 0;
  const cJSON *m;
  cJSON_ArrayForEach(m, messages) {
    const char *role = str(m, "role"), *text = str(m, "text");
    if (i++ < first || !role || strcmp(role, "user") != 0 || !text) continue;
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "type", "text");
    cJSON_AddStringToObject(b, "text", text);
    cJSON_AddItemToArray(content, b);
  }
  if (!cJSON_GetArraySize(content)) { /* e.g. a turn resumed after a failure */
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "type", "text");
    cJSON_AddStringToObject(b, "text", "Continue.");
    cJSON_AddItemToArray(content, b);
  }
  cJSON *doc = cJSON_CreateObject();
  cJSON_AddStringToObject(doc, "type", "user");
  cJSON *msg = cJSON_AddObjectToObject(doc, "message");
  cJSON_AddStringToObject(msg, "role", "user");
  cJSON_AddItemToObject(msg, "content", content);
  cJSON_AddNullToObject(doc, "parent_tool_use_id");
  cJSON_AddStringToObject(doc, "session_id", "");
  return doc;
}

static cJSON *initialize(const dexa__cc_segment *s) {
  cJSON *doc = cJSON_CreateObject();
  cJSON_AddStringToObject(doc, "type", "control_request");
  cJSON_AddStringToObject(doc, "request_id", "dexa-initialize");
  cJSON *r = cJSON_AddObjectToObject(doc, "request");
  cJSON_AddStringToObject(r, "subtype", "initialize");
  cJSON_AddItemToArray(cJSON_AddArrayToObject(r, "sdkMcpServers"),
                       cJSON_CreateString(DEXA__CC_SERVER));
  const char *instructions = str(s->request, "instructions");
  if (instructions && *instructions) cJSON_AddStringToObject(r, "appendSystemPrompt", instructions);
  return doc;
}

/* ---- the CLI's command line and environment ---- */

typedef struct strv {
  char **v;
  size_t n, cap;
  int oom;
} strv;

/* Appends a copy of s, or s itself when own (freed here on failure). */
static void push(strv *a, const char *s, int own) {
  if (!a->oom && a->n + 2 > a->cap) {
    size_t cap = a->cap ? a->cap * 2 : 32;
    char **p = realloc(a->v, cap * sizeof *p);
    if (p) {
      a->v = p;
      a->cap = cap;
    } else {
      a->oom = 1;
    }
  }
  if (a->oom) {
    if (own) free((char *)s);
    return;
  }
  a->v[a->n] = own ? (char *)s : strdup(s);
  if (!a->v[a->n]) a->oom = 1;
  else a->v[++a->n] = NULL;
}

static void strv_free(strv *a) {
  for (size_t i = 0; i < a->n; i++) free(a->v[i]);
  free(a->v);
}

static char *joined(char *const *list, size_t n) {
  dexa__buf b;
  dexa__buf_init(&b);
  for (size_t i = 0; i < n; i++) {
    if (i) dexa__buf_putc(&b, ',');
    dexa__buf_puts(&b, list[i]);
  }
  return dexa__buf_steal(&b, NULL);
}

static void build_argv(strv *a, const dexa__cc_segment *s) {
  static const char *const fixed[] = {
      "--output-format", "stream-json", "--verbose", "--input-format", "stream-json",
      "--permission-prompt-tool", "stdio", "--session-mirror", "--strict-mcp-config",
      "--mcp-config", "{\"mcpServers\":{\"" DEXA__CC_SERVER "\":{\"type\":\"sdk\",\"name\":\"" DEXA__CC_SERVER "\"}}}",
      /* No settings, hooks or permission rules of the machine's user: the
       * host decides. */
      "--setting-sources", "", NULL};
  push(a, s->o->cli_path, 0);
  for (int i = 0; fixed[i]; i++) push(a, fixed[i], 0);
  char *tools = joined(s->o->tools, s->o->tool_count);
  push(a, "--tools", 0);
  push(a, tools ? tools : "", 0);
  if (s->o->tool_count) {
    push(a, "--allowedTools", 0);
    push(a, tools ? tools : "", 0);
  }
  free(tools);
  if (s->o->model) {
    push(a, "--model", 0);
    push(a, s->o->model, 0);
  }
  if (s->state.sid) {
    push(a, "--resume", 0);
    push(a, s->state.sid, 0);
    if (s->state.at) {
      push(a, "--resume-session-at", 0);
      push(a, s->state.at, 0);
    }
  }
}

static int set_by(const char *kv, char *const *list, size_t n) {
  size_t kl = strcspn(kv, "=");
  for (size_t i = 0; i < n; i++)
    if (strncmp(list[i], kv, kl) == 0 && list[i][kl] == '=') return 1;
  return 0;
}

static void push_kv(strv *a, const char *key, const char *value) {
  size_t n = strlen(key) + strlen(value) + 2;
  char *kv = malloc(n);
  if (kv) snprintf(kv, n, "%s=%s", key, value);
  if (!kv) a->oom = 1;
  else push(a, kv, 1);
}

/* The worker's environment with the host's "env" over it and the
 * harness's own variables: a private config directory, the session file's
 * project name, subagents in the foreground (a segment ends with its turn).
 * The API key is whatever the worker's environment holds. */
static void build_env(strv *a, const dexa__cc_segment *s, const char *dir) {
  static const char *const own[] = {"CLAUDE_CONFIG_DIR", "CLAUDE_CODE_PROJECT_DIR_NAME",
                                    "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS", "CLAUDECODE", NULL};
  for (size_t i = 0; environ && environ[i]; i++) {
    int skip = set_by(environ[i], s->o->env, s->o->env_count);
    for (int k = 0; own[k] && !skip; k++)
      skip = strncmp(environ[i], own[k], strlen(own[k])) == 0 && environ[i][strlen(own[k])] == '=';
    if (!skip) push(a, environ[i], 0);
  }
  for (size_t i = 0; i < s->o->env_count; i++) push(a, s->o->env[i], 0);
  push_kv(a, "CLAUDE_CONFIG_DIR", dir);
  push_kv(a, "CLAUDE_CODE_PROJECT_DIR_NAME", DEXA__CC_PROJECT);
  push_kv(a, "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS", "1");
  if (!getenv("CLAUDE_CODE_ENTRYPOINT") && !set_by("CLAUDE_CODE_ENTRYPOINT=", s->o->env, s->o->env_count))
    push_kv(a, "CLAUDE_CODE_ENTRYPOINT", "sdk-c");
  if (!getenv("DISABLE_AUTOUPDATER") && !set_by("DISABLE_AUTOUPDATER=", s->o->env, s->o->env_count))
    push_kv(a, "DISABLE_AUTOUPDATER", "1");
}

/* ---- the private directory ---- */

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *f) {
  (void)st;
  (void)flag;
  (void)f;
  remove(path);
  return 0;
}

int dexa__cc_private_dir(char *out, size_t n) {
  const char *tmp = getenv("TMPDIR");
  snprintf(out, n, "%s/dexa-claude-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  return mkdtemp(out) ? DEXA_OK : DEXA_E_IO;
}

void dexa__cc_remove_dir(const char *dir) {
  if (*dir) nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

int dexa__cc_launch(dexa__cc_segment *s, const char *dir) {
  strv argv = {0}, env = {0};
  build_argv(&argv, s);
  build_env(&env, s, dir);
  int rc = argv.oom || env.oom ? DEXA_E_NOMEM
                               : dexa__cc_proc_start(&s->proc, argv.v, env.v, s->o->cwd, s->err,
                                                     sizeof s->err);
  strv_free(&argv);
  strv_free(&env);
  if (rc == DEXA_OK) rc = dexa__cc_send(s, initialize(s));
  if (rc == DEXA_OK) rc = dexa__cc_send(s, user_input(s));
  if (rc != DEXA_OK && !*s->err)
    snprintf(s->err, sizeof s->err, "claude-code: starting the CLI: %s", dexa_strerror(rc));
  return rc;
}

