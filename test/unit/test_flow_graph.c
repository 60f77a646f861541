/* The session graph against dexa_flow_describe and against what the flow
 * does:
 *   - the graph document has exactly the Steps, RPCs and channels of the
 *     description as nodes and its transitions, recovery Steps, publishes
 *     and waits as edges; DOT and Mermaid draw the same edges;
 *   - every Step decision, wait and publish of real sessions (every feature
 *     of the demo model, on the embedded runtime with a fake clock) is one
 *     the description's transitions list, and every transition listed
 *     happens at least once;
 *   - the session view shows the Steps that ran and the rows it has now.
 * test-needs: sqlite postgresql */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dexagents/dexagents.h"
#include "dexagents/graph.h"
#include "runtime/runtime_internal.h"
#include "support/temp_store.h"
#include "testing.h"

static const cJSON *get(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }
static const char *gs(const cJSON *o, const char *k) {
  const char *s = cJSON_GetStringValue(get(o, k));
  return s ? s : "";
}

/* ---- the agent: the demo model, a broken model, five host tools ---------------- */

static int broken_generate(void *u, const dexa_model_request *req, dexa_model_reply *reply) {
  (void)u;
  (void)req;
  dexa_model_reply_set_error(reply, "the model refused for good", 0);
  return DEXA_E_MODEL;
}

static int tool_ok(void *u, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  (void)u;
  (void)inv;
  return dexa_tool_output_set_text(out, "done", 4, 0);
}

/* Asks the person once (dexa_tool_output_ask), then answers. */
static int tool_asks(void *u, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  (void)u;
  const char *answers;
  size_t n;
  dexa_tool_invocation_answers(inv, &answers, &n);
  if (n > 2) return dexa_tool_output_set_text(out, "done", 4, 0);
  static const char q[] = "{\"prompt\":\"Sure?\"}";
  return dexa_tool_output_ask(out, q, sizeof q - 1);
}

static int tool_flaky(void *u, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  (void)u;
  (void)inv;
  (void)out;
  return DEXA_E_TRANSIENT;
}

static dexa_agent *make_agent(void) {
  dexa_model *models[2] = {NULL, NULL};
  dexa_tool_source *tools = NULL;
  dexa_agent *agent = NULL;
  dexa_model_vtable vt;
  dexa_model_vtable_init(&vt, sizeof vt);
  vt.generate = broken_generate;
  const char *obj = "{\"type\":\"object\"}";
  int rc = dexa_model_demo_new(&models[0], "mock/dex");
  if (rc == DEXA_OK) rc = dexa_model_new(&models[1], "test/broken", &vt, NULL);
  if (rc == DEXA_OK) rc = dexa_function_tools_new(&tools, "host");
  if (rc == DEXA_OK)
    rc = dexa_function_tools_add(tools, "look", "reads", obj, DEXA_TOOL_READ, DEXA_APPROVAL_NONE,
                                 tool_ok, NULL);
  if (rc == DEXA_OK)
    rc = dexa_function_tools_add(tools, "save", "writes once", obj, DEXA_TOOL_WRITE,
                                 DEXA_APPROVAL_REQUIRED, tool_ok, NULL);
  if (rc == DEXA_OK)
    rc = dexa_function_tools_add(tools, "idem", "writes safely", obj, DEXA_TOOL_IDEMPOTENT_WRITE,
                                 DEXA_APPROVAL_REQUIRED, tool_ok, NULL);
  if (rc == DEXA_OK)
    rc = dexa_function_tools_add(tools, "post", "writes once, unasked", obj, DEXA_TOOL_WRITE,
                                 DEXA_APPROVAL_NONE, tool_ok, NULL);
  if (rc == DEXA_OK)
    rc = dexa_function_tools_add(tools, "flaky", "always fails", obj, DEXA_TOOL_READ,
                                 DEXA_APPROVAL_NONE, tool_flaky, NULL);
  if (rc == DEXA_OK)
    rc = dexa_function_tools_add(tools, "confirm", "asks, then reads", obj, DEXA_TOOL_READ,
                                 DEXA_APPROVAL_NONE, tool_asks, NULL);
  if (rc == DEXA_OK)
    rc = dexa_function_tools_add(tools, "confirm_write", "asks, then writes", obj,
                                 DEXA_TOOL_WRITE, DEXA_APPROVAL_NONE, tool_asks, NULL);
  if (rc == DEXA_OK) {
    dexa_agent_def def;
    dexa_agent_def_init(&def, sizeof def);
    def.models = models;
    def.model_count = 2;
    def.tool_sources = &tools;
    def.tool_source_count = 1;
    def.builtin_tools = DEXA_BUILTIN_ALL;
    def.plan_mode_enabled = 1;
    def.context_window_tokens = 3000; /* a 16 KB message makes RunModel compact first */
    def.tool_max_attempts = 2;
    char err[256];
    rc = dexa_agent_new(&agent, &def, err, sizeof err);
    if (rc != DEXA_OK) fprintf(stderr, "    agent: %s\n", err);
  }
  dexa_model_free(models[0]);
  dexa_model_free(models[1]);
  dexa_tool_source_free(tools);
  return agent;
}

