/* Waits: normalizing a WaitFor's wait (timers made absolute) and deciding
 * when it is satisfied, as flow.h documents: "all" needs every condition;
 * "any" tries timers first, then channels, in declaration order, and only
 * the winner consumes. Several conditions on one channel share its queue:
 * every minimum is reserved first, the rest is handed out in order. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime_internal.h"
#include "util/json_num.h"
#include "util/buf.h"
#include "util/json_span.h"

typedef struct cond {
  const char *id;
  const char *channel; /* NULL for a timer */
  int64_t min, max;    /* max < 0: everything queued */
  int64_t deadline;    /* timers */
  int64_t count;       /* messages queued on the channel */
  int64_t take;
  int fired;
} cond;

typedef struct wait_view {
  cJSON *root;
  int all;
  cond *conds;
  size_t n;
} wait_view;

static void view_free(wait_view *w) {
  cJSON_Delete(w->root);
  free(w->conds);
  memset(w, 0, sizeof *w);
}

static int int_member(const cJSON *o, const char *k, int64_t dflt, int64_t *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  if (!v || cJSON_IsNull(v)) {
    *out = dflt;
    return DEXA_OK;
  }
  if (!dexa__json_exact_int(v, out) || *out < 0) return DEXA_E_INVALID_JSON;
  return DEXA_OK;
}

/* Reads one condition; timer_ms (WaitFor's form) or deadline_ms (stored). */
static int read_cond(const cJSON *o, int64_t now, cond *c) {
  memset(c, 0, sizeof *c);
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
  const cJSON *ch = cJSON_GetObjectItemCaseSensitive(o, "channel");
  if (!cJSON_IsObject(o) || !cJSON_IsString(id)) return DEXA_E_INVALID_JSON;
  c->id = id->valuestring;
  if (cJSON_IsString(ch)) {
    c->channel = ch->valuestring;
    int rc = int_member(o, "min", 1, &c->min);
    if (rc == DEXA_OK) rc = int_member(o, "max", -1, &c->max);
    if (rc == DEXA_OK && c->max >= 0 && c->max < c->min) rc = DEXA_E_INVALID_JSON;
    return rc;
  }
  int64_t ms = -1;
  if (int_member(o, "deadline_ms", -1, &c->deadline) != DEXA_OK) return DEXA_E_INVALID_JSON;
  if (c->deadline >= 0) return DEXA_OK;
  if (int_member(o, "timer_ms", -1, &ms) != DEXA_OK || ms < 0) return DEXA_E_INVALID_JSON;
  c->deadline = now + ms;
  return DEXA_OK;
}

static int view_parse(wait_view *w, const char *json, size_t len, int64_t now) {
  memset(w, 0, sizeof *w);
  w->root = cJSON_ParseWithLength(json, len);
  if (!cJSON_IsObject(w->root)) return DEXA_E_INVALID_JSON;
  const cJSON *mode = cJSON_GetObjectItemCaseSensitive(w->root, "mode");
  if (mode && !cJSON_IsString(mode)) return DEXA_E_INVALID_JSON;
  w->all = !mode || strcmp(mode->valuestring, "all") == 0;
  if (mode && !w->all && strcmp(mode->valuestring, "any") != 0) return DEXA_E_INVALID_JSON;
  const cJSON *conds = cJSON_GetObjectItemCaseSensitive(w->root, "conditions");
  if (conds && !cJSON_IsArray(conds) && !cJSON_IsNull(conds)) return DEXA_E_INVALID_JSON;
  int n = cJSON_IsArray(conds) ? cJSON_GetArraySize(conds) : 0;
  w->conds = calloc(n ? (size_t)n : 1, sizeof *w->conds);
  if (!w->conds) return DEXA_E_NOMEM;
  const cJSON *o;
  const cJSON *list = n ? conds : NULL;
  cJSON_ArrayForEach(o, list) {
    int rc = read_cond(o, now, &w->conds[w->n]);
    if (rc != DEXA_OK) return rc;
    w->n++;
  }
  return DEXA_OK;
}

