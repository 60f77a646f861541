/* dexa_runtime_session_graph: one session on the flow graph.
 *
 * Where the data comes from (dexagents-graph(7)):
 *   now  the session's live Step rows in the store (ready, running, or
 *        waiting with their wait conditions): exact.
 *   ran  the Step executions its retained durable AgentEvents show. A
 *        finished execution leaves no row, so its events are the record:
 *        each event type is written by one Step (tool_call_finished by the
 *        Step its call was routed to, known from the call's earlier events
 *        and the effect on tool_call_proposed), events of one result share
 *        their "at", and the Steps that write no event are inferred:
 *        ResumeTurn before a round's next RunModel, AwaitToolApproval after
 *        an approval. Executions that failed and were retried, and events
 *        trimmed away (events_retained), do not show.
 * It reads the store like any client and runs nothing. */
#include <stdlib.h>
#include <string.h>

#include "dexagents/graph.h"
#include "flow/graph.h"
#include "runtime/runtime_internal.h"

#define RAN_KEPT 200   /* newest executions listed; visits count them all */
#define EVENT_PAGE 1000

typedef struct trail {
  cJSON *ran;    /* newest RAN_KEPT entries */
  cJSON *visits; /* step -> executions */
  cJSON *calls;  /* call_id -> {"name","effect","kind"} */
  cJSON *last;   /* the newest entry (in ran) */
  int results;   /* tool results since the last model round */
  int oom;
} trail;

static const cJSON *member(const cJSON *o, const char *name) {
  return cJSON_GetObjectItemCaseSensitive(o, name);
}

static const char *str(const cJSON *o, const char *name) {
  const char *s = cJSON_GetStringValue(member(o, name));
  return s ? s : "";
}

static int is(const char *a, const char *b) { return strcmp(a, b) == 0; }

static void bump_visits(trail *t, const char *step) {
  cJSON *n = cJSON_GetObjectItemCaseSensitive(t->visits, step);
  if (n) cJSON_SetNumberValue(n, n->valuedouble + 1);
  else if (!cJSON_AddNumberToObject(t->visits, step, 1)) t->oom = 1;
}

/* Adds the event to the newest entry when the same execution wrote it (same
 * Step, same "at", same call), else starts an entry. */
static void attribute(trail *t, const char *step, const cJSON *ev, int inferred) {
  const cJSON *at = member(ev, "at"), *turn = member(ev, "turn");
  const char *call = str(ev, "call_id"), *type = str(ev, "type");
  const cJSON *last = t->last;
  if (!inferred && last && is(str(last, "step"), step) && !member(last, "inferred") &&
      cJSON_IsNumber(at) && member(last, "at")->valuedouble == at->valuedouble &&
      (!*call || !*str(last, "call_id") || is(call, str(last, "call_id")))) {
    cJSON *types = cJSON_GetObjectItemCaseSensitive(last, "events");
    if (!cJSON_AddItemToArray(types, cJSON_CreateString(type))) t->oom = 1;
    return;
  }
  cJSON *e = cJSON_CreateObject();
  if (!e || !cJSON_AddStringToObject(e, "step", step) ||
      !cJSON_AddNumberToObject(e, "at", cJSON_IsNumber(at) ? at->valuedouble : 0) ||
      (cJSON_IsNumber(turn) && !cJSON_AddNumberToObject(e, "turn", turn->valuedouble)) ||
      (*call && !cJSON_AddStringToObject(e, "call_id", call)) ||
      (inferred && !cJSON_AddBoolToObject(e, "inferred", 1))) {
    cJSON_Delete(e);
    t->oom = 1;
    return;
  }
  cJSON *types = cJSON_AddArrayToObject(e, "events");
  if (!inferred && types) cJSON_AddItemToArray(types, cJSON_CreateString(type));
  cJSON_AddItemToArray(t->ran, e);
  if (cJSON_GetArraySize(t->ran) > RAN_KEPT) cJSON_DeleteItemFromArray(t->ran, 0);
  t->last = e;
  bump_visits(t, step);
}

/* A model round after tool results: ResumeTurn joined them first. */
static void model_round(trail *t, const char *step, const cJSON *ev) {
  if (t->results > 0 && !(t->last && is(str(t->last, "step"), step)))
    attribute(t, "ResumeTurn", ev, 1);
  t->results = 0;
  attribute(t, step, ev, 0);
}

/* What the call's earlier events said about it. */
static cJSON *call_info(trail *t, const cJSON *ev) {
  const char *id = str(ev, "call_id");
  cJSON *c = cJSON_GetObjectItemCaseSensitive(t->calls, id);
  if (!c && *id && (c = cJSON_CreateObject()) && !cJSON_AddItemToObject(t->calls, id, c)) {
    cJSON_Delete(c);
    c = NULL;
  }
  if (!c) t->oom = 1;
  return c;
}

