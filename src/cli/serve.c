/* dexagents serve: the AI Agent web app, what `make run` starts. A
 * libmicrohttpd daemon serves the page (the files of the UI directory) and
 * mounts the library's agent routes at /products/ai-agent, with worker
 * threads for the sessions. The daemon takes the routes' limits
 * (dexa_http_agent_routes_daemon_options: idle and header timeouts,
 * connections overall and per client); every response has the security
 * headers and the Host check. With MCP servers the routes also serve
 * PREFIX/oauth/callback, where their sign-ins complete. examples/ai-agent
 * is the same app as a small standalone program. */
#include <arpa/inet.h>
#include <limits.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"

#define PREFIX "/products/ai-agent"

typedef struct server {
  cli_app app;
  char *ui_dir;
  char *settings_extra;
  dexa_http_agent_routes *routes;
  struct MHD_Daemon *daemon;
} server;

/* ---- the page's files --------------------------------------------------------------- */

static int is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* --ui, the configuration's "ui" (DEX_AGENT_UI_DIR), the installed copy
 * (<bindir>/../share/dexagents/ui), or the source tree's. */
static char *find_ui(const char *flag, const char *configured) {
  if (flag) return strdup(flag);
  if (configured) return strdup(configured);
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 40);
  if (n > 0) {
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) {
      strcpy(slash, "/../share/dexagents/ui");
      if (is_dir(exe)) return strdup(exe);
    }
  }
  return is_dir("examples/ai-agent/ui") ? strdup("examples/ai-agent/ui") : NULL;
}

/* ---- settings: the MCP servers and their tools ------------------------------------------ */

static void add_server_tools(cJSON *tools, dexa_tool_source *source) {
  char *json = NULL;
  if (dexa_tool_source_list_json(&json, NULL, source) != DEXA_OK) {
    fprintf(stderr, "dexagents serve: %s lists no tools now\n", dexa_tool_source_name(source));
    return;
  }
  cJSON *list = cJSON_Parse(json);
  dexa_free(json);
  cJSON *t;
  cJSON_ArrayForEach(t, list) cJSON_AddStringToObject(t, "server", dexa_tool_source_name(source));
  while (list && list->child) cJSON_AddItemToArray(tools, cJSON_DetachItemFromArray(list, 0));
  cJSON_Delete(list);
}

static int make_settings_extra(server *s) {
  cJSON *doc = cJSON_CreateObject();
  cJSON *mcp = cJSON_AddObjectToObject(doc, "mcp");
  cJSON_AddBoolToObject(mcp, "available", 1);
  cJSON *servers = cJSON_AddArrayToObject(mcp, "servers");
  cJSON *tools = cJSON_AddArrayToObject(doc, "mcp_tools");
  for (size_t i = s->app.mcp_first; i < s->app.mcp_first + s->app.mcp_count; i++) {
    cJSON_AddItemToArray(servers, cJSON_CreateString(dexa_tool_source_name(s->app.sources[i])));
    add_server_tools(tools, s->app.sources[i]);
  }
  char *text = cJSON_PrintUnformatted(doc);
  cJSON_Delete(doc);
  s->settings_extra = text ? strdup(text) : NULL;
  cJSON_free(text);
  return s->settings_extra ? CLI_OK : CLI_FAIL;
}

