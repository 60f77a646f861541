/* The session graph (graph.c, graph_text.c): a flow description turned into
 * a graph document, optionally with one session's executions on it, and
 * that document written as JSON, Graphviz DOT or Mermaid. */
#ifndef DEXA_FLOW_GRAPH_H
#define DEXA_FLOW_GRAPH_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "dexagents/graph.h"
#include "util/buf.h"

/* Node ids of the graph document: a Step's is its name; an RPC's and a
 * channel's carry a prefix, so no name of one kind can clash with another. */
#define DEXA__GRAPH_RPC "rpc:"
#define DEXA__GRAPH_CHANNEL "channel:"

/* Builds the graph document of description (see dexagents-graph(7)).
 * session, when not NULL, is the session view the runtime read
 * ({"session_id","ran":[{"step",..}],"now":[{"step","state",..}]}): it is
 * added as "session", and each Step node gets "visits" and "now". *out is a
 * new tree. Returns DEXA_OK, DEXA_E_INVALID_JSON or DEXA_E_NOMEM. */
int dexa__graph_build(cJSON **out, const char *description, size_t len, const cJSON *session);

/* Writes the document as DOT or Mermaid text into b. */
void dexa__graph_dot(dexa__buf *b, const cJSON *graph);
void dexa__graph_mermaid(dexa__buf *b, const cJSON *graph);

/* dexa__graph_build, then the document in format (dexa_graph_format) as
 * new NUL-terminated text. Returns DEXA_OK, DEXA_E_INVALID_ARG (format),
 * DEXA_E_INVALID_JSON or DEXA_E_NOMEM. */
int dexa__graph_render(char **out, size_t *out_len, const char *description, size_t len,
                       const cJSON *session, int32_t format);

#endif
