/* example-needs: http sqlite
 * ai-agent: the AI Agent web example. A libmicrohttpd daemon serves the page
 * (ui/) and mounts the library's agent routes (dexa_http_agent_routes) at
 * http://127.0.0.1:8080/products/ai-agent/; sessions run on the embedded
 * runtime with a SQLite store. The demo models need no key:
 *
 *   make run        (or)   examples/ai-agent/ai-agent [--ui DIR]
 *
 * Configuration, all optional (see README.md):
 *   DEX_AGENT_MODEL           the default model (mock/dex)
 *   DEX_AGENT_MODELS          more models a session may pick, comma separated
 *                             (mock/dex-mini when neither variable is set)
 *   DEX_AGENT_SYSTEM_PROMPT   the system prompt
 *   DEX_AGENT_CONTEXT_TOKENS  the context window that compaction works against
 *   DEX_AGENT_MCP_CONFIG      the MCP server configuration file
 *   DEX_AGENT_MCP_TOKENS      the MCP OAuth token file (the library's default
 *                             file, ~/.local/state/dexagents/mcp-tokens.json,
 *                             when unset); servers that need a sign-in send
 *                             the browser back to PREFIX/oauth/callback
 *   DEX_AGENT_OAUTH_REDIRECT  that redirect URI, when the page is reached by
 *                             another address than the listen address
 *   DEX_AGENT_SESSION_KEY     the key that signs session tokens (random when
 *                             unset: a restart then ends access to older sessions)
 *   DEX_AGENT_STORE           the store: a SQLite file (ai-agent.db) or a PostgreSQL
 *                             URI/conninfo (postgresql://...), shared by many processes
 *   DEX_AGENT_LISTEN          HOST:PORT to listen on (127.0.0.1:8080)
 *   DEX_AGENT_ALLOWED_HOSTS   more Host header names the page may be reached by
 *                             (comma separated; the listen address always works)
 *   DEX_AGENT_THREADS         worker threads (4)
 *   DEX_CONNECTOR_CONFIG_FILE the connector file: its support-slack connection
 *                             gives the tool slack_post_thread_reply */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ai_agent.h"

#define PREFIX "/products/ai-agent"
#define MAX_MODELS 16
#define DEFAULT_PROMPT                                                                        \
  "You are a helpful, careful assistant. Ask the user when something is unclear, and never " \
  "send anything outside without approval."

typedef struct app {
  const char *ui_dir;
  const char *store;
  const char *listen;
  const char *prompt;
  int64_t context_tokens;
  int threads;
  char *model_names[MAX_MODELS];
  size_t model_count;
  dexa_model *models[MAX_MODELS];
  dexa_tool_source **sources; /* host tools, then MCP sources */
  size_t source_count;
  size_t mcp_count;
  dexa_mcp_config *mcp_config; /* kept: sign-ins complete against it */
  char *settings_extra;
  dexa_agent *agent;
  dexa_runtime *rt;
  dexa_http_agent_routes *routes;
  struct MHD_Daemon *daemon;
} app;

/* How the store is shown: a PostgreSQL URI or conninfo may hold a
 * password, so it is never printed. */
static const char *store_name(const char *store) {
  return strncmp(store, "postgres", 8) == 0 || strchr(store, '=') ? "PostgreSQL" : store;
}

static const char *env_or(const char *name, const char *fallback) {
  const char *v = getenv(name);
  return v && *v ? v : fallback;
}

/* ---- configuration ------------------------------------------------------------ */

static void add_model_name(app *a, const char *name, size_t n) {
  while (n && (*name == ' ' || *name == '\t')) name++, n--;
  while (n && (name[n - 1] == ' ' || name[n - 1] == '\t')) n--;
  if (!n || a->model_count == MAX_MODELS) return;
  for (size_t i = 0; i < a->model_count; i++)
    if (strlen(a->model_names[i]) == n && memcmp(a->model_names[i], name, n) == 0) return;
  a->model_names[a->model_count] = strndup(name, n);
  if (a->model_names[a->model_count]) a->model_count++;
}

