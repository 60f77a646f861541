/* GET sessions/ID/graph[?format=json|dot|mermaid]: the session graph
 * (dexa_runtime_session_graph) for a side panel of the page: the flow's
 * Steps, RPCs and channels with the Steps this session ran and where it
 * waits now. JSON (the default) is the graph document itself; DOT and
 * Mermaid come wrapped as {"format","text"}, so every answer of the routes
 * stays JSON. */
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"
#include "dexagents/graph.h"
#include "http/http_internal.h"

static int parse_format(const char *s, int32_t *format) {
  if (!s || strcmp(s, "json") == 0) *format = DEXA_GRAPH_JSON;
  else if (strcmp(s, "dot") == 0) *format = DEXA_GRAPH_DOT;
  else if (strcmp(s, "mermaid") == 0) *format = DEXA_GRAPH_MERMAID;
  else return -1;
  return 0;
}

void dexa__http_session_graph(dexa_http_agent_routes *r, void *connection, const char *session_id,
                              dexa__http_reply *reply) {
  const char *q = MHD_lookup_connection_value(connection, MHD_GET_ARGUMENT_KIND, "format");
  int32_t format;
  if (parse_format(q, &format) != 0) {
    dexa__http_error(reply, 400, DEXA_E_INVALID_ARG, "format must be json, dot or mermaid");
    return;
  }
  char *out = NULL;
  size_t len = 0;
  int rc = dexa_runtime_session_graph(r->rt, session_id, format, &out, &len);
  if (rc == DEXA_E_NOT_FOUND) {
    dexa__http_error(reply, 404, rc, "the AI Agent session is missing or no longer retained");
    return;
  }
  if (rc != DEXA_OK || format == DEXA_GRAPH_JSON) {
    dexa__http_from_runtime(reply, rc, out, len);
    return;
  }
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_puts(&b, "{\"format\":");
  dexa__buf_json_cstr(&b, q);
  dexa__buf_puts(&b, ",\"text\":");
  dexa__buf_json_str(&b, out, len);
  dexa__buf_putc(&b, '}');
  dexa_free(out);
  char *doc = dexa__buf_steal(&b, &len);
  if (!doc) dexa__http_error(reply, 500, DEXA_E_NOMEM, "out of memory");
  else dexa__http_from_runtime(reply, DEXA_OK, doc, len);
}