static void note_call(trail *t, const cJSON *ev, const char *kind) {
  cJSON *c = call_info(t, ev);
  if (!c) return;
  if (*str(ev, "name") && !member(c, "name")) cJSON_AddStringToObject(c, "name", str(ev, "name"));
  if (*str(ev, "effect") && !member(c, "effect"))
    cJSON_AddStringToObject(c, "effect", str(ev, "effect"));
  if (kind) {
    cJSON_DeleteItemFromObjectCaseSensitive(c, "kind");
    cJSON_AddStringToObject(c, "kind", kind);
  }
}

/* The Step that recorded a call's result. */
static const char *result_step(trail *t, const cJSON *ev) {
  const cJSON *c = member(t->calls, str(ev, "call_id"));
  const char *kind = str(c, "kind"), *status = str(ev, "status"), *name = str(c, "name");
  if (!c || (!*kind && (is(name, "write_todos") || is(name, "ask_user") || is(name, "durable_wait"))))
    return "RunModel"; /* answered at once (unknown tool, bad arguments, write_todos) */
  if (is(status, "unknown_outcome")) return "RecordToolOutcome";
  if (is(kind, "question")) return "AwaitQuestionAnswer";
  if (is(kind, "timer")) return "AwaitTimer";
  if (is(kind, "approval") && (is(status, "rejected") || !member(c, "approved")))
    return "AwaitToolApproval";
  return is(str(c, "effect"), "write") ? "CallSingleAttemptTool" : "CallTool";
}

static void tool_result(trail *t, const cJSON *ev) {
  const char *step = result_step(t, ev);
  if (!is(step, "RunModel")) t->results++;
  attribute(t, step, ev, 0);
}

/* One durable event: the Step that wrote it (RPC events are left out). */
static void visit(trail *t, const cJSON *ev) {
  const char *type = str(ev, "type");
  if (is(type, "session_started")) {
    attribute(t, "StartAgentSession", ev, 0);
  } else if (is(type, "turn_started")) {
    t->results = 0;
    const char *prev = t->last ? str(t->last, "step") : "";
    int same = t->last && member(t->last, "at")->valuedouble == member(ev, "at")->valuedouble;
    attribute(t, same && is(prev, "ApplyTurnControl") ? prev : "AwaitUserMessage", ev, 0);
  } else if (is(type, "message_appended")) {
    if (is(str(member(ev, "message"), "role"), "model")) model_round(t, "RunModel", ev);
    else if (t->last) attribute(t, str(t->last, "step"), ev, 0);
  } else if (is(type, "tool_call_proposed") || is(type, "tool_call_awaiting_approval") ||
             is(type, "question_asked") || is(type, "timer_set")) {
    note_call(t, ev, is(type, "tool_call_awaiting_approval") ? "approval"
                     : is(type, "question_asked")            ? "question"
                     : is(type, "timer_set")                 ? "timer"
                                                             : NULL);
    model_round(t, "RunModel", ev);
  } else if (is(type, "turn_finished") || is(type, "plan_updated")) {
    model_round(t, "RunModel", ev);
  } else if (is(type, "compaction")) {
    attribute(t, "CompactContext", ev, 0);
  } else if (is(type, "turn_failed")) {
    attribute(t, "RecordTurnFailure", ev, 0);
  } else if (is(type, "turn_cancelled")) {
    model_round(t, "ApplyTurnControl", ev);
  } else if (is(type, "timer_fired")) {
    attribute(t, "AwaitTimer", ev, 0);
  } else if (is(type, "tool_call_finished")) {
    tool_result(t, ev);
  } else if (is(type, "approval_resolved") &&
             is(str(member(ev, "decision"), "decision"), "approve")) {
    cJSON *c = call_info(t, ev); /* AwaitToolApproval runs the approved call */
    if (c && !member(c, "approved")) cJSON_AddBoolToObject(c, "approved", 1);
    attribute(t, "AwaitToolApproval", ev, 1);
  }
}

