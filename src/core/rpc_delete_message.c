/* delete_message {"message_id"}: removes a message that still waits in
 * QueuedUserMessages (steered or not). DEXA_E_NOT_FOUND when it is not
 * queued (taken into a turn, or deleted already). */
#include "core/queue.h"

int dexa__rpc_delete_message(dexa__ctx *c) {
  int rc = dexa__require_session(c);
  if (rc != DEXA_OK) return rc;
  dexa__queued item = {{0}, NULL, 0};
  rc = dexa__queue_load_named(c, item.key, &item.entry, &item.len);
  if (rc != DEXA_OK) return rc;
  dexa__queued *items[1] = {&item};
  rc = dexa__queue_take(c, items, 1, "deleted");
  cJSON_Delete(item.entry);
  if (rc != DEXA_OK) return rc;
  return dexa__result_set_response(c->result, "{\"deleted\":true}", 16);
}
