/* steer {"message_id"}: marks a queued message steered. A running turn ends
 * at its next safe Step boundary (a started model or tool call is never
 * stopped; calls not started and pending approvals, questions and timers
 * get a cancellation result) and a new turn starts with every steered
 * message, in order. DEXA_E_BAD_STATE when it is already steered. */
#include <stdio.h>
#include <string.h>

#include "core/turns.h"

int dexa__rpc_steer(dexa__ctx *c) {
  int rc = dexa__require_session(c);
  if (rc != DEXA_OK) return rc;
  char key[64];
  cJSON *entry = NULL;
  size_t len;
  rc = dexa__queue_load_named(c, key, &entry, &len);
  if (rc != DEXA_OK) return rc;
  if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(entry, "steered"))) {
    cJSON_Delete(entry);
    return dexa__result_fail(c->result, DEXA_E_BAD_STATE, "that message is already steered");
  }
  rc = dexa__json_set(entry, "steered", cJSON_CreateTrue());
  if (rc == DEXA_OK) rc = dexa__attr_put_json(c, key, entry);
  cJSON_Delete(entry);
  dexa__turn t;
  int running = 0;
  if (rc == DEXA_OK) rc = dexa__turn_load(c, &t);
  if (rc == DEXA_OK) running = strcmp(t.status, "running") == 0;
  if (rc == DEXA_OK && running) rc = dexa__turn_control(c, t.turn, "steer");
  if (rc != DEXA_OK) return rc;
  char resp[64];
  int n = snprintf(resp, sizeof resp, "{\"steered\":true,\"turn_running\":%s}",
                   running ? "true" : "false");
  return dexa__result_set_response(c->result, resp, (size_t)n);
}
