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
