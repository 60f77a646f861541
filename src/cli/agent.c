/* The agent every subcommand builds from the one configuration, so that a
 * session started by one (serve, chat) runs in any other (worker): the
 * same flow type, models and tool sources. Host tools: clock (READ) and
 * send_note (WRITE, needs approval), as in the AI Agent example; then the
 * MCP servers (their configuration kept for the sign-ins that serve
 * completes, their tokens in the token file, their log to stderr); then
 * the connector connection support-slack. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"

#define SLACK_CONNECTION "support-slack"

/* ---- host tools ---------------------------------------------------------------------- */

static int clock_tool(void *u, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  (void)u;
  (void)inv;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  char text[64];
  size_t n = strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return dexa_tool_output_set_text(out, text, n, 0);
}

/* "Sends" a note: a real application delivers it; the idempotency key lets
 * a recipient drop a duplicate. */
static int send_note_tool(void *u, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  (void)u;
  const char *json;
  size_t len;
  dexa_tool_invocation_arguments(inv, &json, &len);
  cJSON *a = cJSON_ParseWithLength(json, len);
  const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "text"));
  const char *to = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "to"));
  char msg[600];
  int n = text ? snprintf(msg, sizeof msg, "note sent to %s (key %s): %s", to ? to : "the team",
                          dexa_tool_invocation_idempotency_key(inv), text)
               : snprintf(msg, sizeof msg, "send_note needs {\"text\":\"...\"}");
  cJSON_Delete(a);
  if (n < 0) n = 0;
  if ((size_t)n >= sizeof msg) n = (int)sizeof msg - 1;
  return dexa_tool_output_set_text(out, msg, (size_t)n, text == NULL);
}

static int host_tools(dexa_tool_source **out) {
  int rc = dexa_function_tools_new(out, "host");
  if (rc == DEXA_OK)
    rc = dexa_function_tools_add(*out, "clock", "Returns the current UTC time.",
                                 "{\"type\":\"object\",\"properties\":{}}", DEXA_TOOL_READ,
                                 DEXA_APPROVAL_NONE, clock_tool, NULL);
  if (rc == DEXA_OK)
    rc = dexa_function_tools_add(
        *out, "send_note", "Sends a short note to a person or the team (needs approval).",
        "{\"type\":\"object\",\"properties\":{\"to\":{\"type\":\"string\"},"
        "\"text\":{\"type\":\"string\"}},\"required\":[\"text\"]}",
        DEXA_TOOL_WRITE, DEXA_APPROVAL_REQUIRED, send_note_tool, NULL);
  return rc;
}

/* ---- models ---------------------------------------------------------------------------- */

static int make_models(cli_app *a) {
  for (size_t i = 0; i < a->cfg.model_count; i++) {
    const char *name = a->cfg.model_names[i];
    cJSON *opts = cJSON_GetObjectItemCaseSensitive(a->cfg.model_options, name);
    char *opts_text = opts ? cJSON_PrintUnformatted(opts) : NULL;
    char err[256] = "";
    int rc = dexa_model_client_new(&a->models[a->model_count], name, opts_text,
                                   opts_text ? strlen(opts_text) : 0, err, sizeof err);
    cJSON_free(opts_text);
    if (rc != DEXA_OK) {
      fprintf(stderr, "dexagents: model %s: %s%s%s\n", name, dexa_strerror(rc), *err ? ": " : "", err);
      return CLI_CONFIG;
    }
    a->model_count++;
  }
  return CLI_OK;
}

/* ---- tool sources ---------------------------------------------------------------------- */

static int add_source(cli_app *a, dexa_tool_source *s) {
  dexa_tool_source **grown = realloc(a->sources, (a->source_count + 1) * sizeof *grown);
  if (!grown) {
    dexa_tool_source_free(s);
    return CLI_FAIL;
  }
  a->sources = grown;
  a->sources[a->source_count++] = s;
  return CLI_OK;
}

/* The servers' log messages (notifications/message) and the sources' own
 * notices: errors, warnings and information to stderr, one line each. */
static void on_mcp_log(void *ud, int level, const char *message) {
  (void)ud;
  static const char *const names[] = {"", "error", "warning", "info"};
  if (level >= 1 && level <= 3) fprintf(stderr, "dexagents: mcp %s: %s\n", names[level], message);
}

