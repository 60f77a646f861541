/* end_session {"reason"?}: ends the session for good. The running turn is
 * cancelled (its waits for approvals, answers and timers are dropped), the
 * session records AgentSessionEnd and the session_ended event, and the
 * decision completes the flow, so the host cancels every Step execution of
 * the session. From then on every RPC that changes the session is refused
 * with DEXA_E_SESSION_ENDED; the reads (snapshot, list_agent_messages)
 * still answer until the host deletes the session. "reason" is a short
 * text for people (default "end_session"; the embedded runtime's idle
 * sweep says "idle_timeout"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

#define REASON_MAX 200

typedef struct pending_keys {
  char **keys;
  size_t count;
  int oom;
} pending_keys;

static int collect(void *ctx, const char *key, size_t key_len, const char *value,
                   size_t value_len) {
  pending_keys *p = ctx;
  char **k = realloc(p->keys, (p->count + 1) * sizeof *k);
  if (!k) return DEXA_E_NOMEM;
  p->keys = k;
  k[p->count] = strndup(key, key_len);
  if (!k[p->count]) return DEXA_E_NOMEM;
  p->count++;
  return 0;
}

/* Nothing waits for a person any more: the pending calls go. */
static int drop_pending(dexa__ctx *c) {
  pending_keys p = {NULL, 0, 0};
  int rc = dexa__attr_scan(c, ATTR_PENDING_CALLS, collect, &p);
  for (size_t i = 0; i < p.count; i++) {
    if (rc == DEXA_OK) rc = dexa__attr_delete(c, p.keys[i]);
    free(p.keys[i]);
  }
  free(p.keys);
  return rc;
}

static int cancel_turn(dexa__ctx *c) {
  dexa__turn t;
  int rc = dexa__turn_load(c, &t);
  if (rc == DEXA_E_NOT_FOUND) return DEXA_OK;
  if (rc != DEXA_OK || strcmp(t.status, "running") != 0) return rc;
  rc = dexa__attr_delete(c, ATTR_TURN_CONTROL);
  if (rc == DEXA_OK) rc = dexa__turn_set(c, t.turn, "cancelled", t.mode, NULL);
  if (rc != DEXA_OK) return rc;
  dexa__buf e;
  dexa__event_begin(c, &e, "turn_cancelled");
  dexa__buf_printf(&e, ",\"turn\":%lld,\"action\":\"end_session\"", (long long)t.turn);
  return dexa__event_end(c, &e);
}

int dexa__rpc_end_session(dexa__ctx *c) {
  int rc = dexa__require_session(c);
  if (rc != DEXA_OK) return rc;
  const cJSON *r = cJSON_GetObjectItemCaseSensitive(c->input, "reason");
  if (r && !cJSON_IsString(r))
    return dexa__result_fail(c->result, DEXA_E_INVALID_JSON, "end_session: reason must be a string");
  const char *reason = r ? r->valuestring : "end_session";
  if (strlen(reason) > REASON_MAX || dexa__is_blank(reason, strlen(reason)))
    return dexa__result_failf(c->result, DEXA_E_INVALID_ARG,
                              "end_session: reason must be 1..%d bytes of text", REASON_MAX);
  rc = cancel_turn(c);
  if (rc == DEXA_OK) rc = drop_pending(c);
  if (rc != DEXA_OK) return rc;
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_printf(&b, "{\"at\":%lld,\"reason\":", (long long)c->call->now_ms);
  dexa__buf_json_cstr(&b, reason);
  dexa__buf_putc(&b, '}');
  rc = b.oom ? DEXA_E_NOMEM : dexa__attr_put_raw(c, ATTR_SESSION_END, b.data, b.len);
  if (rc == DEXA_OK) {
    dexa__buf e;
    dexa__event_begin(c, &e, "session_ended");
    dexa__buf_puts(&e, ",\"reason\":");
    dexa__buf_json_cstr(&e, reason);
    rc = dexa__event_end(c, &e);
  }
  if (rc == DEXA_OK) rc = dexa__result_set_decision(c->result, "{\"next\":[],\"complete\":true}", 27);
  if (rc == DEXA_OK) {
    /* The response: {"ended":true,"at":..,"reason":..} */
    dexa__buf o;
    dexa__buf_init(&o);
    dexa__buf_puts(&o, "{\"ended\":true,");
    dexa__buf_append(&o, b.data + 1, b.len - 1);
    rc = o.oom ? DEXA_E_NOMEM : dexa__result_set_response(c->result, o.data, o.len);
    dexa__buf_free(&o);
  }
  dexa__buf_free(&b);
  return rc;
}
