/* The lifetime sweep: ends idle sessions and deletes the ones whose
 * retention has passed, in bounded batches, so a store under a workload
 * that starts and abandons sessions forever stays bounded.
 *
 * There is no thread or timer per session: one indexed query finds the
 * sessions idle for longer than session_idle_timeout_ms (sessions.active_ms
 * is their last activity, written at most every touch_step, so the cutoff
 * allows for that lag and a session never ends early), and each is ended
 * in its own transaction by the flow's end_session RPC, exactly as a
 * client would end it. Closed sessions (ended, completed, failed) older
 * than session_retention_ms are then deleted, SWEEP_ROWS rows per
 * transaction at most, so no commit of the sweep holds the store's write
 * lock for long and Steps of other sessions go on between its batches.
 *
 * Worker threads call dexa__sweep_maybe after each claim round: it costs a
 * clock read and an atomic load unless a sweep is due (sweep_interval_ms,
 * on the runtime's clock, so a test's clock drives it), and one thread at
 * a time sweeps. A round that left work schedules the next one at once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime_internal.h"
#include "util/buf.h"

/* Idle sessions ended per round, each in its own transaction. */
#define SWEEP_IDLE 32
/* Expired sessions looked at per round. */
#define SWEEP_LIST 100
/* Rows deleted per transaction, and transactions per round. */
#define SWEEP_ROWS 1000
#define SWEEP_TXNS 4

/* A failure the sweep handles itself (it tries again next round): the
 * runtime's log callback and error message get it. */
static void note(dexa_runtime *rt, const char *kind, const char *what, const char *sid, int rc) {
  char why[400], msg[600];
  snprintf(msg, sizeof msg, "sweep: %s%s%s: %s", what, sid ? " " : "", sid ? sid : "",
           rc ? dexa__store_error(rt, rc, why, sizeof why) : "");
  dexa__log(rt, DEXA_LOG_WARNING, kind, "%s", msg);
  dexa__set_errmsg(rt, "%s", msg);
}

typedef struct id_list {
  char **ids;
  size_t n;
  int oom;
} id_list;

static int list_visit(void *ctx, const dexa__session_row *row) {
  id_list *l = ctx;
  char **ids = realloc(l->ids, (l->n + 1) * sizeof *ids);
  if (!ids) return DEXA_E_NOMEM;
  l->ids = ids;
  ids[l->n] = strdup(row->session_id);
  if (!ids[l->n]) return DEXA_E_NOMEM;
  l->n++;
  return DEXA_OK;
}

static void list_free(id_list *l) {
  for (size_t i = 0; i < l->n; i++) free(l->ids[i]);
  free(l->ids);
  memset(l, 0, sizeof *l);
}

/* The sessions due, read on a pooled connection (no write lock). */
static int list_due(dexa_runtime *rt, int closed, int64_t before, int32_t limit, id_list *out) {
  dexa__store_conn *c = NULL;
  int rc = dexa__pool_acquire(rt, &c);
  if (rc != DEXA_OK) return rc;
  rc = c->ops->begin_read(c);
  if (rc == DEXA_OK) {
    rc = c->ops->session_expired(c, closed, before, limit, list_visit, out);
    c->ops->rollback(c);
  }
  dexa__pool_release(rt, c);
  return rc;
}

typedef struct purge_arg {
  char **ids;
  size_t start, n;  /* in: the sessions left to look at */
  size_t next;      /* out: the first one not finished */
  int64_t cutoff;   /* expired when active_ms < cutoff */
  int64_t rows;     /* out: rows deleted */
  int64_t sessions; /* out: sessions deleted whole */
} purge_arg;

/* One transaction: deletes up to SWEEP_ROWS rows of the listed sessions
 * still expired, in order. Runs again from the same start when its batch
 * is retried, so its counts are reset first. */
static int purge_op(dexa_runtime *rt, dexa__store_conn *c, void *arg) {
  purge_arg *a = arg;
  a->rows = a->sessions = 0;
  a->next = a->start;
  while (a->next < a->n && a->rows < SWEEP_ROWS) {
    const char *sid = a->ids[a->next];
    dexa__session_row s;
    int rc = c->ops->session_get(c, sid, &s);
    if (rc == DEXA_E_NOT_FOUND) {
      a->next++;
      continue;
    }
    if (rc != DEXA_OK) return rc;
    int expired = s.status != DEXA__SESSION_RUNNING && s.active_ms < a->cutoff;
    dexa__session_row_free(&s);
    if (!expired) { /* touched since it was listed */
      a->next++;
      continue;
    }
    dexa__touch_session(rt, sid); /* its readers look again, and find it gone */
    int64_t deleted = 0;
    int gone = 0;
    rc = c->ops->session_purge(c, sid, SWEEP_ROWS - a->rows, &deleted, &gone);
    if (rc != DEXA_OK) return rc;
    a->rows += deleted;
    if (!gone) break; /* the budget ran out inside it: the next transaction goes on */
    a->sessions++;
    a->next++;
  }
  return DEXA_OK;
}

