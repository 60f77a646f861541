/* The graph document of a flow description: nodes for the Steps, RPCs and
 * channels; edges for the Steps an Execute may decide next, the recovery
 * Step of each Step, the channels each Step and RPC publishes to, and the
 * channels each WaitFor waits on. Everything comes from the description,
 * so the graph of a host's own flow is drawn the same way. */
#include "flow/graph.h"

#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"

typedef struct builder {
  const cJSON *desc;
  cJSON *nodes, *edges;
  int oom;
} builder;

static const cJSON *member(const cJSON *o, const char *name) {
  return cJSON_GetObjectItemCaseSensitive(o, name);
}

static const char *str(const cJSON *o, const char *name) {
  const char *s = cJSON_GetStringValue(member(o, name));
  return s ? s : "";
}

static void add_node(builder *g, const char *id, const char *kind, const char *label, cJSON **out) {
  cJSON *n = cJSON_CreateObject();
  if (!n || !cJSON_AddStringToObject(n, "id", id) || !cJSON_AddStringToObject(n, "kind", kind) ||
      !cJSON_AddStringToObject(n, "label", label) || !cJSON_AddItemToArray(g->nodes, n)) {
    cJSON_Delete(n);
    g->oom = 1;
    n = NULL;
  }
  if (out) *out = n;
}

static void add_edge(builder *g, const char *from, const char *to, const char *kind,
                     const char *mode) {
  cJSON *e = cJSON_CreateObject();
  if (!e || !cJSON_AddStringToObject(e, "from", from) || !cJSON_AddStringToObject(e, "to", to) ||
      !cJSON_AddStringToObject(e, "kind", kind) ||
      (mode && !cJSON_AddStringToObject(e, "mode", mode)) || !cJSON_AddItemToArray(g->edges, e)) {
    cJSON_Delete(e);
    g->oom = 1;
  }
}

static void prefixed(char *buf, size_t n, const char *prefix, const char *name) {
  size_t p = strlen(prefix), l = strlen(name);
  if (p + l + 1 > n) l = n - p - 1;
  memcpy(buf, prefix, p);
  memcpy(buf + p, name, l);
  buf[p + l] = '\0';
}

static int is_name(const cJSON *s) {
  return cJSON_IsString(s) && *s->valuestring && strlen(s->valuestring) < 200;
}

/* A copy of one member of src into dst (when present). */
static void copy_member(builder *g, cJSON *dst, const cJSON *src, const char *name) {
  const cJSON *v = member(src, name);
  if (!v) return;
  cJSON *c = cJSON_Duplicate(v, 1);
  if (!c || !cJSON_AddItemToObject(dst, name, c)) {
    cJSON_Delete(c);
    g->oom = 1;
  }
}

static int add_steps(builder *g) {
  const cJSON *s, *steps = member(g->desc, "steps");
  const cJSON *trans = member(member(g->desc, "transitions"), "steps");
  if (!cJSON_IsArray(steps)) return DEXA_E_INVALID_JSON;
  cJSON_ArrayForEach(s, steps) {
    const cJSON *name = member(s, "name");
    if (!is_name(name)) return DEXA_E_INVALID_JSON;
    cJSON *n;
    add_node(g, name->valuestring, "step", name->valuestring, &n);
    if (!n) return DEXA_E_NOMEM;
    copy_member(g, n, s, "options");
    copy_member(g, n, member(trans, name->valuestring), "waits");
  }
  return DEXA_OK;
}

static void add_rpcs(builder *g) {
  const cJSON *r;
  cJSON_ArrayForEach(r, member(g->desc, "rpcs")) {
    const cJSON *name = member(r, "name");
    if (!is_name(name)) continue;
    char id[256];
    prefixed(id, sizeof id, DEXA__GRAPH_RPC, name->valuestring);
    cJSON *n;
    add_node(g, id, "rpc", name->valuestring, &n);
    if (n) copy_member(g, n, r, "read_only");
  }
}

/* Channels named by the description, then any a transition names. */
static void add_channel(builder *g, const char *name) {
  char id[256];
  prefixed(id, sizeof id, DEXA__GRAPH_CHANNEL, name);
  const cJSON *n;
  cJSON_ArrayForEach(n, g->nodes) {
    if (strcmp(str(n, "id"), id) == 0) return;
  }
  add_node(g, id, "channel", name, NULL);
}