/* DEX_AGENT_MODEL first (the default), then DEX_AGENT_MODELS. */
static void read_models(app *a) {
  const char *def = getenv("DEX_AGENT_MODEL"), *more = getenv("DEX_AGENT_MODELS");
  int none = !(def && *def) && !(more && *more);
  add_model_name(a, def && *def ? def : "mock/dex", strlen(def && *def ? def : "mock/dex"));
  const char *p = none ? "mock/dex-mini" : more ? more : "";
  while (*p) {
    const char *comma = strchr(p, ',');
    size_t n = comma ? (size_t)(comma - p) : strlen(p);
    add_model_name(a, p, n);
    p += n + (comma ? 1 : 0);
  }
}

static int read_config(app *a) {
  a->store = env_or("DEX_AGENT_STORE", "ai-agent.db");
  a->listen = env_or("DEX_AGENT_LISTEN", "127.0.0.1:8080");
  a->prompt = env_or("DEX_AGENT_SYSTEM_PROMPT", DEFAULT_PROMPT);
  char *end;
  const char *ctx = env_or("DEX_AGENT_CONTEXT_TOKENS", "128000");
  errno = 0;
  long long v = strtoll(ctx, &end, 10);
  if (errno || *end || v < 0) {
    fprintf(stderr, "ai-agent: DEX_AGENT_CONTEXT_TOKENS must be a non-negative integer\n");
    return -1;
  }
  a->context_tokens = v;
  const char *th = env_or("DEX_AGENT_THREADS", "4");
  long t = strtol(th, &end, 10);
  if (*end || t < 1 || t > 64) {
    fprintf(stderr, "ai-agent: DEX_AGENT_THREADS must be 1..64\n");
    return -1;
  }
  a->threads = (int)t;
  read_models(a);
  return 0;
}

/* ---- models ------------------------------------------------------------------------ */

/* The demo models for "mock/..." names; other names ("openai/...",
 * "openai-chat/...", "anthropic/...") get the library's provider clients,
 * which read their key from the environment (OPENAI_API_KEY,
 * ANTHROPIC_API_KEY) at each call. A name that no client takes is left out
 * with a message; the first model left is the default. */
static int make_models(app *a) {
  size_t kept = 0;
  for (size_t i = 0; i < a->model_count; i++) {
    const char *name = a->model_names[i];
    char err[256] = "";
    int rc = strncmp(name, "mock/", 5) == 0
                 ? dexa_model_demo_new(&a->models[kept], name)
                 : dexa_model_client_new(&a->models[kept], name, NULL, 0, err, sizeof err);
    if (rc != DEXA_OK) {
      fprintf(stderr, "ai-agent: model %s left out: %s%s%s\n", name, dexa_strerror(rc),
              *err ? ": " : "", err);
      free(a->model_names[i]);
      continue;
    }
    a->model_names[kept++] = a->model_names[i];
  }
  a->model_count = kept;
  if (kept == 0) {
    fprintf(stderr, "ai-agent: no usable model; using mock/dex\n");
    a->model_names[0] = strdup("mock/dex");
    if (!a->model_names[0] || dexa_model_demo_new(&a->models[0], "mock/dex") != DEXA_OK) return -1;
    a->model_count = 1;
  }
  return 0;
}

/* ---- tools: host functions and MCP ---------------------------------------------------- */

/* Adds the MCP servers of DEX_AGENT_MCP_CONFIG as tool sources (one per
 * server); the settings page lists the configured servers. */
static int add_mcp_sources(app *a) {
  const char *path = getenv("DEX_AGENT_MCP_CONFIG");
  if (!path || !*path) return 0;
  dexa_mcp_config *cfg = NULL;
  dexa_tool_source **mcp = NULL;
  size_t n = 0;
  char err[256] = "";
  int rc = dexa_mcp_config_load(&cfg, path, NULL, 0, err, sizeof err);
  if (rc == DEXA_OK) rc = dexa_mcp_tool_sources_new(&mcp, &n, cfg);
  a->mcp_config = cfg;
  if (rc != DEXA_OK) {
    fprintf(stderr, "ai-agent: DEX_AGENT_MCP_CONFIG %s: %s %s\n", path, dexa_strerror(rc), err);
    return -1;
  }
  dexa_tool_source **all = realloc(a->sources, (a->source_count + n) * sizeof *all);
  if (!all) {
    dexa_mcp_tool_sources_free(mcp, n);
    return -1;
  }
  a->sources = all;
  for (size_t i = 0; i < n; i++) a->sources[a->source_count++] = mcp[i];
  free(mcp); /* the references moved into a->sources */
  a->mcp_count = n;
  printf("ai-agent: %zu MCP server%s from %s\n", n, n == 1 ? "" : "s", path);
  return 0;
}

