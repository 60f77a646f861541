/* cancel_turn {} (Stop): ends the running turn the same way as a steer,
 * without a new turn; queued messages then run in order, one turn each.
 * DEXA_E_BAD_STATE when no turn is running. */
#include <stdio.h>
#include <string.h>

#include "core/turns.h"

int dexa__rpc_cancel_turn(dexa__ctx *c) {
  int rc = dexa__require_session(c);
  if (rc != DEXA_OK) return rc;
  dexa__turn t;
  rc = dexa__turn_load(c, &t);
  if (rc != DEXA_OK) return rc;
  if (strcmp(t.status, "running") != 0)
    return dexa__result_fail(c->result, DEXA_E_BAD_STATE, "no turn is running");
  rc = dexa__turn_control(c, t.turn, "cancel");
  if (rc != DEXA_OK) return rc;
  char resp[64];
  int n = snprintf(resp, sizeof resp, "{\"cancelled\":true,\"turn\":%lld}", (long long)t.turn);
  return dexa__result_set_response(c->result, resp, (size_t)n);
}
