/* resolve_approval {"call_id","decision":"approve"|"reject","note"?}:
 * decides a call that waits in AwaitToolApproval. A second decision, or one
 * for a call that does not wait for approval, is refused with
 * DEXA_E_NOT_PENDING and changes nothing. */
#include <string.h>

#include "core/tool_decisions.h"

int dexa__rpc_resolve_approval(dexa__ctx *c) {
  int rc = dexa__require_session(c);
  if (rc != DEXA_OK) return rc;
  const char *what = dexa__input_str(c, "decision");
  const cJSON *note = cJSON_GetObjectItemCaseSensitive(c->input, "note");
  if (!what || (strcmp(what, "approve") != 0 && strcmp(what, "reject") != 0))
    return dexa__result_fail(c->result, DEXA_E_INVALID_JSON, "decision must be \"approve\" or \"reject\"");
  if (note && !cJSON_IsString(note) && !cJSON_IsNull(note))
    return dexa__result_fail(c->result, DEXA_E_INVALID_JSON, "note must be a string");
  char key[320];
  cJSON *pending = NULL;
  rc = dexa__pending_load(c, "approval", key, sizeof key, &pending);
  if (rc != DEXA_OK) return rc;
  cJSON *d = cJSON_CreateObject();
  cJSON_AddStringToObject(d, "decision", what);
  if (cJSON_IsString(note)) cJSON_AddStringToObject(d, "note", note->valuestring);
  rc = dexa__decision_deliver(c, key, dexa__input_str(c, "call_id"), d, "approval_resolved");
  if (rc == DEXA_OK) rc = dexa__result_set_response(c->result, "{\"accepted\":true}", 17);
  cJSON_Delete(d);
  cJSON_Delete(pending);
  return rc;
}
