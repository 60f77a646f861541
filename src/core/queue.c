/* QueuedUserMessages and AgentQueueState. */
#include "core/queue.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/attachments.h"
#include "util/decimal.h"

int dexa__queue_state_load(dexa__ctx *c, dexa__queue_state *q) {
  cJSON *o;
  int rc = dexa__attr_get_json(c, ATTR_QUEUE_STATE, &o);
  if (rc != DEXA_OK) return rc;
  if (!o) return DEXA_E_NOT_FOUND;
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "next_id");
  const cJSON *bytes = cJSON_GetObjectItemCaseSensitive(o, "bytes");
  q->next_id = dexa__json_int(id, 1);
  q->bytes = dexa__json_int(bytes, 0);
  cJSON_Delete(o);
  return DEXA_OK;
}

int dexa__queue_state_store(dexa__ctx *c, const dexa__queue_state *q) {
  char text[96];
  int n = snprintf(text, sizeof text, "{\"next_id\":%lld,\"bytes\":%lld}", (long long)q->next_id,
                   (long long)(q->bytes < 0 ? 0 : q->bytes));
  return dexa__attr_put_raw(c, ATTR_QUEUE_STATE, text, (size_t)n);
}

static int collect(void *ctx, const char *key, size_t key_len, const char *value,
                   size_t value_len) {
  dexa__queue *q = ctx;
  dexa__queued *p = realloc(q->items, (q->count + 1) * sizeof *p);
  if (!p) return DEXA_E_NOMEM;
  q->items = p;
  dexa__queued *it = &q->items[q->count];
  snprintf(it->key, sizeof it->key, "%.*s", (int)key_len, key);
  int rc;
  it->entry = dexa__json_parse(value, value_len, DEXA_E_CORRUPT, &rc);
  it->len = value_len;
  if (!it->entry) return rc;
  q->count++;
  return 0;
}

int dexa__queue_load(dexa__ctx *c, dexa__queue *q) {
  memset(q, 0, sizeof *q);
  return dexa__attr_scan(c, ATTR_QUEUED_MESSAGES, collect, q);
}

void dexa__queue_free(dexa__queue *q) {
  for (size_t i = 0; i < q->count; i++) cJSON_Delete(q->items[i].entry);
  free(q->items);
  memset(q, 0, sizeof *q);
}

int dexa__queue_key(const char *id, char *key) {
  int64_t n;
  if (!id || id[0] != 'm' || dexa__dec_i64(id + 1, strlen(id + 1), &n) != 0) return 0;
  snprintf(key, 64, ATTR_QUEUED_MESSAGES "%020lld", (long long)n);
  return 1;
}

static int check_state_limit(dexa__ctx *c, const dexa__queue_state *q, size_t entry_len) {
  dexa__transcript t;
  int64_t harness = 0;
  int rc = dexa__transcript_load(c, &t);
  if (rc == DEXA_OK) rc = dexa__harness_state_bytes(c, &harness);
  if (rc != DEXA_OK) return rc;
  int64_t total = t.bytes + harness + q->bytes + (int64_t)entry_len;
  if (total > c->agent->def.max_state_bytes)
    return dexa__result_failf(c->result, DEXA_E_STATE_LIMIT,
                              "the session's active state would reach %lld bytes; the limit is %lld",
                              (long long)total, (long long)c->agent->def.max_state_bytes);
  return DEXA_OK;
}

/* view: the entry as events show it (attachments without their bytes). */
static int queue_effects(dexa__ctx *c, const char *id, const dexa__buf *view) {
  char signal[64];
  int n = snprintf(signal, sizeof signal, "{\"id\":\"%s\"}", id);
  int rc = dexa__result_add_publish(c->result, CHAN_USER_MESSAGE_SIGNALS,
                                    strlen(CHAN_USER_MESSAGE_SIGNALS), signal, (size_t)n);
  dexa__buf e;
  dexa__event_begin(c, &e, "queue_changed");
  dexa__buf_puts(&e, ",\"action\":\"added\",\"message\":");
  dexa__buf_append(&e, view->data, view->len);
  if (rc == DEXA_OK) return dexa__event_end(c, &e);
  dexa__buf_free(&e);
  return rc;
}

/* The entry's members after "text" (or, for the event's view, with the
 * attachments' view instead of their bytes). */