static char *describe(const dexa_agent *a) {
  char *d = NULL;
  size_t n;
  return dexa_flow_describe(&d, &n, a) == DEXA_OK ? d : NULL;
}

/* ---- the graph document against the description ------------------------------------ */

/* "from>to>kind" for every edge the description implies, computed here
 * from the description alone. */
static cJSON *expected_edges(const cJSON *desc) {
  cJSON *set = cJSON_CreateObject();
  const cJSON *s, *x, *trans = get(desc, "transitions");
  char key[512];
  cJSON_ArrayForEach(s, get(desc, "steps")) {
    const char *name = gs(s, "name");
    const cJSON *t = get(get(trans, "steps"), name);
    cJSON_ArrayForEach(x, get(t, "next")) {
      snprintf(key, sizeof key, "%s>%s>next", name, x->valuestring);
      cJSON_AddTrueToObject(set, key);
    }
    if (*gs(get(s, "options"), "recovery")) {
      snprintf(key, sizeof key, "%s>%s>recovery", name, gs(get(s, "options"), "recovery"));
      cJSON_AddTrueToObject(set, key);
    }
    cJSON_ArrayForEach(x, get(t, "publishes")) {
      snprintf(key, sizeof key, "%s>channel:%s>publish", name, x->valuestring);
      cJSON_AddTrueToObject(set, key);
    }
    cJSON_ArrayForEach(x, get(get(t, "waits"), "conditions")) {
      if (!get(x, "channel")) continue;
      snprintf(key, sizeof key, "channel:%s>%s>wait", gs(x, "channel"), name);
      cJSON_AddTrueToObject(set, key);
    }
  }
  cJSON_ArrayForEach(s, get(trans, "rpcs")) {
    cJSON_ArrayForEach(x, get(s, "publishes")) {
      snprintf(key, sizeof key, "rpc:%s>channel:%s>publish", s->string, x->valuestring);
      cJSON_AddTrueToObject(set, key);
    }
  }
  return set;
}

static int count_members(const cJSON *o) {
  int n = 0;
  const cJSON *x;
  cJSON_ArrayForEach(x, o) n++;
  return n;
}

static void test_graph_has_the_nodes_and_edges_of_the_description(void) {
  dexa_agent *a = make_agent();
  CHECK(a);
  char *d = describe(a);
  char *g = NULL;
  CHECK(d);
  CHECK_EQ_INT(dexa_flow_graph(&g, NULL, d, strlen(d), DEXA_GRAPH_JSON), DEXA_OK);
  cJSON *desc = cJSON_Parse(d), *graph = cJSON_Parse(g);
  CHECK(desc && graph);
  CHECK_STR(gs(graph, "flow_type"), gs(desc, "flow_type"));
  CHECK_STR(gs(graph, "start"), gs(desc, "start_step"));
  /* nodes: every Step (with its options and waits), RPC and channel */
  int steps = cJSON_GetArraySize(get(desc, "steps")), rpcs = cJSON_GetArraySize(get(desc, "rpcs"));
  int channels = cJSON_GetArraySize(get(desc, "channels"));
  CHECK_EQ_INT(cJSON_GetArraySize(get(graph, "nodes")), steps + rpcs + channels);
  const cJSON *n, *s;
  int i = 0;
  cJSON_ArrayForEach(s, get(desc, "steps")) {
    n = cJSON_GetArrayItem(get(graph, "nodes"), i++);
    CHECK_STR(gs(n, "id"), gs(s, "name"));
    CHECK_STR(gs(n, "kind"), "step");
    CHECK(cJSON_Compare(get(n, "options"), get(s, "options"), 1));
    const cJSON *w = get(get(get(get(desc, "transitions"), "steps"), gs(s, "name")), "waits");
    CHECK(w ? cJSON_Compare(get(n, "waits"), w, 1) : !get(n, "waits"));
    CHECK(!!w == cJSON_IsTrue(get(get(s, "options"), "has_wait_for")));
  }
  cJSON_ArrayForEach(s, get(desc, "rpcs")) {
    n = cJSON_GetArrayItem(get(graph, "nodes"), i++);
    char id[128];
    snprintf(id, sizeof id, "rpc:%s", gs(s, "name"));
    CHECK_STR(gs(n, "id"), id);
  }
  cJSON_ArrayForEach(s, get(desc, "channels")) {
    n = cJSON_GetArrayItem(get(graph, "nodes"), i++);
    CHECK_STR(gs(n, "kind"), "channel");
    CHECK_STR(gs(n, "label"), s->valuestring);
  }
  /* edges: exactly the expected set, no duplicates */
  cJSON *want = expected_edges(desc);
  const cJSON *e;
  int edges = 0;
  cJSON_ArrayForEach(e, get(graph, "edges")) {
    char key[512];
    snprintf(key, sizeof key, "%s>%s>%s", gs(e, "from"), gs(e, "to"), gs(e, "kind"));
    if (!get(want, key)) fprintf(stderr, "    unexpected edge %s\n", key);
    CHECK(get(want, key));
    edges++;
  }
  CHECK_EQ_INT(edges, count_members(want));
  CHECK(edges > 40);
  cJSON_Delete(want);
  cJSON_Delete(desc);
  cJSON_Delete(graph);
  dexa_free(g);
  dexa_free(d);
  dexa_agent_free(a);
}

