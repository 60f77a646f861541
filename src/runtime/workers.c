/* Worker threads (dexa_runtime_start/stop) and dexa_runtime_wait_idle. A
 * worker claims, dispatches outside any transaction, and completes. */
#include <stdlib.h>

#include "runtime/runtime_internal.h"

/* A worker claims a batch of ready Steps (the others wait in rt->claimed
 * for any idle worker), runs them and hands in their completions without
 * waiting while claimed work remains; the last completion goes in with the
 * next batch claim, so busy workers wait for about one commit per batch. */
static void *worker_main(void *arg) {
  dexa_runtime *rt = arg;
  pthread_setname_np(pthread_self(), "dexa-worker");
  dexa_task *t = NULL;
  for (;;) {
    int rc = DEXA_OK;
    if (!t) t = dexa__claimed_pop(rt);
    /* Between Steps, never inside one: the lifetime sweep when it is due. */
    if (!t) dexa__sweep_maybe(rt);
    if (!t) rc = dexa__poll_batch(rt, &t, 500);
    pthread_mutex_lock(&rt->mu);
    int stop = rt->stopping;
    pthread_mutex_unlock(&rt->mu);
    /* Claimed tasks are finished even when stopping; no new one is taken. */
    while (t) {
      dexa_task *next = NULL;
      dexa__task_run_worker(rt, t, stop, &next);
      t = next;
      if (!stop) break;
    }
    if (stop) break;
    if (rc != DEXA_OK && rc != DEXA_E_TIMEOUT) {
      /* Store trouble (busy, I/O): back off briefly instead of spinning. */
      char why[512];
      dexa__log(rt, DEXA_LOG_WARNING, "worker-claim",
                "worker: cannot claim ready Steps: %s; trying again in 50 ms",
                dexa__store_error(rt, rc, why, sizeof why));
      pthread_mutex_lock(&rt->mu);
      if (!rt->stopping) dexa__cond_wait_until(&rt->work_cv, &rt->mu, dexa__mono_ms() + 50);
      pthread_mutex_unlock(&rt->mu);
    }
  }
  return NULL;
}

DEXA_EXTERN int dexa_runtime_start(dexa_runtime *rt, int32_t threads) {
  if (!rt || threads < 1 || threads > 256) return DEXA_E_INVALID_ARG;
  pthread_mutex_lock(&rt->mu);
  int busy = rt->workers != NULL;
  if (!busy) rt->stopping = 0;
  pthread_mutex_unlock(&rt->mu);
  if (busy) return DEXA_E_BAD_STATE;
  pthread_t *ws = calloc((size_t)threads, sizeof *ws);
  if (!ws) return DEXA_E_NOMEM;
  int32_t n = 0;
  while (n < threads && pthread_create(&ws[n], NULL, worker_main, rt) == 0) n++;
  pthread_mutex_lock(&rt->mu);
  rt->workers = ws;
  rt->worker_count = n;
  pthread_mutex_unlock(&rt->mu);
  if (n == threads) return DEXA_OK;
  dexa_runtime_stop(rt);
  return DEXA_E_NOMEM;
}

DEXA_EXTERN int dexa_runtime_stop(dexa_runtime *rt) {
  if (!rt) return DEXA_E_INVALID_ARG;
  pthread_mutex_lock(&rt->mu);
  pthread_t *ws = rt->workers;
  int32_t n = rt->worker_count;
  rt->workers = NULL;
  rt->worker_count = 0;
  rt->stopping = 1;
  pthread_cond_broadcast(&rt->work_cv);
  pthread_mutex_unlock(&rt->mu);
  for (int32_t i = 0; i < n; i++) pthread_join(ws[i], NULL);
  free(ws);
  dexa__trace_flush(rt);
  return DEXA_OK;
}

/* Counts the session's ready and running Steps; the session row is read
 * only when none are, to tell an idle session from a missing one (a cheap
 * check, since waiters run it after every commit). */
static int session_busy(dexa_runtime *rt, const char *sid, int64_t *busy) {
  dexa__store_conn *c = NULL;
  int rc = dexa__pool_acquire(rt, &c);
  if (rc != DEXA_OK) return rc;
  rc = c->ops->step_busy_count(c, sid, busy);
  if (rc == DEXA_OK && *busy == 0) {
    dexa__session_row s;
    rc = c->ops->session_get(c, sid, &s);
    dexa__session_row_free(&s);
  }
  dexa__pool_release(rt, c);
  return rc;
}

DEXA_EXTERN int dexa_runtime_wait_idle(dexa_runtime *rt, const char *session_id,
                                       int64_t timeout_ms) {
  if (!rt || !session_id) return DEXA_E_INVALID_ARG;
  int64_t deadline = dexa__mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
  for (;;) {
    uint64_t gen = dexa__session_gen(rt, session_id);
    int64_t busy = 0;
    int rc = session_busy(rt, session_id, &busy);
    if (rc != DEXA_OK) return rc;
    if (busy == 0) return DEXA_OK;
    if (dexa__mono_ms() >= deadline) return DEXA_E_TIMEOUT;
    dexa__wait_session_change(rt, session_id, gen, deadline);
  }
}