/* Adds the tools a server lists now (none when it cannot be reached: the
 * sessions ask it again at every model call). */
static void add_server_tools(cJSON *tools, dexa_tool_source *source) {
  char *json = NULL;
  if (dexa_tool_source_list_json(&json, NULL, source) != DEXA_OK) {
    fprintf(stderr, "ai-agent: %s lists no tools now\n", dexa_tool_source_name(source));
    return;
  }
  cJSON *list = cJSON_Parse(json);
  dexa_free(json);
  cJSON *t;
  cJSON_ArrayForEach(t, list) {
    cJSON_AddStringToObject(t, "server", dexa_tool_source_name(source));
  }
  while (list && list->child) cJSON_AddItemToArray(tools, cJSON_DetachItemFromArray(list, 0));
  cJSON_Delete(list);
}

/* {"mcp":{"available":true,"servers":[..]},"mcp_tools":[..]} for the
 * settings page; the tools are those the servers listed at start. */
static int make_settings_extra(app *a) {
  cJSON *doc = cJSON_CreateObject();
  cJSON *mcp = cJSON_AddObjectToObject(doc, "mcp");
  cJSON_AddBoolToObject(mcp, "available", 1);
  cJSON *servers = cJSON_AddArrayToObject(mcp, "servers");
  cJSON *tools = cJSON_AddArrayToObject(doc, "mcp_tools");
  for (size_t i = a->source_count - a->mcp_count; i < a->source_count; i++) {
    cJSON_AddItemToArray(servers, cJSON_CreateString(dexa_tool_source_name(a->sources[i])));
    add_server_tools(tools, a->sources[i]);
  }
  char *text = cJSON_PrintUnformatted(doc);
  cJSON_Delete(doc);
  a->settings_extra = text ? strdup(text) : NULL;
  cJSON_free(text);
  return a->settings_extra ? 0 : -1;
}

static void on_mcp_log(void *ud, int level, const char *message) {
  (void)ud;
  if (level <= 3) fprintf(stderr, "ai-agent: %s\n", message);
}

/* OAuth for the MCP servers: the token file, and the redirect back to this
 * server's callback route (known once the daemon listens). Set before the
 * workers start, so no source reads them while they change. */
static int set_mcp_auth(app *a, const char *host, unsigned port) {
  if (!a->mcp_config) return 0;
  char redirect[512];
  const char *own = getenv("DEX_AGENT_OAUTH_REDIRECT");
  if (own && *own) snprintf(redirect, sizeof redirect, "%s", own);
  else snprintf(redirect, sizeof redirect, "http://%s:%u%s/oauth/callback", host, port, PREFIX);
  dexa_mcp_auth_options o;
  dexa_mcp_auth_options_init(&o, sizeof o);
  o.redirect_uri = redirect;
  o.client_name = "AI Agent (libdexagents)";
  o.token_file = getenv("DEX_AGENT_MCP_TOKENS");
  if (o.token_file && !*o.token_file) o.token_file = NULL;
  int rc = dexa_mcp_config_set_auth(a->mcp_config, &o);
  if (rc == DEXA_OK) rc = dexa_mcp_config_set_log(a->mcp_config, on_mcp_log, NULL);
  if (rc != DEXA_OK) fprintf(stderr, "ai-agent: MCP sign-in settings: %s\n", dexa_strerror(rc));
  return rc == DEXA_OK ? 0 : -1;
}

static int make_tools(app *a) {
  a->sources = calloc(2, sizeof *a->sources);
  if (!a->sources || ai_agent_tools_new(&a->sources[0]) != DEXA_OK) return -1;
  a->source_count = 1;
  if (ai_agent_slack_new(&a->sources[1]) != 0) return -1;
  if (a->sources[1]) a->source_count++;
  if (add_mcp_sources(a) != 0) return -1;
  return make_settings_extra(a);
}

