/* Applying a dispatch result to the store: attribute writes, channel
 * publishes, durable events, and the wait or the decision. Always inside the
 * caller's write transaction, so a result is applied entirely or not at all. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime_internal.h"
#include "util/buf.h"

static int apply_writes(dexa__store_conn *c, const char *sid, const dexa_result *res) {
  size_t n = dexa_result_write_count(res);
  for (size_t i = 0; i < n; i++) {
    const char *k, *v;
    size_t kl, vl;
    int rc = dexa_result_write_at(res, i, &k, &kl, &v, &vl);
    if (rc == DEXA_OK)
      rc = v ? c->ops->attr_put(c, sid, k, kl, v, vl) : c->ops->attr_delete(c, sid, k, kl);
    if (rc != DEXA_OK) return rc;
  }
  return DEXA_OK;
}

static int apply_publishes(dexa__store_conn *c, const char *sid, const dexa_result *res,
                           int *published) {
  size_t n = dexa_result_publish_count(res);
  for (size_t i = 0; i < n; i++) {
    const char *ch, *v;
    size_t cl, vl;
    int rc = dexa_result_publish_at(res, i, &ch, &cl, &v, &vl);
    if (rc == DEXA_OK) rc = c->ops->chan_push(c, sid, ch, cl, v, vl);
    if (rc != DEXA_OK) return rc;
    *published = 1;
  }
  return DEXA_OK;
}

/* Appends one event at seq; trims in steps of 64 so retention costs one
 * delete per 64 appends. */
static int append_at(dexa_runtime *rt, dexa__store_conn *c, const char *sid, int64_t seq,
                     const char *json, size_t len) {
  int rc = c->ops->event_append(c, sid, seq, json, len);
  if (rc == DEXA_OK && rt->events_retained > 0 && seq > rt->events_retained && seq % 64 == 0)
    rc = c->ops->event_trim(c, sid, seq - rt->events_retained);
  return rc;
}

/* The result's n > 1 events at once (store.h: event_append_batch), then
 * the trim append_at would have made at the multiple of 64 among them. */
static int append_batch(dexa_runtime *rt, dexa__store_conn *c, const char *sid, int64_t last,
                        const dexa_result *res, size_t n) {
  const char **json = malloc(n * sizeof *json);
  size_t *len = malloc(n * sizeof *len);
  int rc = json && len ? DEXA_OK : DEXA_E_NOMEM;
  for (size_t i = 0; i < n && rc == DEXA_OK; i++) rc = dexa_result_event_at(res, i, &json[i], &len[i]);
  if (rc == DEXA_OK) rc = c->ops->event_append_batch(c, sid, last, json, len, n);
  free(json);
  free(len);
  int64_t at = last - last % 64; /* the last multiple of 64 in the batch, if any */
  if (rc == DEXA_OK && rt->events_retained > 0 && at > last - (int64_t)n &&
      at > rt->events_retained)
    rc = c->ops->event_trim(c, sid, at - rt->events_retained);
  return rc;
}

/* Appends the result's events with consecutive sequence numbers taken in
 * one update of the session row. */
static int apply_events(dexa_runtime *rt, dexa__store_conn *c, const char *sid,
                        const dexa_result *res) {
  size_t n = dexa_result_event_count(res);
  if (n == 0) return DEXA_OK;
  int64_t last = 0;
  int rc = c->ops->session_bump_events(c, sid, (int64_t)n, &last);
  if (rc == DEXA_OK && n > 1 && c->ops->event_append_batch)
    return append_batch(rt, c, sid, last, res, n);
  for (size_t i = 0; i < n && rc == DEXA_OK; i++) {
    const char *json;
    size_t len;
    int64_t seq = last - (int64_t)n + 1 + (int64_t)i;
    rc = dexa_result_event_at(res, i, &json, &len);
    if (rc == DEXA_OK) rc = append_at(rt, c, sid, seq, json, len);
  }
  return rc;
}

int dexa__event_append(dexa_runtime *rt, dexa__store_conn *c, const char *sid, const char *json,
                       size_t len) {
  int64_t seq = 0;
  int rc = c->ops->session_bump_events(c, sid, 1, &seq);
  return rc == DEXA_OK ? append_at(rt, c, sid, seq, json, len) : rc;
}

int dexa__apply_effects(dexa_runtime *rt, dexa__store_conn *c, const char *sid,
                        const dexa_result *res, int *published) {
  int rc = apply_writes(c, sid, res);
  if (rc == DEXA_OK) rc = apply_publishes(c, sid, res, published);
  if (rc == DEXA_OK) rc = apply_events(rt, c, sid, res);
  return rc;
}

/* Every "next" entry names a known Step and has a sane shape. */
static int check_next(dexa_runtime *rt, const cJSON *next) {
  if (next && !cJSON_IsArray(next) && !cJSON_IsNull(next)) return DEXA_E_INVALID_JSON;
  const cJSON *m;
  const cJSON *list = cJSON_IsArray(next) ? next : NULL;
  cJSON_ArrayForEach(m, list) {
    const cJSON *step = cJSON_GetObjectItemCaseSensitive(m, "step");
    const cJSON *opts = cJSON_GetObjectItemCaseSensitive(m, "options");
    if (!cJSON_IsString(step)) return DEXA_E_INVALID_JSON;
    if (!dexa__flow_step(&rt->desc, step->valuestring)) return DEXA_E_UNKNOWN_STEP;
    if (opts && !cJSON_IsObject(opts) && !cJSON_IsNull(opts)) return DEXA_E_INVALID_JSON;
  }
  return DEXA_OK;
}