/* The edges of the DOT and Mermaid text, as "from>to>kind" with the
 * document's ids, equal the document's. */
static const char *mermaid_back(const cJSON *graph, const char *mid) {
  const cJSON *n;
  cJSON_ArrayForEach(n, get(graph, "nodes")) {
    const char *id = gs(n, "id"), *colon = strchr(id, ':');
    char want[256];
    size_t k = 0;
    want[k++] = !colon ? 's' : strncmp(id, "rpc:", 4) == 0 ? 'r' : 'c';
    want[k++] = '_';
    for (const char *p = colon ? colon + 1 : id; *p && k < sizeof want - 1; p++)
      if (strchr("/:-.", *p) == NULL) want[k++] = *p;
    want[k] = '\0';
    if (strcmp(want, mid) == 0) return id;
  }
  return "?";
}

static void test_dot_and_mermaid_draw_the_same_edges(void) {
  dexa_agent *a = make_agent();
  CHECK(a);
  char *d = describe(a), *json = NULL, *dot = NULL, *mm = NULL;
  CHECK(d);
  CHECK_EQ_INT(dexa_flow_graph(&json, NULL, d, strlen(d), DEXA_GRAPH_JSON), DEXA_OK);
  CHECK_EQ_INT(dexa_flow_graph(&dot, NULL, d, strlen(d), DEXA_GRAPH_DOT), DEXA_OK);
  CHECK_EQ_INT(dexa_flow_graph(&mm, NULL, d, strlen(d), DEXA_GRAPH_MERMAID), DEXA_OK);
  cJSON *graph = cJSON_Parse(json), *from_dot = cJSON_CreateObject(),
        *from_mm = cJSON_CreateObject();
  CHECK(graph);
  char key[512];
  for (char *line = strtok(dot, "\n"); line; line = strtok(NULL, "\n")) {
    char f[200], t[200];
    if (sscanf(line, " \"%199[^\"]\" -> \"%199[^\"]\"", f, t) != 2) continue;
    const char *kind = strstr(line, "recovery") ? "recovery" : strstr(line, "publish") ? "publish"
                       : strstr(line, "wait ")  ? "wait"
                                                : "next";
    snprintf(key, sizeof key, "%s>%s>%s", f, t, kind);
    cJSON_AddTrueToObject(from_dot, key);
  }
  for (char *line = strtok(mm, "\n"); line; line = strtok(NULL, "\n")) {
    char f[200], arrow[64], t[200];
    if (sscanf(line, " %199s %63s %199s", f, arrow, t) != 3 || strchr(f, '(') || strchr(f, '['))
      continue;
    const char *kind = strstr(arrow, "recovery") ? "recovery" : strstr(arrow, "publish") ? "publish"
                       : strncmp(arrow, "==>", 3) == 0 ? "wait"
                       : strcmp(arrow, "-->") == 0     ? "next"
                                                       : NULL;
    if (!kind) continue;
    if (strcmp(kind, "wait") == 0) { /* "==>|wait any|" splits into two words */
      if (sscanf(line, " %199s ==>|wait %*[a-z]| %199s", f, t) != 2) continue;
    }
    snprintf(key, sizeof key, "%s>%s>%s", mermaid_back(graph, f), mermaid_back(graph, t), kind);
    cJSON_AddTrueToObject(from_mm, key);
  }
  const cJSON *e;
  int edges = 0;
  cJSON_ArrayForEach(e, get(graph, "edges")) {
    snprintf(key, sizeof key, "%s>%s>%s", gs(e, "from"), gs(e, "to"), gs(e, "kind"));
    if (!get(from_dot, key) || !get(from_mm, key)) fprintf(stderr, "    missing %s\n", key);
    CHECK(get(from_dot, key));
    CHECK(get(from_mm, key));
    edges++;
  }
  CHECK_EQ_INT(count_members(from_dot), edges);
  CHECK_EQ_INT(count_members(from_mm), edges);
  cJSON_Delete(graph);
  cJSON_Delete(from_dot);
  cJSON_Delete(from_mm);
  dexa_free(json);
  dexa_free(dot);
  dexa_free(mm);
  dexa_free(d);
  dexa_agent_free(a);
}

