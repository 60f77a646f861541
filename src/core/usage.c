/* Token usage sums (see usage.h). AgentUsage is one small attribute,
 * rewritten once per model call: {"session":{sums},"turn":{"turn":N,sums}}
 * where sums are calls, the five token counts, cost_usd (when some call had
 * a known cost) and cache_hit_rate (cached_input_tokens / input_tokens). */
#include "core/usage.h"

#include <stdio.h>
#include <string.h>

static const char *const counts[] = {"input_tokens", "cached_input_tokens", "cache_write_tokens",
                                     "output_tokens", "reasoning_tokens"};
#define NCOUNTS (sizeof counts / sizeof counts[0])

typedef struct sums {
  int64_t calls;
  int64_t n[NCOUNTS];
  double cost;
  int has_cost;
} sums;

static void reply_counts(const dexa_model_reply *r, int64_t *n) {
  n[0] = r->input_tokens;
  n[1] = r->cached_input_tokens;
  n[2] = r->cache_write_tokens;
  n[3] = r->output_tokens;
  n[4] = r->reasoning_tokens;
}

/* lead, then name":value (no printf: see dexa__buf_json_i64) */
static void put_count(dexa__buf *b, const char *lead, const char *name, int64_t v) {
  dexa__buf_puts(b, lead);
  dexa__buf_puts(b, name);
  dexa__buf_append(b, "\":", 2);
  dexa__buf_json_i64(b, v);
}

void dexa__usage_put(dexa__buf *b, const dexa_model_reply *r) {
  int64_t n[NCOUNTS];
  reply_counts(r, n);
  for (size_t i = 0; i < NCOUNTS; i++) put_count(b, i ? ",\"" : "{\"", counts[i], n[i]);
  if (r->cost_usd >= 0) dexa__buf_printf(b, ",\"cost_usd\":%.9g", r->cost_usd);
  dexa__buf_putc(b, '}');
}

static void sums_read(const cJSON *o, sums *s) {
  memset(s, 0, sizeof *s);
  s->calls = dexa__json_int(cJSON_GetObjectItemCaseSensitive(o, "calls"), 0);
  for (size_t i = 0; i < NCOUNTS; i++)
    s->n[i] = dexa__json_int(cJSON_GetObjectItemCaseSensitive(o, counts[i]), 0);
  const cJSON *cost = cJSON_GetObjectItemCaseSensitive(o, "cost_usd");
  if (cJSON_IsNumber(cost) && cost->valuedouble >= 0) {
    s->cost = cost->valuedouble;
    s->has_cost = 1;
  }
}

static void sums_add(sums *s, const dexa_model_reply *r) {
  int64_t n[NCOUNTS];
  s->calls++;
  if (!r->has_usage) return;
  reply_counts(r, n);
  for (size_t i = 0; i < NCOUNTS; i++) s->n[i] += n[i];
  if (r->cost_usd >= 0) {
    s->cost += r->cost_usd;
    s->has_cost = 1;
  }
}

static void sums_put(dexa__buf *b, const sums *s) {
  put_count(b, "\"", "calls", s->calls);
  for (size_t i = 0; i < NCOUNTS; i++) put_count(b, ",\"", counts[i], s->n[i]);
  if (s->n[0] > 0)
    dexa__buf_printf(b, ",\"cache_hit_rate\":%.4f", (double)s->n[1] / (double)s->n[0]);
  if (s->has_cost) dexa__buf_printf(b, ",\"cost_usd\":%.9g", s->cost);
}

int dexa__usage_add(dexa__ctx *c, int64_t turn, const dexa_model_reply *r) {
  cJSON *o;
  int rc = dexa__attr_get_json(c, ATTR_USAGE, &o);
  if (rc != DEXA_OK) return rc;
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "turn");
  sums session, of_turn;
  sums_read(cJSON_GetObjectItemCaseSensitive(o, "session"), &session);
  sums_read(t, &of_turn);
  if (dexa__json_int(cJSON_GetObjectItemCaseSensitive(t, "turn"), -1) != turn)
    memset(&of_turn, 0, sizeof of_turn);
  cJSON_Delete(o);
  sums_add(&session, r);
  sums_add(&of_turn, r);
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_puts(&b, "{\"session\":{");
  sums_put(&b, &session);
  put_count(&b, "},\"turn\":{\"", "turn", turn);
  dexa__buf_putc(&b, ',');
  sums_put(&b, &of_turn);
  dexa__buf_puts(&b, "}}");
  rc = b.oom ? DEXA_E_NOMEM : dexa__attr_put_raw(c, ATTR_USAGE, b.data, b.len);
  dexa__buf_free(&b);
  return rc;
}

int dexa__usage_put_turn(dexa__ctx *c, int64_t turn, dexa__buf *b) {
  cJSON *o;
  int rc = dexa__attr_get_json(c, ATTR_USAGE, &o);
  if (rc != DEXA_OK) return rc;
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "turn");
  if (t && dexa__json_int(cJSON_GetObjectItemCaseSensitive(t, "turn"), -1) == turn) {
    sums s;
    sums_read(t, &s);
    dexa__buf_puts(b, ",\"usage\":{");
    sums_put(b, &s);
    dexa__buf_putc(b, '}');
  }
  cJSON_Delete(o);
  return DEXA_OK;
}
