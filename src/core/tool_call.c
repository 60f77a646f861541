/* Reading a tool Step's input and finishing the call with its result. */
#include "core/tool_call.h"

#include <stdio.h>
#include <string.h>

int dexa__tool_call_read(dexa__ctx *c, dexa__tool_call *t) {
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
  if (!t->arguments) return DEXA_E_NOMEM;
  const cJSON *answers = cJSON_GetObjectItemCaseSensitive(c->input, "answers");
  if (cJSON_IsArray(answers) && cJSON_GetArraySize(answers) > 0) {
    t->answers = cJSON_PrintUnformatted(answers);
    if (!t->answers) return DEXA_E_NOMEM;
  }
  return DEXA_OK;
}

void dexa__tool_call_free(dexa__tool_call *t) {
  cJSON_free(t->arguments);
  cJSON_free(t->answers);
  t->arguments = NULL;
  t->answers = NULL;
}

int dexa__tool_call_finish(dexa__ctx *c, const dexa__tool_call *t, const char *status,
                           const char *output, size_t output_len, const char *content,
                           size_t content_len) {
  dexa__tool_result r = {t->call_id, t->name, status, output, output_len, content, content_len, 0};
  int rc = dexa__tool_result_record(c, t->turn, t->round, t->seq, &r);
  return rc == DEXA_OK ? dexa__result_set_decision(c->result, "{\"next\":[]}", 11) : rc;
}

int dexa__tool_call_unknown_outcome(dexa__ctx *c, const dexa__tool_call *t, const char *why) {
  char text[600];
  int n = snprintf(text, sizeof text,
                   "The outcome of this call is unknown: it was cut off (%s) and was not "
                   "repeated, because it is a write that may not be safe to run twice. Check "
                   "its effect before trying again.",
                   why);
  size_t len = n < 0 ? 0 : (size_t)n < sizeof text ? (size_t)n : sizeof text - 1;
  return dexa__tool_call_finish(c, t, "unknown_outcome", text, len, NULL, 0);
}

int dexa__tool_call_unpend(dexa__ctx *c, const dexa__tool_call *t) {
  char key[320];
  snprintf(key, sizeof key, ATTR_PENDING_CALLS "%s", t->call_id);
  const char *v;
  size_t n;
  int rc = dexa__attr_get(c, key, &v, &n);
  if (rc == DEXA_E_NOT_FOUND) return DEXA_OK;
  return rc == DEXA_OK ? dexa__attr_delete(c, key) : rc;
}
