/* RecordToolOutcome: the recovery Step of CallTool and
 * CallSingleAttemptTool. It runs no tool: for a write whose single attempt
 * was cut off it records an unknown outcome (the write may or may not have
 * happened, and it is not repeated); for a read or idempotent write that
 * failed every attempt it records the error. */
#include <stdio.h>
#include <string.h>

#include "core/tool_call.h"

static int finish_text(dexa__ctx *c, const dexa__tool_call *t, const char *status,
                       const char *text) {
  return dexa__tool_call_finish(c, t, status, text, strlen(text), NULL, 0);
}

int dexa__step_record_tool_outcome(dexa__ctx *c) {
  dexa__tool_call t;
  int rc = dexa__tool_call_read(c, &t);
  if (rc != DEXA_OK) return rc;
  /* Checked by dispatch: a parse can fail for memory only. */
  cJSON *err = c->call->recovery_error ? dexa__json_parse(c->call->recovery_error,
                                                          c->call->recovery_error_len,
                                                          DEXA_E_NOMEM, &rc)
                                       : NULL;
  if (rc != DEXA_OK) {
    dexa__tool_call_free(&t);
    return rc;
  }
  const char *why = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(err, "message"));
  if (strcmp(t.effect, "write") == 0) {
    rc = dexa__tool_call_unknown_outcome(c, &t, why ? why : "the worker was lost");
  } else {
    char text[600];
    snprintf(text, sizeof text, "The tool failed after every attempt: %s", why ? why : "unknown error");
    rc = finish_text(c, &t, "error", text);
  }
  cJSON_Delete(err);
  dexa__tool_call_free(&t);
  return rc;
}
