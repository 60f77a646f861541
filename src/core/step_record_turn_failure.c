/* RecordTurnFailure: the turn's model call failed for good (after its last
 * attempt, or at once for a permanent error). Records why, ends the turn,
 * and the session waits for the next message. */
#include <string.h>

#include "core/core.h"

/* The error as JSON: from the input (a permanent failure routed here by
 * RunModel) or from the host's recovery_error (attempts ran out). */
static char *failure_json(dexa__ctx *c) {
  const cJSON *e = cJSON_GetObjectItemCaseSensitive(c->input, "error");
  if (e) return cJSON_PrintUnformatted(e);
  int rc; /* recovery_error was checked by dispatch: a parse fails for memory only */
  cJSON *r = c->call->recovery_error ? dexa__json_parse(c->call->recovery_error,
                                                        c->call->recovery_error_len,
                                                        DEXA_E_NOMEM, &rc)
                                     : cJSON_Parse("{\"code\":-301,\"message\":\"the model call failed\"}");
  char *s = r ? cJSON_PrintUnformatted(r) : NULL;
  cJSON_Delete(r);
  return s;
}

int dexa__step_record_turn_failure(dexa__ctx *c) {
  int64_t turn;
  if (dexa__input_i64(c, "turn", &turn) != DEXA_OK)
    return dexa__result_fail(c->result, DEXA_E_INVALID_JSON, "RecordTurnFailure needs turn");
  int rc;
  dexa__turn t;
  if (!dexa__turn_is_running(c, turn, &t, &rc))
    return rc != DEXA_OK ? rc : dexa__result_set_decision(c->result, "{\"next\":[]}", 11);
  char *error = failure_json(c);
  if (!error) return DEXA_E_NOMEM;
  rc = dexa__turn_set(c, turn, "failed", t.mode, error);
  /* A steer or stop that came too late has nothing left to end. */
  char action[16];
  int rc2;
  if (rc == DEXA_OK && dexa__control_pending(c, turn, action, &rc2)) rc = dexa__attr_delete(c, ATTR_TURN_CONTROL);
  if (rc == DEXA_OK) rc = rc2;
  dexa__buf e;
  dexa__event_begin(c, &e, "turn_failed");
  dexa__buf_printf(&e, ",\"turn\":%lld,\"error\":", (long long)turn);
  dexa__buf_puts(&e, error);
  if (rc == DEXA_OK) rc = dexa__event_end(c, &e);
  else dexa__buf_free(&e);
  cJSON_free(error);
  if (rc != DEXA_OK) return rc;
  return dexa__decide_next(c, STEP_AWAIT_USER_MESSAGE, NULL);
}
