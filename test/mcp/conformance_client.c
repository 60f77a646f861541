/* The client program of the official MCP client conformance suite
 * (@modelcontextprotocol/conformance; test/mcp/conformance.sh runs it).
 *
 *   conformance_client [--protocol-version V] URL
 *
 * It goes through the public API exactly as a worker does: a configuration
 * with one Streamable HTTP server at URL (the suite appends it), one tool
 * source, a listing, then the calls the scenario named by
 * MCP_CONFORMANCE_SCENARIO expects: tools_call calls add_numbers, sse-retry
 * calls test_reconnection, any other scenario calls every tool with {}.
 * Exit status 0 when every step succeeded. */
#include <dexagents/dexagents.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iface/tool_source.h"

static int call(dexa_tool_source *s, const char *name, const char *args) {
  dexa_tool_invocation inv = {name, "call-1", "conformance", "conformance:call-1", args, strlen(args), 1, NULL};
  dexa_tool_output out;
  dexa__tool_output_init(&out);
  int rc = s->vt.call_tool(s->user_data, &inv, &out);
  printf("call %s: %s%s %s\n", name, dexa_error_name(rc), out.is_error ? " (tool error)" : "",
         out.text.data ? out.text.data : "");
  rc = rc != DEXA_OK ? rc : out.is_error ? DEXA_E_TOOL : DEXA_OK;
  dexa__tool_output_free(&out);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: conformance_client [--protocol-version V] URL\n");
    return 2;
  }
  const char *url = argv[argc - 1], *version = "auto";
  if (argc >= 4 && strcmp(argv[1], "--protocol-version") == 0) version = argv[2];
  const char *scenario = getenv("MCP_CONFORMANCE_SCENARIO");
  if (!scenario) scenario = "";
  char json[2048], err[512];
  snprintf(json, sizeof json,
           "{\"mcpServers\":{\"conformance\":{\"url\":\"%s\",\"protocolVersion\":\"%s\","
           "\"timeoutMs\":20000,\"trustAnnotations\":true}}}",
           url, version);
  dexa_mcp_config *cfg = NULL;
  int rc = dexa_mcp_config_load(&cfg, NULL, json, strlen(json), err, sizeof err);
  if (rc != DEXA_OK) {
    fprintf(stderr, "config: %s\n", err);
    return 1;
  }
  dexa_tool_source **v = NULL;
  size_t n = 0;
  rc = dexa_mcp_tool_sources_new(&v, &n, cfg);
  dexa_mcp_config_free(cfg);
  if (rc != DEXA_OK) return 1;
  dexa_tool_source *s = v[0];
  dexa_tool_list list;
  dexa__tool_list_init(&list);
  rc = s->vt.list_tools(s->user_data, &list);
  printf("scenario %s: list_tools %s, %zu tools\n", scenario, dexa_error_name(rc), list.count);
  if (rc == DEXA_OK) {
    if (strcmp(scenario, "tools_call") == 0) {
      rc = call(s, "conformance__add_numbers", "{\"a\":2,\"b\":3}");
    } else if (strcmp(scenario, "sse-retry") == 0) {
      rc = call(s, "conformance__test_reconnection", "{}");
    } else if (strcmp(scenario, "initialize") != 0) {
      for (size_t i = 0; i < list.count && rc == DEXA_OK; i++) rc = call(s, list.defs[i].name, "{}");
    }
  }
  dexa__tool_list_free(&list);
  dexa_mcp_tool_sources_free(v, n); /* ends the session (DELETE) */
  return rc == DEXA_OK ? 0 : 1;
}