static int make_routes(server *s) {
  dexa_http_agent_routes_options o;
  dexa_http_agent_routes_options_init(&o, sizeof o);
  o.prefix = PREFIX;
  const char *key = getenv("DEX_AGENT_SESSION_KEY");
  if (key && *key) {
    o.session_key = key;
    o.session_key_len = strlen(key);
  } else {
    printf("dexagents serve: DEX_AGENT_SESSION_KEY is not set: a random key signs session "
           "tokens, so a restart ends access to the sessions started before it\n");
  }
  o.models = (const char *const *)s->app.cfg.model_names;
  o.model_count = s->app.cfg.model_count;
  o.system_prompt = s->app.cfg.system_prompt;
  o.context_window_tokens = s->app.cfg.context_tokens;
  o.settings_extra_json = s->settings_extra;
  const cli_config *c = &s->app.cfg;
  o.allowed_hosts = c->allowed_hosts;
  if (c->idle_timeout_s) o.idle_timeout_s = c->idle_timeout_s;
  /* A stream's heartbeat comes well within the idle timeout. */
  if (o.heartbeat_ms >= o.idle_timeout_s * 1000) o.heartbeat_ms = o.idle_timeout_s * 500;
  if (c->request_timeout_ms) o.request_timeout_ms = c->request_timeout_ms;
  if (c->max_connections) o.max_connections = c->max_connections;
  if (c->max_connections_per_client) o.max_connections_per_client = c->max_connections_per_client;
  o.mcp_config = s->app.mcp; /* PREFIX/oauth/callback */
  char err[256] = "";
  int rc = dexa_http_agent_routes_new(&s->routes, s->app.rt, &o, err, sizeof err);
  if (rc != DEXA_OK) fprintf(stderr, "dexagents serve: routes: %s: %s\n", dexa_strerror(rc), err);
  return rc == DEXA_OK ? CLI_OK : CLI_FAIL;
}

/* ---- the daemon ---------------------------------------------------------------------------- */

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls) {
  (void)version;
  server *s = cls;
  if (dexa_http_agent_routes_match(s->routes, url))
    return dexa_http_agent_routes_handle(s->routes, c, url, method, upload, upload_size,
                                         con_cls) == DEXA_OK
               ? MHD_YES
               : MHD_NO;
  return serve_static(c, s->routes, s->ui_dir, PREFIX, url, method) ? MHD_YES : MHD_NO;
}

/* The page never uses con_cls, so whatever is there is the routes'. */
static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
  (void)c;
  (void)toe;
  server *s = cls;
  dexa_http_agent_routes_completed(s->routes, con_cls);
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

static int start_daemon(server *s, const char *listen) {
  struct sockaddr_in sa;
  if (parse_listen(listen, &sa) != 0) {
    fprintf(stderr, "dexagents serve: the listen address must be IPV4:PORT, not %s\n", listen);
    return CLI_CONFIG;
  }
  /* One thread per connection: the event stream blocks its thread. poll()
   * rather than select(), whose descriptors stop at 1024. The routes give
   * the timeouts and the connection limits (overall and per client). */
  struct MHD_OptionItem limits[DEXA_HTTP_DAEMON_OPTIONS_MAX];
  if (dexa_http_agent_routes_daemon_options(s->routes, limits, DEXA_HTTP_DAEMON_OPTIONS_MAX) !=
      DEXA_OK)
    return CLI_FAIL;
  s->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                                   MHD_USE_POLL | MHD_USE_ERROR_LOG,
                               0, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, &sa,
                               MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_ARRAY,
                               limits, MHD_OPTION_END);
  if (!s->daemon) {
    fprintf(stderr, "dexagents serve: cannot listen on %s (in use?)\n", listen);
    return CLI_FAIL;
  }
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
  char host[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &sa.sin_addr, host, sizeof host);
  printf("dexagents serve: models %s", s->app.cfg.model_names[0]);
  for (size_t i = 1; i < s->app.cfg.model_count; i++) printf(", %s", s->app.cfg.model_names[i]);
  printf("; store %s\n", cli_store_name(s->app.cfg.store));
  unsigned port = info ? (unsigned)info->port : 0u;
  printf("dexagents serve: open http://%s:%u%s/\n", host, port, PREFIX);
  fflush(stdout);
  /* The MCP sign-ins come back to the callback route (its port is known
   * now); set before the workers start, so no source reads it changing. */
  char redirect[512];
  if (s->app.cfg.oauth_redirect) snprintf(redirect, sizeof redirect, "%s", s->app.cfg.oauth_redirect);
  else snprintf(redirect, sizeof redirect, "http://%s:%u%s/oauth/callback", host, port, PREFIX);
  return cli_app_mcp_auth(&s->app, redirect);
}