static void test_graph_refuses_what_is_not_a_description(void) {
  char *g = (char *)1;
  const char *bad[] = {"", "{", "[]", "{\"flow_type\":\"F\"}",
                       /* a transition to a Step the description does not have */
                       ("{\"flow_type\":\"F\",\"start_step\":\"A\",\"steps\":[{\"name\":\"A\"}],"
                        "\"transitions\":{\"steps\":{\"A\":{\"next\":[\"B\"]}}}}")};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CHECK_EQ_INT(dexa_flow_graph(&g, NULL, bad[i], strlen(bad[i]), DEXA_GRAPH_JSON),
                 DEXA_E_INVALID_JSON);
    CHECK(g == NULL);
  }
  const char *ok = "{\"flow_type\":\"F\",\"start_step\":\"A\",\"steps\":[{\"name\":\"A\"}]}";
  CHECK_EQ_INT(dexa_flow_graph(&g, NULL, ok, strlen(ok), 9), DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(dexa_flow_graph(NULL, NULL, ok, strlen(ok), DEXA_GRAPH_JSON), DEXA_E_INVALID_ARG);
  size_t n = 0;
  CHECK_EQ_INT(dexa_flow_graph(&g, &n, ok, strlen(ok), DEXA_GRAPH_DOT), DEXA_OK);
  CHECK_EQ_INT(n, strlen(g));
  CHECK_CONTAINS(g, "\"A\" [label=\"A\"");
  dexa_free(g);
}

/* ---- what the flow does, against the transitions ---------------------------------- */

typedef struct recorder {
  const dexa_agent *agent;
  cJSON *trans;
  cJSON *seen; /* "Step>Step>next", "Step>channel>publish", "channel>Step>wait" */
  int problems;
  int64_t now;
} recorder;

static int64_t rec_clock(void *u) { return ((recorder *)u)->now; }

/* "ToolResults/3-1" -> "ToolResults/": the family a description names. */
static void family(char *out, size_t n, const char *ch) {
  const char *slash = strchr(ch, '/');
  snprintf(out, n, "%.*s", slash ? (int)(slash - ch + 1) : (int)strlen(ch), ch);
}

static int listed(const cJSON *list, const char *name) {
  const cJSON *x;
  cJSON_ArrayForEach(x, list) if (cJSON_IsString(x) && strcmp(x->valuestring, name) == 0) return 1;
  return 0;
}

static void problem(recorder *r, const char *what, const char *a, const char *b) {
  fprintf(stderr, "    not in the description: %s %s -> %s\n", what, a, b);
  r->problems++;
}

static void seen(recorder *r, const char *a, const char *b, const char *kind) {
  char key[512];
  snprintf(key, sizeof key, "%s>%s>%s", a, b, kind);
  if (!get(r->seen, key)) cJSON_AddTrueToObject(r->seen, key);
}

static void check_result(recorder *r, const dexa_call *call, const dexa_result *res) {
  const cJSON *t = get(get(r->trans, call->kind == DEXA_CALL_RPC ? "rpcs" : "steps"), call->name);
  char fam[200];
  const char *json;
  size_t len;
  for (size_t i = 0; i < dexa_result_publish_count(res); i++) {
    const char *ch, *v;
    size_t cl, vl;
    dexa_result_publish_at(res, i, &ch, &cl, &v, &vl);
    family(fam, sizeof fam, ch);
    if (!listed(get(t, "publishes"), fam)) problem(r, "publish", call->name, fam);
    seen(r, call->name, fam, "publish");
  }
  if (dexa_result_decision(res, &json, &len) == DEXA_OK && json && call->kind == DEXA_CALL_EXECUTE) {
    cJSON *d = cJSON_ParseWithLength(json, len);
    const cJSON *x;
    cJSON_ArrayForEach(x, get(d, "next")) {
      if (!listed(get(t, "next"), gs(x, "step"))) problem(r, "next", call->name, gs(x, "step"));
      seen(r, call->name, gs(x, "step"), "next");
    }
    cJSON_Delete(d);
  }
  if (dexa_result_wait(res, &json, &len) == DEXA_OK && json) {
    cJSON *w = cJSON_ParseWithLength(json, len);
    const cJSON *want = get(t, "waits"), *c, *wc;
    if (!want || strcmp(gs(w, "mode"), gs(want, "mode")) != 0)
      problem(r, "wait mode", call->name, gs(w, "mode"));
    cJSON_ArrayForEach(c, get(w, "conditions")) {
      int ok = 0;
      const char *what = get(c, "timer_ms") ? "timer" : (family(fam, sizeof fam, gs(c, "channel")), fam);
      cJSON_ArrayForEach(wc, get(want, "conditions")) {
        ok |= strcmp(what, "timer") == 0 ? cJSON_IsTrue(get(wc, "timer"))
                                         : strcmp(gs(wc, "channel"), what) == 0;
      }
      if (!ok) problem(r, "wait", what, call->name);
      seen(r, what, call->name, "wait");
    }
    cJSON_Delete(w);
  }
}

