/* Tool routing: every call of a reply becomes its own Step, chosen by the
 * tool and its effect and approval policy; ResumeTurn joins them.
 *   READ, IDEMPOTENT_WRITE      -> CallTool (retried)
 *   WRITE                       -> CallSingleAttemptTool (one attempt)
 *   approval required           -> AwaitToolApproval first
 *   ask_user                    -> AwaitQuestionAnswer
 *   durable_wait                -> AwaitTimer
 *   write_todos                 -> applied at once (pure state)
 * Calls that wait for a person or a timer are listed in PendingToolCalls so
 * RPCs can check a decision against exactly what is pending. */
#include <stdio.h>
#include <string.h>

#include "core/plan.h"

#define MAX_WAIT_SECONDS (30LL * 24 * 3600)

typedef struct route {
  dexa__ctx *c;
  const dexa_tool_list *tools;
  const cJSON *calls;
  const dexa__turn *turn;
  int64_t round;
  dexa__decision *d;
  int todos_written;
  int cancel; /* the turn was steered or stopped: nothing is scheduled or joined */
} route;

typedef struct call_view {
  const char *id;
  const char *name;
  const cJSON *args;
  char *args_text;
  int64_t seq;
} call_view;

static int immediate(route *r, const call_view *v, const char *status, const char *text) {
  dexa__tool_result res = {v->id, v->name, status, text, strlen(text), NULL, 0, r->cancel};
  return dexa__tool_result_record(r->c, r->turn->turn, r->round, v->seq, &res);
}

static const char *source_name(const dexa_agent *a, const dexa__tool_def *def) {
  return def->source == DEXA__BUILTIN_SOURCE ? SOURCE_BUILTIN : a->sources[def->source]->name;
}

/* The input every Step of a call gets: enough to run it and record its
 * result without reading the history. */
static void call_input(route *r, dexa__buf *b, const dexa__tool_def *def, const call_view *v,
                       const char *extra) {
  dexa__buf_printf(b, "{\"turn\":%lld,\"round\":%lld,\"seq\":%lld,\"call_id\":",
                   (long long)r->turn->turn, (long long)r->round, (long long)v->seq);
  dexa__buf_json_cstr(b, v->id);
  dexa__buf_puts(b, ",\"name\":");
  dexa__buf_json_cstr(b, def->name);
  dexa__buf_puts(b, ",\"source\":");
  dexa__buf_json_cstr(b, source_name(r->c->agent, def));
  dexa__buf_puts(b, ",\"effect\":");
  dexa__buf_json_cstr(b, dexa__tool_effect_name(def->effect));
  dexa__buf_puts(b, ",\"arguments\":");
  dexa__buf_puts(b, v->args_text);
  if (extra) dexa__buf_puts(b, extra);
  dexa__buf_putc(b, '}');
}

static int event_for(route *r, const char *type, const call_view *v, const char *extra) {
  dexa__buf e;
  dexa__event_begin(r->c, &e, type);
  dexa__buf_printf(&e, ",\"turn\":%lld,\"call_id\":", (long long)r->turn->turn);
  dexa__buf_json_cstr(&e, v->id);
  dexa__buf_puts(&e, ",\"name\":");
  dexa__buf_json_cstr(&e, v->name);
  dexa__buf_puts(&e, ",\"arguments\":");
  dexa__buf_puts(&e, v->args_text);
  if (extra) dexa__buf_puts(&e, extra);
  return dexa__event_end(r->c, &e);
}

/* Records a call that waits (approval, question, timer) in PendingToolCalls
 * and schedules its waiting Step. extra: more JSON members for both. */
static int add_waiting(route *r, const dexa__tool_def *def, const call_view *v, const char *kind,
                       const char *step, const char *extra, const char *event) {
  dexa__buf more, in;
  dexa__buf_init(&more);
  dexa__buf_init(&in);
  dexa__buf_puts(&more, ",\"kind\":");
  dexa__buf_json_cstr(&more, kind);
  dexa__buf_printf(&more, ",\"at\":%lld", (long long)r->c->call->now_ms);
  if (extra) dexa__buf_puts(&more, extra);
  call_input(r, &in, def, v, more.data);
  char key[320];
  snprintf(key, sizeof key, ATTR_PENDING_CALLS "%s", v->id);
  int rc = in.oom || more.oom ? DEXA_E_NOMEM : dexa__attr_put_raw(r->c, key, in.data, in.len);
  if (rc == DEXA_OK) dexa__decision_next(r->d, step, in.data, in.len);
  if (rc == DEXA_OK && r->d->b.oom) rc = DEXA_E_NOMEM;
  if (rc == DEXA_OK) rc = event_for(r, event, v, more.data);
  dexa__buf_free(&more);
  dexa__buf_free(&in);
  return rc;
}