int cmd_serve(int argc, char **argv) {
  cli_globals g = {NULL, NULL, 0, -1, NULL, NULL, NULL};
  const char *listen = NULL, *ui = NULL, *threads_s = NULL, *pos[1];
  const char *hosts = NULL, *redirect = NULL, *idle_s = NULL, *max_s = NULL, *per_s = NULL;
  int npos;
  const cli_opt opts[] = {{"--listen", 1, &listen, NULL},
                          {"--ui", 1, &ui, NULL},
                          {"--threads", 1, &threads_s, NULL},
                          {"--allowed-hosts", 1, &hosts, NULL},
                          {"--mcp-tokens", 1, &g.mcp_tokens, NULL},
                          {"--oauth-redirect", 1, &redirect, NULL},
                          {"--idle-timeout", 1, &idle_s, NULL},
                          {"--max-connections", 1, &max_s, NULL},
                          {"--max-connections-per-client", 1, &per_s, NULL},
                          {NULL, 0, NULL, NULL}};
  int rc = cli_parse(argc, argv, 2, &g, opts, pos, 0, &npos, "serve");
  if (rc != CLI_OK) return rc;
  long threads = 0, idle = 0, max = 0, per = 0;
  if ((threads_s && cli_int("--threads", threads_s, 256, &threads) != CLI_OK) ||
      (idle_s && cli_int("--idle-timeout", idle_s, 86400, &idle) != CLI_OK) ||
      (max_s && cli_int("--max-connections", max_s, 65536, &max) != CLI_OK) ||
      (per_s && cli_int("--max-connections-per-client", per_s, 65536, &per) != CLI_OK))
    return CLI_USAGE;
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, NULL);
  signal(SIGPIPE, SIG_IGN);
  server s;
  memset(&s, 0, sizeof s);
  rc = cli_app_open(&s.app, &g, 1);
  cli_config *c = &s.app.cfg;
  if (rc == CLI_OK && hosts) {
    free(c->allowed_hosts);
    if (!(c->allowed_hosts = strdup(hosts))) rc = CLI_FAIL;
  }
  if (rc == CLI_OK && redirect) {
    free(c->oauth_redirect);
    if (!(c->oauth_redirect = strdup(redirect))) rc = CLI_FAIL;
  }
  if (idle) c->idle_timeout_s = idle;
  if (max) c->max_connections = max;
  if (per) c->max_connections_per_client = per;
  if (rc == CLI_OK && !(s.ui_dir = find_ui(ui, s.app.cfg.ui_dir))) {
    fprintf(stderr, "dexagents serve: no UI directory: give --ui DIR\n");
    rc = CLI_CONFIG;
  }
  if (rc == CLI_OK) rc = make_settings_extra(&s);
  if (rc == CLI_OK) rc = make_routes(&s);
  /* The daemon first: the MCP sign-in redirect names its port. */
  if (rc == CLI_OK) rc = start_daemon(&s, listen ? listen : s.app.cfg.listen);
  if (rc == CLI_OK) rc = cli_app_start(&s.app, threads ? (int)threads : s.app.cfg.threads);
  if (rc == CLI_OK) {
    int sig = 0;
    sigwait(&sigs, &sig);
    printf("dexagents serve: stopping (signal %d)\n", sig);
  }
  if (s.routes) dexa_http_agent_routes_shutdown(s.routes);
  if (s.daemon) MHD_stop_daemon(s.daemon);
  if (s.app.started) dexa_runtime_stop(s.app.rt);
  s.app.started = 0;
  dexa_http_agent_routes_free(s.routes);
  cli_app_close(&s.app);
  free(s.ui_dir);
  free(s.settings_extra);
  return rc;
}