static int rec_dispatch(void *user, dexa_result **out, const dexa_call *call) {
  recorder *r = user;
  int rc = dexa_dispatch(out, r->agent, call);
  if (*out) check_result(r, call, *out);
  return rc;
}

/* Transitions that need a race no test can set up today: ApplyTurnControl
 * cancels what still waits when a stop or steer raced the model call that
 * proposed it, but such a wait is decided before the turn reaches
 * ApplyTurnControl. */
static int may_be_unseen(const char *key) {
  return strcmp(key, "ApplyTurnControl>ToolDecisions/>publish") == 0;
}

/* Every transition the description lists happened. */
static int all_seen(recorder *r) {
  int missing = 0;
  const cJSON *s, *x, *c;
  char fam[200];
  cJSON_ArrayForEach(s, get(r->trans, "steps")) {
    char key[512];
    cJSON_ArrayForEach(x, get(s, "next")) {
      snprintf(key, sizeof key, "%s>%s>next", s->string, x->valuestring);
      if (!get(r->seen, key)) fprintf(stderr, "    never seen: %s\n", key), missing++;
    }
    cJSON_ArrayForEach(x, get(s, "publishes")) {
      snprintf(key, sizeof key, "%s>%s>publish", s->string, x->valuestring);
      if (!get(r->seen, key) && !may_be_unseen(key))
        fprintf(stderr, "    never seen: %s\n", key), missing++;
    }
    cJSON_ArrayForEach(c, get(get(s, "waits"), "conditions")) {
      const char *what = get(c, "timer") ? "timer" : (family(fam, sizeof fam, gs(c, "channel")), fam);
      snprintf(key, sizeof key, "%s>%s>wait", what, s->string);
      if (!get(r->seen, key)) fprintf(stderr, "    never seen: %s\n", key), missing++;
    }
  }
  cJSON_ArrayForEach(s, get(r->trans, "rpcs")) {
    char key[512];
    cJSON_ArrayForEach(x, get(s, "publishes")) {
      snprintf(key, sizeof key, "%s>%s>publish", s->string, x->valuestring);
      if (!get(r->seen, key)) fprintf(stderr, "    never seen: %s\n", key), missing++;
    }
  }
  return missing;
}

/* ---- driving sessions ---------------------------------------------------------------- */

typedef struct world {
  dexa_agent *agent;
  recorder rec;
  dexa_runtime *rt;    /* dispatches through the recorder */
  dexa_runtime *graph; /* the same store, with the agent: draws the session */
  char path[512];
} world;

static int world_open(world *w) {
  memset(w, 0, sizeof *w);
  w->agent = make_agent();
  char *d = w->agent ? describe(w->agent) : NULL;
  cJSON *desc = d ? cJSON_Parse(d) : NULL;
  if (!desc) return -1;
  w->rec.agent = w->agent;
  w->rec.trans = cJSON_DetachItemFromObjectCaseSensitive(desc, "transitions");
  w->rec.seen = cJSON_CreateObject();
  w->rec.now = 1700000000000;
  cJSON_Delete(desc);
  temp_store_path(w->path, sizeof w->path, "graph");
  dexa_runtime_options o;
  dexa_runtime_options_init(&o, sizeof o);
  o.store = w->path;
  o.sqlite_synchronous = "normal";
  o.clock = rec_clock;
  o.clock_user_data = &w->rec;
  char err[256];
  int rc = dexa__runtime_new_with_dispatch(&w->rt, d, rec_dispatch, &w->rec, &o, err, sizeof err);
  if (rc == DEXA_OK) rc = dexa_runtime_new(&w->graph, w->agent, &o, err, sizeof err);
  dexa_free(d);
  if (rc != DEXA_OK) fprintf(stderr, "    runtime: %s\n", err);
  return rc == DEXA_OK ? 0 : -1;
}

static void world_close(world *w) {
  dexa_runtime_free(w->graph);
  dexa_runtime_free(w->rt);
  dexa_agent_free(w->agent);
  cJSON_Delete(w->rec.trans);
  cJSON_Delete(w->rec.seen);
  temp_store_remove(w->path);
}

static int run(world *w) { return dexa_runtime_run_ready(w->rt, NULL); }

static int call(world *w, const char *sid, const char *rpc, const char *in) {
  char *out = NULL;
  size_t n;
  int rc = dexa_runtime_call(w->rt, sid, rpc, in, strlen(in), &out, &n);
  if (rc != DEXA_OK) fprintf(stderr, "    %s %s: %s\n", rpc, in, out ? out : "");
  dexa_free(out);
  return rc;
}

static int say(world *w, const char *sid, const char *text) {
  cJSON *in = cJSON_CreateObject();
  cJSON_AddStringToObject(in, "text", text);
  char *json = cJSON_PrintUnformatted(in);
  int rc = call(w, sid, "send_message", json);
  cJSON_free(json);
  cJSON_Delete(in);
  return rc;
}

