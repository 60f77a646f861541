/* The one configuration every subcommand shares: defaults, then the
 * configuration file (--config FILE or $DEX_AGENT_CONFIG), then the
 * DEX_AGENT_* variables (and DEX_CONNECTOR_CONFIG_FILE), then the
 * subcommand's flags. The file is JSON; an unknown key is refused:
 *
 *   {"model": "mock/dex", "models": ["mock/dex-mini"],
 *    "modelOptions": {"openai-chat/llama3.2": {"base_url": "http://127.0.0.1:11434/v1"}},
 *    "systemPrompt": "...", "contextTokens": 128000,
 *    "mcpServers": {...} or "mcpConfig": "mcp-servers.json",
 *    "connectorConfigFile": "connectors.json",
 *    "store": "dexagents.db", "listen": "127.0.0.1:8080", "threads": 4,
 *    "flowType": "AIAgentSession", "ui": "/usr/share/dexagents/ui",
 *    "mcpTokens": "mcp-tokens.json", "oauthRedirect": "https://agent.example/products/ai-agent/oauth/callback",
 *    "allowedHosts": "agent.example", "idleTimeout": 30, "requestTimeoutMs": 30000,
 *    "maxConnections": 512, "maxConnectionsPerClient": 64}
 *
 * Secrets stay out of it: provider keys and the session key come only from
 * the environment, connector tokens from the connector file. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

#define DEFAULT_PROMPT                                                                        \
  "You are a helpful, careful assistant. Ask the user when something is unclear, and never " \
  "send anything outside without approval."
#define MAX_FILE_BYTES (1024 * 1024)

static int set_str(char **slot, const char *v) {
  free(*slot);
  *slot = v ? strdup(v) : NULL;
  return v && !*slot ? -1 : 0;
}

static const char *env(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

static void add_model(cli_config *c, const char *name, size_t n) {
  while (n && (*name == ' ' || *name == '\t')) name++, n--;
  while (n && (name[n - 1] == ' ' || name[n - 1] == '\t')) n--;
  if (!n || c->model_count == CLI_MAX_MODELS) return;
  for (size_t i = 0; i < c->model_count; i++)
    if (strlen(c->model_names[i]) == n && memcmp(c->model_names[i], name, n) == 0) return;
  if ((c->model_names[c->model_count] = strndup(name, n))) c->model_count++;
}

static void clear_models(cli_config *c) {
  for (size_t i = 0; i < c->model_count; i++) free(c->model_names[i]);
  c->model_count = 0;
}

static char *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = malloc(MAX_FILE_BYTES + 1);
  size_t n = buf ? fread(buf, 1, MAX_FILE_BYTES + 1, f) : 0;
  int bad = ferror(f) || n > MAX_FILE_BYTES;
  fclose(f);
  if (!buf || bad) {
    free(buf);
    errno = bad ? EFBIG : ENOMEM;
    return NULL;
  }
  buf[n] = '\0';
  *len = n;
  return buf;
}

static int bad(const cli_config *c, const char *key, const char *why) {
  fprintf(stderr, "dexagents: %s: %s: %s\n", c->config_path, key, why);
  return CLI_CONFIG;
}

static int file_string(cli_config *c, const cJSON *e, char **slot) {
  if (!cJSON_IsString(e) || !*e->valuestring) return bad(c, e->string, "must be a non-empty string");
  return set_str(slot, e->valuestring) == 0 ? CLI_OK : CLI_FAIL;
}

static int file_int(cli_config *c, const cJSON *e, int64_t lo, int64_t hi, int64_t *out) {
  double d = cJSON_GetNumberValue(e);
  if (!cJSON_IsNumber(e) || d != (double)(int64_t)d || d < (double)lo || d > (double)hi) {
    char why[96];
    snprintf(why, sizeof why, "must be an integer from %lld to %lld", (long long)lo, (long long)hi);
    return bad(c, e->string, why);
  }
  *out = (int64_t)d;
  return CLI_OK;
}

static int file_models(cli_config *c, const cJSON *e) {
  if (!cJSON_IsArray(e)) return bad(c, e->string, "must be an array of model names");
  const cJSON *m;
  cJSON_ArrayForEach(m, e) {
    if (!cJSON_IsString(m) || !*m->valuestring) return bad(c, e->string, "must hold model names");
    add_model(c, m->valuestring, strlen(m->valuestring));
  }
  return CLI_OK;
}

static int file_member(cli_config *c, const cJSON *e, char **model) {
  const char *k = e->string;
  int64_t v;
  int rc = CLI_OK;
  if (!strcmp(k, "model")) return file_string(c, e, model);
  if (!strcmp(k, "models")) return file_models(c, e);
  if (!strcmp(k, "systemPrompt")) return file_string(c, e, &c->system_prompt);
  if (!strcmp(k, "store")) return file_string(c, e, &c->store);
  if (!strcmp(k, "listen")) return file_string(c, e, &c->listen);
  if (!strcmp(k, "flowType")) return file_string(c, e, &c->flow_type);
  if (!strcmp(k, "mcpConfig")) return file_string(c, e, &c->mcp_config);
  if (!strcmp(k, "connectorConfigFile")) return file_string(c, e, &c->connector_file);
  if (!strcmp(k, "ui")) return file_string(c, e, &c->ui_dir);
  if (!strcmp(k, "mcpTokens")) return file_string(c, e, &c->mcp_tokens);
  if (!strcmp(k, "oauthRedirect")) return file_string(c, e, &c->oauth_redirect);
  if (!strcmp(k, "allowedHosts")) return file_string(c, e, &c->allowed_hosts);
  if (!strcmp(k, "idleTimeout")) return file_int(c, e, 1, 86400, &c->idle_timeout_s);
  if (!strcmp(k, "requestTimeoutMs")) return file_int(c, e, 1, INT64_C(86400000), &c->request_timeout_ms);
  if (!strcmp(k, "maxConnections")) return file_int(c, e, 1, 65536, &c->max_connections);
  if (!strcmp(k, "maxConnectionsPerClient"))
    return file_int(c, e, 1, 65536, &c->max_connections_per_client);
  if (!strcmp(k, "contextTokens")) {
    if ((rc = file_int(c, e, 0, INT64_C(1) << 40, &v)) == CLI_OK) c->context_tokens = v;
    return rc;
  }
  if (!strcmp(k, "threads")) {
    if ((rc = file_int(c, e, 1, 256, &v)) == CLI_OK) c->threads = (int)v;
    return rc;
  }
  if (!strcmp(k, "mcpServers")) {
    cJSON *wrap = cJSON_CreateObject();
    cJSON_AddItemToObject(wrap, "mcpServers", cJSON_Duplicate(e, 1));
    char *text = cJSON_PrintUnformatted(wrap);
    cJSON_Delete(wrap);
    rc = text && set_str(&c->mcp_inline, text) == 0 ? CLI_OK : CLI_FAIL;
    cJSON_free(text);
    return rc;
  }
  if (!strcmp(k, "modelOptions")) {
    if (!cJSON_IsObject(e)) return bad(c, k, "must be an object of model name to options");
    cJSON_Delete(c->model_options);
    c->model_options = cJSON_Duplicate(e, 1);
    return c->model_options ? CLI_OK : CLI_FAIL;
  }
  return bad(c, k,
             "unknown key (known: model, models, modelOptions, systemPrompt, contextTokens, "
             "mcpServers, mcpConfig, mcpTokens, oauthRedirect, connectorConfigFile, store, listen, "
             "allowedHosts, idleTimeout, requestTimeoutMs, maxConnections, maxConnectionsPerClient, "
             "threads, flowType, ui)");
}

static int read_file(cli_config *c, char **model) {
  size_t len = 0;
  char *text = read_all(c->config_path, &len);
  if (!text) {
    fprintf(stderr, "dexagents: configuration file %s: %s\n", c->config_path, strerror(errno));
    return CLI_CONFIG;
  }
  cJSON *root = cJSON_ParseWithLength(text, len);
  free(text);
  if (!cJSON_IsObject(root)) {
    cJSON_Delete(root);
    fprintf(stderr, "dexagents: configuration file %s: not a JSON object\n", c->config_path);
    return CLI_CONFIG;
  }
  int rc = CLI_OK;
  for (const cJSON *e = root->child; e && rc == CLI_OK; e = e->next) rc = file_member(c, e, model);
  cJSON_Delete(root);
  return rc;
}

/* DEX_AGENT_MODEL is the default model, DEX_AGENT_MODELS more of them; when
 * the variables name none, the file's; when nothing names one, mock/dex
 * and mock/dex-mini. */