static int route_question(route *r, const dexa__tool_def *def, const call_view *v) {
  const char *prompt = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v->args, "prompt"));
  const cJSON *choices = cJSON_GetObjectItemCaseSensitive(v->args, "choices");
  if (!prompt || !*prompt) return immediate(r, v, "error", "ask_user needs a non-empty prompt");
  int n = choices ? cJSON_GetArraySize(choices) : 0;
  if (choices && (!cJSON_IsArray(choices) || n < 2 || n > 8))
    return immediate(r, v, "error", "ask_user choices must be 2 to 8 strings");
  for (int i = 0; i < n; i++) {
    const char *a = cJSON_GetStringValue(cJSON_GetArrayItem(choices, i));
    if (!a || !*a) return immediate(r, v, "error", "ask_user choices must be non-empty strings");
    for (int j = 0; j < i; j++)
      if (!strcmp(a, cJSON_GetArrayItem(choices, j)->valuestring))
        return immediate(r, v, "error", "ask_user choices must be unique");
  }
  dexa__buf extra;
  dexa__buf_init(&extra);
  dexa__buf_puts(&extra, ",\"prompt\":");
  dexa__buf_json_cstr(&extra, prompt);
  if (choices) {
    char *cj = cJSON_PrintUnformatted(choices);
    dexa__buf_puts(&extra, ",\"choices\":");
    if (cj) dexa__buf_puts(&extra, cj);
    else extra.oom = 1; /* no choices is no question */
    cJSON_free(cj);
  }
  int rc = extra.oom ? DEXA_E_NOMEM
                     : add_waiting(r, def, v, "question", STEP_AWAIT_QUESTION_ANSWER, extra.data,
                                   "question_asked");
  dexa__buf_free(&extra);
  return rc;
}

static int route_timer(route *r, const dexa__tool_def *def, const call_view *v) {
  const cJSON *secs = cJSON_GetObjectItemCaseSensitive(v->args, "seconds");
  const char *reason = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v->args, "reason"));
  if (!cJSON_IsNumber(secs) || secs->valuedouble < 1 || secs->valuedouble > MAX_WAIT_SECONDS)
    return immediate(r, v, "error", "durable_wait needs seconds: 1 to 2592000");
  int64_t s = (int64_t)secs->valuedouble;
  dexa__buf extra;
  dexa__buf_init(&extra);
  dexa__buf_printf(&extra, ",\"seconds\":%lld,\"fires_at_ms\":%lld,\"reason\":", (long long)s,
                   (long long)(r->c->call->now_ms + s * 1000));
  dexa__buf_json_cstr(&extra, reason ? reason : "");
  int rc = extra.oom ? DEXA_E_NOMEM
                     : add_waiting(r, def, v, "timer", STEP_AWAIT_TIMER, extra.data, "timer_set");
  dexa__buf_free(&extra);
  return rc;
}

static int route_todos(route *r, const call_view *v) {
  if (r->todos_written++)
    return immediate(r, v, "error", "write_todos may be called once per reply");
  char why[200], text[120];
  int64_t revision;
  int rc = dexa__plan_write(r->c, v->args, r->turn, why, sizeof why, &revision);
  if (rc == DEXA_E_INVALID_ARG) return immediate(r, v, "error", why);
  if (rc != DEXA_OK) return rc;
  snprintf(text, sizeof text, "The plan is now revision %lld.", (long long)revision);
  return immediate(r, v, "ok", text);
}