static void add_channels(builder *g) {
  const cJSON *c, *t, *x;
  cJSON_ArrayForEach(c, member(g->desc, "channels")) {
    if (is_name(c)) add_channel(g, c->valuestring);
  }
  const cJSON *trans = member(g->desc, "transitions");
  cJSON_ArrayForEach(t, member(trans, "steps")) {
    cJSON_ArrayForEach(x, member(t, "publishes")) if (is_name(x)) add_channel(g, x->valuestring);
    cJSON_ArrayForEach(x, member(member(t, "waits"), "conditions")) {
      const cJSON *ch = member(x, "channel");
      if (is_name(ch)) add_channel(g, ch->valuestring);
    }
  }
  cJSON_ArrayForEach(t, member(trans, "rpcs")) {
    cJSON_ArrayForEach(x, member(t, "publishes")) if (is_name(x)) add_channel(g, x->valuestring);
  }
}

static void publish_edges(builder *g, const char *from, const cJSON *list) {
  const cJSON *x;
  cJSON_ArrayForEach(x, list) {
    if (!is_name(x)) continue;
    char to[256];
    prefixed(to, sizeof to, DEXA__GRAPH_CHANNEL, x->valuestring);
    add_edge(g, from, to, "publish", NULL);
  }
}

/* Per Step: next, recovery, publish; then the RPCs' publishes; then the
 * waits (channel -> the Step waiting on it). */
static void add_edges(builder *g) {
  const cJSON *s, *x, *trans = member(g->desc, "transitions");
  cJSON_ArrayForEach(s, member(g->desc, "steps")) {
    const char *name = cJSON_GetStringValue(member(s, "name"));
    const cJSON *t = member(member(trans, "steps"), name);
    cJSON_ArrayForEach(x, member(t, "next")) {
      if (is_name(x)) add_edge(g, name, x->valuestring, "next", NULL);
    }
    const cJSON *rec = member(member(s, "options"), "recovery");
    if (is_name(rec)) add_edge(g, name, rec->valuestring, "recovery", NULL);
    publish_edges(g, name, member(t, "publishes"));
  }
  cJSON_ArrayForEach(s, member(g->desc, "rpcs")) {
    const char *name = cJSON_GetStringValue(member(s, "name"));
    char from[256];
    if (!name) continue;
    prefixed(from, sizeof from, DEXA__GRAPH_RPC, name);
    publish_edges(g, from, member(member(member(trans, "rpcs"), name), "publishes"));
  }
  cJSON_ArrayForEach(s, member(g->desc, "steps")) {
    const char *name = cJSON_GetStringValue(member(s, "name"));
    const cJSON *w = member(member(member(trans, "steps"), name), "waits");
    const char *mode = cJSON_GetStringValue(member(w, "mode"));
    cJSON_ArrayForEach(x, member(w, "conditions")) {
      const cJSON *ch = member(x, "channel");
      char from[256];
      if (!is_name(ch)) continue;
      prefixed(from, sizeof from, DEXA__GRAPH_CHANNEL, ch->valuestring);
      add_edge(g, from, name, "wait", mode ? mode : "any");
    }
  }
}

/* Every edge's ends are nodes (a description naming a Step it does not
 * define is not one this library can draw). */
static int check_edges(const builder *g) {
  const cJSON *e, *n;
  cJSON_ArrayForEach(e, g->edges) {
    const char *ends[2] = {str(e, "from"), str(e, "to")};
    for (int i = 0; i < 2; i++) {
      int found = 0;
      cJSON_ArrayForEach(n, g->nodes) found |= strcmp(str(n, "id"), ends[i]) == 0;
      if (!found) return DEXA_E_INVALID_JSON;
    }
  }
  return DEXA_OK;
}

/* "visits" (how many executions of the Step the session's events show:
 * the session's "visits" count, else its "ran" entries) and "now" ({"waiting":1,..}: its Step rows by state) on each Step node. */