/* The first pending item's member `field` of kind (from the snapshot). */
static int pending(world *w, const char *sid, const char *kind, const char *field, char *out,
                   size_t n) {
  char *snap = NULL;
  size_t len;
  out[0] = '\0';
  if (dexa_runtime_call(w->rt, sid, "snapshot", "{}", 2, &snap, &len) != DEXA_OK) return -1;
  cJSON *doc = cJSON_Parse(snap);
  dexa_free(snap);
  const cJSON *p;
  cJSON_ArrayForEach(p, get(doc, "pending")) {
    if (strcmp(gs(p, "kind"), kind) == 0 && !out[0]) snprintf(out, n, "%s", gs(p, field));
  }
  cJSON_ArrayForEach(p, get(doc, "queue")) {
    if (strcmp(kind, "queue") == 0 && !out[0]) snprintf(out, n, "%s", gs(p, field));
  }
  cJSON_Delete(doc);
  return out[0] ? 0 : -1;
}

static int decide(world *w, const char *sid, const char *kind, const char *rpc, const char *extra) {
  char id[128], in[512];
  if (pending(w, sid, kind, "call_id", id, sizeof id) != 0) return -1;
  snprintf(in, sizeof in, "{\"call_id\":\"%s\"%s}", id, extra);
  return call(w, sid, rpc, in);
}

static int start(world *w, const char *sid, const char *model) {
  char settings[96];
  snprintf(settings, sizeof settings, "{\"model\":\"%s\"}", model);
  int rc = dexa_runtime_start_session(w->rt, sid, settings, strlen(settings), NULL, NULL);
  return rc == DEXA_OK ? run(w) : rc;
}

/* Runs the one task a poll claims (the locked Steps before it run inline)
 * with the RPC rpc landing between its claim and its run (before != 0) or
 * between its run and its commit. */
static int run_one_with(world *w, const char *sid, const char *rpc, int before) {
  dexa_task *t = NULL;
  int rc = dexa_runtime_poll(w->rt, &t, 0);
  if (rc != DEXA_OK) return rc;
  if (before && call(w, sid, rpc, "{}") != DEXA_OK) rc = -1;
  dexa_result *res = NULL;
  rec_dispatch(&w->rec, &res, dexa_task_call(t));
  if (!before && call(w, sid, rpc, "{}") != DEXA_OK) rc = -1;
  int crc = dexa_runtime_complete(w->rt, t, res);
  dexa_result_free(res);
  return rc != DEXA_OK ? rc : crc;
}

