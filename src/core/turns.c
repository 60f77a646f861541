/* Turn start and the cancellation of a turn's waiting calls. */
#include "core/turns.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json_span.h"

static const char *turn_mode(const dexa__ctx *c, dexa__queued *const *items, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const cJSON *e = items[i]->entry;
    if (cJSON_GetObjectItemCaseSensitive(e, "execute_plan")) return "executing";
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "plan_mode")) &&
        c->agent->def.plan_mode_enabled)
      return "planning";
  }
  return "chat";
}

static int append_user_message(dexa__ctx *c, dexa__transcript *t, const cJSON *entry) {
  const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(entry, "text"));
  const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(entry, "id"));
  int64_t seq = t->next_seq++;
  dexa__buf m;
  dexa__buf_init(&m);
  dexa__buf_printf(&m, "{\"seq\":%lld,\"turn\":%lld,\"role\":\"user\",\"id\":", (long long)seq,
                   (long long)t->turn);
  dexa__buf_json_cstr(&m, id ? id : "");
  dexa__buf_puts(&m, ",\"text\":");
  dexa__buf_json_cstr(&m, text ? text : "");
  const cJSON *att = cJSON_GetObjectItemCaseSensitive(entry, "attachments");
  if (cJSON_IsArray(att)) {
    char *a = cJSON_PrintUnformatted(att);
    dexa__buf_puts(&m, ",\"attachments\":");
    dexa__buf_puts(&m, a ? a : "[]");
    if (!a) m.oom = 1;
    cJSON_free(a);
  }
  dexa__buf_printf(&m, ",\"at\":%lld}", (long long)c->call->now_ms);
  int rc = m.oom ? DEXA_E_NOMEM : dexa__message_put(c, t, seq, m.data, m.len);
  if (rc == DEXA_OK) rc = dexa__event_message(c, m.data, m.len);
  dexa__buf_free(&m);
  return rc;
}

int dexa__turn_start(dexa__ctx *c, dexa__queued *const *items, size_t n) {
  dexa__transcript t;
  int rc = dexa__transcript_load(c, &t);
  if (rc == DEXA_OK) rc = dexa__queue_take(c, items, n, NULL);
  if (rc != DEXA_OK) return rc;
  int64_t turn = ++t.turn;
  const char *mode = turn_mode(c, items, n);
  dexa__buf e;
  dexa__event_begin(c, &e, "turn_started");
  dexa__buf_printf(&e, ",\"turn\":%lld,\"mode\":\"%s\",\"message_ids\":[", (long long)turn, mode);
  for (size_t i = 0; i < n; i++) {
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(items[i]->entry, "id"));
    dexa__buf_printf(&e, "%s", i ? "," : "");
    dexa__buf_json_cstr(&e, id ? id : "");
  }
  dexa__buf_putc(&e, ']');
  rc = dexa__event_end(c, &e);
  for (size_t i = 0; i < n && rc == DEXA_OK; i++) rc = append_user_message(c, &t, items[i]->entry);
  if (rc == DEXA_OK) rc = dexa__transcript_store(c, &t);
  if (rc == DEXA_OK) rc = dexa__turn_set(c, turn, "running", mode, NULL);
  if (rc != DEXA_OK) return rc;
  char input[64];
  snprintf(input, sizeof input, "{\"turn\":%lld,\"round\":1}", (long long)turn);
  return dexa__decide_next(c, STEP_RUN_MODEL, input);
}

typedef struct pending_list {
  char **call_ids;
  size_t count;
  int64_t turn;
} pending_list;

static int collect_pending(void *ctx, const char *key, size_t key_len, const char *value,
                           size_t value_len) {
  pending_list *p = ctx;
  int64_t turn = -1; /* read in place: no tree, no allocation */
  if (dexa__json_get_i64(value, value_len, "turn", &turn) < 0) return DEXA_E_CORRUPT;
  if (turn != p->turn) return 0;
  char **ids = realloc(p->call_ids, (p->count + 1) * sizeof *ids);
  if (!ids) return DEXA_E_NOMEM;
  p->call_ids = ids;
  size_t prefix = strlen(ATTR_PENDING_CALLS);
  ids[p->count] = strndup(key + prefix, key_len - prefix);
  if (!ids[p->count]) return DEXA_E_NOMEM;
  p->count++;
  return 0;
}

static int cancel_one(dexa__ctx *c, const char *call_id, const char *reason) {
  char key[320], channel[320], value[96];
  snprintf(key, sizeof key, ATTR_PENDING_CALLS "%s", call_id);
  snprintf(channel, sizeof channel, CHAN_TOOL_DECISIONS "%s", call_id);
  int n = snprintf(value, sizeof value, "{\"decision\":\"cancel\",\"reason\":\"%s\"}", reason);
  int rc = dexa__attr_delete(c, key);
  if (rc == DEXA_OK)
    rc = dexa__result_add_publish(c->result, channel, strlen(channel), value, (size_t)n);
  return rc;
}

int dexa__cancel_pending_calls(dexa__ctx *c, int64_t turn, const char *reason) {
  pending_list p = {NULL, 0, turn};
  int rc = dexa__attr_scan(c, ATTR_PENDING_CALLS, collect_pending, &p);
  for (size_t i = 0; i < p.count; i++) {
    if (rc == DEXA_OK) rc = cancel_one(c, p.call_ids[i], reason);
    free(p.call_ids[i]);
  }
  free(p.call_ids);
  return rc;
}

static int control_event(dexa__ctx *c, int64_t turn, const char *action) {
  dexa__buf e;
  dexa__event_begin(c, &e, "turn_control");
  dexa__buf_printf(&e, ",\"turn\":%lld,\"action\":\"%s\"", (long long)turn, action);
  return dexa__event_end(c, &e);
}

/* Records a steer or stop for the running turn and cancels its waits. */
int dexa__turn_control(dexa__ctx *c, int64_t turn, const char *action) {
  char text[96];
  int n = snprintf(text, sizeof text, "{\"turn\":%lld,\"action\":\"%s\",\"at\":%lld}",
                   (long long)turn, action, (long long)c->call->now_ms);
  int rc = dexa__attr_put_raw(c, ATTR_TURN_CONTROL, text, (size_t)n);
  if (rc == DEXA_OK) rc = dexa__cancel_pending_calls(c, turn, action);
  return rc == DEXA_OK ? control_event(c, turn, action) : rc;
}
