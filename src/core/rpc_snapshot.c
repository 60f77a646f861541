/* snapshot: the durable view of a session, the truth a client reconciles
 * with (events are best effort): model, turn, plan, the newest 200 messages,
 * the queue, the calls waiting for approval, an answer or a timer, a pending
 * steer or stop, and the compaction summary. The runtime adds the resume
 * token of the newest event. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "util/json_span.h"

/* Keeps copies of the newest `cap` values seen by a scan, oldest first. */
typedef struct ring {
  char **items;
  size_t *lens;
  size_t cap;
  size_t seen;
  int oom;
  char bad[128]; /* the key of a damaged value */
} ring;

static int ring_visit(void *ctx, const char *key, size_t key_len, const char *value,
                      size_t value_len) {
  ring *r = ctx;
  if (dexa__json_validate(value, value_len) != 0) {
    snprintf(r->bad, sizeof r->bad, "%.*s", (int)(key_len < 120 ? key_len : 120), key);
    return DEXA_E_CORRUPT;
  }
  size_t slot = r->seen % r->cap;
  char *copy = malloc(value_len + 1);
  if (!copy) {
    r->oom = 1;
    return DEXA_E_NOMEM;
  }
  memcpy(copy, value, value_len);
  copy[value_len] = '\0';
  free(r->items[slot]);
  r->items[slot] = copy;
  r->lens[slot] = value_len;
  r->seen++;
  return 0;
}

static void ring_put(dexa__buf *b, const ring *r) {
  size_t n = r->seen < r->cap ? r->seen : r->cap;
  size_t start = r->seen < r->cap ? 0 : r->seen % r->cap;
  dexa__buf_putc(b, '[');
  for (size_t i = 0; i < n; i++) {
    size_t slot = (start + i) % r->cap;
    if (i) dexa__buf_putc(b, ',');
    dexa__buf_append(b, r->items[slot], r->lens[slot]);
  }
  dexa__buf_putc(b, ']');
}

static void ring_free(ring *r) {
  for (size_t i = 0; r->items && i < r->cap; i++) free(r->items[i]);
  free(r->items);
  free(r->lens);
}

/* Appends "name":[newest `cap` values under prefix]. */
static int put_newest(dexa__ctx *c, dexa__buf *b, const char *name, const char *prefix,
                      size_t cap) {
  ring r = {calloc(cap, sizeof(char *)), calloc(cap, sizeof(size_t)), cap, 0, 0, ""};
  int rc = (!r.items || !r.lens) ? DEXA_E_NOMEM : dexa__attr_scan(c, prefix, ring_visit, &r);
  if (rc == DEXA_OK && r.oom) rc = DEXA_E_NOMEM;
  if (rc == DEXA_E_CORRUPT && r.bad[0])
    dexa__result_failf(c->result, rc, "attribute %s is damaged: its value is not JSON", r.bad);
  if (rc == DEXA_OK) {
    dexa__buf_printf(b, ",\"%s\":", name);
    ring_put(b, &r);
  }
  ring_free(&r);
  return rc;
}

static int put_attr(dexa__ctx *c, dexa__buf *b, const char *name, const char *key) {
  const char *v;
  size_t n;
  int rc = dexa__attr_get(c, key, &v, &n);
  dexa__buf_printf(b, ",\"%s\":", name);
  if (rc == DEXA_E_NOT_FOUND) {
    dexa__buf_puts(b, "null");
    return DEXA_OK;
  }
  if (rc == DEXA_OK && dexa__json_validate(v, n) != 0)
    rc = dexa__result_failf(c->result, DEXA_E_CORRUPT,
                            "attribute %s is damaged: its value is not JSON", key);
  if (rc == DEXA_OK) dexa__buf_append(b, v, n);
  return rc;
}

int dexa__rpc_snapshot(dexa__ctx *c) {
  const char *v;
  size_t n;
  int rc = dexa__attr_get(c, ATTR_SESSION, &v, &n);
  if (rc == DEXA_E_NOT_FOUND)
    return dexa__result_failf(c->result, DEXA_E_NOT_FOUND, "no session \"%.100s\"", c->call->session_id);
  if (rc != DEXA_OK) return rc;
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_puts(&b, "{\"session_id\":");
  dexa__buf_json_cstr(&b, c->call->session_id);
  rc = put_attr(c, &b, "session", ATTR_SESSION);
  if (rc == DEXA_OK) rc = put_attr(c, &b, "turn", ATTR_TURN);
  if (rc == DEXA_OK) rc = put_attr(c, &b, "transcript", ATTR_TRANSCRIPT);
  if (rc == DEXA_OK) rc = put_attr(c, &b, "plan", ATTR_PLAN);
  if (rc == DEXA_OK) rc = put_newest(c, &b, "messages", ATTR_MESSAGES, SNAPSHOT_MESSAGES);
  if (rc == DEXA_OK) rc = put_newest(c, &b, "queue", ATTR_QUEUED_MESSAGES, 1000);
  if (rc == DEXA_OK) rc = put_newest(c, &b, "pending", ATTR_PENDING_CALLS, 1000);
  if (rc == DEXA_OK) rc = put_attr(c, &b, "control", ATTR_TURN_CONTROL);
  if (rc == DEXA_OK) rc = put_attr(c, &b, "summary", ATTR_CONTEXT_SUMMARY);
  if (rc == DEXA_OK) rc = put_attr(c, &b, "usage", ATTR_USAGE);
  if (rc == DEXA_OK) rc = put_attr(c, &b, "ended", ATTR_SESSION_END);
  dexa__buf_putc(&b, '}');
  if (rc == DEXA_OK) rc = b.oom ? DEXA_E_NOMEM : dexa__result_set_response(c->result, b.data, b.len);
  dexa__buf_free(&b);
  return rc;
}
