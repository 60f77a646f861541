/* Waits: normalizing a WaitFor's wait (timers made absolute), observing
 * its channels and timers in the store, and consuming what the plan of
 * flow/wait.c (the rules flow.h documents, shared with dexa_wait_evaluate)
 * says when it is satisfied. */
#include <stdlib.h>
#include <string.h>

#include "flow/wait.h"
#include "runtime/runtime_internal.h"
#include "util/buf.h"

static void put_normalized(dexa__buf *b, const dexa__wait *w) {
  dexa__buf_printf(b, "{\"mode\":\"%s\",\"conditions\":[", w->all ? "all" : "any");
  for (size_t i = 0; i < w->n; i++) {
    const dexa__wait_cond *c = &w->conds[i];
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

static int put_value(void *ctx, int64_t seq, const char *json, size_t len) {
  dexa__buf *b = ctx;
  if (b->len && b->data[b->len - 1] != '[') dexa__buf_putc(b, ',');
  dexa__buf_append(b, json, len);
  return DEXA_OK;
}

/* Consumes the planned messages and writes the condition results. */
static int consume(dexa__store_conn *c, const char *sid, const dexa__wait *w, size_t winner,
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
    const dexa__wait_cond *cd = &w->conds[i];
    if (!dexa__wait_consumes(w, winner, i)) continue;
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

static int eval_view(dexa__store_conn *c, dexa__step_row *row, dexa__wait *w, int64_t now) {
  for (size_t i = 0; i < w->n; i++) {
    dexa__wait_cond *cd = &w->conds[i];
    cd->fired = !cd->channel && cd->deadline <= now;
    if (!cd->channel) continue;
    int rc = c->ops->chan_count(c, row->session_id, cd->channel, strlen(cd->channel),
                                &cd->count);
    if (rc != DEXA_OK) return rc;
  }
  size_t winner;
  if (!dexa__wait_plan(w, &winner)) {
    row->due_ms = dexa__wait_next_due(w); /* INT64_MAX is DEXA__NO_DUE */
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
  dexa__wait w;
  int rc = dexa__wait_parse(&w, row->wait, row->wait ? row->wait_len : 0, now);
  if (rc == DEXA_OK) rc = eval_view(c, row, &w, now);
  else if (rc == DEXA_E_INVALID_JSON) rc = DEXA_E_CORRUPT; /* it was stored valid */
  dexa__wait_free(&w);
  return rc;
}

int dexa__wait_set(dexa_runtime *rt, dexa__store_conn *c, dexa__step_row *row,
                   const char *wait, size_t wait_len, int64_t now) {
  dexa__wait w; /* no wait (NULL, null): the empty one, ready at once */
  int rc = dexa__wait_parse(&w, wait, wait_len, now);
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
  dexa__wait_free(&w);
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
