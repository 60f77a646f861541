/* dexagents: the operator's command. It is a client of the public ABI only
 * (test/abi/layers.sh checks that), built from these files:
 *
 * main.c        the subcommand table, --help, --version, exit codes
 * args.c        the option parser every subcommand shares
 * config.c      the configuration file, DEX_AGENT_* and flags, merged
 * agent.c       the agent (models, host tools, MCP, connectors), the runtime
 * output.c      errors and exit codes, JSON output, colours
 * sessions.c    sessions list|show|events|start
 * ops.c         send, approve, reject, answer, steer, delete, stop, execute-plan
 * chat.c        the terminal chat; chat_render.c prints its events
 * serve.c       the AI Agent web app; serve_static.c its page
 * worker.c      a worker-only process
 * graph.c       the session graph
 * store_cmd.c   store check|vacuum|copy */
#ifndef DEXA_CLI_H
#define DEXA_CLI_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dexagents/connectors.h"
#include "dexagents/dexagents.h"
#include "dexagents/graph.h"
#include "dexagents/store.h"

/* Exit codes (dexagents(1), EXIT STATUS). */
enum {
  CLI_OK = 0,
  CLI_FAIL = 1,      /* anything not below */
  CLI_USAGE = 2,     /* an unknown subcommand or option, a missing argument */
  CLI_CONFIG = 3,    /* the configuration file, DEX_AGENT_*, a model, MCP or connector */
  CLI_NOT_FOUND = 4, /* no such session, message or pending call */
  CLI_REFUSED = 5,   /* the session's state or the request does not allow it */
  CLI_STORE = 6,     /* the store cannot be opened or has problems */
  CLI_TIMEOUT = 7    /* --wait or a drain ran out of time */
};

#define CLI_MAX_MODELS 16

/* ---- configuration (config.c) ------------------------------------------------------ */

typedef struct cli_config {
  char *config_path; /* the file read, or NULL */
  char *store;
  char *listen;
  char *system_prompt;
  char *flow_type;
  char *mcp_config;    /* a file of "mcpServers" */
  char *mcp_inline;    /* the file's own "mcpServers" as {"mcpServers":..} */
  char *connector_file; /* DEX_CONNECTOR_CONFIG_FILE */
  char *ui_dir;
  char *mcp_tokens;     /* the MCP OAuth token file (NULL: the library's default) */
  char *oauth_redirect; /* the sign-in redirect URI (NULL: from the listen address) */
  char *allowed_hosts;  /* more Host header names serve answers to */
  /* serve's connection limits (0: the routes' defaults) */
  int64_t idle_timeout_s, request_timeout_ms, max_connections, max_connections_per_client;
  char *model_names[CLI_MAX_MODELS]; /* the first is the default */
  size_t model_count;
  cJSON *model_options; /* name -> options object, or NULL */
  int64_t context_tokens;
  int threads;
} cli_config;

/* Reads the file (path, else $DEX_AGENT_CONFIG, else none), then the
 * DEX_AGENT_* variables over it. Prints what is wrong and returns
 * CLI_CONFIG, or CLI_OK. */
int cli_config_load(cli_config *c, const char *path);
void cli_config_free(cli_config *c);

/* ---- options (args.c) ------------------------------------------------------------- */

/* What every subcommand accepts besides its own options. */
typedef struct cli_globals {
  const char *config;
  const char *store;
  int json;
  int color; /* -1 auto, 0 never, 1 always */
  /* Set by the subcommands that take them (chat, sessions start): a model
   * the allow-list gets when it lacks it, and an MCP file over the
   * configuration's. */
  const char *model;
  const char *mcp_config;
  const char *mcp_tokens; /* serve --mcp-tokens: over the configuration's */
} cli_globals;

typedef struct cli_opt {
  const char *name; /* "--model" */
  int takes_value;
  const char **value; /* takes_value: set to the value */
  int *flag;          /* !takes_value: set to 1 */
} cli_opt;

/* Parses argv[first..argc): global options, the subcommand's opts and
 * positionals (at most max_pos, into pos). Prints a usage error and
 * returns CLI_USAGE, or CLI_OK with *npos set. */
int cli_parse(int argc, char **argv, int first, cli_globals *g, const cli_opt *opts,
              const char **pos, int max_pos, int *npos, const char *cmd);
/* Parses a positive integer option value into *out (1..max). */
int cli_int(const char *what, const char *v, long max, long *out);

/* ---- the agent and the runtime (agent.c) ---------------------------------------------- */