static void merge_models(cli_config *c, const char *file_model) {
  const char *def = env("DEX_AGENT_MODEL"), *more = env("DEX_AGENT_MODELS");
  char *file_names[CLI_MAX_MODELS];
  size_t file_count = c->model_count;
  memcpy(file_names, c->model_names, sizeof file_names);
  c->model_count = 0;
  if (def || more) {
    add_model(c, def ? def : file_model ? file_model : "mock/dex",
              strlen(def ? def : file_model ? file_model : "mock/dex"));
    for (const char *p = more ? more : ""; *p;) {
      const char *comma = strchr(p, ',');
      size_t n = comma ? (size_t)(comma - p) : strlen(p);
      add_model(c, p, n);
      p += n + (comma ? 1 : 0);
    }
  } else {
    const char *first = file_model ? file_model : "mock/dex";
    add_model(c, first, strlen(first));
    for (size_t i = 0; i < file_count; i++) add_model(c, file_names[i], strlen(file_names[i]));
    if (!file_model && !file_count) add_model(c, "mock/dex-mini", 13);
  }
  for (size_t i = 0; i < file_count; i++) free(file_names[i]);
}

static int env_overrides(cli_config *c) {
  const char *v;
  if ((v = env("DEX_AGENT_STORE"))) set_str(&c->store, v);
  if ((v = env("DEX_AGENT_LISTEN"))) set_str(&c->listen, v);
  if ((v = env("DEX_AGENT_SYSTEM_PROMPT"))) set_str(&c->system_prompt, v);
  if ((v = env("DEX_AGENT_MCP_CONFIG"))) {
    set_str(&c->mcp_config, v);
    set_str(&c->mcp_inline, NULL); /* the variable's file replaces the inline servers */
  }
  if ((v = env("DEX_CONNECTOR_CONFIG_FILE"))) set_str(&c->connector_file, v);
  if ((v = env("DEX_AGENT_UI_DIR"))) set_str(&c->ui_dir, v);
  if ((v = env("DEX_AGENT_MCP_TOKENS"))) set_str(&c->mcp_tokens, v);
  if ((v = env("DEX_AGENT_OAUTH_REDIRECT"))) set_str(&c->oauth_redirect, v);
  if ((v = env("DEX_AGENT_ALLOWED_HOSTS"))) set_str(&c->allowed_hosts, v);
  if ((v = env("DEX_AGENT_CONTEXT_TOKENS"))) {
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (errno || *end || n < 0) {
      fprintf(stderr, "dexagents: DEX_AGENT_CONTEXT_TOKENS must be a non-negative integer\n");
      return CLI_CONFIG;
    }
    c->context_tokens = n;
  }
  if ((v = env("DEX_AGENT_THREADS"))) {
    char *end;
    long n = strtol(v, &end, 10);
    if (*end || n < 1 || n > 256) {
      fprintf(stderr, "dexagents: DEX_AGENT_THREADS must be 1..256\n");
      return CLI_CONFIG;
    }
    c->threads = (int)n;
  }
  return CLI_OK;
}