typedef struct sweep_stats {
  int64_t ended, sessions, rows;
  int more;
} sweep_stats;

static int end_idle(dexa_runtime *rt, int64_t now, sweep_stats *st) {
  if (rt->idle_ms <= 0) return DEXA_OK;
  id_list l = {0};
  /* active_ms lags the last activity by less than touch_step. */
  int64_t cutoff = now - rt->idle_ms - rt->touch_step;
  int rc = list_due(rt, 0, cutoff, SWEEP_IDLE, &l);
  if (rc == DEXA_OK && l.n == SWEEP_IDLE) st->more = 1;
  for (size_t i = 0; rc == DEXA_OK && i < l.n; i++) {
    dexa__idle_arg a = {l.ids[i], cutoff, 0, 0, ""};
    rc = dexa__gc_run(rt, dexa__end_idle_op, &a);
    if (rc != DEXA_OK) {
      note(rt, "sweep-end", "cannot end idle session", l.ids[i], rc);
      break;
    }
    if (!a.ended) continue;
    st->ended++;
    /* Only once durable, as for an RPC that interrupts. */
    dexa__interrupt_session(rt, l.ids[i], a.running);
    if (a.errmsg[0]) {
      dexa__log(rt, DEXA_LOG_WARNING, "sweep-close", "sweep: idle session %s closed by the runtime: %s",
                l.ids[i], a.errmsg);
    }
  }
  list_free(&l);
  return rc;
}

static int purge_expired(dexa_runtime *rt, int64_t now, sweep_stats *st) {
  if (rt->retention_ms <= 0) return DEXA_OK;
  id_list l = {0};
  /* Not retained once active_ms <= now - retention (dexa__session_retained). */
  int64_t cutoff = now - rt->retention_ms + 1;
  int rc = list_due(rt, 1, cutoff, SWEEP_LIST, &l);
  purge_arg a = {l.ids, 0, l.n, 0, cutoff, 0, 0};
  int txns = 0;
  while (rc == DEXA_OK && a.start < l.n && txns < SWEEP_TXNS) {
    rc = dexa__gc_run(rt, purge_op, &a);
    txns++;
    if (rc != DEXA_OK) break;
    st->rows += a.rows;
    st->sessions += a.sessions;
    a.start = a.next;
  }
  if (rc == DEXA_OK && (a.start < l.n || l.n == SWEEP_LIST)) st->more = 1;
  if (rc != DEXA_OK) note(rt, "sweep-delete", "cannot delete expired sessions", NULL, rc);
  list_free(&l);
  return rc;
}

static int sweep_round(dexa_runtime *rt, sweep_stats *st) {
  memset(st, 0, sizeof *st);
  int64_t now = dexa__now(rt);
  int rc = end_idle(rt, now, st);
  /* Sessions ended now are deleted in a later round, after their retention. */
  if (rc == DEXA_OK) rc = purge_expired(rt, now, st);
  return rc;
}

void dexa__sweep_maybe(dexa_runtime *rt) {
  if (rt->sweep_interval_ms <= 0 || (rt->idle_ms <= 0 && rt->retention_ms <= 0)) return;
  int64_t now = dexa__now(rt);
  if (now < atomic_load_explicit(&rt->sweep_due, memory_order_relaxed)) return;
  if (atomic_exchange(&rt->sweeping, 1)) return;
  sweep_stats st;
  int rc = sweep_round(rt, &st);
  /* Work left: the next round at once (between the claims of Steps). */
  atomic_store(&rt->sweep_due, rc == DEXA_OK && st.more ? now : now + rt->sweep_interval_ms);
  atomic_store(&rt->sweeping, 0);
}

DEXA_EXTERN int dexa_runtime_sweep(dexa_runtime *rt, char **out, size_t *out_len) {
  if (out) *out = NULL;
  if (out_len) *out_len = 0;
  if (!rt) return DEXA_E_INVALID_ARG;
  if (atomic_exchange(&rt->sweeping, 1)) return DEXA_E_BUSY;
  sweep_stats st;
  int rc = sweep_round(rt, &st);
  atomic_store(&rt->sweeping, 0);
  if (rc != DEXA_OK || !out) return rc;
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_printf(&b, "{\"ended\":%lld,\"deleted_sessions\":%lld,\"deleted_rows\":%lld,\"more\":%s}",
                   (long long)st.ended, (long long)st.sessions, (long long)st.rows,
                   st.more ? "true" : "false");
  *out = dexa__buf_steal(&b, out_len);
  return *out ? DEXA_OK : DEXA_E_NOMEM;
}
