/* dexagents graph [--session ID] [--format json|dot|mermaid]: the flow of
 * the configured agent as a graph (dexa_flow_graph), or one session on it
 * (dexa_runtime_session_graph). */
#include <string.h>

#include "cli/cli.h"

int cmd_graph(int argc, char **argv) {
  cli_globals g = {NULL, NULL, 0, -1, NULL, NULL, NULL};
  const char *session = NULL, *format_s = NULL, *pos[1];
  int npos;
  const cli_opt opts[] = {{"--session", 1, &session, NULL}, {"--format", 1, &format_s, NULL},
                          {NULL, 0, NULL, NULL}};
  int rc = cli_parse(argc, argv, 2, &g, opts, pos, 0, &npos, "graph");
  if (rc != CLI_OK) return rc;
  int32_t format = g.json ? DEXA_GRAPH_JSON : DEXA_GRAPH_DOT;
  if (format_s) {
    if (!strcmp(format_s, "json")) format = DEXA_GRAPH_JSON;
    else if (!strcmp(format_s, "dot")) format = DEXA_GRAPH_DOT;
    else if (!strcmp(format_s, "mermaid")) format = DEXA_GRAPH_MERMAID;
    else {
      fprintf(stderr, "dexagents graph: --format takes json, dot or mermaid, not %s\n", format_s);
      return CLI_USAGE;
    }
  }
  cli_app a;
  rc = cli_app_open(&a, &g, 0);
  char *out = NULL, *desc = NULL;
  size_t len = 0;
  if (rc == CLI_OK) {
    int drc;
    if (session) {
      drc = dexa_runtime_session_graph(a.rt, session, format, &out, &len);
    } else {
      drc = dexa_flow_describe(&desc, &len, a.agent);
      if (drc == DEXA_OK) drc = dexa_flow_graph(&out, &len, desc, len, format);
    }
    if (drc == DEXA_OK) {
      fputs(out, stdout);
      if (len && out[len - 1] != '\n') fputc('\n', stdout);
    } else {
      rc = cli_fail(&g, session ? session : "graph", drc, NULL);
    }
  }
  dexa_free(out);
  dexa_free(desc);
  cli_app_close(&a);
  return rc;
}
