/* CallTool and CallSingleAttemptTool run one tool call; RecordToolOutcome
 * records the result of a call whose Step ran out of attempts or was lost.
 * A single-attempt write is never run again: a lost attempt is recorded as
 * an unknown outcome for the model. A call whose turn was steered or stopped
 * before it started gets a cancellation result instead of running. */
#include <stdio.h>
#include <string.h>

#include "core/tool_call.h"
#include "tools/tool_source.h"

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

static int run_tool(dexa__ctx *c, const dexa__tool_call *t, dexa_tool_source *s) {
  char key[512];
  snprintf(key, sizeof key, "%s:%s", c->call->session_id, t->call_id);
  dexa_tool_invocation inv = {t->name, t->call_id, c->call->session_id, key,
                              t->arguments, strlen(t->arguments), c->call->attempt};
  dexa_tool_output out;
  dexa__tool_output_init(&out);
  started_event(c, t);
  int rc = s->vt.call_tool(s->user_data, &inv, &out);
  int retryable = strcmp(c->call->name, STEP_CALL_TOOL) == 0 &&
                  (dexa_error_class(rc) == DEXA_CLASS_TRANSIENT || rc == DEXA_E_NOMEM);
  if (rc == DEXA_OK && (out.text.oom || out.content.oom)) rc = DEXA_E_NOMEM;
  if (rc == DEXA_OK) {
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

static int call_tool(dexa__ctx *c, const dexa__tool_call *t) {
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
  return run_tool(c, t, s);
}

int dexa__step_call_tool(dexa__ctx *c) {
  dexa__tool_call t;
  int rc = dexa__tool_call_read(c, &t);
  if (rc == DEXA_OK) rc = call_tool(c, &t);
  dexa__tool_call_free(&t);
  return rc;
}

int dexa__step_record_tool_outcome(dexa__ctx *c) {
  dexa__tool_call t;
  int rc = dexa__tool_call_read(c, &t);
  if (rc != DEXA_OK) return rc;
  cJSON *err = c->call->recovery_error
                   ? cJSON_ParseWithLength(c->call->recovery_error, c->call->recovery_error_len)
                   : NULL;
  const char *why = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(err, "message"));
  char text[600];
  const char *status;
  if (strcmp(t.effect, "write") == 0) {
    status = "unknown_outcome";
    snprintf(text, sizeof text,
             "The outcome of this call is unknown: it was cut off (%s) and was not repeated, "
             "because it is a write that may not be safe to run twice. Check its effect before "
             "trying again.",
             why ? why : "the worker was lost");
  } else {
    status = "error";
    snprintf(text, sizeof text, "The tool failed after every attempt: %s", why ? why : "unknown error");
  }
  rc = finish_text(c, &t, status, text);
  cJSON_Delete(err);
  dexa__tool_call_free(&t);
  return rc;
}
