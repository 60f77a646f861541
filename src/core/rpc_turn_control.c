/* The RPCs on queued messages and the running turn:
 *   delete_message {"message_id"}   removes a pending message
 *   steer {"message_id"}            applies it at the turn's next safe Step
 *                                   boundary (a new turn with every steered
 *                                   message); starts nothing that is running
 *   cancel_turn {}                  Stop: ends the turn the same way, no new one
 * A steer or stop cancels at once every call of the turn that waits for an
 * approval, an answer or a timer; the rest happens in ApplyTurnControl. */
#include <stdio.h>
#include <string.h>

#include "core/turns.h"

/* Loads the queued message named by the input's message_id into *out. */
static int load_queued(dexa__ctx *c, char *key, cJSON **out, size_t *len) {
  const char *id = dexa__input_str(c, "message_id");
  if (!id || !dexa__queue_key(id, key))
    return dexa__result_fail(c->result, DEXA_E_INVALID_JSON, "message_id must be an id like \"m3\"");
  const char *v;
  int rc = dexa__attr_get(c, key, &v, len);
  if (rc == DEXA_E_NOT_FOUND)
    return dexa__result_failf(c->result, DEXA_E_NOT_FOUND, "no queued message \"%.40s\"", id);
  if (rc != DEXA_OK) return rc;
  *out = cJSON_ParseWithLength(v, *len);
  return *out ? DEXA_OK : DEXA_E_CORRUPT;
}

static int control_event(dexa__ctx *c, int64_t turn, const char *action) {
  dexa__buf e;
  dexa__event_begin(c, &e, "turn_control");
  dexa__buf_printf(&e, ",\"turn\":%lld,\"action\":\"%s\"", (long long)turn, action);
  return dexa__event_end(c, &e);
}

/* Records a steer or stop for the running turn and cancels its waits. */
static int control_turn(dexa__ctx *c, int64_t turn, const char *action) {
  char text[96];
  int n = snprintf(text, sizeof text, "{\"turn\":%lld,\"action\":\"%s\",\"at\":%lld}",
                   (long long)turn, action, (long long)c->call->now_ms);
  int rc = dexa__attr_put_raw(c, ATTR_TURN_CONTROL, text, (size_t)n);
  if (rc == DEXA_OK) rc = dexa__cancel_pending_calls(c, turn, action);
  return rc == DEXA_OK ? control_event(c, turn, action) : rc;
}

int dexa__rpc_delete_message(dexa__ctx *c) {
  int rc = dexa__require_session(c);
  if (rc != DEXA_OK) return rc;
  dexa__queued item = {{0}, NULL, 0};
  rc = load_queued(c, item.key, &item.entry, &item.len);
  if (rc != DEXA_OK) return rc;
  dexa__queued *items[1] = {&item};
  rc = dexa__queue_take(c, items, 1, "deleted");
  cJSON_Delete(item.entry);
  if (rc != DEXA_OK) return rc;
  return dexa__result_set_response(c->result, "{\"deleted\":true}", 16);
}

int dexa__rpc_steer(dexa__ctx *c) {
  int rc = dexa__require_session(c);
  if (rc != DEXA_OK) return rc;
  char key[64];
  cJSON *entry = NULL;
  size_t len;
  rc = load_queued(c, key, &entry, &len);
  if (rc != DEXA_OK) return rc;
  if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(entry, "steered"))) {
    cJSON_Delete(entry);
    return dexa__result_fail(c->result, DEXA_E_BAD_STATE, "that message is already steered");
  }
  cJSON_ReplaceItemInObjectCaseSensitive(entry, "steered", cJSON_CreateTrue());
  rc = dexa__attr_put_json(c, key, entry);
  cJSON_Delete(entry);
  dexa__turn t;
  int running = 0;
  if (rc == DEXA_OK) rc = dexa__turn_load(c, &t);
  if (rc == DEXA_OK) running = strcmp(t.status, "running") == 0;
  if (rc == DEXA_OK && running) rc = control_turn(c, t.turn, "steer");
  if (rc != DEXA_OK) return rc;
  char resp[64];
  int n = snprintf(resp, sizeof resp, "{\"steered\":true,\"turn_running\":%s}",
                   running ? "true" : "false");
  return dexa__result_set_response(c->result, resp, (size_t)n);
}

int dexa__rpc_cancel_turn(dexa__ctx *c) {
  int rc = dexa__require_session(c);
  if (rc != DEXA_OK) return rc;
  dexa__turn t;
  rc = dexa__turn_load(c, &t);
  if (rc != DEXA_OK) return rc;
  if (strcmp(t.status, "running") != 0)
    return dexa__result_fail(c->result, DEXA_E_BAD_STATE, "no turn is running");
  rc = control_turn(c, t.turn, "cancel");
  if (rc != DEXA_OK) return rc;
  char resp[64];
  int n = snprintf(resp, sizeof resp, "{\"cancelled\":true,\"turn\":%lld}", (long long)t.turn);
  return dexa__result_set_response(c->result, resp, (size_t)n);
}
