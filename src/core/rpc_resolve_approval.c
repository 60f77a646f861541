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
  dexa__buf d; /* {"decision":..,"note":..}: one out-of-memory flag for all */
  dexa__buf_init(&d);
  dexa__buf_puts(&d, "{\"decision\":");
  dexa__buf_json_cstr(&d, what);
  if (cJSON_IsString(note)) {
    dexa__buf_puts(&d, ",\"note\":");
    dexa__buf_json_cstr(&d, note->valuestring);
  }
  dexa__buf_putc(&d, '}');
  rc = d.oom ? DEXA_E_NOMEM
             : dexa__decision_deliver(c, key, dexa__input_str(c, "call_id"), d.data, d.len,
                                      "approval_resolved");
  if (rc == DEXA_OK) rc = dexa__result_set_response(c->result, "{\"accepted\":true}", 17);
  dexa__buf_free(&d);
  cJSON_Delete(pending);
  return rc;
}