static void test_every_decision_wait_and_publish_is_in_the_description(void) {
  world w;
  CHECK(world_open(&w) == 0);
  const char *s = "s-graph";
  CHECK_EQ_INT(start(&w, s, "mock/dex"), DEXA_OK);
  /* a turn; a READ call; a WRITE and an IDEMPOTENT_WRITE call after approval */
  CHECK(say(&w, s, "hello") == 0 && run(&w) == 0);
  CHECK(say(&w, s, "/tool look {}") == 0 && run(&w) == 0);
  CHECK(say(&w, s, "/tool save {}") == 0 && run(&w) == 0);
  CHECK(decide(&w, s, "approval", "resolve_approval", ",\"decision\":\"approve\"") == 0);
  CHECK(run(&w) == 0);
  CHECK(say(&w, s, "/tool idem {}") == 0 && run(&w) == 0);
  CHECK(decide(&w, s, "approval", "resolve_approval", ",\"decision\":\"approve\"") == 0);
  CHECK(run(&w) == 0);
  CHECK(say(&w, s, "/tool save {}") == 0 && run(&w) == 0);
  CHECK(decide(&w, s, "approval", "resolve_approval", ",\"decision\":\"reject\"") == 0);
  CHECK(run(&w) == 0);
  /* a question; a timer that fires */
  CHECK(say(&w, s, "/ask Name?") == 0 && run(&w) == 0);
  CHECK(decide(&w, s, "question", "answer_question", ",\"answer\":\"Ada\"") == 0);
  CHECK(run(&w) == 0);
  /* tools that ask the person mid-call: the answer runs each again */
  CHECK(say(&w, s, "/tool confirm {}") == 0 && run(&w) == 0);
  CHECK(decide(&w, s, "question", "answer_question", ",\"action\":\"accept\"") == 0);
  CHECK(run(&w) == 0);
  CHECK(say(&w, s, "/tool confirm_write {}") == 0 && run(&w) == 0);
  CHECK(decide(&w, s, "question", "answer_question", ",\"action\":\"decline\"") == 0);
  CHECK(run(&w) == 0);
  CHECK(say(&w, s, "/wait 5 tea") == 0 && run(&w) == 0);
  w.rec.now += 6000;
  CHECK(run(&w) == 0);
  /* a READ call that fails every attempt: RecordToolOutcome */
  CHECK(say(&w, s, "/tool flaky {}") == 0 && run(&w) == 0);
  for (int i = 0; i < 4; i++) {
    w.rec.now += 60000;
    CHECK(run(&w) == 0);
  }
  /* a steer during a wait: the timer is cancelled, ResumeTurn hands over to
   * ApplyTurnControl, which starts the steered turn */
  CHECK(say(&w, s, "/wait 60 tea") == 0 && run(&w) == 0);
  CHECK(say(&w, s, "steered in") == 0);
  char mid[64];
  CHECK(pending(&w, s, "queue", "id", mid, sizeof mid) == 0);
  char in[128];
  snprintf(in, sizeof in, "{\"message_id\":\"%s\"}", mid);
  CHECK(call(&w, s, "steer", in) == 0 && run(&w) == 0);
  /* a stop during a wait: the turn ends, the session waits; a message
   * queued meanwhile and deleted leaves its signal, so AwaitUserMessage
   * wakes, finds no message and waits again */
  CHECK(say(&w, s, "/wait 60 tea") == 0 && run(&w) == 0);
  CHECK(say(&w, s, "never mind") == 0);
  CHECK(pending(&w, s, "queue", "id", mid, sizeof mid) == 0);
  snprintf(in, sizeof in, "{\"message_id\":\"%s\"}", mid);
  CHECK(call(&w, s, "delete_message", in) == 0);
  CHECK(call(&w, s, "cancel_turn", "{}") == 0 && run(&w) == 0);
  /* a stop between a turn's start and its model call: RunModel hands over */
  CHECK(say(&w, s, "stop me") == 0);
  CHECK_EQ_INT(run_one_with(&w, s, "cancel_turn", 1), DEXA_OK);
  CHECK(run(&w) == 0);
  /* a stop while the model call that proposes an approval runs: the
   * approval is recorded after the stop cancelled what waited. (Today it
   * then waits for its decision before ApplyTurnControl ends the turn;
   * reject it if it still waits.) */
  CHECK(say(&w, s, "/tool save {}") == 0);
  CHECK_EQ_INT(run_one_with(&w, s, "cancel_turn", 0), DEXA_OK);
  CHECK(run(&w) == 0);
  if (pending(&w, s, "approval", "call_id", mid, sizeof mid) == 0)
    decide(&w, s, "approval", "resolve_approval", ",\"decision\":\"reject\"");
  CHECK(run(&w) == 0);
  /* a WRITE without approval runs at once, once */
  CHECK(say(&w, s, "/tool post {}") == 0 && run(&w) == 0);
  /* a plan: drafted (write_todos answered at once), then executed */
  CHECK(call(&w, s, "send_message", "{\"text\":\"plan it\",\"plan_mode\":true}") == 0 && run(&w) == 0);
  char rev[32];
  char *snap = NULL;
  size_t len;
  CHECK(dexa_runtime_call(w.rt, s, "snapshot", "{}", 2, &snap, &len) == DEXA_OK);
  cJSON *doc = cJSON_Parse(snap);
  dexa_free(snap);
  snprintf(rev, sizeof rev, "%d", get(get(doc, "plan"), "revision") ? get(get(doc, "plan"), "revision")->valueint : -1);
  cJSON_Delete(doc);
  snprintf(in, sizeof in, "{\"revision\":%s}", rev);
  CHECK(call(&w, s, "execute_plan", in) == 0 && run(&w) == 0);
  /* a long message: RunModel compacts first */
  char *big = malloc(16001);
  CHECK(big);
  memset(big, 'x', 16000);
  big[16000] = '\0';
  CHECK(say(&w, s, big) == 0 && run(&w) == 0);
  free(big);
  /* a model that fails for good: RecordTurnFailure; one that fails every
   * attempt: the recovery Step */
  const char *s2 = "s-graph-broken";
  CHECK_EQ_INT(start(&w, s2, "test/broken"), DEXA_OK);
  CHECK(say(&w, s2, "hello") == 0 && run(&w) == 0);
  CHECK(say(&w, s, "/fail 9") == 0 && run(&w) == 0);
  for (int i = 0; i < 4; i++) {
    w.rec.now += 120000;
    CHECK(run(&w) == 0);
  }
  CHECK_EQ_INT(w.rec.problems, 0);
  CHECK_EQ_INT(all_seen(&w.rec), 0);
  world_close(&w);
}

/* ---- the session view ------------------------------------------------------------------ */

static const cJSON *node(const cJSON *graph, const char *id) {
  const cJSON *n;
  cJSON_ArrayForEach(n, get(graph, "nodes")) if (strcmp(gs(n, "id"), id) == 0) return n;
  return NULL;
}

static int visits(const cJSON *graph, const char *id) {
  const cJSON *v = get(node(graph, id), "visits");
  return cJSON_IsNumber(v) ? v->valueint : -1;
}

