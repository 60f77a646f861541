/* The ToolDecisions channel, both sides (see tool_decisions.h). */
#include "core/tool_decisions.h"

#include <stdio.h>
#include <string.h>

static void channel_of(char *out, size_t n, const char *call_id) {
  snprintf(out, n, CHAN_TOOL_DECISIONS "%s", call_id);
}

int dexa__decision_wait(dexa__ctx *c, const dexa__tool_call *t, int timer) {
  dexa__buf w;
  dexa__buf_init(&w);
  dexa__buf_puts(&w, "{\"mode\":\"any\",\"conditions\":[");
  if (timer) {
    int64_t fires = 0;
    dexa__input_i64(c, "fires_at_ms", &fires);
    int64_t left = fires - c->call->now_ms;
    dexa__buf_printf(&w, "{\"id\":\"timer\",\"timer_ms\":%lld},", (long long)(left > 0 ? left : 0));
  }
  dexa__buf_puts(&w, "{\"id\":\"decision\",\"channel\":");
  char channel[320];
  channel_of(channel, sizeof channel, t->call_id);
  dexa__buf_json_cstr(&w, channel);
  dexa__buf_puts(&w, ",\"min\":1,\"max\":1}]}");
  int rc = w.oom ? DEXA_E_NOMEM : dexa__result_set_wait(c->result, w.data, w.len);
  dexa__buf_free(&w);
  return rc;
}

int dexa__decision_take(dexa__ctx *c, const dexa__tool_call *t, cJSON **decision, int *fired) {
  const dexa_call *call = c->call;
  *decision = NULL;
  *fired = 0;
  if (call->conditions) {
    int rc;
    cJSON *cond = dexa__json_parse(call->conditions, call->conditions_len, DEXA_E_INVALID_JSON, &rc);
    if (!cond) return dexa__result_fail(c->result, rc, rc == DEXA_E_NOMEM ? NULL : "conditions are not JSON");
    const cJSON *f;
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(cond, "fired")) {
      if (cJSON_IsString(f) && strcmp(f->valuestring, "timer") == 0) *fired = 1;
    }
    const cJSON *d = cJSON_GetArrayItem(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(cond, "channels"), "decision"), 0);
    if (d) *decision = cJSON_Duplicate(d, 1);
    cJSON_Delete(cond);
    if (d && !*decision) return DEXA_E_NOMEM;
  }
  return dexa__tool_call_unpend(c, t);
}

const char *dexa__decision_kind(const cJSON *d) {
  const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "decision"));
  return s ? s : "";
}

int dexa__decision_cancelled(dexa__ctx *c, const dexa__tool_call *t, const cJSON *d) {
  const char *reason = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "reason"));
  char text[200];
  snprintf(text, sizeof text, "Cancelled: the turn was %s before this call ran.",
           reason && !strcmp(reason, "steer") ? "steered" : "stopped");
  return dexa__tool_call_finish(c, t, "cancelled", text, strlen(text), NULL, 0);
}

int dexa__waiting_step(dexa__ctx *c, int timer, dexa__on_decision on_decision) {
  dexa__tool_call t;
  int rc = dexa__tool_call_read(c, &t);
  if (rc == DEXA_OK && c->call->kind == DEXA_CALL_WAIT_FOR) {
    rc = dexa__decision_wait(c, &t, timer);
  } else if (rc == DEXA_OK) {
    cJSON *d = NULL;
    int fired = 0;
    rc = dexa__decision_take(c, &t, &d, &fired);
    if (rc == DEXA_OK && !d && !fired)
      rc = dexa__result_fail(c->result, DEXA_E_INVALID_ARG, "no decision was delivered");
    else if (rc == DEXA_OK)
      rc = on_decision(c, &t, d, fired);
    cJSON_Delete(d);
  }
  dexa__tool_call_free(&t);
  return rc;
}

/* ---- the RPC side ---- */

int dexa__pending_load(dexa__ctx *c, const char *kind, char *key, size_t key_size, cJSON **out) {
  const char *id = dexa__input_str(c, "call_id");
  if (!id || !*id || strlen(id) > 256)
    return dexa__result_fail(c->result, DEXA_E_INVALID_JSON, "call_id must be a string");
  snprintf(key, key_size, ATTR_PENDING_CALLS "%s", id);
  cJSON *p;
  int rc = dexa__attr_get_json(c, key, &p);
  if (rc != DEXA_OK) return rc;
  const char *k = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "kind"));
  if (!p || !k || strcmp(k, kind) != 0) {
    cJSON_Delete(p);
    return dexa__result_failf(c->result, DEXA_E_NOT_PENDING, "no %s is pending for call \"%.64s\"",
                              kind, id);
  }
  *out = p;
  return DEXA_OK;
}

static int decided_event(dexa__ctx *c, const char *type, const char *call_id, const char *text) {
  dexa__buf e;
  dexa__event_begin(c, &e, type);
  dexa__buf_puts(&e, ",\"call_id\":");
  dexa__buf_json_cstr(&e, call_id);
  dexa__buf_puts(&e, ",\"decision\":");
  dexa__buf_puts(&e, text);
  return dexa__event_end(c, &e);
}

int dexa__decision_deliver(dexa__ctx *c, const char *key, const char *call_id,
                           const char *decision, size_t len, const char *event_type) {
  char channel[320];
  channel_of(channel, sizeof channel, call_id);
  int rc = dexa__attr_delete(c, key);
  if (rc == DEXA_OK) rc = dexa__result_add_publish(c->result, channel, strlen(channel), decision, len);
  if (rc == DEXA_OK) rc = decided_event(c, event_type, call_id, decision);
  return rc;
}
