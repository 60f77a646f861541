/* Shared decoder helpers (see decoder.h). */
#include "model/decoder.h"

#include "iface/model.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dexagents/errors.h"
#include "model/sse.h"
#include "model/transcript.h"
#include "util/json_span.h"

void dexa__decoder_init(dexa__decoder *d, const char *client, const dexa_model_request *req,
                        dexa_model_reply *reply) {
  memset(d, 0, sizeof *d);
  d->client = client;
  d->req = req;
  d->reply = reply;
  int64_t turn = 0, round = 0;
  if (req) dexa__request_turn_round(req, &turn, &round);
  snprintf(d->id_prefix, sizeof d->id_prefix, "call-t%lldr%lld", (long long)turn, (long long)round);
}

size_t dexa__decoder_call_count(const dexa__decoder *d) { return d->reply->tool_call_count; }
size_t dexa__decoder_item_count(const dexa__decoder *d) { return d->reply->item_count; }

void dexa__usage_clamp(dexa_model_usage *u) {
  if (u->cached_input_tokens > u->input_tokens) u->cached_input_tokens = u->input_tokens;
  if (u->cache_write_tokens > u->input_tokens - u->cached_input_tokens)
    u->cache_write_tokens = u->input_tokens - u->cached_input_tokens;
  if (u->reasoning_tokens > u->output_tokens) u->reasoning_tokens = u->output_tokens;
}

int dexa__decoder_fail(dexa__decoder *d, int rc, const char *fmt, ...) {
  if (d->rc != DEXA_OK) return d->rc;
  d->rc = rc;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(d->err, sizeof d->err, fmt, ap);
  va_end(ap);
  return rc;
}

cJSON *dexa__decoder_parse(dexa__decoder *d, const char *data, size_t len) {
  if (!dexa__utf8_valid(data, len)) {
    dexa__decoder_fail(d, DEXA_E_MODEL, "invalid UTF-8 in the response stream");
    return NULL;
  }
  if (dexa__json_validate(data, len) != 0) {
    dexa__decoder_fail(d, DEXA_E_TRANSIENT, "malformed JSON in the response stream (%.60s)", data);
    return NULL;
  }
  cJSON *v = cJSON_ParseWithLength(data, len);
  if (!v) {
    dexa__decoder_fail(d, DEXA_E_NOMEM, "out of memory parsing the response stream");
    return NULL;
  }
  if (!cJSON_IsObject(v)) {
    cJSON_Delete(v);
    dexa__decoder_fail(d, DEXA_E_TRANSIENT, "a stream event that is not a JSON object");
    return NULL;
  }
  return v;
}

void dexa__decoder_emit(dexa__decoder *d, int kind, const char *text, size_t len) {
  if (d->req && len) dexa_model_request_emit_delta(d->req, kind, text, len);
}

int dexa__decoder_tool_call(dexa__decoder *d, const char *call_id, const char *name,
                            const char *arguments, size_t len) {
  if (!call_id || !*call_id || !name || !*name)
    return dexa__decoder_fail(d, DEXA_E_TRANSIENT, "a tool call without id or name");
  const char *p = arguments ? arguments : "";
  size_t n = arguments ? len : 0;
  dexa__json_trim(&p, &n);
  if (n == 0) p = "{}", n = 2;
  int rc = dexa_model_reply_add_tool_call(d->reply, call_id, name, p, n);
  if (rc == DEXA_E_INVALID_JSON)
    return dexa__decoder_fail(d, DEXA_E_TRANSIENT,
                              "the arguments of tool call %.80s (%.80s) are not a JSON object",
                              call_id, name);
  if (rc != DEXA_OK) return dexa__decoder_fail(d, rc, "recording tool call %.80s", call_id);
  return DEXA_OK;
}

int dexa__jcount(const cJSON *obj, const char *key, int64_t *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= 9007199254740992.0)) return 0;
  *out = (int64_t)v->valuedouble;
  return 1;
}

const char *dexa__jstr(const cJSON *obj, const char *key) {
  return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, key));
}

int dexa__json_array_next(const char *s, size_t n, size_t *pos, const char **el, size_t *el_len) {
  size_t i = *pos;
  while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) i++;
  if (*pos == 0) {
    if (i >= n || s[i] != '[') return -1;
    i++;
  }
  while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' || s[i] == ','))
    i++;
  if (i >= n) return -1;
  if (s[i] == ']') {
    *pos = n;
    return 0;
  }
  size_t start = i;
  if (dexa__json_skip(s, n, &i) != 0) return -1;
  *el = s + start;
  *el_len = i - start;
  *pos = i;
  return 1;
}
