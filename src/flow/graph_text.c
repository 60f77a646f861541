/* The graph document as text: Graphviz DOT and a Mermaid flowchart. Both
 * draw the same nodes and edges as the document, one line each:
 *   Steps    boxes (rounded; dashed when they have a WaitFor), the start
 *            Step bold; with a session, filled when they ran ("ran N") and
 *            highlighted where the session is now (waiting, ready, running)
 *   RPCs     parallelograms; channels cylinders
 *   edges    next: solid; recovery: dashed "recovery"; publish: dotted
 *            "publish"; wait: bold "wait any|all" from the channel */
#include <stdio.h>
#include <string.h>

#include "flow/graph.h"

static const cJSON *member(const cJSON *o, const char *name) {
  return cJSON_GetObjectItemCaseSensitive(o, name);
}

static const char *str(const cJSON *o, const char *name) {
  const char *s = cJSON_GetStringValue(member(o, name));
  return s ? s : "";
}

static int is(const char *a, const char *b) { return strcmp(a, b) == 0; }

/* The wait of a Step node as one line: "waits any: timer | UserMessageSignals". */
static void wait_line(char *out, size_t n, const cJSON *node) {
  const cJSON *w = member(node, "waits"), *c;
  out[0] = '\0';
  if (!w) return;
  size_t used = (size_t)snprintf(out, n, "waits %s:", str(w, "mode"));
  int first = 1;
  cJSON_ArrayForEach(c, member(w, "conditions")) {
    const char *what = cJSON_IsTrue(member(c, "timer")) ? "timer" : str(c, "channel");
    if (used < n) used += (size_t)snprintf(out + used, n - used, "%s %s", first ? "" : " |", what);
    first = 0;
  }
}

/* "ran 3, waiting 1" for a Step node of a session graph ("" without). */
static void session_line(char *out, size_t n, const cJSON *node) {
  out[0] = '\0';
  const cJSON *visits = member(node, "visits"), *s;
  if (!cJSON_IsNumber(visits)) return;
  size_t used = (size_t)snprintf(out, n, "ran %d", visits->valueint);
  cJSON_ArrayForEach(s, member(node, "now")) {
    if (used < n) used += (size_t)snprintf(out + used, n - used, ", %s %d", s->string, s->valueint);
  }
}

/* Where the session is at a node: "waiting", "running", "ready", "ran" or "". */
static const char *session_state(const cJSON *node) {
  const cJSON *now = member(node, "now"), *v = member(node, "visits");
  if (member(now, "waiting")) return "waiting";
  if (member(now, "running")) return "running";
  if (member(now, "ready")) return "ready";
  return cJSON_IsNumber(v) && v->valueint > 0 ? "ran" : "";
}

/* ---- DOT ------------------------------------------------------------------- */

/* A DOT string literal's body: quotes and backslashes escaped. */
static void dot_str(dexa__buf *b, const char *s) {
  dexa__buf_putc(b, '"');
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') dexa__buf_putc(b, '\\');
    if (*s == '\n') {
      dexa__buf_puts(b, "\\n");
      continue;
    }
    dexa__buf_putc(b, *s);
  }
  dexa__buf_putc(b, '"');
}

static void dot_node(dexa__buf *b, const cJSON *n, const char *start) {
  const char *kind = str(n, "kind"), *id = str(n, "id");
  char label[600], wait[300], sess[200];
  wait_line(wait, sizeof wait, n);
  session_line(sess, sizeof sess, n);
  snprintf(label, sizeof label, "%s%s%s%s%s", str(n, "label"), *wait ? "\n" : "", wait,
           *sess ? "\n" : "", sess);
  dexa__buf_puts(b, "  ");
  dot_str(b, id);
  dexa__buf_puts(b, " [label=");
  dot_str(b, label);
  if (is(kind, "rpc")) {
    dexa__buf_puts(b, ", shape=parallelogram");
  } else if (is(kind, "channel")) {
    dexa__buf_puts(b, ", shape=cylinder");
  } else {
    const char *st = session_state(n);
    dexa__buf_printf(b, ", style=\"rounded%s%s\"", member(n, "waits") ? ",dashed" : "",
                     *st ? ",filled" : "");
    if (is(id, start)) dexa__buf_puts(b, ", penwidth=2");
    if (is(st, "waiting")) dexa__buf_puts(b, ", fillcolor=gold, penwidth=3");
    else if (is(st, "running")) dexa__buf_puts(b, ", fillcolor=palegreen, penwidth=3");
    else if (is(st, "ready")) dexa__buf_puts(b, ", fillcolor=lightyellow, penwidth=3");
    else if (is(st, "ran")) dexa__buf_puts(b, ", fillcolor=lightblue");
  }
  dexa__buf_puts(b, "];\n");
}

static void dot_edge(dexa__buf *b, const cJSON *e) {
  const char *kind = str(e, "kind");
  dexa__buf_puts(b, "  ");
  dot_str(b, str(e, "from"));
  dexa__buf_puts(b, " -> ");
  dot_str(b, str(e, "to"));
  if (is(kind, "recovery")) dexa__buf_puts(b, " [style=dashed, color=firebrick, label=\"recovery\"]");
  else if (is(kind, "publish")) dexa__buf_puts(b, " [style=dotted, label=\"publish\"]");
  else if (is(kind, "wait")) dexa__buf_printf(b, " [style=bold, color=gray40, label=\"wait %s\"]", str(e, "mode"));
  dexa__buf_puts(b, ";\n");
}

