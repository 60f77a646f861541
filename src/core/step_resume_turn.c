/* ResumeTurn: joins the tool Steps of one model reply. WaitFor waits until
 * the round's channel holds one result per call; Execute counts their bytes
 * into the active state and calls the model again with the recorded results
 * (no tool runs again), or ends the turn through ApplyTurnControl when it
 * was steered or stopped. */
#include <stdio.h>
#include <string.h>

#include "core/core.h"

static int wait_for(dexa__ctx *c, int64_t turn, int64_t round, int64_t calls) {
  char channel[80];
  dexa__tool_results_channel(channel, sizeof channel, turn, round);
  char wait[256];
  int n = snprintf(wait, sizeof wait,
                   "{\"mode\":\"all\",\"conditions\":[{\"id\":\"results\",\"channel\":\"%s\","
                   "\"min\":%lld,\"max\":%lld}]}",
                   channel, (long long)calls, (long long)calls);
  return dexa__result_set_wait(c->result, wait, (size_t)n);
}

/* Sum of the "bytes" of every result delivered to this Step. */
static int delivered_bytes(dexa__ctx *c, int64_t *sum) {
  const dexa_call *call = c->call;
  *sum = 0;
  if (!call->conditions) return DEXA_OK;
  int rc;
  cJSON *cond = dexa__json_parse(call->conditions, call->conditions_len, DEXA_E_INVALID_JSON, &rc);
  if (!cond) return dexa__result_fail(c->result, rc, rc == DEXA_E_NOMEM ? NULL : "conditions are not JSON");
  const cJSON *results =
      cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(cond, "channels"), "results");
  const cJSON *r;
  cJSON_ArrayForEach(r, results) {
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(r, "bytes");
    *sum += dexa__json_int(b, 0);
  }
  cJSON_Delete(cond);
  return DEXA_OK;
}

static int execute(dexa__ctx *c, int64_t turn, int64_t round) {
  int rc;
  if (!dexa__turn_is_running(c, turn, NULL, &rc))
    return rc != DEXA_OK ? rc : dexa__result_set_decision(c->result, "{\"next\":[]}", 11);
  dexa__transcript t;
  int64_t delivered;
  rc = dexa__transcript_load(c, &t);
  if (rc == DEXA_OK) rc = delivered_bytes(c, &delivered);
  if (rc != DEXA_OK) return rc;
  t.bytes += delivered;
  rc = dexa__transcript_store(c, &t);
  if (rc != DEXA_OK) return rc;
  char input[64], action[16];
  int steered = dexa__control_pending(c, turn, action, &rc);
  if (rc != DEXA_OK) return rc;
  snprintf(input, sizeof input, "{\"turn\":%lld,\"round\":%lld}", (long long)turn,
           (long long)round + 1);
  return dexa__decide_next(c, steered ? STEP_APPLY_TURN_CONTROL : STEP_RUN_MODEL, input);
}

int dexa__step_resume_turn(dexa__ctx *c) {
  int64_t turn, round, calls;
  if (dexa__input_i64(c, "turn", &turn) != DEXA_OK ||
      dexa__input_i64(c, "round", &round) != DEXA_OK ||
      dexa__input_i64(c, "calls", &calls) != DEXA_OK || calls < 1)
    return dexa__result_fail(c->result, DEXA_E_INVALID_JSON, "ResumeTurn needs turn, round, calls");
  if (c->call->kind == DEXA_CALL_WAIT_FOR) return wait_for(c, turn, round, calls);
  return execute(c, turn, round);
}