static int enqueue_next(dexa_runtime *rt, dexa__store_conn *c, const char *sid,
                        const cJSON *m, int64_t now) {
  const cJSON *step = cJSON_GetObjectItemCaseSensitive(m, "step");
  const cJSON *input = cJSON_GetObjectItemCaseSensitive(m, "input");
  const cJSON *opts = cJSON_GetObjectItemCaseSensitive(m, "options");
  char *in = input ? cJSON_PrintUnformatted(input) : NULL;
  char *op = cJSON_IsObject(opts) ? cJSON_PrintUnformatted(opts) : NULL;
  int rc = (input && !in) || (cJSON_IsObject(opts) && !op) ? DEXA_E_NOMEM : DEXA_OK;
  if (rc == DEXA_OK)
    rc = dexa__enqueue(rt, c, sid, step->valuestring, in, in ? strlen(in) : 0, op,
                       op ? strlen(op) : 0, NULL, 0, now);
  cJSON_free(in);
  cJSON_free(op);
  return rc;
}

static int apply_cancels(dexa__store_conn *c, const char *sid, const cJSON *cancel,
                         const char *from_exec) {
  if (cancel && !cJSON_IsArray(cancel) && !cJSON_IsNull(cancel)) return DEXA_E_INVALID_JSON;
  const cJSON *t;
  const cJSON *list = cJSON_IsArray(cancel) ? cancel : NULL;
  cJSON_ArrayForEach(t, list) {
    if (!cJSON_IsString(t)) return DEXA_E_INVALID_JSON;
    int rc = dexa__cancel_type(c, sid, t->valuestring, from_exec);
    if (rc != DEXA_OK) return rc;
  }
  return DEXA_OK;
}

int dexa__apply_decision(dexa_runtime *rt, dexa__store_conn *c, const char *sid,
                         const char *decision, size_t len, const char *from_exec, int32_t closed,
                         int64_t now) {
  if (!decision || len == 0) return DEXA_OK;
  cJSON *d = cJSON_ParseWithLength(decision, len);
  int rc = DEXA_OK;
  if (!d || cJSON_IsNull(d)) goto cleanup;
  const cJSON *next = cJSON_GetObjectItemCaseSensitive(d, "next");
  const cJSON *complete = cJSON_GetObjectItemCaseSensitive(d, "complete");
  rc = cJSON_IsObject(d) ? check_next(rt, next) : DEXA_E_INVALID_JSON;
  if (rc == DEXA_OK) rc = apply_cancels(c, sid, cJSON_GetObjectItemCaseSensitive(d, "cancel"), from_exec);
  if (rc != DEXA_OK) goto cleanup;
  if (cJSON_IsTrue(complete)) {
    rc = dexa__session_close(rt, c, sid, closed, from_exec);
    goto cleanup;
  }
  dexa__session_row s;
  rc = c->ops->session_get(c, sid, &s);
  int running = rc == DEXA_OK && s.status == DEXA__SESSION_RUNNING;
  dexa__session_row_free(&s);
  const cJSON *m;
  /* A closed session takes no further Steps. */
  const cJSON *list = (rc == DEXA_OK && running && cJSON_IsArray(next)) ? next : NULL;
  cJSON_ArrayForEach(m, list) {
    rc = enqueue_next(rt, c, sid, m, now);
    if (rc != DEXA_OK) break;
  }
cleanup:
  if (!d) rc = DEXA_E_INVALID_JSON;
  cJSON_Delete(d);
  return rc;
}

static int apply_step(dexa_runtime *rt, dexa__store_conn *c, dexa__step_row *row,
                      const dexa_result *res, int64_t now) {
  int published = 0;
  int rc = dexa__apply_effects(rt, c, row->session_id, res, &published);
  const char *doc = NULL;
  size_t len = 0;
  if (rc != DEXA_OK) return rc;
  if (row->method == DEXA_CALL_WAIT_FOR) {
    dexa_result_wait(res, &doc, &len);
    rc = dexa__wait_set(rt, c, row, doc, len, now);
  } else {
    dexa_result_decision(res, &doc, &len);
    rc = c->ops->step_delete(c, row->session_id, row->exec_id);
    if (rc == DEXA_OK)
      rc = dexa__apply_decision(rt, c, row->session_id, doc, len, row->exec_id,
                                DEXA__SESSION_COMPLETED, now);
  }
  if (rc == DEXA_OK && published) rc = dexa__wait_eval_session(rt, c, row->session_id, now);
  return rc;
}

int dexa__apply_step_result(dexa_runtime *rt, dexa__store_conn *c, dexa__step_row *row,
                            const dexa_result *res, int64_t now) {
  int rc = c->ops->savepoint(c);
  if (rc != DEXA_OK) return rc;
  rc = apply_step(rt, c, row, res, now);
  if (rc == DEXA_OK) rc = dexa__session_active(rt, c, row->session_id, now);
  if (rc == DEXA_OK) return c->ops->release(c);
  int rb = c->ops->rollback_to(c);
  return rb != DEXA_OK ? rb : rc;
}
