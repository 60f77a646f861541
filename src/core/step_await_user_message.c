/* AwaitUserMessage: the idle Step between turns. WaitFor returns at once
 * when a message is queued, else waits for a signal on UserMessageSignals.
 * Execute takes the oldest queued message and starts its turn. */
#include <stdio.h>
#include <string.h>

#include "core/queue.h"

static const char wait_for_signal[] =
    "{\"mode\":\"any\",\"conditions\":[{\"id\":\"message\",\"channel\":\"" CHAN_USER_MESSAGE_SIGNALS
    "\",\"min\":1}]}";

static int wait_for(dexa__ctx *c) {
  dexa__buf key, value;
  dexa__buf_init(&key);
  dexa__buf_init(&value);
  int rc = dexa__queue_oldest(c, &key, &value);
  dexa__buf_free(&key);
  dexa__buf_free(&value);
  if (rc < 0) return rc;
  if (rc == 1) return DEXA_OK; /* no wait: Execute runs at once */
  return dexa__result_set_wait(c->result, wait_for_signal, sizeof wait_for_signal - 1);
}

/* Appends the user message to AgentMessages and marks the turn running. */
static int start_turn(dexa__ctx *c, const cJSON *entry, int64_t *turn_out) {
  dexa__transcript t;
  int rc = dexa__transcript_load(c, &t);
  if (rc != DEXA_OK) return rc;
  const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(entry, "text"));
  const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(entry, "id"));
  int64_t turn = ++t.turn;
  int64_t seq = t.next_seq++;
  dexa__buf m;
  dexa__buf_init(&m);
  dexa__buf_printf(&m, "{\"seq\":%lld,\"turn\":%lld,\"role\":\"user\",\"id\":", (long long)seq,
                   (long long)turn);
  dexa__buf_json_cstr(&m, id ? id : "");
  dexa__buf_puts(&m, ",\"text\":");
  dexa__buf_json_cstr(&m, text ? text : "");
  dexa__buf_printf(&m, ",\"at\":%lld}", (long long)c->call->now_ms);
  rc = m.oom ? DEXA_E_NOMEM : dexa__message_put(c, &t, seq, m.data, m.len);
  if (rc == DEXA_OK) rc = dexa__transcript_store(c, &t);
  if (rc == DEXA_OK) rc = dexa__turn_set(c, turn, "running", NULL);
  dexa__buf e;
  dexa__event_begin(c, &e, "turn_started");
  dexa__buf_printf(&e, ",\"turn\":%lld", (long long)turn);
  if (rc == DEXA_OK) rc = dexa__event_end(c, &e);
  else dexa__buf_free(&e);
  dexa__event_begin(c, &e, "message_appended");
  dexa__buf_puts(&e, ",\"message\":");
  dexa__buf_append(&e, m.data, m.len);
  if (rc == DEXA_OK) rc = dexa__event_end(c, &e);
  else dexa__buf_free(&e);
  dexa__buf_free(&m);
  *turn_out = turn;
  return rc;
}

/* Removes the taken message from the queue and its bytes from the count. */
static int dequeue(dexa__ctx *c, const char *key, const cJSON *entry, size_t entry_len) {
  dexa__queue_state q;
  int rc = dexa__queue_state_load(c, &q);
  if (rc != DEXA_OK) return rc;
  q.bytes -= (int64_t)entry_len;
  rc = dexa__queue_state_store(c, &q);
  if (rc == DEXA_OK) rc = dexa__attr_delete(c, key);
  const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(entry, "id"));
  dexa__buf e;
  dexa__event_begin(c, &e, "queue_changed");
  dexa__buf_puts(&e, ",\"action\":\"taken\",\"id\":");
  dexa__buf_json_cstr(&e, id ? id : "");
  if (rc == DEXA_OK) return dexa__event_end(c, &e);
  dexa__buf_free(&e);
  return rc;
}

static int execute(dexa__ctx *c) {
  dexa__buf key, value;
  dexa__buf_init(&key);
  dexa__buf_init(&value);
  cJSON *entry = NULL;
  int rc = dexa__queue_oldest(c, &key, &value);
  if (rc == 0) { /* the signalled message was deleted: wait again */
    rc = dexa__decide_next(c, STEP_AWAIT_USER_MESSAGE, NULL);
    goto cleanup;
  }
  if (rc < 0) goto cleanup;
  entry = cJSON_ParseWithLength(value.data, value.len);
  if (!entry) {
    rc = dexa__result_fail(c->result, DEXA_E_CORRUPT, "a queued message is not JSON");
    goto cleanup;
  }
  int64_t turn = 0;
  rc = dequeue(c, key.data, entry, value.len);
  if (rc == DEXA_OK) rc = start_turn(c, entry, &turn);
  if (rc == DEXA_OK) {
    char input[64];
    snprintf(input, sizeof input, "{\"turn\":%lld,\"round\":1}", (long long)turn);
    rc = dexa__decide_next(c, STEP_RUN_MODEL, input);
  }
cleanup:
  cJSON_Delete(entry);
  dexa__buf_free(&key);
  dexa__buf_free(&value);
  return rc;
}

int dexa__step_await_user_message(dexa__ctx *c) {
  return c->call->kind == DEXA_CALL_WAIT_FOR ? wait_for(c) : execute(c);
}
