/* libdexagents: the session graph.
 *
 * The flow description (dexa_flow_describe) rendered as a graph: its Steps,
 * RPCs and channels as nodes; the Steps each Step's Execute may decide
 * next, recovery Steps, channel publishes and wait conditions as edges. As
 * a JSON graph document, Graphviz DOT or Mermaid. The session view adds one
 * session's executions: the Steps its events show ran and the Step rows it
 * has now (what it waits for). See dexagents-graph(7). */
#ifndef DEXAGENTS_GRAPH_H
#define DEXAGENTS_GRAPH_H

#include "common.h"

DEXA_BEGIN_DECLS

typedef enum dexa_graph_format {
  DEXA_GRAPH_JSON = 1,   /* the graph document (dexagents-graph(7)) */
  DEXA_GRAPH_DOT = 2,    /* Graphviz: dot -Tsvg */
  DEXA_GRAPH_MERMAID = 3 /* a Mermaid flowchart */
} dexa_graph_format;

/* Renders the flow description description_json (of description_len bytes,
 * as dexa_flow_describe writes it) as a graph in format (dexa_graph_format).
 * *out receives NUL-terminated text, freed with dexa_free. Thread-safe.
 * Returns DEXA_OK, DEXA_E_INVALID_ARG (NULL argument or unknown format),
 * DEXA_E_INVALID_JSON (not a flow description) or DEXA_E_NOMEM. */
DEXA_EXTERN int dexa_flow_graph(char **out, size_t *out_len, const char *description_json,
                                size_t description_len, int32_t format);

/* Renders the graph of the runtime's flow with the session session_id on
 * it: the Steps it ran (from its retained AgentEvents), how often, and the
 * Step rows it has now (ready, running, or waiting, with their wait
 * conditions). *out (dexa_free) receives the graph in format. Thread-safe;
 * reads the store, runs nothing. Returns DEXA_OK, DEXA_E_INVALID_ARG,
 * DEXA_E_NOT_FOUND (no such session), DEXA_E_IO, DEXA_E_CORRUPT or
 * DEXA_E_NOMEM. */
DEXA_EXTERN int dexa_runtime_session_graph(dexa_runtime *runtime, const char *session_id,
                                           int32_t format, char **out, size_t *out_len);

DEXA_END_DECLS

#endif