static void overlay_session(builder *g, cJSON *doc, const cJSON *session) {
  cJSON *n;
  cJSON_ArrayForEach(n, g->nodes) {
    if (strcmp(str(n, "kind"), "step") != 0) continue;
    const char *id = str(n, "id");
    int visits = 0;
    const cJSON *x, *counted = member(member(session, "visits"), id);
    if (cJSON_IsNumber(counted)) visits = counted->valueint;
    else if (!member(session, "visits"))
      cJSON_ArrayForEach(x, member(session, "ran")) visits += strcmp(str(x, "step"), id) == 0;
    cJSON *now = cJSON_CreateObject();
    cJSON_ArrayForEach(x, member(session, "now")) {
      const char *state = cJSON_GetStringValue(member(x, "state"));
      if (!state || strcmp(str(x, "step"), id) != 0) continue;
      cJSON *count = cJSON_GetObjectItemCaseSensitive(now, state);
      if (count) cJSON_SetNumberValue(count, count->valuedouble + 1);
      else if (!cJSON_AddNumberToObject(now, state, 1)) g->oom = 1;
    }
    if (!cJSON_AddNumberToObject(n, "visits", visits) || !now ||
        !cJSON_AddItemToObject(n, "now", now)) {
      if (!member(n, "now")) cJSON_Delete(now);
      g->oom = 1;
    }
  }
  cJSON *copy = cJSON_Duplicate(session, 1);
  if (!copy || !cJSON_AddItemToObject(doc, "session", copy)) {
    cJSON_Delete(copy);
    g->oom = 1;
  }
}

int dexa__graph_build(cJSON **out, const char *description, size_t len, const cJSON *session) {
  *out = NULL;
  cJSON *desc = cJSON_ParseWithLength(description, len);
  const cJSON *flow = member(desc, "flow_type"), *start = member(desc, "start_step");
  if (!cJSON_IsObject(desc) || !is_name(flow) || !is_name(start)) {
    cJSON_Delete(desc);
    return DEXA_E_INVALID_JSON;
  }
  cJSON *doc = cJSON_CreateObject();
  builder g = {desc, NULL, NULL, 0};
  if (!doc || !cJSON_AddStringToObject(doc, "graph", "dexagents-flow-graph") ||
      !cJSON_AddNumberToObject(doc, "version", 1) ||
      !cJSON_AddStringToObject(doc, "flow_type", flow->valuestring) ||
      !cJSON_AddStringToObject(doc, "start", start->valuestring) ||
      !(g.nodes = cJSON_AddArrayToObject(doc, "nodes")) ||
      !(g.edges = cJSON_AddArrayToObject(doc, "edges")))
    g.oom = 1;
  int rc = g.oom ? DEXA_E_NOMEM : add_steps(&g);
  if (rc == DEXA_OK) {
    add_rpcs(&g);
    add_channels(&g);
    add_edges(&g);
    rc = g.oom ? DEXA_E_NOMEM : check_edges(&g);
  }
  if (rc == DEXA_OK && session) overlay_session(&g, doc, session);
  if (rc == DEXA_OK && g.oom) rc = DEXA_E_NOMEM;
  cJSON_Delete(desc);
  if (rc != DEXA_OK) {
    cJSON_Delete(doc);
    return rc;
  }
  *out = doc;
  return DEXA_OK;
}

int dexa__graph_render(char **out, size_t *out_len, const char *description, size_t len,
                       const cJSON *session, int32_t format) {
  *out = NULL;
  if (out_len) *out_len = 0;
  if (format != DEXA_GRAPH_JSON && format != DEXA_GRAPH_DOT && format != DEXA_GRAPH_MERMAID)
    return DEXA_E_INVALID_ARG;
  cJSON *doc;
  int rc = dexa__graph_build(&doc, description, len, session);
  if (rc != DEXA_OK) return rc;
  dexa__buf b;
  dexa__buf_init(&b);
  if (format == DEXA_GRAPH_JSON) {
    char *text = cJSON_PrintUnformatted(doc);
    if (text) dexa__buf_puts(&b, text);
    else b.oom = 1;
    cJSON_free(text);
  } else if (format == DEXA_GRAPH_DOT) {
    dexa__graph_dot(&b, doc);
  } else {
    dexa__graph_mermaid(&b, doc);
  }
  cJSON_Delete(doc);
  if (b.oom) {
    dexa__buf_free(&b);
    return DEXA_E_NOMEM;
  }
  *out = dexa__buf_steal(&b, out_len);
  return *out ? DEXA_OK : DEXA_E_NOMEM;
}

DEXA_EXTERN int dexa_flow_graph(char **out, size_t *out_len, const char *description_json,
                                size_t description_len, int32_t format) {
  if (out) *out = NULL;
  if (out_len) *out_len = 0;
  if (!out || !description_json) return DEXA_E_INVALID_ARG;
  return dexa__graph_render(out, out_len, description_json, description_len, NULL, format);
}
