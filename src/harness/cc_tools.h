/* The host's tools as the CLI sees them: an in-process MCP server "dex"
 * spoken over the SDK control protocol (control_request "mcp_message"),
 * whose tools the CLI names mcp__dex__<name>. The table comes from the
 * segment's request (every tool offered to the session, with its effect
 * and approval). */
#ifndef DEXA_HARNESS_CC_TOOLS_H
#define DEXA_HARNESS_CC_TOOLS_H

#include <cjson/cJSON.h>

#define DEXA__CC_SERVER "dex"
#define DEXA__CC_PREFIX "mcp__dex__"

/* The request's "tools" array (borrowed from the parsed request). */
typedef struct dexa__cc_tools {
  const cJSON *list;
} dexa__cc_tools;

/* The Dex name of a CLI tool name (after the prefix), or NULL when it is
 * not one of the host's. */
const char *dexa__cc_tool_dex_name(const char *cli_name);

/* The tool named name in the table, or NULL. */
const cJSON *dexa__cc_tool_find(const dexa__cc_tools *t, const char *name);

/* 1 when a call of the tool runs inside the segment: its own effect is
 * read, it needs no approval and it is not one of Dex's built-in tools.
 * Any other call leaves the segment to run in its own Step. */
int dexa__cc_tool_runs_inside(const cJSON *tool);

/* The JSON-RPC response of the MCP server to one request message (NULL for
 * a notification, whose answer is an empty result). A tools/call is not
 * answered here (see the segment). */
cJSON *dexa__cc_mcp_answer(const dexa__cc_tools *t, const cJSON *message);

/* An MCP tools/call result with text only. */
cJSON *dexa__cc_mcp_text_result(const cJSON *id, const char *text, int is_error);

#endif