int cli_app_mcp_auth(cli_app *a, const char *redirect) {
  if (!a->mcp) return CLI_OK;
  dexa_mcp_auth_options o;
  dexa_mcp_auth_options_init(&o, sizeof o);
  o.redirect_uri = redirect;
  o.client_name = "AI Agent (dexagents)";
  o.token_file = a->cfg.mcp_tokens;
  int rc = dexa_mcp_config_set_auth(a->mcp, &o);
  if (rc == DEXA_OK) rc = dexa_mcp_config_set_log(a->mcp, on_mcp_log, NULL);
  if (rc == DEXA_OK) return CLI_OK;
  fprintf(stderr, "dexagents: MCP sign-in settings%s%s: %s\n", redirect ? " for " : "",
          redirect ? redirect : "", dexa_strerror(rc));
  return CLI_CONFIG;
}

static int add_mcp(cli_app *a) {
  const cli_config *c = &a->cfg;
  if (!c->mcp_config && !c->mcp_inline) return CLI_OK;
  dexa_mcp_config *mc = NULL;
  dexa_tool_source **mcp = NULL;
  size_t n = 0;
  char err[256] = "", *shown = NULL;
  int rc = c->mcp_config ? dexa_mcp_config_load(&mc, c->mcp_config, NULL, 0, err, sizeof err)
                         : dexa_mcp_config_load(&mc, NULL, c->mcp_inline, strlen(c->mcp_inline), err,
                                                sizeof err);
  if (rc == DEXA_OK && dexa_mcp_config_redacted_json(mc, &shown, NULL) == DEXA_OK)
    fprintf(stderr, "dexagents: MCP servers %s\n", shown); /* never the secrets */
  dexa_free(shown);
  a->mcp = mc; /* kept: serve completes sign-ins against it */
  if (rc == DEXA_OK) rc = cli_app_mcp_auth(a, NULL) == CLI_OK ? DEXA_OK : DEXA_E_INVALID_ARG;
  if (rc == DEXA_OK) rc = dexa_mcp_tool_sources_new(&mcp, &n, mc);
  if (rc != DEXA_OK) {
    fprintf(stderr, "dexagents: MCP configuration %s: %s%s%s\n",
            c->mcp_config ? c->mcp_config : "(mcpServers of the configuration file)",
            dexa_strerror(rc), *err ? ": " : "", err);
    return CLI_CONFIG;
  }
  a->mcp_first = a->source_count;
  a->mcp_count = n;
  for (size_t i = 0; i < n && rc == CLI_OK; i++) {
    rc = add_source(a, mcp[i]);
    mcp[i] = NULL;
  }
  dexa_mcp_tool_sources_free(mcp, n); /* the references moved to a->sources */
  return rc;
}

/* The Slack connection support-slack from the connector file: no file
 * means no Slack tools (said once); a file that is incomplete or invalid
 * stops the start. The token is never printed. */
static int add_connectors(cli_app *a) {
  const char *path = a->cfg.connector_file;
  if (!path) {
    fprintf(stderr, "dexagents: no Slack tools: DEX_CONNECTOR_CONFIG_FILE is not set\n");
    return CLI_OK;
  }
  dexa_connector_config *cc = NULL;
  dexa_tool_source *src = NULL;
  char err[300] = "";
  int rc = dexa_connector_config_load(&cc, path, NULL, 0, err, sizeof err);
  if (rc == DEXA_E_NOT_FOUND) {
    fprintf(stderr, "dexagents: no Slack tools: the connector configuration file %s does not exist\n",
            path);
    return CLI_OK;
  }
  if (rc == DEXA_OK) rc = dexa_connector_tool_source_new(&src, cc, SLACK_CONNECTION, err, sizeof err);
  dexa_connector_config_free(cc);
  if (rc != DEXA_OK) {
    fprintf(stderr, "dexagents: connector configuration %s: %s\n", path, *err ? err : dexa_strerror(rc));
    return CLI_CONFIG;
  }
  fprintf(stderr, "dexagents: Slack connection %s from %s: tool slack_post_thread_reply\n",
          SLACK_CONNECTION, path);
  return add_source(a, src);
}

/* A model a subcommand names joins the allow-list (after the default), so
 * `chat --model openai/gpt-5-mini` uses it rather than the default. */
