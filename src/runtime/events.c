/* The event stream: durable events from the store merged with this
 * process's live deltas, read from a resume token with a long poll.
 *
 * Order: a durable event has the position (seq, 0); a delta emitted while
 * the session's newest durable event was seq has (seq, n), n a runtime-wide
 * counter from 1. Readers get everything after their token's position in
 * that order. Deltas live in a bounded ring and are best effort: the
 * sink never waits for a reader. */
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime_internal.h"
#include "util/buf.h"
#include "util/json_span.h"

void dexa__delta_sink(void *user, const char *json, size_t len) {
  dexa__sink_ctx *s = user;
  if (!s || !json || dexa__json_validate(json, len) != 0) return;
  dexa_runtime *rt = s->rt;
  char *sid = strdup(s->session_id);
  char *copy = malloc(len + 1);
  if (!sid || !copy) {
    free(sid);
    free(copy);
    return;
  }
  memcpy(copy, json, len);
  copy[len] = '\0';
  pthread_mutex_lock(&rt->ring_mu);
  size_t slot = (rt->ring_start + rt->ring_count) % DEXA__RING_SIZE;
  if (rt->ring_count == DEXA__RING_SIZE) {
    free(rt->ring[slot].session_id);
    free(rt->ring[slot].json);
    rt->ring_start = (rt->ring_start + 1) % DEXA__RING_SIZE;
  } else {
    rt->ring_count++;
  }
  rt->ring[slot] = (dexa__delta){sid, s->seq, ++rt->ring_next_n, copy, len};
  pthread_mutex_unlock(&rt->ring_mu);
  pthread_mutex_lock(&rt->mu);
  dexa__session_changed(rt, dexa__session_bucket(s->session_id));
  pthread_mutex_unlock(&rt->mu);
}

void dexa__ring_free(dexa_runtime *rt) {
  for (size_t i = 0; i < rt->ring_count; i++) {
    dexa__delta *d = &rt->ring[(rt->ring_start + i) % DEXA__RING_SIZE];
    free(d->session_id);
    free(d->json);
  }
  rt->ring_count = 0;
}

typedef struct item {
  int64_t seq, n;
  char *json;
  size_t len;
} item;

typedef struct items {
  item *v;
  size_t count, cap;
  int oom;
} items;

static void items_push(items *it, int64_t seq, int64_t n, const char *json, size_t len) {
  if (it->count == it->cap) {
    size_t cap = it->cap ? it->cap * 2 : 16;
    item *p = realloc(it->v, cap * sizeof *p);
    if (!p) {
      it->oom = 1;
      return;
    }
    it->v = p;
    it->cap = cap;
  }
  char *copy = malloc(len + 1);
  if (!copy) {
    it->oom = 1;
    return;
  }
  memcpy(copy, json, len);
  copy[len] = '\0';
  it->v[it->count++] = (item){seq, n, copy, len};
}

static void items_free(items *it) {
  for (size_t i = 0; i < it->count; i++) free(it->v[i].json);
  free(it->v);
  memset(it, 0, sizeof *it);
}

static int visit_event(void *ctx, int64_t seq, const char *json, size_t len) {
  items_push(ctx, seq, 0, json, len);
  return DEXA_OK;
}

static int pos_cmp(const void *a, const void *b) {
  const item *x = a, *y = b;
  if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
  return x->n < y->n ? -1 : (x->n > y->n);
}

static void collect_deltas(dexa_runtime *rt, const char *sid, int64_t seq, int64_t n,
                           items *out) {
  pthread_mutex_lock(&rt->ring_mu);
  for (size_t i = 0; i < rt->ring_count; i++) {
    const dexa__delta *d = &rt->ring[(rt->ring_start + i) % DEXA__RING_SIZE];
    if (strcmp(d->session_id, sid) != 0) continue;
    if (d->seq < seq || (d->seq == seq && d->n <= n)) continue;
    items_push(out, d->seq, d->n, d->json, d->len);
  }
  pthread_mutex_unlock(&rt->ring_mu);
}

/* Everything after (seq, n), sorted, at most max.
 *
 * The deltas first, then the durable events: a delta at (s, k) is emitted
 * by a task claimed once the events up to s were committed, so a store
 * read after it sees them all. In the other order a Step could commit
 * event s and the next Step emit a delta at (s, k) between the two reads:
 * the delta was returned without event s, and the reader's token, past s,
 * lost that event for good (a tool's tool_call_finished under load, just
 * before the model's answer streamed). */
static int collect(dexa_runtime *rt, dexa__store_conn *c, const char *sid, int64_t seq,
                   int64_t n, int32_t max, items *out) {
  collect_deltas(rt, sid, seq, n, out);
  int rc = c->ops->event_read(c, sid, seq, max, visit_event, out);
  if (rc != DEXA_OK) return rc;
  if (out->oom) return DEXA_E_NOMEM;
  if (out->count > 1) qsort(out->v, out->count, sizeof *out->v, pos_cmp);
  while (out->count > (size_t)max) free(out->v[--out->count].json);
  return DEXA_OK;
}