static int read_trail(dexa_runtime *rt, const char *sid, trail *t) {
  char *token = strdup("");
  int rc = token ? DEXA_OK : DEXA_E_NOMEM;
  for (int more = 1; more && rc == DEXA_OK && !t->oom;) {
    char *out = NULL;
    size_t len = 0;
    rc = dexa_runtime_read_events(rt, sid, token, EVENT_PAGE, 0, &out, &len);
    cJSON *doc = rc == DEXA_OK ? cJSON_ParseWithLength(out, len) : NULL;
    dexa_free(out);
    if (rc != DEXA_OK) break;
    if (!doc) rc = DEXA_E_NOMEM;
    const cJSON *item;
    more = 0;
    cJSON_ArrayForEach(item, member(doc, "events")) {
      const cJSON *ev = member(item, "event");
      more = 1;
      if (!cJSON_IsTrue(member(ev, "live")) && cJSON_IsNumber(member(ev, "at"))) visit(t, ev);
    }
    free(token);
    token = strdup(str(doc, "token"));
    if (!token) rc = DEXA_E_NOMEM;
    cJSON_Delete(doc);
  }
  free(token);
  return rc == DEXA_OK && t->oom ? DEXA_E_NOMEM : rc;
}

/* ---- now: the live Step rows --------------------------------------------------- */

static const char *state_name(int32_t s) {
  return s == DEXA__STEP_READY ? "ready" : s == DEXA__STEP_RUNNING ? "running" : "waiting";
}

static cJSON *row_json(const dexa__step_row *r) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "step", r->step_type);
  cJSON_AddStringToObject(o, "exec_id", r->exec_id);
  cJSON_AddStringToObject(o, "state", state_name(r->state));
  cJSON_AddNumberToObject(o, "attempt", r->attempt);
  if (r->state == DEXA__STEP_RUNNING) cJSON_AddNumberToObject(o, "lease_until", (double)r->lease_until);
  else if (r->due_ms != DEXA__NO_DUE) cJSON_AddNumberToObject(o, "due_ms", (double)r->due_ms);
  cJSON *in = r->input ? cJSON_ParseWithLength(r->input, r->input_len) : NULL;
  if (*str(in, "call_id")) cJSON_AddStringToObject(o, "call_id", str(in, "call_id"));
  if (*str(in, "name")) cJSON_AddStringToObject(o, "tool", str(in, "name"));
  cJSON_Delete(in);
  cJSON *wait = r->state == DEXA__STEP_WAITING && r->wait ? cJSON_ParseWithLength(r->wait, r->wait_len) : NULL;
  if (wait) cJSON_AddItemToObject(o, "wait", wait);
  return o;
}

static int read_now(dexa_runtime *rt, const char *sid, cJSON *now) {
  dexa__store_conn *c = NULL;
  int rc = dexa__pool_acquire(rt, &c);
  if (rc != DEXA_OK) return rc;
  dexa__session_row s;
  dexa__step_row *rows = NULL;
  size_t n = 0;
  rc = c->ops->session_get(c, sid, &s);
  if (rc == DEXA_OK) {
    dexa__session_row_free(&s);
    rc = c->ops->step_list(c, sid, 0, &rows, &n);
  }
  dexa__pool_release(rt, c);
  for (size_t i = 0; rc == DEXA_OK && i < n; i++) {
    cJSON *o = row_json(&rows[i]);
    if (!o || !cJSON_AddItemToArray(now, o)) {
      cJSON_Delete(o);
      rc = DEXA_E_NOMEM;
    }
  }
  dexa__step_rows_free(rows, n);
  return rc;
}

DEXA_EXTERN int dexa_runtime_session_graph(dexa_runtime *rt, const char *session_id,
                                           int32_t format, char **out, size_t *out_len) {
  if (out) *out = NULL;
  if (out_len) *out_len = 0;
  if (!rt || !session_id || !out) return DEXA_E_INVALID_ARG;
  if (!rt->agent) return DEXA_E_UNSUPPORTED; /* a test flow has no description text */
  char *desc = NULL;
  size_t desc_len = 0;
  cJSON *session = cJSON_CreateObject();
  trail t = {NULL, NULL, NULL, NULL, 0, 0};
  int rc = session && cJSON_AddStringToObject(session, "session_id", session_id) &&
                   (t.ran = cJSON_AddArrayToObject(session, "ran")) &&
                   (t.visits = cJSON_AddObjectToObject(session, "visits")) &&
                   (t.calls = cJSON_CreateObject())
               ? DEXA_OK
               : DEXA_E_NOMEM;
  cJSON *now = rc == DEXA_OK ? cJSON_AddArrayToObject(session, "now") : NULL;
  if (rc == DEXA_OK && !now) rc = DEXA_E_NOMEM;
  if (rc == DEXA_OK) rc = read_now(rt, session_id, now);
  if (rc == DEXA_OK) rc = read_trail(rt, session_id, &t);
  if (rc == DEXA_OK) rc = dexa_flow_describe(&desc, &desc_len, rt->agent);
  if (rc == DEXA_OK) rc = dexa__graph_render(out, out_len, desc, desc_len, session, format);
  dexa_free(desc);
  cJSON_Delete(t.calls);
  cJSON_Delete(session);
  return rc;
}
