/* State records of a session: AgentTranscript (message sequence and size),
 * AgentTurn (the current turn), and the session's model choice. */
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "util/decimal.h"
#include "util/json_span.h"

static int64_t get_i64(const cJSON *o, const char *name, int64_t dflt) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
  return dexa__json_int(v, dflt);
}

int dexa__transcript_load(dexa__ctx *c, dexa__transcript *t) {
  cJSON *o;
  int rc = dexa__attr_get_json(c, ATTR_TRANSCRIPT, &o);
  if (rc != DEXA_OK) return rc;
  if (!o) return DEXA_E_NOT_FOUND;
  t->next_seq = get_i64(o, "next_seq", 1);
  t->first_seq = get_i64(o, "first_seq", 1);
  t->turn = get_i64(o, "turn", 0);
  t->bytes = get_i64(o, "bytes", 0);
  cJSON_Delete(o);
  return DEXA_OK;
}

int dexa__transcript_store(dexa__ctx *c, const dexa__transcript *t) {
  char text[200];
  int n = snprintf(text, sizeof text,
                   "{\"next_seq\":%lld,\"first_seq\":%lld,\"turn\":%lld,\"bytes\":%lld}",
                   (long long)t->next_seq, (long long)t->first_seq, (long long)t->turn,
                   (long long)t->bytes);
  return dexa__attr_put_raw(c, ATTR_TRANSCRIPT, text, (size_t)n);
}

void dexa__message_key(char *key, size_t n, int64_t seq) {
  snprintf(key, n, ATTR_MESSAGES "%020lld", (long long)seq);
}

int dexa__key_number(const char *key, size_t key_len, const char *prefix, int64_t *out) {
  size_t p = strlen(prefix);
  if (key_len <= p || memcmp(key, prefix, p) != 0) return -1;
  return dexa__dec_i64(key + p, key_len - p, out);
}

int dexa__message_put(dexa__ctx *c, dexa__transcript *t, int64_t seq, const char *json,
                      size_t len) {
  char key[48];
  dexa__message_key(key, sizeof key, seq);
  t->bytes += (int64_t)len;
  return dexa__attr_put_raw(c, key, json, len);
}

int dexa__session_model(dexa__ctx *c, const dexa_model **out) {
  const dexa_agent *a = c->agent;
  cJSON *s;
  int rc = dexa__attr_get_json(c, ATTR_SESSION, &s);
  if (rc != DEXA_OK) return rc;
  if (!s) return DEXA_E_NOT_FOUND;
  const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "model"));
  *out = a->models[0];
  for (size_t i = 0; name && i < a->model_count; i++)
    if (strcmp(a->models[i]->name, name) == 0) *out = a->models[i];
  cJSON_Delete(s);
  return DEXA_OK;
}

static void copy_str(char *dst, size_t n, const cJSON *o, const char *name, const char *dflt) {
  const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, name));
  snprintf(dst, n, "%s", v ? v : dflt);
}

int dexa__turn_load(dexa__ctx *c, dexa__turn *t) {
  cJSON *o;
  int rc = dexa__attr_get_json(c, ATTR_TURN, &o);
  if (rc != DEXA_OK) return rc;
  if (!o) return DEXA_E_NOT_FOUND;
  t->turn = get_i64(o, "turn", 0);
  copy_str(t->status, sizeof t->status, o, "status", "idle");
  copy_str(t->mode, sizeof t->mode, o, "mode", "chat");
  cJSON_Delete(o);
  return DEXA_OK;
}

int dexa__turn_set(dexa__ctx *c, int64_t turn, const char *status, const char *mode,
                   const char *error_json) {
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_printf(&b, "{\"turn\":%lld,\"status\":", (long long)turn);
  dexa__buf_json_cstr(&b, status);
  dexa__buf_puts(&b, ",\"mode\":");
  dexa__buf_json_cstr(&b, mode ? mode : "chat");
  dexa__buf_printf(&b, ",\"since_ms\":%lld", (long long)c->call->now_ms);
  if (error_json) {
    dexa__buf_puts(&b, ",\"error\":");
    dexa__buf_puts(&b, error_json);
  }
  dexa__buf_putc(&b, '}');
  int rc = b.oom ? DEXA_E_NOMEM : dexa__attr_put_raw(c, ATTR_TURN, b.data, b.len);
  dexa__buf_free(&b);
  return rc;
}

int dexa__turn_is_running(dexa__ctx *c, int64_t turn, dexa__turn *out, int *rc) {
  dexa__turn t;
  *rc = dexa__turn_load(c, &t);
  if (*rc == DEXA_E_NOT_FOUND) { /* no turn record: t was never filled */
    *rc = DEXA_OK;
    return 0;
  }
  if (*rc != DEXA_OK) return 0;
  if (out) *out = t;
  return t.turn == turn && strcmp(t.status, "running") == 0;
}

int dexa__control_pending(dexa__ctx *c, int64_t turn, char *action, int *rc) {
  cJSON *o;
  *rc = dexa__attr_get_json(c, ATTR_TURN_CONTROL, &o);
  if (*rc != DEXA_OK || !o) return 0;
  int match = get_i64(o, "turn", -1) == turn;
  if (match) copy_str(action, 16, o, "action", "cancel");
  cJSON_Delete(o);
  return match;
}

int dexa__require_session(dexa__ctx *c) {
  const char *v;
  size_t n;
  int rc = dexa__attr_get(c, ATTR_SESSION, &v, &n);
  if (rc == DEXA_E_NOT_FOUND)
    return dexa__result_failf(c->result, DEXA_E_NOT_FOUND, "no session \"%.100s\"",
                              c->call->session_id);
  return rc;
}

int dexa__require_not_ended(dexa__ctx *c) {
  const char *v;
  size_t n;
  int rc = dexa__attr_get(c, ATTR_SESSION_END, &v, &n);
  if (rc == DEXA_E_NOT_FOUND) return DEXA_OK;
  if (rc != DEXA_OK) return rc;
  int64_t at = 0;
  const char *reason = NULL;
  size_t rlen = 0;
  (void)dexa__json_get_i64(v, n, "at", &at);
  if (dexa__json_get(v, n, "reason", &reason, &rlen) != 0 || rlen < 2 || reason[0] != '"') reason = NULL;
  return dexa__result_failf(c->result, DEXA_E_SESSION_ENDED,
                            "session \"%.100s\" has ended (at %lld ms, reason %.*s): it takes no "
                            "more messages or decisions; start a new session",
                            c->call->session_id, (long long)at, reason ? (int)(rlen < 80 ? rlen : 80) : 6,
                            reason ? reason : "\"none\"");
}
