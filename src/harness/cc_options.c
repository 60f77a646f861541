/* Options of the Claude Code harness. Unknown keys are refused, as
 * dexa_model_client_new does: a typo must not silently run the CLI with
 * defaults. The API key is never an option: the CLI reads it from the
 * worker's environment, so it is never stored with the agent's settings. */
#include "harness/cc_options.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"
#include "util/errmsg.h"

#define DEFAULT_TIMEOUT_MS (15 * 60 * 1000)
#define DEFAULT_GRACE_MS 5000

/* Variables a host may not set through "env": keys (from the environment
 * only) and what the harness sets itself for each segment. */
static const char *const refused_env[] = {
    "ANTHROPIC_API_KEY",         "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
    "CLAUDE_CONFIG_DIR",         "CLAUDE_CODE_PROJECT_DIR_NAME",
    "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS", NULL};

static int take_string(char **out, const cJSON *v) {
  if (!cJSON_IsString(v) || !*v->valuestring) return DEXA_E_INVALID_ARG;
  *out = strdup(v->valuestring);
  return *out ? DEXA_OK : DEXA_E_NOMEM;
}

static int take_tools(dexa__cc_options *o, const cJSON *v) {
  if (!cJSON_IsArray(v)) return DEXA_E_INVALID_ARG;
  size_t n = (size_t)cJSON_GetArraySize(v);
  o->tools = calloc(n + 1, sizeof *o->tools);
  if (!o->tools) return DEXA_E_NOMEM;
  const cJSON *t;
  cJSON_ArrayForEach(t, v) {
    /* A tool name or a permission rule such as "Bash(git status:*)"; a
     * comma would split it in the CLI's list. */
    if (!cJSON_IsString(t) || !*t->valuestring || strchr(t->valuestring, ','))
      return DEXA_E_INVALID_ARG;
    if (!(o->tools[o->tool_count++] = strdup(t->valuestring))) return DEXA_E_NOMEM;
  }
  return DEXA_OK;
}

static int env_refused(const char *key) {
  for (int i = 0; refused_env[i]; i++)
    if (strcmp(key, refused_env[i]) == 0) return 1;
  return 0;
}

static int take_env(dexa__cc_options *o, const cJSON *v, char *err, size_t n) {
  if (!cJSON_IsObject(v)) return DEXA_E_INVALID_ARG;
  o->env = calloc((size_t)cJSON_GetArraySize(v) + 1, sizeof *o->env);
  if (!o->env) return DEXA_E_NOMEM;
  const cJSON *e;
  cJSON_ArrayForEach(e, v) {
    if (!cJSON_IsString(e) || !*e->string || strchr(e->string, '=')) return DEXA_E_INVALID_ARG;
    if (env_refused(e->string))
      return dexa__say(err, n, DEXA_E_INVALID_ARG,
                 "claude-code options: \"env\" may not set %s (the API key comes from the "
                 "worker's environment; the rest is the harness's own)",
                 e->string);
    size_t len = strlen(e->string) + strlen(e->valuestring) + 2;
    char *kv = malloc(len);
    if (!kv) return DEXA_E_NOMEM;
    snprintf(kv, len, "%s=%s", e->string, e->valuestring);
    o->env[o->env_count++] = kv;
  }
  return DEXA_OK;
}

static int take_timeout(int64_t *out, const cJSON *v) {
  if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > 7 * 24 * 3600e3)
    return DEXA_E_INVALID_ARG;
  *out = (int64_t)v->valuedouble;
  return DEXA_OK;
}

static int set_option(dexa__cc_options *o, const cJSON *v, char *err, size_t n) {
  const char *k = v->string;
  if (strcmp(k, "cli_path") == 0) return take_string(&o->cli_path, v);
  if (strcmp(k, "model") == 0) return take_string(&o->model, v);
  if (strcmp(k, "cwd") == 0) return take_string(&o->cwd, v);
  if (strcmp(k, "allowed_tools") == 0) return take_tools(o, v);
  if (strcmp(k, "env") == 0) return take_env(o, v, err, n);
  if (strcmp(k, "timeout_ms") == 0) return take_timeout(&o->timeout_ms, v);
  return DEXA_E_UNKNOWN_KEY;
}

int dexa__cc_options_parse(dexa__cc_options *o, const char *json, size_t len, char *err,
                           size_t n) {
  memset(o, 0, sizeof *o);
  o->timeout_ms = DEFAULT_TIMEOUT_MS;
  o->stop_grace_ms = DEFAULT_GRACE_MS;
  int rc = DEXA_OK;
  cJSON *doc = NULL;
  if (json && len) {
    doc = cJSON_ParseWithLength(json, len);
    if (!cJSON_IsObject(doc)) {
      rc = dexa__say(err, n, DEXA_E_INVALID_JSON, "claude-code options: not a JSON object");
      goto cleanup;
    }
    const cJSON *v;
    cJSON_ArrayForEach(v, doc) {
      char why[160] = "";
      rc = set_option(o, v, why, sizeof why);
      if (rc == DEXA_OK) continue;
      if (*why)
        dexa__say(err, n, rc, "%s", why);
      else if (rc == DEXA_E_UNKNOWN_KEY)
        dexa__say(err, n, rc, "claude-code options: unknown key \"%.64s\"", v->string);
      else
        dexa__say(err, n, rc, "claude-code options: bad value for \"%.64s\"", v->string);
      goto cleanup;
    }
  }
  if (!o->cli_path && !(o->cli_path = strdup("claude"))) rc = DEXA_E_NOMEM;
cleanup:
  cJSON_Delete(doc);
  if (rc != DEXA_OK) dexa__cc_options_free(o);
  return rc;
}

static void free_list(char **list, size_t n) {
  for (size_t i = 0; list && i < n; i++) free(list[i]);
  free(list);
}

void dexa__cc_options_free(dexa__cc_options *o) {
  free(o->cli_path);
  free(o->model);
  free(o->cwd);
  free_list(o->tools, o->tool_count);
  free_list(o->env, o->env_count);
  memset(o, 0, sizeof *o);
}