int cli_config_load(cli_config *c, const char *path) {
  memset(c, 0, sizeof *c);
  c->context_tokens = 128000;
  c->threads = 4;
  if (set_str(&c->store, "dexagents.db") || set_str(&c->listen, "127.0.0.1:8080") ||
      set_str(&c->system_prompt, DEFAULT_PROMPT) || set_str(&c->flow_type, "AIAgentSession"))
    return CLI_FAIL;
  if (!path) path = env("DEX_AGENT_CONFIG");
  char *file_model = NULL;
  int rc = CLI_OK;
  if (path) {
    set_str(&c->config_path, path);
    rc = read_file(c, &file_model);
  }
  if (rc == CLI_OK) {
    merge_models(c, file_model);
    rc = env_overrides(c);
  }
  free(file_model);
  return rc;
}

void cli_config_free(cli_config *c) {
  free(c->config_path);
  free(c->store);
  free(c->listen);
  free(c->system_prompt);
  free(c->flow_type);
  free(c->mcp_config);
  free(c->mcp_inline);
  free(c->connector_file);
  free(c->ui_dir);
  free(c->mcp_tokens);
  free(c->oauth_redirect);
  free(c->allowed_hosts);
  clear_models(c);
  cJSON_Delete(c->model_options);
  memset(c, 0, sizeof *c);
}