/* ---- the agent, the runtime and the routes --------------------------------------------------- */

static int make_agent(app *a) {
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.flow_type = "AIAgentSession";
  def.instructions = a->prompt;
  def.models = a->models;
  def.model_count = a->model_count;
  def.tool_sources = a->sources;
  def.tool_source_count = a->source_count;
  def.builtin_tools = DEXA_BUILTIN_ALL;
  def.plan_mode_enabled = 1;
  def.context_window_tokens = a->context_tokens;
  char err[256] = "";
  int rc = dexa_agent_new(&a->agent, &def, err, sizeof err);
  if (rc != DEXA_OK) fprintf(stderr, "ai-agent: agent: %s: %s\n", dexa_strerror(rc), err);
  if (rc != DEXA_OK) return -1;
  dexa_runtime_options opts;
  dexa_runtime_options_init(&opts, sizeof opts);
  opts.store = a->store;
  rc = dexa_runtime_new(&a->rt, a->agent, &opts, err, sizeof err);
  if (rc != DEXA_OK) fprintf(stderr, "ai-agent: store %s: %s: %s\n", store_name(a->store), dexa_strerror(rc), err);
  return rc == DEXA_OK ? 0 : -1;
}

static int make_routes(app *a) {
  dexa_http_agent_routes_options o;
  dexa_http_agent_routes_options_init(&o, sizeof o);
  o.prefix = PREFIX;
  const char *key = getenv("DEX_AGENT_SESSION_KEY");
  if (key && *key) {
    o.session_key = key;
    o.session_key_len = strlen(key);
  } else {
    printf("ai-agent: DEX_AGENT_SESSION_KEY is not set: a random key signs session tokens, "
           "so a restart ends access to the sessions started before it\n");
  }
  o.models = (const char *const *)a->model_names;
  o.model_count = a->model_count;
  o.system_prompt = a->prompt;
  o.context_window_tokens = a->context_tokens;
  o.settings_extra_json = a->settings_extra;
  o.allowed_hosts = getenv("DEX_AGENT_ALLOWED_HOSTS");
  o.mcp_config = a->mcp_config; /* the routes serve PREFIX/oauth/callback */
  char err[256] = "";
  int rc = dexa_http_agent_routes_new(&a->routes, a->rt, &o, err, sizeof err);
  if (rc != DEXA_OK) fprintf(stderr, "ai-agent: routes: %s: %s\n", dexa_strerror(rc), err);
  return rc == DEXA_OK ? 0 : -1;
}

/* ---- the daemon --------------------------------------------------------------------------------- */

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls) {
  (void)version;
  app *a = cls;
  if (dexa_http_agent_routes_match(a->routes, url))
    return dexa_http_agent_routes_handle(a->routes, c, url, method, upload, upload_size,
                                         con_cls) == DEXA_OK
               ? MHD_YES
               : MHD_NO;
  return ai_agent_serve_static(c, a->routes, a->ui_dir, PREFIX, url, method);
}

/* The page never uses con_cls, so whatever is there is the routes'. */
static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
  (void)c;
  (void)toe;
  app *a = cls;
  dexa_http_agent_routes_completed(a->routes, con_cls);
}

