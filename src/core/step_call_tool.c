/* CallTool and CallSingleAttemptTool run one tool call; RecordToolOutcome
 * records the result of a call whose Step ran out of attempts or was lost.
 * A single-attempt write is never run again: a lost attempt is recorded as
 * an unknown outcome for the model. */
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "tools/tool_source.h"

typedef struct tool_call {
  int64_t turn, round, seq;
  const char *call_id;
  const char *name;
  const char *source;
  const char *effect;
  char *arguments;
} tool_call;

static int read_call(dexa__ctx *c, tool_call *t) {
  memset(t, 0, sizeof *t);
  t->call_id = dexa__input_str(c, "call_id");
  t->name = dexa__input_str(c, "name");
  t->source = dexa__input_str(c, "source");
  t->effect = dexa__input_str(c, "effect");
  if (dexa__input_i64(c, "turn", &t->turn) != DEXA_OK ||
      dexa__input_i64(c, "round", &t->round) != DEXA_OK ||
      dexa__input_i64(c, "seq", &t->seq) != DEXA_OK || !t->call_id || !t->name || !t->source ||
      !t->effect)
    return dexa__result_fail(c->result, DEXA_E_INVALID_JSON,
                             "a tool Step needs turn, round, seq, call_id, name, source, effect");
  const cJSON *args = cJSON_GetObjectItemCaseSensitive(c->input, "arguments");
  if (cJSON_IsObject(args)) {
    t->arguments = cJSON_PrintUnformatted(args);
  } else {
    cJSON *empty = cJSON_CreateObject();
    t->arguments = empty ? cJSON_PrintUnformatted(empty) : NULL;
    cJSON_Delete(empty);
  }
  return DEXA_OK;
}

static int record(dexa__ctx *c, const tool_call *t, const char *status, const char *output,
                  size_t output_len, const dexa_tool_output *out) {
  dexa__tool_result r = {t->call_id, t->name, status, output, output_len, NULL, 0};
  if (out && out->content.len) {
    r.content = out->content.data;
    r.content_len = out->content.len;
  }
  int rc = dexa__tool_result_record(c, t->turn, t->round, t->seq, &r);
  return rc == DEXA_OK ? dexa__result_set_decision(c->result, "{\"next\":[]}", 11) : rc;
}

static dexa_tool_source *find_source(const dexa_agent *a, const char *name) {
  for (size_t i = 0; i < a->source_count; i++)
    if (strcmp(a->sources[i]->name, name) == 0) return a->sources[i];
  return NULL;
}

static void started_event(dexa__ctx *c, const tool_call *t) {
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

static int run_tool(dexa__ctx *c, const tool_call *t, dexa_tool_source *s) {
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
    rc = record(c, t, out.is_error ? "error" : "ok", out.text.data, out.text.len, &out);
  } else if (retryable) {
    rc = dexa__result_failf(c->result, rc, "tool %s: %s", t->name,
                            out.text.len ? out.text.data : dexa_strerror(rc));
  } else {
    char why[300];
    snprintf(why, sizeof why, "the tool failed: %s", out.text.len ? out.text.data : dexa_strerror(rc));
    rc = record(c, t, "error", why, strlen(why), NULL);
  }
  dexa__tool_output_free(&out);
  return rc;
}

int dexa__step_call_tool(dexa__ctx *c) {
  tool_call t;
  int rc = read_call(c, &t);
  if (rc != DEXA_OK) return rc;
  dexa_tool_source *s = find_source(c->agent, t.source);
  if (!t.arguments) rc = DEXA_E_NOMEM;
  else if (!s) {
    char why[200];
    snprintf(why, sizeof why, "tool source \"%.64s\" is not configured on this worker", t.source);
    rc = record(c, &t, "error", why, strlen(why), NULL);
  } else {
    rc = run_tool(c, &t, s);
  }
  cJSON_free(t.arguments);
  return rc;
}

int dexa__step_record_tool_outcome(dexa__ctx *c) {
  tool_call t;
  int rc = read_call(c, &t);
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
  rc = record(c, &t, status, text, strlen(text), NULL);
  cJSON_Delete(err);
  cJSON_free(t.arguments);
  return rc;
}
