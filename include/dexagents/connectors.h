/* libdexagents: connectors as tools.
 *
 * A connector configuration names connections to outside services; a
 * connection's operations become tools of a tool source. The worker reads
 * the configuration from the file DEX_CONNECTOR_CONFIG_FILE names (no file:
 * no connector tools) and opens its connections at start:
 *
 *   {"connections": {
 *     "support-slack": {"type": "slack", "tokenEnv": "SLACK_BOT_TOKEN"}}}
 *
 * Keys of a connection: "type" ("slack"), "token" (the secret itself) or
 * "tokenEnv" (the environment variable that holds it, read when the file
 * is loaded), "baseUrl" (default "https://slack.com/api"), "timeoutMs"
 * (per request, default 30000) and "rateLimitWaitMs" (how long one call may
 * wait for Slack's Retry-After, default 30000). Unknown keys are refused
 * with their path. The token stays in the worker's memory: it is in no
 * tool result, event, session state or error message, and
 * dexa_connector_config_redacted_json prints "<redacted>".
 *
 * Slack connections offer slack_post_thread_reply {"channelId",
 * "threadTimestamp","text"}: chat.postMessage with thread_ts. It is a WRITE
 * that needs approval: it waits in AwaitToolApproval, then runs once in
 * CallSingleAttemptTool. See dexa_connector_tool_source_new(3). */
#ifndef DEXAGENTS_CONNECTORS_H
#define DEXAGENTS_CONNECTORS_H

#include "common.h"

DEXA_BEGIN_DECLS

typedef struct dexa_connector_config dexa_connector_config;

/* Loads a connector configuration from the file at path or (path NULL)
 * from json of json_len bytes. Returns DEXA_OK; DEXA_E_NOT_FOUND when no
 * file is at path (the worker then offers no connector tools);
 * DEXA_E_INVALID_ARG for an incomplete or invalid connection (no type, no
 * token, a tokenEnv that is not set, a bad URL or number),
 * DEXA_E_UNKNOWN_KEY, DEXA_E_INVALID_JSON, DEXA_E_TOO_LARGE (over 1 MiB),
 * DEXA_E_IO or DEXA_E_NOMEM. On error *out is NULL and errmsg (if not
 * NULL) receives a message naming the key ("connections.support-slack:
 * needs token or tokenEnv"), never a token. */
DEXA_EXTERN int dexa_connector_config_load(dexa_connector_config **out, const char *path,
                                           const char *json, size_t json_len, char *errmsg,
                                           size_t errmsg_size);

/* The configuration as JSON with every token replaced by "<redacted>": the
 * only form to print or log. *out is freed with dexa_free. Returns DEXA_OK,
 * DEXA_E_INVALID_ARG or DEXA_E_NOMEM. */
DEXA_EXTERN int dexa_connector_config_redacted_json(const dexa_connector_config *config,
                                                    char **out, size_t *out_len);

/* Releases a configuration. NULL is a no-op. Sources keep their own copy. */
DEXA_EXTERN void dexa_connector_config_free(dexa_connector_config *config);

/* Opens the connection named connection: a tool source of that name
 * offering the connection's operations as tools, for
 * dexa_agent_def.tool_sources. No request is made here. Calls run on
 * worker threads, each on its own HTTP handle. Returns DEXA_OK,
 * DEXA_E_NOT_FOUND (no such connection), DEXA_E_INVALID_ARG or
 * DEXA_E_NOMEM; errmsg as for dexa_connector_config_load. */
DEXA_EXTERN int dexa_connector_tool_source_new(dexa_tool_source **out,
                                               const dexa_connector_config *config,
                                               const char *connection, char *errmsg,
                                               size_t errmsg_size);

DEXA_END_DECLS

#endif