static int parse_listen(const char *listen, struct sockaddr_in *sa) {
  const char *colon = strrchr(listen, ':');
  char host[64];
  if (!colon || (size_t)(colon - listen) >= sizeof host) return -1;
  memcpy(host, listen, (size_t)(colon - listen));
  host[colon - listen] = '\0';
  char *end;
  long port = strtol(colon + 1, &end, 10);
  if (*end || port < 0 || port > 65535) return -1;
  memset(sa, 0, sizeof *sa);
  sa->sin_family = AF_INET;
  sa->sin_port = htons((uint16_t)port);
  if (strcmp(host, "localhost") == 0) strcpy(host, "127.0.0.1");
  return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

static int start_daemon(app *a) {
  struct sockaddr_in sa;
  if (parse_listen(a->listen, &sa) != 0) {
    fprintf(stderr, "ai-agent: DEX_AGENT_LISTEN must be IPV4:PORT, not %s\n", a->listen);
    return -1;
  }
  /* One thread per connection: the event stream blocks its thread while
   * it waits for events. poll() rather than select(), whose descriptors
   * stop at 1024. The routes give the idle timeout and the connection
   * limits (overall and per client). */
  struct MHD_OptionItem limits[DEXA_HTTP_DAEMON_OPTIONS_MAX];
  if (dexa_http_agent_routes_daemon_options(a->routes, limits, DEXA_HTTP_DAEMON_OPTIONS_MAX) !=
      DEXA_OK)
    return -1;
  a->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                                   MHD_USE_POLL | MHD_USE_ERROR_LOG,
                               0, NULL, NULL, on_request, a, MHD_OPTION_SOCK_ADDR, &sa,
                               MHD_OPTION_NOTIFY_COMPLETED, on_completed, a, MHD_OPTION_ARRAY,
                               limits, MHD_OPTION_END);
  if (!a->daemon) {
    fprintf(stderr, "ai-agent: cannot listen on %s (in use?)\n", a->listen);
    return -1;
  }
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(a->daemon, MHD_DAEMON_INFO_BIND_PORT);
  char host[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &sa.sin_addr, host, sizeof host);
  printf("ai-agent: models %s", a->model_names[0]);
  for (size_t i = 1; i < a->model_count; i++) printf(", %s", a->model_names[i]);
  printf("; store %s\n", store_name(a->store));
  printf("ai-agent: open http://%s:%u%s/\n", host, info ? (unsigned)info->port : 0u, PREFIX);
  fflush(stdout);
  return set_mcp_auth(a, host, info ? (unsigned)info->port : 0u);
}

/* ui/ next to the executable unless --ui names another directory. */
static char *default_ui_dir(void) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 8);
  if (n <= 0) return strdup("examples/ai-agent/ui");
  exe[n] = '\0';
  char *slash = strrchr(exe, '/');
  if (slash) strcpy(slash + 1, "ui");
  return strdup(exe);
}

static void cleanup(app *a) {
  if (a->routes) dexa_http_agent_routes_shutdown(a->routes);
  if (a->daemon) MHD_stop_daemon(a->daemon);
  if (a->rt) dexa_runtime_stop(a->rt);
  dexa_http_agent_routes_free(a->routes);
  dexa_runtime_free(a->rt);
  dexa_agent_free(a->agent);
  for (size_t i = 0; i < a->source_count; i++) dexa_tool_source_free(a->sources[i]);
  free(a->sources);
  dexa_mcp_config_free(a->mcp_config);
  for (size_t i = 0; i < a->model_count; i++) {
    dexa_model_free(a->models[i]);
    free(a->model_names[i]);
  }
  free(a->settings_extra);
}

int main(int argc, char **argv) {
  app a;
  memset(&a, 0, sizeof a);
  char *ui = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--ui") == 0 && i + 1 < argc) {
      ui = strdup(argv[++i]);
    } else {
      fprintf(strcmp(argv[i], "--help") == 0 ? stdout : stderr,
              "usage: ai-agent [--ui DIR]   (configured by DEX_AGENT_* variables; see README.md)\n");
      return strcmp(argv[i], "--help") == 0 ? 0 : 2;
    }
  }
  a.ui_dir = ui ? ui : (ui = default_ui_dir());
  /* Signals go to sigwait below, not to the worker or daemon threads. */
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, NULL);
  signal(SIGPIPE, SIG_IGN);

  int status = 1;
  if (read_config(&a) != 0 || make_models(&a) != 0 || make_tools(&a) != 0 || make_agent(&a) != 0 ||
      make_routes(&a) != 0)
    goto done;
  /* The daemon first: the MCP sign-in redirect names its port. */
  if (start_daemon(&a) != 0) goto done;
  int rc = dexa_runtime_start(a.rt, a.threads);
  if (rc != DEXA_OK) {
    fprintf(stderr, "ai-agent: workers: %s\n", dexa_strerror(rc));
    goto done;
  }
  int sig = 0;
  sigwait(&sigs, &sig);
  printf("ai-agent: stopping (signal %d)\n", sig);
  status = 0;
done:
  cleanup(&a);
  free(ui);
  return status;
}