static int write_out(const char *sid, const items *it, int64_t seq, int64_t n, char **out,
                     size_t *out_len) {
  dexa__buf b;
  char tok[64];
  dexa__buf_init(&b);
  dexa__buf_puts(&b, "{\"events\":[");
  for (size_t i = 0; i < it->count; i++) {
    dexa__token_format(tok, sizeof tok, sid, it->v[i].seq, it->v[i].n);
    dexa__buf_puts(&b, i ? ",{\"token\":" : "{\"token\":");
    dexa__buf_json_cstr(&b, tok);
    dexa__buf_puts(&b, ",\"event\":");
    dexa__buf_append(&b, it->v[i].json, it->v[i].len);
    dexa__buf_puts(&b, it->v[i].n ? ",\"live\":true}" : "}");
    seq = it->v[i].seq;
    n = it->v[i].n;
  }
  dexa__token_format(tok, sizeof tok, sid, seq, n);
  dexa__buf_puts(&b, "],\"token\":");
  dexa__buf_json_cstr(&b, tok);
  dexa__buf_putc(&b, '}');
  *out = dexa__buf_steal(&b, out_len);
  return *out ? DEXA_OK : DEXA_E_NOMEM;
}

/* The starting position: the token's, but never before the retained head. */
static int start_pos(dexa_runtime *rt, dexa__store_conn *c, const char *sid, const char *token,
                     int64_t *seq, int64_t *n) {
  dexa__session_row s;
  int rc = c->ops->session_get(c, sid, &s);
  if (rc == DEXA_E_NOT_FOUND) dexa__set_errmsg(rt, "read_events %s: no such session", sid);
  if (rc != DEXA_OK) return rc;
  if (!dexa__session_retained(rt, &s, dexa__now(rt))) {
    dexa__session_row_free(&s);
    dexa__set_errmsg(rt, "read_events %s: the session is no longer retained", sid);
    return DEXA_E_NOT_FOUND;
  }
  int64_t before_head = 0, newest = s.event_seq;
  if (rt->events_retained > 0 && s.event_seq > rt->events_retained)
    before_head = s.event_seq - rt->events_retained;
  dexa__session_row_free(&s);
  *seq = before_head;
  *n = 0;
  if (!token || !*token) return DEXA_OK;
  rc = dexa__token_parse(token, sid, seq, n);
  /* A token past the newest event (a store restored from an older backup)
   * would wait for events that may never come: refuse it. */
  if (rc == DEXA_OK && *seq > newest) return DEXA_E_INVALID_RESUME_TOKEN;
  if (rc == DEXA_OK && *seq < before_head) {
    *seq = before_head;
    *n = 0;
  }
  return rc;
}

static int read_loop(dexa_runtime *rt, dexa__store_conn *c, const char *sid, int64_t seq,
                     int64_t n, int32_t max, int64_t timeout_ms, items *it) {
  int64_t deadline = dexa__mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
  for (;;) {
    uint64_t gen = dexa__session_gen(rt, sid);
    int rc = collect(rt, c, sid, seq, n, max, it);
    if (rc != DEXA_OK || it->count) return rc;
    if (dexa__mono_ms() >= deadline) return DEXA_OK;
    dexa__wait_session_change(rt, sid, gen, deadline);
  }
}

DEXA_EXTERN int dexa_runtime_read_events(dexa_runtime *rt, const char *session_id,
                                         const char *resume_token, int32_t max_events,
                                         int64_t timeout_ms, char **out, size_t *out_len) {
  if (out) *out = NULL;
  if (out_len) *out_len = 0;
  if (!rt || !session_id || !out || max_events < 1 || max_events > 1000)
    return DEXA_E_INVALID_ARG;
  dexa__store_conn *c = NULL;
  int rc = dexa__pool_acquire(rt, &c);
  if (rc != DEXA_OK) return rc;
  int64_t seq = 0, n = 0;
  items it = {0};
  rc = start_pos(rt, c, session_id, resume_token, &seq, &n);
  if (rc == DEXA_OK) rc = read_loop(rt, c, session_id, seq, n, max_events, timeout_ms, &it);
  dexa__pool_release(rt, c);
  size_t len = 0;
  if (rc == DEXA_OK) rc = write_out(session_id, &it, seq, n, out, &len);
  if (out_len) *out_len = len;
  items_free(&it);
  /* start_pos told why a session is not found when it is no longer retained. */
  if (rc != DEXA_OK && rc != DEXA_E_NOT_FOUND) dexa__set_errmsg(rt, "read_events: %s", dexa_strerror(rc));
  return rc;
}