static int allow_model(cli_config *c, const char *name) {
  for (size_t i = 0; i < c->model_count; i++)
    if (strcmp(c->model_names[i], name) == 0) return CLI_OK;
  if (c->model_count == CLI_MAX_MODELS) {
    fprintf(stderr, "dexagents: too many models\n");
    return CLI_CONFIG;
  }
  c->model_names[c->model_count] = strdup(name);
  return c->model_names[c->model_count++] ? CLI_OK : CLI_FAIL;
}

/* ---- the app ------------------------------------------------------------------------------ */

static int make_agent(cli_app *a) {
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.flow_type = a->cfg.flow_type;
  def.instructions = a->cfg.system_prompt;
  def.models = a->models;
  def.model_count = a->model_count;
  def.tool_sources = a->sources;
  def.tool_source_count = a->source_count;
  def.builtin_tools = DEXA_BUILTIN_ALL;
  def.plan_mode_enabled = 1;
  def.context_window_tokens = a->cfg.context_tokens;
  char err[256] = "";
  int rc = dexa_agent_new(&a->agent, &def, err, sizeof err);
  if (rc != DEXA_OK) {
    fprintf(stderr, "dexagents: agent: %s: %s\n", dexa_strerror(rc), err);
    return CLI_CONFIG;
  }
  return CLI_OK;
}

static int open_runtime(cli_app *a) {
  dexa_runtime_options o;
  dexa_runtime_options_init(&o, sizeof o);
  o.store = a->cfg.store;
  char err[256] = "";
  int rc = dexa_runtime_new(&a->rt, a->agent, &o, err, sizeof err);
  if (rc == DEXA_OK) return CLI_OK;
  fprintf(stderr, "dexagents: store %s: %s: %s\n", cli_store_name(a->cfg.store), dexa_strerror(rc),
          err);
  return rc == DEXA_E_INVALID_ARG || rc == DEXA_E_UNSUPPORTED ? CLI_CONFIG : CLI_STORE;
}

int cli_app_open(cli_app *a, const cli_globals *g, int tools) {
  memset(a, 0, sizeof *a);
  a->g = *g;
  int rc = cli_config_load(&a->cfg, g->config);
  if (rc == CLI_OK && g->store) {
    free(a->cfg.store);
    a->cfg.store = strdup(g->store);
  }
  if (rc == CLI_OK && g->mcp_config) {
    free(a->cfg.mcp_config);
    free(a->cfg.mcp_inline);
    a->cfg.mcp_config = strdup(g->mcp_config);
    a->cfg.mcp_inline = NULL;
  }
  if (rc == CLI_OK && g->mcp_tokens) {
    free(a->cfg.mcp_tokens);
    a->cfg.mcp_tokens = strdup(g->mcp_tokens);
  }
  if (rc == CLI_OK && g->model) rc = allow_model(&a->cfg, g->model);
  dexa_tool_source *host = NULL;
  if (rc == CLI_OK) rc = make_models(a);
  if (rc == CLI_OK) rc = host_tools(&host) == DEXA_OK ? add_source(a, host) : CLI_FAIL;
  if (rc == CLI_OK && tools) rc = add_mcp(a);
  if (rc == CLI_OK && tools) rc = add_connectors(a);
  if (rc == CLI_OK) rc = make_agent(a);
  if (rc == CLI_OK) rc = open_runtime(a);
  return rc;
}

int cli_app_start(cli_app *a, int threads) {
  if (a->started) return CLI_OK;
  int rc = dexa_runtime_start(a->rt, threads);
  if (rc != DEXA_OK) {
    fprintf(stderr, "dexagents: worker threads: %s\n", dexa_strerror(rc));
    return CLI_FAIL;
  }
  a->started = 1;
  return CLI_OK;
}

void cli_app_close(cli_app *a) {
  if (a->rt && a->started) dexa_runtime_stop(a->rt);
  dexa_runtime_free(a->rt);
  dexa_agent_free(a->agent);
  for (size_t i = 0; i < a->source_count; i++) dexa_tool_source_free(a->sources[i]);
  free(a->sources);
  dexa_mcp_config_free(a->mcp);
  for (size_t i = 0; i < a->model_count; i++) dexa_model_free(a->models[i]);
  cli_config_free(&a->cfg);
  memset(a, 0, sizeof *a);
}
