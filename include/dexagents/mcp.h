/* libdexagents: MCP servers as tool sources.
 *
 * The worker's configuration file names the MCP servers, in the common
 * "mcpServers" JSON shape; nothing about a server ever comes from flow input
 * or a browser:
 *
 *   {"mcpServers": {
 *     "files": {"command": "npx", "args": ["mcp-server-filesystem", "/srv"],
 *               "env": {"TOKEN": "..."}, "cwd": "/srv",
 *               "trustAnnotations": true, "timeoutMs": 30000},
 *     "web":   {"url": "http://127.0.0.1:3001/mcp", "headers": {"Authorization": "..."}}}}
 *
 * Each configured server becomes one tool source, so a server that is down
 * leaves out only its own tools from a model call. Tool names are
 * "<server>__<tool>"; see dexa_mcp_tool_sources_new(3) for the exact scheme,
 * the effects taken from annotations, and the threading model. */
#ifndef DEXAGENTS_MCP_H
#define DEXAGENTS_MCP_H

#include "common.h"

DEXA_BEGIN_DECLS

typedef struct dexa_mcp_config dexa_mcp_config;

/* Loads a configuration: from the file at path, or (path NULL) from the JSON
 * text json of json_len bytes. Unknown keys are refused with the key's path
 * in errmsg ("mcpServers.files.evn: unknown key"). Returns DEXA_OK,
 * DEXA_E_INVALID_ARG (no source, or a value of the wrong type or range),
 * DEXA_E_INVALID_JSON, DEXA_E_UNKNOWN_KEY, DEXA_E_IO (the file cannot be
 * read), DEXA_E_TOO_LARGE (over 1 MiB) or DEXA_E_NOMEM; on error *out is
 * NULL and errmsg (if not NULL) receives a NUL-terminated message. */
DEXA_EXTERN int dexa_mcp_config_load(dexa_mcp_config **out, const char *path, const char *json,
                                     size_t json_len, char *errmsg, size_t errmsg_size);

/* The configuration as JSON with every env and header value replaced by
 * "<redacted>": the only form to print or log. *out is freed with
 * dexa_free. Returns DEXA_OK, DEXA_E_INVALID_ARG or DEXA_E_NOMEM. */
DEXA_EXTERN int dexa_mcp_config_redacted_json(const dexa_mcp_config *config, char **out,
                                              size_t *out_len);

/* Releases a configuration. NULL is a no-op. Sources made from it keep
 * their own copy. */
DEXA_EXTERN void dexa_mcp_config_free(dexa_mcp_config *config);

/* ---- OAuth for Streamable HTTP servers (1.1) ----
 *
 * A server that answers 401 gets an OAuth 2.1 client (see
 * dexa_mcp_tool_sources_new(3)): discovery, registration, PKCE, refresh and
 * step-up happen inside the source. When a person must sign in, the call
 * asks a question whose "url" is the sign-in page; the authorization server
 * sends the browser back to the host's redirect_uri, where the host calls
 * dexa_mcp_authorization_complete and answers the question. Tokens live
 * only in the token store, never in session state or logs. */

/* The host's token store: records (JSON text) by key. get sets *value and
 * *value_len and returns DEXA_OK, or returns DEXA_E_NOT_FOUND; the value is
 * borrowed until the next get or put of the store on the same thread. put
 * stores value (value NULL: deletes key) and returns DEXA_OK. Any other
 * return is a failure. Called from any thread, several at once; every
 * process that runs the sources or completes a sign-in must see the same
 * records (a shared database, or one file on one machine). */
typedef struct dexa_mcp_token_store_vtable {
  uint32_t struct_size;
  int (*get)(void *user_data, const char *key, const char **value, size_t *value_len);
  int (*put)(void *user_data, const char *key, const char *value, size_t value_len);
} dexa_mcp_token_store_vtable;

DEXA_EXTERN int dexa_mcp_token_store_vtable_init(dexa_mcp_token_store_vtable *vtable,
                                                 size_t struct_size);