static void entry_tail(dexa__ctx *c, dexa__buf *b, const char *attachments, int view, int plan_mode,
                       int64_t execute_revision) {
  if (attachments) {
    dexa__buf_puts(b, ",\"attachments\":");
    if (view) dexa__attachments_view(b, attachments, strlen(attachments));
    else dexa__buf_puts(b, attachments);
  }
  dexa__buf_printf(b, ",\"plan_mode\":%s,\"steered\":false", plan_mode ? "true" : "false");
  if (execute_revision > 0) dexa__buf_printf(b, ",\"execute_plan\":%lld", (long long)execute_revision);
  dexa__buf_printf(b, ",\"at\":%lld}", (long long)c->call->now_ms);
}

int dexa__queue_add(dexa__ctx *c, const char *text, const char *attachments, int plan_mode,
                    int64_t execute_revision, char *id) {
  dexa__queue_state q;
  int rc = dexa__queue_state_load(c, &q);
  if (rc == DEXA_E_NOT_FOUND)
    return dexa__result_failf(c->result, DEXA_E_NOT_FOUND, "no session \"%.100s\"", c->call->session_id);
  if (rc != DEXA_OK) return rc;
  char key[64];
  snprintf(id, 32, "m%lld", (long long)q.next_id);
  dexa__queue_key(id, key);
  dexa__buf entry, view;
  dexa__buf_init(&entry);
  dexa__buf_puts(&entry, "{\"id\":");
  dexa__buf_json_cstr(&entry, id);
  dexa__buf_puts(&entry, ",\"text\":");
  dexa__buf_json_cstr(&entry, text);
  dexa__buf_init(&view);
  dexa__buf_append(&view, entry.data, entry.len);
  entry_tail(c, &entry, attachments, 0, plan_mode, execute_revision);
  entry_tail(c, &view, attachments, 1, plan_mode, execute_revision);
  rc = entry.oom || view.oom ? DEXA_E_NOMEM : check_state_limit(c, &q, entry.len);
  if (rc == DEXA_OK) {
    q.next_id++;
    q.bytes += (int64_t)entry.len;
    rc = dexa__queue_state_store(c, &q);
  }
  if (rc == DEXA_OK) rc = dexa__attr_put_raw(c, key, entry.data, entry.len);
  if (rc == DEXA_OK) rc = queue_effects(c, id, &view);
  dexa__buf_free(&entry);
  dexa__buf_free(&view);
  return rc;
}

int dexa__queue_take(dexa__ctx *c, dexa__queued *const *items, size_t n, const char *action) {
  dexa__queue_state q;
  int rc = dexa__queue_state_load(c, &q);
  for (size_t i = 0; i < n && rc == DEXA_OK; i++) {
    q.bytes -= (int64_t)items[i]->len;
    rc = dexa__attr_delete(c, items[i]->key);
    if (!action) continue; /* taken into a turn: turn_started names them */
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(items[i]->entry, "id"));
    dexa__buf e;
    dexa__event_begin(c, &e, "queue_changed");
    dexa__buf_puts(&e, ",\"action\":");
    dexa__buf_json_cstr(&e, action);
    dexa__buf_puts(&e, ",\"id\":");
    dexa__buf_json_cstr(&e, id ? id : "");
    if (rc == DEXA_OK) rc = dexa__event_end(c, &e);
    else dexa__buf_free(&e);
  }
  return rc == DEXA_OK ? dexa__queue_state_store(c, &q) : rc;
}

int dexa__queue_load_named(dexa__ctx *c, char *key, cJSON **out, size_t *len) {
  const char *id = dexa__input_str(c, "message_id");
  if (!id || !dexa__queue_key(id, key))
    return dexa__result_fail(c->result, DEXA_E_INVALID_JSON, "message_id must be an id like \"m3\"");
  const char *v;
  int rc = dexa__attr_get(c, key, &v, len);
  if (rc == DEXA_E_NOT_FOUND)
    return dexa__result_failf(c->result, DEXA_E_NOT_FOUND, "no queued message \"%.40s\"", id);
  if (rc != DEXA_OK) return rc;
  *out = dexa__json_parse(v, *len, DEXA_E_CORRUPT, &rc);
  return rc;
}
