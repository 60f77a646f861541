/* send_message: queues a user message in QueuedUserMessages and signals
 * AwaitUserMessage. A message sent during a turn waits for its own turn. */
#include <stdio.h>
#include <string.h>

#include "core/queue.h"

static int turn_running(dexa__ctx *c) {
  cJSON *t;
  if (dexa__attr_get_json(c, ATTR_TURN, &t) != DEXA_OK || !t) return 0;
  const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "status"));
  int running = s && strcmp(s, "running") == 0;
  cJSON_Delete(t);
  return running;
}

/* Checks the text; returns DEXA_OK or fails the result with the reason. */
static int check_text(dexa__ctx *c, const cJSON *text, int plan_flag_ok) {
  if (!cJSON_IsObject(c->input))
    return dexa__result_fail(c->result, DEXA_E_INVALID_JSON, "send_message takes {\"text\":...}");
  if (!cJSON_IsString(text))
    return dexa__result_fail(c->result, DEXA_E_INVALID_JSON, "text must be a string");
  if (!plan_flag_ok)
    return dexa__result_fail(c->result, DEXA_E_INVALID_JSON, "plan_mode must be a boolean");
  size_t n = strlen(text->valuestring);
  if (dexa__is_blank(text->valuestring, n))
    return dexa__result_fail(c->result, DEXA_E_EMPTY_MESSAGE, "the message is blank");
  if ((int64_t)n > c->agent->def.max_message_bytes)
    return dexa__result_failf(c->result, DEXA_E_TOO_LARGE, "the message has %zu bytes; the limit is %lld",
                              n, (long long)c->agent->def.max_message_bytes);
  return DEXA_OK;
}

static int check_state_limit(dexa__ctx *c, const dexa__queue_state *q, size_t entry_len) {
  dexa__transcript t;
  int rc = dexa__transcript_load(c, &t);
  if (rc != DEXA_OK) return rc;
  int64_t total = t.bytes + q->bytes + (int64_t)entry_len;
  if (total > c->agent->def.max_state_bytes)
    return dexa__result_failf(c->result, DEXA_E_STATE_LIMIT,
                              "the session's active state would reach %lld bytes; the limit is %lld",
                              (long long)total, (long long)c->agent->def.max_state_bytes);
  return DEXA_OK;
}

static void build_entry(dexa__ctx *c, dexa__buf *b, const char *id, const char *text,
                        int plan_mode) {
  dexa__buf_puts(b, "{\"id\":");
  dexa__buf_json_cstr(b, id);
  dexa__buf_puts(b, ",\"text\":");
  dexa__buf_json_cstr(b, text);
  dexa__buf_printf(b, ",\"plan_mode\":%s,\"steered\":false,\"at\":%lld}",
                   plan_mode ? "true" : "false", (long long)c->call->now_ms);
}

static int queue_effects(dexa__ctx *c, const char *id, const dexa__buf *entry) {
  char signal[64];
  int n = snprintf(signal, sizeof signal, "{\"id\":\"%s\"}", id);
  int rc = dexa__result_add_publish(c->result, CHAN_USER_MESSAGE_SIGNALS,
                                    strlen(CHAN_USER_MESSAGE_SIGNALS), signal, (size_t)n);
  dexa__buf e;
  dexa__event_begin(c, &e, "queue_changed");
  dexa__buf_puts(&e, ",\"action\":\"added\",\"message\":");
  dexa__buf_append(&e, entry->data, entry->len);
  if (rc == DEXA_OK) return dexa__event_end(c, &e);
  dexa__buf_free(&e);
  return rc;
}

int dexa__rpc_send_message(dexa__ctx *c) {
  const cJSON *text = cJSON_GetObjectItemCaseSensitive(c->input, "text");
  const cJSON *plan = cJSON_GetObjectItemCaseSensitive(c->input, "plan_mode");
  int rc = check_text(c, text, !plan || cJSON_IsBool(plan));
  if (rc != DEXA_OK) return rc;
  dexa__queue_state q;
  rc = dexa__queue_state_load(c, &q);
  if (rc == DEXA_E_NOT_FOUND)
    return dexa__result_failf(c->result, DEXA_E_NOT_FOUND, "no session \"%.100s\"", c->call->session_id);
  if (rc != DEXA_OK) return rc;
  char id[32], key[64];
  snprintf(id, sizeof id, "m%lld", (long long)q.next_id);
  snprintf(key, sizeof key, ATTR_QUEUED_MESSAGES "%020lld", (long long)q.next_id);
  dexa__buf entry;
  dexa__buf_init(&entry);
  build_entry(c, &entry, id, text->valuestring, cJSON_IsTrue(plan));
  rc = entry.oom ? DEXA_E_NOMEM : check_state_limit(c, &q, entry.len);
  if (rc == DEXA_OK) {
    q.next_id++;
    q.bytes += (int64_t)entry.len;
    rc = dexa__queue_state_store(c, &q);
  }
  if (rc == DEXA_OK) rc = dexa__attr_put_raw(c, key, entry.data, entry.len);
  if (rc == DEXA_OK) rc = queue_effects(c, id, &entry);
  if (rc == DEXA_OK) {
    char resp[96];
    int n = snprintf(resp, sizeof resp, "{\"message_id\":\"%s\",\"queued\":%s}", id,
                     turn_running(c) ? "true" : "false");
    rc = dexa__result_set_response(c->result, resp, (size_t)n);
  }
  dexa__buf_free(&entry);
  return rc;
}
