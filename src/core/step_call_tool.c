/* CallTool: runs one READ or IDEMPOTENT_WRITE call; a transient failure is
 * retried with backoff by the host (RecordToolOutcome records an error after
 * the last attempt). CallSingleAttemptTool shares this runner without the
 * retries. A call whose turn was steered or stopped before it started gets
 * a cancellation result instead of running. A tool that asks the person
 * something (dexa_tool_output_ask) ends this run: the call waits in
 * AwaitQuestionAnswer and its Step runs again with the answers. */
#include <stdio.h>
#include <string.h>

#include "core/tool_question.h"

static dexa_tool_source *find_source(const dexa_agent *a, const char *name) {
  for (size_t i = 0; i < a->source_count; i++)
    if (strcmp(a->sources[i]->name, name) == 0) return a->sources[i];
  return NULL;
}

static int finish_text(dexa__ctx *c, const dexa__tool_call *t, const char *status,
                       const char *text) {
  return dexa__tool_call_finish(c, t, status, text, strlen(text), NULL, 0);
}

static void started_event(dexa__ctx *c, const dexa__tool_call *t) {
  dexa__buf e;
  dexa__event_begin(c, &e, "tool_call_started");
  dexa__buf_puts(&e, ",\"call_id\":");
  dexa__buf_json_cstr(&e, t->call_id);
  dexa__buf_puts(&e, ",\"name\":");
  dexa__buf_json_cstr(&e, t->name);
  dexa__buf_printf(&e, ",\"attempt\":%d}", (int)c->call->attempt);
  if (!e.oom) dexa__event_live(c, e.data, e.len);
  dexa__buf_free(&e);
}

static int run_tool(dexa__ctx *c, const dexa__tool_call *t, dexa_tool_source *s, int retry) {
  char key[512];
  snprintf(key, sizeof key, "%s:%s", c->call->session_id, t->call_id);
  dexa__sampling sampling = {c, t};
  dexa_tool_invocation inv = {.name = t->name,
                              .call_id = t->call_id,
                              .session_id = c->call->session_id,
                              .idempotency_key = key,
                              .arguments = t->arguments,
                              .arguments_len = strlen(t->arguments),
                              .attempt = c->call->attempt,
                              .call = c->call,
                              .answers = t->answers,
                              .answers_len = t->answers ? strlen(t->answers) : 0,
                              .effect = dexa__tool_effect_parse(t->effect, strlen(t->effect)),
                              .sample = dexa__tool_sample,
                              .sample_ctx = &sampling};
  dexa_tool_output out;
  dexa__tool_output_init(&out);
  started_event(c, t);
  int rc = s->vt.call_tool(s->user_data, &inv, &out);
  int retryable = retry && (dexa_error_class(rc) == DEXA_CLASS_TRANSIENT || rc == DEXA_E_NOMEM);
  if (rc == DEXA_OK && (out.text.oom || out.content.oom || out.question.oom)) rc = DEXA_E_NOMEM;
  if (rc == DEXA_OK && out.asks) {
    /* The tool asks the person: this run ends, the answer runs it again. */
    rc = dexa__tool_question_ask(c, t, out.question.data, out.question.len,
                                 retry ? STEP_CALL_TOOL : STEP_CALL_SINGLE_ATTEMPT_TOOL);
  } else if (rc == DEXA_OK) {
    rc = dexa__tool_call_finish(c, t, out.is_error ? "error" : "ok", out.text.data, out.text.len,
                                out.content.data, out.content.len);
  } else if (retryable) {
    rc = dexa__result_failf(c->result, rc, "tool %s: %s", t->name,
                            out.text.len ? out.text.data : dexa_strerror(rc));
  } else {
    char why[300];
    snprintf(why, sizeof why, "the tool failed: %s", out.text.len ? out.text.data : dexa_strerror(rc));
    rc = finish_text(c, t, "error", why);
  }
  dexa__tool_output_free(&out);
  return rc;
}

static int call_tool(dexa__ctx *c, const dexa__tool_call *t, int retry) {
  char action[16];
  int rc;
  if (dexa__control_pending(c, t->turn, action, &rc))
    return finish_text(c, t, "cancelled",
                       "Not run: the turn was steered or stopped before this call started.");
  if (rc != DEXA_OK) return rc;
  dexa_tool_source *s = find_source(c->agent, t->source);
  if (!s) {
    char why[200];
    snprintf(why, sizeof why, "tool source \"%.64s\" is not configured on this worker", t->source);
    return finish_text(c, t, "error", why);
  }
  return run_tool(c, t, s, retry);
}

int dexa__run_tool_call(dexa__ctx *c, int retry) {
  dexa__tool_call t;
  int rc = dexa__tool_call_read(c, &t);
  if (rc == DEXA_OK) rc = call_tool(c, &t, retry);
  dexa__tool_call_free(&t);
  return rc;
}

int dexa__step_call_tool(dexa__ctx *c) { return dexa__run_tool_call(c, 1); }