void dexa__graph_dot(dexa__buf *b, const cJSON *graph) {
  const cJSON *x;
  const char *start = str(graph, "start");
  dexa__buf_puts(b, "digraph ");
  dot_str(b, str(graph, "flow_type"));
  dexa__buf_puts(b, " {\n  rankdir=TB;\n  node [shape=box, fontname=\"Helvetica\"];\n"
                    "  edge [fontname=\"Helvetica\", fontsize=10];\n");
  const cJSON *session = member(graph, "session");
  if (session) {
    dexa__buf_puts(b, "  label=");
    char title[300];
    snprintf(title, sizeof title, "session %s", str(session, "session_id"));
    dot_str(b, title);
    dexa__buf_puts(b, ";\n  labelloc=t;\n");
  }
  cJSON_ArrayForEach(x, member(graph, "nodes")) dot_node(b, x, start);
  cJSON_ArrayForEach(x, member(graph, "edges")) dot_edge(b, x);
  dexa__buf_puts(b, "}\n");
}

/* ---- Mermaid ------------------------------------------------------------------ */

/* A Mermaid node id: the kind's letter and the name's letters and digits
 * ("s_RunModel", "r_send_message", "c_ToolResults"); names differing only
 * in other characters would clash, which the library's names never do. */
static void mermaid_id(dexa__buf *b, const char *id) {
  const char *colon = strchr(id, ':');
  dexa__buf_puts(b, !colon ? "s_" : strncmp(id, "rpc:", 4) == 0 ? "r_" : "c_");
  for (const char *p = colon ? colon + 1 : id; *p; p++) {
    char ch = *p;
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
        ch == '_')
      dexa__buf_putc(b, ch);
  }
}

/* A label in double quotes: quotes as #quot;, new lines as <br/>. */
static void mermaid_label(dexa__buf *b, const char *s) {
  dexa__buf_putc(b, '"');
  for (; *s; s++) {
    if (*s == '"') dexa__buf_puts(b, "#quot;");
    else if (*s == '\n') dexa__buf_puts(b, "<br/>");
    else dexa__buf_putc(b, *s);
  }
  dexa__buf_putc(b, '"');
}

static void mermaid_node(dexa__buf *b, const cJSON *n) {
  const char *kind = str(n, "kind");
  char label[600], wait[300], sess[200];
  wait_line(wait, sizeof wait, n);
  session_line(sess, sizeof sess, n);
  snprintf(label, sizeof label, "%s%s%s%s%s", str(n, "label"), *wait ? "\n" : "", wait,
           *sess ? "\n" : "", sess);
  dexa__buf_puts(b, "  ");
  mermaid_id(b, str(n, "id"));
  const char *open = is(kind, "rpc") ? "[/" : is(kind, "channel") ? "[(" : "(";
  const char *close = is(kind, "rpc") ? "/]" : is(kind, "channel") ? ")]" : ")";
  dexa__buf_puts(b, open);
  mermaid_label(b, label);
  dexa__buf_puts(b, close);
  dexa__buf_putc(b, '\n');
}

static void mermaid_edge(dexa__buf *b, const cJSON *e) {
  const char *kind = str(e, "kind");
  dexa__buf_puts(b, "  ");
  mermaid_id(b, str(e, "from"));
  if (is(kind, "recovery")) dexa__buf_puts(b, " -.->|recovery| ");
  else if (is(kind, "publish")) dexa__buf_puts(b, " -.->|publish| ");
  else if (is(kind, "wait")) dexa__buf_printf(b, " ==>|wait %s| ", str(e, "mode"));
  else dexa__buf_puts(b, " --> ");
  mermaid_id(b, str(e, "to"));
  dexa__buf_putc(b, '\n');
}

/* "  class s_A,s_B waiting" for the Step nodes in one session state. */
static void mermaid_class(dexa__buf *b, const cJSON *graph, const char *state) {
  const cJSON *n;
  int first = 1;
  cJSON_ArrayForEach(n, member(graph, "nodes")) {
    if (!is(str(n, "kind"), "step") || !is(session_state(n), state)) continue;
    dexa__buf_puts(b, first ? "  class " : ",");
    mermaid_id(b, str(n, "id"));
    first = 0;
  }
  if (!first) dexa__buf_printf(b, " %s\n", state);
}

void dexa__graph_mermaid(dexa__buf *b, const cJSON *graph) {
  const cJSON *x;
  dexa__buf_puts(b, "flowchart TD\n");
  const cJSON *session = member(graph, "session");
  if (session) dexa__buf_printf(b, "  %%%% session %s\n", str(session, "session_id"));
  cJSON_ArrayForEach(x, member(graph, "nodes")) mermaid_node(b, x);
  cJSON_ArrayForEach(x, member(graph, "edges")) mermaid_edge(b, x);
  dexa__buf_puts(b, "  classDef ran fill:#dbeafe,stroke:#1d4ed8\n"
                    "  classDef waiting fill:#fde68a,stroke:#b45309,stroke-width:3px\n"
                    "  classDef running fill:#bbf7d0,stroke:#15803d,stroke-width:3px\n"
                    "  classDef ready fill:#fef9c3,stroke:#a16207,stroke-width:3px\n");
  mermaid_class(b, graph, "ran");
  mermaid_class(b, graph, "waiting");
  mermaid_class(b, graph, "running");
  mermaid_class(b, graph, "ready");
  const cJSON *start = NULL;
  cJSON_ArrayForEach(x, member(graph, "nodes")) if (is(str(x, "id"), str(graph, "start"))) start = x;
  if (start) {
    dexa__buf_puts(b, "  style ");
    mermaid_id(b, str(start, "id"));
    dexa__buf_puts(b, " stroke-width:3px\n");
  }
}