static void put_normalized(dexa__buf *b, const wait_view *w) {
  dexa__buf_printf(b, "{\"mode\":\"%s\",\"conditions\":[", w->all ? "all" : "any");
  for (size_t i = 0; i < w->n; i++) {
    const cond *c = &w->conds[i];
    dexa__buf_puts(b, i ? ",{\"id\":" : "{\"id\":");
    dexa__buf_json_cstr(b, c->id);
    if (c->channel) {
      dexa__buf_puts(b, ",\"channel\":");
      dexa__buf_json_cstr(b, c->channel);
      dexa__buf_printf(b, ",\"min\":%lld", (long long)c->min);
      if (c->max >= 0) dexa__buf_printf(b, ",\"max\":%lld", (long long)c->max);
    } else {
      dexa__buf_printf(b, ",\"deadline_ms\":%lld", (long long)c->deadline);
    }
    dexa__buf_putc(b, '}');
  }
  dexa__buf_puts(b, "]}");
}

static int same_channel(const cond *a, const cond *b) {
  return a->channel && b->channel && strcmp(a->channel, b->channel) == 0;
}

/* "all": every timer fired and every channel's minimums fit its queue;
 * then the remaining messages go out in declaration order. */
static int plan_all(wait_view *w) {
  for (size_t i = 0; i < w->n; i++) {
    cond *c = &w->conds[i];
    if (!c->channel && !c->fired) return 0;
    if (!c->channel) continue;
    int64_t need = 0;
    for (size_t j = 0; j < w->n; j++)
      if (same_channel(c, &w->conds[j])) need += w->conds[j].min;
    if (c->count < need) return 0;
  }
  for (size_t i = 0; i < w->n; i++) {
    cond *c = &w->conds[i];
    if (!c->channel) continue;
    int64_t avail = c->count;
    for (size_t j = 0; j < w->n; j++)
      if (same_channel(c, &w->conds[j])) avail -= j < i ? w->conds[j].take : w->conds[j].min;
    int64_t extra = c->max < 0 ? avail : (c->max - c->min < avail ? c->max - c->min : avail);
    c->take = c->min + (extra > 0 ? extra : 0);
  }
  return 1;
}

/* "any": the first ready candidate, timers first; returns its index + 1. */
static size_t plan_any(wait_view *w) {
  for (size_t i = 0; i < w->n; i++)
    if (!w->conds[i].channel && w->conds[i].fired) return i + 1;
  for (size_t i = 0; i < w->n; i++) {
    cond *c = &w->conds[i];
    if (!c->channel || c->count < c->min) continue;
    c->take = c->max < 0 || c->count < c->max ? c->count : c->max;
    return i + 1;
  }
  return 0;
}

static int put_value(void *ctx, int64_t seq, const char *json, size_t len) {
  dexa__buf *b = ctx;
  if (b->len && b->data[b->len - 1] != '[') dexa__buf_putc(b, ',');
  dexa__buf_append(b, json, len);
  return DEXA_OK;
}

/* Consumes the planned messages and writes the condition results. */
static int consume(dexa__store_conn *c, const char *sid, const wait_view *w, size_t winner,
                   dexa__buf *out) {
  dexa__buf_puts(out, "{\"fired\":[");
  int first = 1;
  for (size_t i = 0; i < w->n; i++) {
    if (w->conds[i].channel || !w->conds[i].fired) continue;
    if (!first) dexa__buf_putc(out, ',');
    dexa__buf_json_cstr(out, w->conds[i].id);
    first = 0;
  }
  dexa__buf_puts(out, "],\"channels\":{");
  first = 1;
  for (size_t i = 0; i < w->n; i++) {
    const cond *cd = &w->conds[i];
    if (!cd->channel || (!w->all && winner != i + 1)) continue;
    if (!first) dexa__buf_putc(out, ',');
    first = 0;
    dexa__buf_json_cstr(out, cd->id);
    dexa__buf_puts(out, ":[");
    if (cd->take > 0) {
      int rc = c->ops->chan_take(c, sid, cd->channel, strlen(cd->channel), cd->take, put_value,
                                 out);
      if (rc != DEXA_OK) return rc;
    }
    dexa__buf_putc(out, ']');
  }
  dexa__buf_puts(out, "}}");
  return out->oom ? DEXA_E_NOMEM : DEXA_OK;
}

