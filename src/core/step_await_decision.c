/* The Steps that wait for a person or a timer, holding no worker:
 *   AwaitToolApproval    approve -> CallTool / CallSingleAttemptTool,
 *                        reject -> a rejection result with the person's note
 *   AwaitQuestionAnswer  the answer is the ask_user result, in the same turn
 *   AwaitTimer           durable_wait: fires after its seconds, also after a
 *                        restart
 * Each waits on its call's ToolDecisions channel, where RPCs publish the
 * decision, answer or a cancellation (steer or stop); a queued user message
 * does not wake them. */
#include <stdio.h>
#include <string.h>

#include "core/tool_call.h"

static int wait_for(dexa__ctx *c, const dexa__tool_call *t, int timer) {
  dexa__buf w;
  dexa__buf_init(&w);
  dexa__buf_puts(&w, "{\"mode\":\"any\",\"conditions\":[");
  if (timer) {
    int64_t fires = 0;
    dexa__input_i64(c, "fires_at_ms", &fires);
    int64_t left = fires - c->call->now_ms;
    dexa__buf_printf(&w, "{\"id\":\"timer\",\"timer_ms\":%lld},", (long long)(left > 0 ? left : 0));
  }
  dexa__buf_puts(&w, "{\"id\":\"decision\",\"channel\":");
  char channel[320];
  snprintf(channel, sizeof channel, CHAN_TOOL_DECISIONS "%s", t->call_id);
  dexa__buf_json_cstr(&w, channel);
  dexa__buf_puts(&w, ",\"min\":1,\"max\":1}]}");
  int rc = w.oom ? DEXA_E_NOMEM : dexa__result_set_wait(c->result, w.data, w.len);
  dexa__buf_free(&w);
  return rc;
}

/* The delivered decision ({"decision":..}) or NULL; 1 in *fired when the
 * timer won. The caller deletes the returned tree. */
static cJSON *delivered(const dexa_call *call, int *fired) {
  *fired = 0;
  if (!call->conditions) return NULL;
  cJSON *cond = cJSON_ParseWithLength(call->conditions, call->conditions_len);
  const cJSON *f;
  cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(cond, "fired")) {
    if (cJSON_IsString(f) && strcmp(f->valuestring, "timer") == 0) *fired = 1;
  }
  const cJSON *d = cJSON_GetArrayItem(
      cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(cond, "channels"), "decision"), 0);
  cJSON *copy = d ? cJSON_Duplicate(d, 1) : NULL;
  cJSON_Delete(cond);
  return copy;
}

static const char *decision_of(const cJSON *d) {
  const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "decision"));
  return s ? s : "";
}

static int cancelled(dexa__ctx *c, const dexa__tool_call *t, const cJSON *d) {
  const char *reason = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "reason"));
  char text[200];
  snprintf(text, sizeof text, "Cancelled: the turn was %s before this call ran.",
           reason && !strcmp(reason, "steer") ? "steered" : "stopped");
  return dexa__tool_call_finish(c, t, "cancelled", text, strlen(text), NULL, 0);
}

static int approval_decided(dexa__ctx *c, const dexa__tool_call *t, const cJSON *d) {
  const char *what = decision_of(d);
  if (!strcmp(what, "approve")) {
    const char *step = strcmp(t->effect, "write") == 0 ? STEP_CALL_SINGLE_ATTEMPT_TOOL : STEP_CALL_TOOL;
    return dexa__decide_next(c, step, c->call->input);
  }
  if (strcmp(what, "reject") != 0) return cancelled(c, t, d);
  const char *note = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "note"));
  dexa__buf out, content;
  dexa__buf_init(&out);
  dexa__buf_init(&content);
  dexa__buf_puts(&out, "The user rejected this call; it did not run.");
  if (note && *note) {
    dexa__buf_puts(&out, " Note: ");
    dexa__buf_puts(&out, note);
  }
  dexa__buf_puts(&content, "{\"rejected\":true,\"note\":");
  dexa__buf_json_cstr(&content, note && *note ? note : NULL);
  dexa__buf_putc(&content, '}');
  int rc = out.oom || content.oom ? DEXA_E_NOMEM
                                  : dexa__tool_call_finish(c, t, "rejected", out.data, out.len,
                                                           content.data, content.len);
  dexa__buf_free(&out);
  dexa__buf_free(&content);
  return rc;
}

static int question_answered(dexa__ctx *c, const dexa__tool_call *t, const cJSON *d) {
  if (strcmp(decision_of(d), "answer") != 0) return cancelled(c, t, d);
  const char *answer = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "answer"));
  if (!answer) answer = "";
  return dexa__tool_call_finish(c, t, "ok", answer, strlen(answer), NULL, 0);
}

static int timer_fired(dexa__ctx *c, const dexa__tool_call *t) {
  int64_t seconds = 0;
  dexa__input_i64(c, "seconds", &seconds);
  dexa__buf e;
  dexa__event_begin(c, &e, "timer_fired");
  dexa__buf_printf(&e, ",\"turn\":%lld,\"call_id\":", (long long)t->turn);
  dexa__buf_json_cstr(&e, t->call_id);
  int rc = dexa__event_end(c, &e);
  char text[96];
  snprintf(text, sizeof text, "Waited %lld seconds.", (long long)seconds);
  if (rc == DEXA_OK) rc = dexa__tool_call_finish(c, t, "ok", text, strlen(text), NULL, 0);
  return rc;
}

static int execute(dexa__ctx *c, const dexa__tool_call *t) {
  int fired;
  cJSON *d = delivered(c->call, &fired);
  int rc = dexa__tool_call_unpend(c, t);
  const char *step = c->call->name;
  if (rc != DEXA_OK) {
  } else if (!strcmp(step, STEP_AWAIT_TIMER)) {
    rc = fired ? timer_fired(c, t) : cancelled(c, t, d);
  } else if (!d) {
    rc = dexa__result_fail(c->result, DEXA_E_INVALID_ARG, "no decision was delivered");
  } else if (!strcmp(step, STEP_AWAIT_TOOL_APPROVAL)) {
    rc = approval_decided(c, t, d);
  } else {
    rc = question_answered(c, t, d);
  }
  cJSON_Delete(d);
  return rc;
}

int dexa__step_await_decision(dexa__ctx *c) {
  dexa__tool_call t;
  int rc = dexa__tool_call_read(c, &t);
  if (rc == DEXA_OK) {
    int timer = strcmp(c->call->name, STEP_AWAIT_TIMER) == 0;
    rc = c->call->kind == DEXA_CALL_WAIT_FOR ? wait_for(c, &t, timer) : execute(c, &t);
  }
  dexa__tool_call_free(&t);
  return rc;
}
