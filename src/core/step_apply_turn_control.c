/* ApplyTurnControl: a steer or stop reached a safe Step boundary. Every call
 * that had not started already has its cancellation result; the turn ends.
 * After a steer a new turn starts with every steered message, in order;
 * after a stop the session waits, and steered messages go back to being
 * ordinary queued messages. */
#include <stdlib.h>
#include <string.h>

#include "core/turns.h"

static int unsteer(dexa__ctx *c, dexa__queue *q) {
  int rc = DEXA_OK;
  for (size_t i = 0; i < q->count && rc == DEXA_OK; i++) {
    cJSON *e = q->items[i].entry;
    if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "steered"))) continue;
    rc = dexa__json_set(e, "steered", cJSON_CreateFalse());
    if (rc == DEXA_OK) rc = dexa__attr_put_json(c, q->items[i].key, e);
  }
  return rc;
}

static int next_turn(dexa__ctx *c, int steer) {
  dexa__queue q;
  int rc = dexa__queue_load(c, &q);
  dexa__queued **take = calloc(q.count + 1, sizeof *take);
  size_t n = 0;
  for (size_t i = 0; take && i < q.count; i++)
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(q.items[i].entry, "steered")))
      take[n++] = &q.items[i];
  if (!take) rc = DEXA_E_NOMEM;
  if (rc == DEXA_OK && steer && n) rc = dexa__turn_start(c, take, n);
  else if (rc == DEXA_OK) {
    if (!steer) rc = unsteer(c, &q);
    if (rc == DEXA_OK) rc = dexa__decide_next(c, STEP_AWAIT_USER_MESSAGE, NULL);
  }
  free(take);
  dexa__queue_free(&q);
  return rc;
}

int dexa__step_apply_turn_control(dexa__ctx *c) {
  int64_t turn;
  if (dexa__input_i64(c, "turn", &turn) != DEXA_OK)
    return dexa__result_fail(c->result, DEXA_E_INVALID_JSON, "ApplyTurnControl needs turn");
  int rc;
  dexa__turn t;
  if (!dexa__turn_is_running(c, turn, &t, &rc))
    return rc != DEXA_OK ? rc : dexa__result_set_decision(c->result, "{\"next\":[]}", 11);
  char action[16] = "cancel";
  dexa__control_pending(c, turn, action, &rc);
  if (rc != DEXA_OK) return rc;
  int steer = strcmp(action, "steer") == 0;
  rc = dexa__attr_delete(c, ATTR_TURN_CONTROL);
  if (rc == DEXA_OK) rc = dexa__cancel_pending_calls(c, turn, action);
  if (rc == DEXA_OK) rc = dexa__turn_set(c, turn, steer ? "steered" : "cancelled", t.mode, NULL);
  dexa__buf e;
  dexa__event_begin(c, &e, "turn_cancelled");
  dexa__buf_printf(&e, ",\"turn\":%lld,\"action\":\"%s\"", (long long)turn, steer ? "steer" : "cancel");
  if (rc == DEXA_OK) rc = dexa__event_end(c, &e);
  else dexa__buf_free(&e);
  return rc == DEXA_OK ? next_turn(c, steer) : rc;
}
