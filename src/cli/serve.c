/* dexagents serve: the AI Agent web app, what `make run` starts. A
 * libmicrohttpd daemon serves the page (the files of the UI directory) and
 * mounts the library's agent routes at /products/ai-agent, with worker
 * threads for the sessions. examples/ai-agent is the same app as a small
 * standalone program. */
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
  return serve_static(c, s->ui_dir, PREFIX, url, method) ? MHD_YES : MHD_NO;
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
  /* One thread per connection: the event stream blocks its thread. */
  s->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                                   MHD_USE_ERROR_LOG,
                               0, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, &sa,
                               MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                               MHD_OPTION_CONNECTION_LIMIT, (unsigned)256, MHD_OPTION_END);
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
  printf("dexagents serve: open http://%s:%u%s/\n", host, info ? (unsigned)info->port : 0u, PREFIX);
  fflush(stdout);
  return CLI_OK;
}

int cmd_serve(int argc, char **argv) {
  cli_globals g = {NULL, NULL, 0, -1, NULL, NULL};
  const char *listen = NULL, *ui = NULL, *threads_s = NULL, *pos[1];
  int npos;
  const cli_opt opts[] = {{"--listen", 1, &listen, NULL}, {"--ui", 1, &ui, NULL},
                          {"--threads", 1, &threads_s, NULL}, {NULL, 0, NULL, NULL}};
  int rc = cli_parse(argc, argv, 2, &g, opts, pos, 0, &npos, "serve");
  if (rc != CLI_OK) return rc;
  long threads = 0;
  if (threads_s && cli_int("--threads", threads_s, 256, &threads) != CLI_OK) return CLI_USAGE;
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, NULL);
  signal(SIGPIPE, SIG_IGN);
  server s;
  memset(&s, 0, sizeof s);
  rc = cli_app_open(&s.app, &g, 1);
  if (rc == CLI_OK && !(s.ui_dir = find_ui(ui, s.app.cfg.ui_dir))) {
    fprintf(stderr, "dexagents serve: no UI directory: give --ui DIR\n");
    rc = CLI_CONFIG;
  }
  if (rc == CLI_OK) rc = make_settings_extra(&s);
  if (rc == CLI_OK) rc = make_routes(&s);
  if (rc == CLI_OK) rc = cli_app_start(&s.app, threads ? (int)threads : s.app.cfg.threads);
  if (rc == CLI_OK) rc = start_daemon(&s, listen ? listen : s.app.cfg.listen);
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