static int route_tool(route *r, const dexa__tool_def *def, const call_view *v) {
  if (def->approval == DEXA_APPROVAL_REQUIRED)
    return add_waiting(r, def, v, "approval", STEP_AWAIT_TOOL_APPROVAL, NULL,
                       "tool_call_awaiting_approval");
  const char *step = def->effect == DEXA_TOOL_WRITE ? STEP_CALL_SINGLE_ATTEMPT_TOOL : STEP_CALL_TOOL;
  dexa__buf in;
  dexa__buf_init(&in);
  call_input(r, &in, def, v, NULL);
  if (!in.oom) dexa__decision_next(r->d, step, in.data, in.len);
  int oom = in.oom || r->d->b.oom;
  dexa__buf_free(&in);
  return oom ? DEXA_E_NOMEM : DEXA_OK;
}

static int seen_before(const cJSON *calls, const cJSON *upto, const char *call_id) {
  for (const cJSON *x = calls->child; x && x != upto; x = x->next) {
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(x, "call_id"));
    if (id && strcmp(id, call_id) == 0) return 1;
  }
  return 0;
}

/* A harness's per-call effect and approval from its framework's tool
 * metadata (dexa_model_reply_set_tool_policy, added to the call as
 * "effect" and "approval"): they win over the tool's own for this call. */
static const dexa__tool_def *call_policy(const cJSON *call, const dexa__tool_def *def,
                                         dexa__tool_def *own) {
  const char *effect = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(call, "effect"));
  const char *approval = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(call, "approval"));
  if (!effect && !approval) return def;
  *own = *def;
  int e = effect ? dexa__tool_effect_parse(effect, strlen(effect)) : 0;
  if (e) own->effect = e;
  if (approval)
    own->approval = strcmp(approval, "required") == 0 ? DEXA_APPROVAL_REQUIRED : DEXA_APPROVAL_NONE;
  return own;
}

static int route_call(route *r, const cJSON *call, call_view *v) {
  if (seen_before(r->calls, call, v->id))
    return immediate(r, v, "error", "the model repeated a call id in one reply");
  const dexa__tool_def *def = dexa__tool_list_find(r->tools, v->name, strlen(v->name));
  if (!def) {
    char why[200];
    snprintf(why, sizeof why, "%s \"%.64s\": it is not offered to this session%s",
             "unknown tool", v->name,
             strcmp(r->turn->mode, "planning") == 0 ? " (a planning turn may call write_todos only)" : "");
    return immediate(r, v, "error", why);
  }
  /* The effect tells readers (the session graph) which Step runs the call. */
  char effect[48];
  snprintf(effect, sizeof effect, ",\"effect\":\"%s\"", dexa__tool_effect_name(def->effect));
  int rc = event_for(r, "tool_call_proposed", v, effect);
  if (rc != DEXA_OK) return rc;
  dexa__tool_def own;
  if (def->source != DEXA__BUILTIN_SOURCE) return route_tool(r, call_policy(call, def, &own), v);
  if (!strcmp(def->name, TOOL_ASK_USER)) return route_question(r, def, v);
  if (!strcmp(def->name, TOOL_DURABLE_WAIT)) return route_timer(r, def, v);
  return route_todos(r, v);
}

int dexa__route_tool_calls(dexa__ctx *c, const dexa_tool_list *tools, const cJSON *calls,
                           const dexa__turn *turn, int64_t round, dexa__transcript *t,
                           dexa__decision *d, int cancel) {
  route r = {c, tools, calls, turn, round, d, 0, cancel};
  int n = 0, rc = DEXA_OK;
  for (const cJSON *call = calls->child; call && rc == DEXA_OK; call = call->next, n++) {
    call_view v = {cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(call, "call_id")),
                   cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(call, "name")),
                   cJSON_GetObjectItemCaseSensitive(call, "arguments"), NULL, t->next_seq++};
    if (!v.id || !v.name) return DEXA_E_INTERNAL;
    v.args_text = cJSON_PrintUnformatted(v.args);
    if (!v.args_text) return DEXA_E_NOMEM;
    rc = cancel ? immediate(&r, &v, "cancelled",
                            "Not run: the turn was steered or stopped before this call started.")
                : route_call(&r, call, &v);
    cJSON_free(v.args_text);
  }
  if (rc != DEXA_OK || cancel) return rc;
  char join[96];
  snprintf(join, sizeof join, "{\"turn\":%lld,\"round\":%lld,\"calls\":%d}",
           (long long)turn->turn, (long long)round, n);
  dexa__decision_next(d, STEP_RESUME_TURN, join, strlen(join));
  return d->b.oom ? DEXA_E_NOMEM : DEXA_OK;
}
