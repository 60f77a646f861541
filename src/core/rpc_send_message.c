/* send_message: queues a user message (text and optional attachments) in
 * QueuedUserMessages and signals AwaitUserMessage. A message sent during a
 * turn waits for its own turn (or is steered in). plan_mode asks for a
 * planning turn. */
#include <stdio.h>
#include <string.h>

#include "core/attachments.h"
#include "core/queue.h"

/* Checks the input; returns DEXA_OK or fails the result with the reason. */
static int check_input(dexa__ctx *c, const cJSON *text, const cJSON *plan,
                       const cJSON *attachments) {
  if (!cJSON_IsObject(c->input))
    return dexa__result_fail(c->result, DEXA_E_INVALID_JSON, "send_message takes {\"text\":...}");
  if (!cJSON_IsString(text))
    return dexa__result_fail(c->result, DEXA_E_INVALID_JSON, "text must be a string");
  if (plan && !cJSON_IsBool(plan))
    return dexa__result_fail(c->result, DEXA_E_INVALID_JSON, "plan_mode must be a boolean");
  if (cJSON_IsTrue(plan) && !c->agent->def.plan_mode_enabled)
    return dexa__result_fail(c->result, DEXA_E_UNSUPPORTED, "plan mode is not enabled for this agent");
  size_t n = strlen(text->valuestring), bytes;
  int rc = dexa__attachments_check(c, attachments, &bytes);
  if (rc != DEXA_OK) return rc;
  if (dexa__is_blank(text->valuestring, n) && cJSON_GetArraySize(attachments) == 0)
    return dexa__result_fail(c->result, DEXA_E_EMPTY_MESSAGE, "the message is blank");
  n += bytes; /* the attachments' data counts as the message's */
  if ((int64_t)n > c->agent->def.max_message_bytes)
    return dexa__result_failf(c->result, DEXA_E_TOO_LARGE, "the message has %zu bytes; the limit is %lld",
                              n, (long long)c->agent->def.max_message_bytes);
  return DEXA_OK;
}

int dexa__rpc_send_message(dexa__ctx *c) {
  const cJSON *text = cJSON_GetObjectItemCaseSensitive(c->input, "text");
  const cJSON *plan = cJSON_GetObjectItemCaseSensitive(c->input, "plan_mode");
  const cJSON *attachments = cJSON_GetObjectItemCaseSensitive(c->input, "attachments");
  int rc = check_input(c, text, plan, attachments);
  if (rc != DEXA_OK) return rc;
  char id[32];
  char *att = cJSON_GetArraySize(attachments) ? cJSON_PrintUnformatted(attachments) : NULL;
  if (cJSON_GetArraySize(attachments) && !att) return DEXA_E_NOMEM;
  rc = dexa__queue_add(c, text->valuestring, att, cJSON_IsTrue(plan), 0, id);
  cJSON_free(att);
  if (rc != DEXA_OK) return rc;
  dexa__turn t;
  rc = dexa__turn_load(c, &t);
  if (rc != DEXA_OK && rc != DEXA_E_NOT_FOUND) return rc;
  int running = rc == DEXA_OK && strcmp(t.status, "running") == 0;
  char resp[96];
  int n = snprintf(resp, sizeof resp, "{\"message_id\":\"%s\",\"queued\":%s}", id,
                   running ? "true" : "false");
  return dexa__result_set_response(c->result, resp, (size_t)n);
}