typedef struct cli_app {
  cli_config cfg;
  cli_globals g;
  dexa_model *models[CLI_MAX_MODELS];
  size_t model_count;
  dexa_tool_source **sources; /* host tools, MCP sources, connector sources */
  size_t source_count, mcp_first, mcp_count;
  dexa_mcp_config *mcp; /* kept: sign-ins complete against it (NULL: no MCP servers) */
  dexa_agent *agent;
  dexa_runtime *rt;
  int started; /* worker threads run */
} cli_app;

/* Loads the configuration (g->config, g->store over it), makes the models
 * and the agent and opens the runtime. With tools (the subcommands that run
 * Steps) the MCP servers and the connector connections are opened too and
 * logged once to stderr. Returns an exit code. */
int cli_app_open(cli_app *a, const cli_globals *g, int tools);
/* Sets the MCP servers' OAuth options: the token file of the
 * configuration and redirect (NULL: no interactive sign-in). Their log
 * goes to stderr. Call before the workers start. Returns an exit code. */
int cli_app_mcp_auth(cli_app *a, const char *redirect);
/* Starts threads worker threads (once). */
int cli_app_start(cli_app *a, int threads);
void cli_app_close(cli_app *a);

/* ---- output (output.c) ---------------------------------------------------------------- */

/* The exit code of a DEXA_E_* code. */
int cli_exit_code(int rc);
/* Reports a failed operation: to stdout as the error document with --json,
 * else "dexagents: what: message (NAME)" to stderr. doc (may be NULL) is
 * the operation's error document. Returns cli_exit_code(rc). */
int cli_fail(const cli_globals *g, const char *what, int rc, const char *doc);
/* Prints a document (JSON text) and a newline to stdout. */
void cli_print_json(const char *json);
/* Prints a cJSON tree compactly and deletes it. */
void cli_print_tree(cJSON *doc);

/* Terminal styles, "" when colour is off. */
typedef struct cli_style {
  const char *bold, *dim, *user, *model, *tool, *warn, *err, *reset;
} cli_style;
void cli_style_init(cli_style *s, int color, FILE *f);

/* cJSON helpers. */
/* The store URI to print: without its password (dexa_store_display_name);
 * a buffer of its own, valid until the next call. */
const char *cli_store_name(const char *uri);
const char *cli_str(const cJSON *o, const char *k);
int64_t cli_num(const cJSON *o, const char *k);
/* A runtime call with input (JSON text); *doc gets the parsed response or
 * NULL. Returns the DEXA code; on error *err_doc (if not NULL) gets the
 * error document text (free with dexa_free). */
int cli_call(dexa_runtime *rt, const char *sid, const char *rpc, const char *input, cJSON **doc,
             char **err_doc);

/* Prints what the snapshot says waits (approvals, questions, timers),
 * one line each (sessions.c). */
void cli_show_pending(const cJSON *snapshot);

/* ---- subcommands ------------------------------------------------------------------------- */

int cmd_sessions(int argc, char **argv);
int cmd_send(int argc, char **argv);
int cmd_decide(int argc, char **argv); /* approve, reject */
int cmd_answer(int argc, char **argv);
int cmd_queue_op(int argc, char **argv); /* steer, delete */
int cmd_stop(int argc, char **argv);
int cmd_end(int argc, char **argv);
int cmd_execute_plan(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_worker(int argc, char **argv);
int cmd_graph(int argc, char **argv);
int cmd_store(int argc, char **argv);

/* The usage text of a subcommand (main.c); NULL for an unknown one. */
const char *cli_usage(const char *cmd);
/* Prints the usage of cmd to f. */
void cli_print_usage(const char *cmd, FILE *f);

/* ---- the chat (chat_render.c) ------------------------------------------------------------- */

typedef struct chat_render {
  const cli_style *st;
  int line_open;      /* a "dex> " line is open */
  int reasoning_open; /* a reasoning line is open */
  size_t delta_bytes; /* text_delta bytes since the last model message */
  int turn_done;      /* the turn ended (finished, failed, cancelled) */
} chat_render;

void chat_render_event(chat_render *r, const cJSON *event);
void chat_render_end_line(chat_render *r);
void chat_render_message(chat_render *r, const cJSON *message);

/* ---- the web app (serve_static.c) ------------------------------------------------------- */

struct MHD_Connection;
/* Serves the page's files from ui_dir under prefix (see serve.c), with the
 * routes' Host check (421) and security headers. */
int serve_static(struct MHD_Connection *c, const dexa_http_agent_routes *routes, const char *ui_dir,
                 const char *prefix, const char *url, const char *method);

#endif