/* What the host sets for every server of a configuration. Initialize with
 * dexa_mcp_auth_options_init; strings are copied. */
typedef struct dexa_mcp_auth_options {
  uint32_t struct_size;
  int32_t reserved0;
  /* Where the authorization server sends the browser after a sign-in: a
   * route of the host that calls dexa_mcp_authorization_complete. A
   * server's "auth.redirectUri" wins over it. NULL: interactive sign-in is
   * not offered (headless grants still work). */
  const char *redirect_uri;
  /* The client_name of dynamic registration (NULL: "libdexagents"). */
  const char *client_name;
  /* The file store's path (NULL: $XDG_STATE_HOME/dexagents/mcp-tokens.json
   * or ~/.local/state/dexagents/mcp-tokens.json), created with mode 0600.
   * Ignored when token_store is set. */
  const char *token_file;
  /* The host's own store (copied; its user data must outlive every
   * source), or NULL for the file store. */
  const dexa_mcp_token_store_vtable *token_store;
  void *token_store_user_data;
} dexa_mcp_auth_options;

DEXA_EXTERN int dexa_mcp_auth_options_init(dexa_mcp_auth_options *options, size_t struct_size);

/* Sets the OAuth options of config, for the sources made from it afterwards.
 * Returns DEXA_OK, DEXA_E_INVALID_ARG, DEXA_E_STRUCT_SIZE or DEXA_E_NOMEM. */
DEXA_EXTERN int dexa_mcp_config_set_auth(dexa_mcp_config *config,
                                         const dexa_mcp_auth_options *options);

/* Routes the servers' log messages (notifications/message) and the
 * sources' own notices to log (level 1 error, 2 warning, 3 info, 4 debug:
 * the levels of dexa_runtime_options.log), for the sources made from config
 * afterwards. log runs on any thread and must not block for long. NULL
 * turns it off. Returns DEXA_OK or DEXA_E_INVALID_ARG. */
DEXA_EXTERN int dexa_mcp_config_set_log(dexa_mcp_config *config,
                                        void (*log)(void *user_data, int level,
                                                    const char *message),
                                        void *user_data);

/* Completes a sign-in from the URL the authorization server redirected the
 * browser to (the whole URL, or just its ?query): checks state, exchanges
 * the code for tokens (PKCE) and stores them. *out_json (may be NULL)
 * receives {"server":..,"session_id":..,"call_id":..,"signed_in":true|false}
 * freed with dexa_free: answer that session's question with answer_question
 * {"call_id":..,"action":"accept"} (or "decline" when signed_in is false:
 * the person refused at the authorization server). Returns DEXA_OK,
 * DEXA_E_INVALID_ARG, DEXA_E_NOT_FOUND (no sign-in waits for that state, or
 * it expired), DEXA_E_AUTH (the authorization server refused the code),
 * DEXA_E_IO or DEXA_E_NOMEM; errmsg (if not NULL) says why. */
DEXA_EXTERN int dexa_mcp_authorization_complete(const dexa_mcp_config *config,
                                                const char *redirect_url, char **out_json,
                                                size_t *out_len, char *errmsg,
                                                size_t errmsg_size);

/* Creates one tool source per configured server, named "mcp:<server>", in
 * the configuration's order, for dexa_agent_def.tool_sources. *out is an
 * array of *count sources, released with dexa_mcp_tool_sources_free. No
 * server is started here: each starts (or connects) when first listed.
 * Returns DEXA_OK, DEXA_E_INVALID_ARG or DEXA_E_NOMEM. */
DEXA_EXTERN int dexa_mcp_tool_sources_new(dexa_tool_source ***out, size_t *count,
                                          const dexa_mcp_config *config);

/* Releases the caller's reference of each source and the array. A server
 * process stops when the last reference of its source (an agent holds one)
 * is released. NULL is a no-op. */
DEXA_EXTERN void dexa_mcp_tool_sources_free(dexa_tool_source **sources, size_t count);

DEXA_END_DECLS

#endif