static void test_session_view_shows_what_ran_and_where_it_waits(void) {
  world w;
  CHECK(world_open(&w) == 0);
  const char *s = "s-view";
  CHECK_EQ_INT(start(&w, s, "mock/dex"), DEXA_OK);
  CHECK(say(&w, s, "/tool look {}") == 0 && run(&w) == 0);
  CHECK(say(&w, s, "/tool save {}") == 0 && run(&w) == 0);
  char *g = NULL;
  CHECK_EQ_INT(dexa_runtime_session_graph(w.graph, s, DEXA_GRAPH_JSON, &g, NULL), DEXA_OK);
  cJSON *graph = cJSON_Parse(g);
  dexa_free(g);
  CHECK(graph);
  const cJSON *sess = get(graph, "session");
  CHECK_STR(gs(sess, "session_id"), s);
  /* now: the approval waits on its decision channel, nothing else runs */
  const cJSON *now = get(sess, "now"), *r;
  int waiting_approval = 0, waiting_resume = 0, other = 0;
  cJSON_ArrayForEach(r, now) {
    if (!strcmp(gs(r, "step"), "AwaitToolApproval") && !strcmp(gs(r, "state"), "waiting")) {
      waiting_approval++;
      CHECK_STR(gs(r, "tool"), "save");
      CHECK_CONTAINS(gs(cJSON_GetArrayItem(get(get(r, "wait"), "conditions"), 0), "channel"),
                     "ToolDecisions/");
    } else if (!strcmp(gs(r, "step"), "ResumeTurn")) {
      waiting_resume++;
    } else if (strcmp(gs(r, "step"), "AwaitUserMessage") != 0) {
      other++;
    }
  }
  CHECK_EQ_INT(waiting_approval, 1);
  CHECK_EQ_INT(waiting_resume, 1);
  CHECK_EQ_INT(other, 0);
  CHECK(cJSON_GetNumberValue(get(get(node(graph, "AwaitToolApproval"), "now"), "waiting")) == 1);
  /* ran: the start, two turns, the READ call and the join after it */
  CHECK_EQ_INT(visits(graph, "StartAgentSession"), 1);
  CHECK_EQ_INT(visits(graph, "AwaitUserMessage"), 2);
  CHECK_EQ_INT(visits(graph, "RunModel"), 3); /* look; its answer; save */
  CHECK_EQ_INT(visits(graph, "CallTool"), 1);
  CHECK_EQ_INT(visits(graph, "ResumeTurn"), 1);
  CHECK_EQ_INT(visits(graph, "CallSingleAttemptTool"), 0);
  cJSON_Delete(graph);
  /* approved: the write ran once in CallSingleAttemptTool, after approval */
  CHECK(decide(&w, s, "approval", "resolve_approval", ",\"decision\":\"approve\"") == 0);
  CHECK(run(&w) == 0);
  CHECK_EQ_INT(dexa_runtime_session_graph(w.graph, s, DEXA_GRAPH_JSON, &g, NULL), DEXA_OK);
  graph = cJSON_Parse(g);
  dexa_free(g);
  CHECK_EQ_INT(visits(graph, "CallSingleAttemptTool"), 1);
  CHECK_EQ_INT(visits(graph, "AwaitToolApproval"), 1);
  CHECK_EQ_INT(visits(graph, "ResumeTurn"), 2);
  CHECK_EQ_INT(visits(graph, "RunModel"), 4);
  CHECK_EQ_INT(cJSON_GetArraySize(get(get(graph, "session"), "now")), 1); /* AwaitUserMessage */
  cJSON_Delete(graph);
  /* DOT and Mermaid mark it */
  CHECK(say(&w, s, "/ask Name?") == 0 && run(&w) == 0);
  CHECK_EQ_INT(dexa_runtime_session_graph(w.graph, s, DEXA_GRAPH_DOT, &g, NULL), DEXA_OK);
  CHECK_CONTAINS(g, "label=\"session s-view\"");
  CHECK_CONTAINS(g, "\"AwaitQuestionAnswer\" [label=\"AwaitQuestionAnswer\\nwaits any: ToolDecisions/\\nran 0, waiting 1\"");
  CHECK_CONTAINS(g, "fillcolor=gold");
  dexa_free(g);
  CHECK_EQ_INT(dexa_runtime_session_graph(w.graph, s, DEXA_GRAPH_MERMAID, &g, NULL), DEXA_OK);
  const char *cls = strstr(g, "\n  class s_AwaitQuestionAnswer");
  CHECK(cls);
  CHECK(strncmp(strchr(cls + 1, '\n') - 8, " waiting", 8) == 0);
  dexa_free(g);
  CHECK_EQ_INT(dexa_runtime_session_graph(w.graph, "s-none", DEXA_GRAPH_JSON, &g, NULL),
               DEXA_E_NOT_FOUND);
  CHECK(g == NULL);
  world_close(&w);
}

int main(void) {
  RUN(test_graph_has_the_nodes_and_edges_of_the_description);
  RUN(test_dot_and_mermaid_draw_the_same_edges);
  RUN(test_graph_refuses_what_is_not_a_description);
  RUN(test_every_decision_wait_and_publish_is_in_the_description);
  RUN(test_session_view_shows_what_ran_and_where_it_waits);
  TEST_MAIN_END();
}
