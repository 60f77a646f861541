/* examples/ai-agent: the pieces of the AI Agent web example shared by its
 * files.
 *
 * ai-agent.c        configuration (DEX_AGENT_*), the agent, the runtime,
 *                   the libmicrohttpd daemon with the library's agent routes
 * ai_agent_static.c the page: files of ui/ served under the prefix
 * ai_agent_tools.c  host function tools: clock (READ), send_note (WRITE,
 *                   needs approval)
 * ai_agent_connectors.c  the Slack connection support-slack
 *
 * The sign-in redirect of MCP servers (PREFIX/oauth/callback) is one of the
 * library's routes (dexa_http_agent_routes_options.mcp_config). */
#ifndef DEXA_EXAMPLE_AI_AGENT_H
#define DEXA_EXAMPLE_AI_AGENT_H

#include <dexagents/dexagents.h>
#include <microhttpd.h>

/* Creates the "host" tool source with clock and send_note. */
int ai_agent_tools_new(dexa_tool_source **out);

/* Opens support-slack from DEX_CONNECTOR_CONFIG_FILE: *out is its tool
 * source, or NULL without a configuration. -1 (after saying why) when the
 * configuration is incomplete or invalid. */
int ai_agent_slack_new(dexa_tool_source **out);

/* Serves url from the directory ui_dir when it is prefix + "/" (index.html)
 * or prefix + "/NAME" of a file there; redirects "/" and prefix to
 * prefix + "/"; 404 otherwise; 421 when the Host header does not name this
 * server (the routes' check). Every response carries the routes' security
 * headers with the page's Content-Security-Policy. Returns an MHD result. */
enum MHD_Result ai_agent_serve_static(struct MHD_Connection *connection,
                                      const dexa_http_agent_routes *routes, const char *ui_dir,
                                      const char *prefix, const char *url, const char *method);

#endif
