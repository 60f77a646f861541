/* dexa_wait_evaluate: the hosts' helper over the wait rules of wait.c. The
 * host's state comes in (channel counts, fired timers or the clock); the
 * answer goes out as JSON: ready or not, what to consume, when to look
 * again. */
#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"
#include "dexagents/flow.h"
#include "flow/wait.h"
#include "util/buf.h"
#include "util/json_input.h"
#include "util/struct_size.h"

/* The 1.1 structure: everything up to channel_count. */
#define WAIT_STATE_V1_SIZE sizeof(dexa_wait_state)

DEXA_EXTERN int dexa_wait_state_init(dexa_wait_state *state, size_t struct_size) {
  if (!state) return DEXA_E_INVALID_ARG;
  if (struct_size < WAIT_STATE_V1_SIZE || struct_size > DEXA__STRUCT_SIZE_MAX)
    return DEXA_E_STRUCT_SIZE;
  memset(state, 0, struct_size);
  state->struct_size = (uint32_t)struct_size;
  return DEXA_OK;
}

/* A JSON document of the host's (fired, channel_counts): NULL when absent,
 * else parsed; *rc DEXA_E_INVALID_JSON or DEXA_E_NOMEM when it fails. */
static cJSON *host_doc(const char *json, size_t len, int want_array, int *rc) {
  if (!json) return NULL;
  *rc = dexa__json_input_check(json, len) == DEXA_OK ? DEXA_OK : DEXA_E_INVALID_JSON;
  cJSON *doc = *rc == DEXA_OK ? cJSON_ParseWithLength(json, len) : NULL;
  if (*rc == DEXA_OK && !doc) *rc = DEXA_E_NOMEM; /* valid text: only memory can fail */
  if (doc && !(want_array ? cJSON_IsArray(doc) : cJSON_IsObject(doc))) *rc = DEXA_E_INVALID_JSON;
  return doc;
}

static int listed(const cJSON *fired, const char *id) {
  const cJSON *e;
  cJSON_ArrayForEach(e, fired) {
    if (cJSON_IsString(e) && strcmp(e->valuestring, id) == 0) return 1;
  }
  return 0;
}

static int channel_count(const dexa_wait_state *st, const cJSON *counts, const char *channel,
                         int64_t *n) {
  *n = 0;
  if (st->channel_count) {
    int rc = st->channel_count(st->channel_user_data, channel, strlen(channel), n);
    return rc == DEXA_OK && *n >= 0 ? DEXA_OK : DEXA_E_CALLBACK_FAILED;
  }
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(counts, channel);
  if (!v) return DEXA_OK;
  if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 9007199254740992.0 ||
      v->valuedouble != (double)(int64_t)v->valuedouble)
    return DEXA_E_INVALID_JSON;
  *n = (int64_t)v->valuedouble;
  return DEXA_OK;
}

/* Fills every condition's fired or count from the host's state. */
static int observe(dexa__wait *w, const dexa_wait_state *st) {
  int rc = DEXA_OK;
  cJSON *fired = host_doc(st->fired, st->fired_len, 1, &rc);
  cJSON *counts = rc == DEXA_OK && !st->channel_count
                      ? host_doc(st->channel_counts, st->channel_counts_len, 0, &rc)
                      : NULL;
  for (size_t i = 0; rc == DEXA_OK && i < w->n; i++) {
    dexa__wait_cond *c = &w->conds[i];
    if (c->channel)
      rc = channel_count(st, counts, c->channel, &c->count);
    else
      c->fired = st->fired ? listed(fired, c->id) : st->now_ms >= c->deadline;
  }
  cJSON_Delete(fired);
  cJSON_Delete(counts);
  return rc;
}

static void put_ids(dexa__buf *b, const dexa__wait *w, int timers_fired) {
  int first = 1;
  for (size_t i = 0; i < w->n; i++) {
    const dexa__wait_cond *c = &w->conds[i];
    if (timers_fired ? c->channel || !c->fired : !c->channel) continue;
    int seen = 0; /* channels once each */
    for (size_t j = 0; !timers_fired && j < i; j++)
      seen |= w->conds[j].channel && strcmp(w->conds[j].channel, c->channel) == 0;
    if (seen) continue;
    if (!first) dexa__buf_putc(b, ',');
    first = 0;
    dexa__buf_json_cstr(b, timers_fired ? c->id : c->channel);
  }
}

static void put_answer(dexa__buf *b, const dexa__wait *w, int ready, size_t winner) {
  dexa__buf_printf(b, "{\"ready\":%s,\"fired\":[", ready ? "true" : "false");
  put_ids(b, w, 1);
  dexa__buf_puts(b, "],\"consume\":[");
  int first = 1;
  for (size_t i = 0; ready && i < w->n; i++) {
    if (!dexa__wait_consumes(w, winner, i)) continue;
    dexa__buf_puts(b, first ? "{\"id\":" : ",{\"id\":");
    first = 0;
    dexa__buf_json_cstr(b, w->conds[i].id);
    dexa__buf_puts(b, ",\"channel\":");
    dexa__buf_json_cstr(b, w->conds[i].channel);
    dexa__buf_printf(b, ",\"count\":%lld}", (long long)w->conds[i].take);
  }
  dexa__buf_puts(b, "],\"channels\":[");
  put_ids(b, w, 0);
  dexa__buf_puts(b, "],\"timers\":[");
  first = 1;
  for (size_t i = 0; i < w->n; i++) {
    const dexa__wait_cond *c = &w->conds[i];
    if (c->channel) continue;
    dexa__buf_puts(b, first ? "{\"id\":" : ",{\"id\":");
    first = 0;
    dexa__buf_json_cstr(b, c->id);
    dexa__buf_printf(b, ",\"timer_ms\":%lld,\"due_ms\":%lld}", (long long)c->timer_ms,
                     (long long)c->deadline);
  }
  int64_t due = dexa__wait_next_due(w);
  if (ready || due == INT64_MAX)
    dexa__buf_puts(b, "],\"next_due_ms\":null}");
  else
    dexa__buf_printf(b, "],\"next_due_ms\":%lld}", (long long)due);
}

DEXA_EXTERN int dexa_wait_evaluate(char **out, size_t *out_len, const char *wait_json,
                                   size_t wait_len, const dexa_wait_state *state) {
  if (out) *out = NULL;
  if (out_len) *out_len = 0;
  if (!out || !state || (wait_len && !wait_json)) return DEXA_E_INVALID_ARG;
  if (state->struct_size < WAIT_STATE_V1_SIZE ||
      !dexa__struct_tail_ok(state, state->struct_size, sizeof *state))
    return DEXA_E_STRUCT_SIZE;
  dexa__wait w;
  int rc = dexa__wait_parse(&w, wait_json, wait_len, state->started_ms);
  if (rc == DEXA_OK) rc = observe(&w, state);
  if (rc == DEXA_OK) {
    size_t winner;
    int ready = dexa__wait_plan(&w, &winner);
    dexa__buf b;
    dexa__buf_init(&b);
    put_answer(&b, &w, ready, winner);
    *out = dexa__buf_steal(&b, out_len);
    dexa__buf_free(&b);
    if (!*out) rc = DEXA_E_NOMEM;
  }
  dexa__wait_free(&w);
  return rc;
}