static int64_t next_deadline(const wait_view *w) {
  int64_t due = DEXA__NO_DUE;
  for (size_t i = 0; i < w->n; i++)
    if (!w->conds[i].channel && !w->conds[i].fired && w->conds[i].deadline < due)
      due = w->conds[i].deadline;
  return due;
}

static void make_ready(dexa__step_row *row, char *conditions, size_t len, int64_t now) {
  free(row->conditions);
  row->conditions = conditions;
  row->conditions_len = len;
  row->state = DEXA__STEP_READY;
  row->method = DEXA_CALL_EXECUTE;
  row->attempt = 0;
  row->due_ms = now;
  dexa__row_set(&row->lease_owner, NULL, NULL, 0);
}

static int eval_view(dexa__store_conn *c, dexa__step_row *row, wait_view *w, int64_t now) {
  for (size_t i = 0; i < w->n; i++) {
    cond *cd = &w->conds[i];
    cd->fired = !cd->channel && cd->deadline <= now;
    if (!cd->channel) continue;
    int rc = c->ops->chan_count(c, row->session_id, cd->channel, strlen(cd->channel),
                                &cd->count);
    if (rc != DEXA_OK) return rc;
  }
  size_t winner = w->all ? (size_t)plan_all(w) : plan_any(w);
  if (w->n == 0) winner = 1;
  if (!winner) {
    row->due_ms = next_deadline(w);
    return c->ops->step_update(c, row);
  }
  dexa__buf out;
  dexa__buf_init(&out);
  int rc = consume(c, row->session_id, w, winner, &out);
  if (rc != DEXA_OK) {
    dexa__buf_free(&out);
    return rc;
  }
  size_t len = 0;
  char *conds = dexa__buf_steal(&out, &len);
  if (!conds) return DEXA_E_NOMEM;
  make_ready(row, conds, len, now);
  return c->ops->step_update(c, row);
}

int dexa__wait_eval(dexa_runtime *rt, dexa__store_conn *c, dexa__step_row *row, int64_t now) {
  wait_view w;
  int rc = view_parse(&w, row->wait ? row->wait : "{}", row->wait ? row->wait_len : 2, now);
  if (rc == DEXA_OK) rc = eval_view(c, row, &w, now);
  else rc = DEXA_E_CORRUPT;
  view_free(&w);
  return rc;
}

int dexa__wait_set(dexa_runtime *rt, dexa__store_conn *c, dexa__step_row *row,
                   const char *wait, size_t wait_len, int64_t now) {
  if (wait) dexa__json_trim(&wait, &wait_len);
  if (!wait || wait_len == 0 || (wait_len == 4 && memcmp(wait, "null", 4) == 0)) {
    wait = "{}";
    wait_len = 2;
  }
  wait_view w;
  int rc = view_parse(&w, wait, wait_len, now);
  dexa__buf b;
  dexa__buf_init(&b);
  if (rc == DEXA_OK) {
    put_normalized(&b, &w);
    size_t len = 0;
    char *norm = dexa__buf_steal(&b, &len);
    if (!norm) rc = DEXA_E_NOMEM;
    free(row->wait);
    row->wait = norm;
    row->wait_len = len;
  }
  if (rc == DEXA_OK) {
    row->state = DEXA__STEP_WAITING;
    row->attempt = 0;
    dexa__row_set(&row->lease_owner, NULL, NULL, 0);
    rc = eval_view(c, row, &w, now);
  }
  dexa__buf_free(&b);
  view_free(&w);
  return rc;
}

int dexa__wait_eval_session(dexa_runtime *rt, dexa__store_conn *c, const char *sid,
                            int64_t now) {
  dexa__step_row *rows = NULL;
  size_t n = 0;
  int rc = c->ops->step_list(c, sid, DEXA__STEP_WAITING, &rows, &n);
  for (size_t i = 0; rc == DEXA_OK && i < n; i++) rc = dexa__wait_eval(rt, c, &rows[i], now);
  dexa__step_rows_free(rows, n);
  return rc;
}
