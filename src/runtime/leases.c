/* Lease renewal. Every task this runtime has claimed and not completed is
 * in rt->inflight; one heartbeat thread per runtime (started with the first
 * claim) renews them every lease_ms/3, never past the Step's timeout, and
 * never a lease that has already expired (that attempt is lost). */
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime_internal.h"

void dexa__inflight_add(dexa_runtime *rt, dexa_task *t) {
  pthread_mutex_lock(&rt->mu);
  if (!t->serial) t->serial = ++rt->task_serial;
  t->prev = NULL;
  t->next = rt->inflight;
  if (rt->inflight) rt->inflight->prev = t;
  rt->inflight = t;
  pthread_mutex_unlock(&rt->mu);
}

void dexa__inflight_remove(dexa_runtime *rt, dexa_task *t) {
  pthread_mutex_lock(&rt->mu);
  if (t->prev || rt->inflight == t) {
    if (t->prev)
      t->prev->next = t->next;
    else
      rt->inflight = t->next;
    if (t->next) t->next->prev = t->prev;
  }
  t->next = t->prev = NULL;
  pthread_mutex_unlock(&rt->mu);
}

uint64_t dexa__inflight_serial(dexa_runtime *rt) {
  pthread_mutex_lock(&rt->mu);
  uint64_t s = rt->task_serial;
  pthread_mutex_unlock(&rt->mu);
  return s;
}

/* Tasks that joined after the RPC's transaction began are left alone: they
 * were claimed after it (a new turn's calls, say), and stopping them would
 * cut short work the stop was not about. */
void dexa__interrupt_session(dexa_runtime *rt, const char *sid, uint64_t bound) {
  pthread_mutex_lock(&rt->mu);
  for (dexa_task *t = rt->inflight; t; t = t->next)
    if (t->serial <= bound && strcmp(t->row.session_id, sid) == 0)
      atomic_store_explicit(&t->cancel, 1, memory_order_relaxed);
  pthread_mutex_unlock(&rt->mu);
}

typedef struct lease_ref {
  char *sid;
  char *exec_id;
  int32_t attempt;
  int lost;
  int64_t deadline;
} lease_ref;

typedef struct renew_arg {
  lease_ref *refs;
  size_t n;
  const char *owner;
} renew_arg;

static int renew_op(dexa_runtime *rt, dexa__store_conn *c, void *arg) {
  renew_arg *a = arg;
  int64_t now = dexa__now(rt);
  for (size_t i = 0; i < a->n; i++) {
    lease_ref *r = &a->refs[i];
    r->lost = 0;
    int64_t until = now + rt->lease_ms;
    if (until > r->deadline) until = r->deadline;
    if (until <= now) continue; /* past its timeout: let it expire */
    int rc = c->ops->step_renew(c, r->sid, r->exec_id, a->owner, r->attempt, now, until);
    if (rc == DEXA_E_NOT_FOUND)
      r->lost = 1;
    else if (rc != DEXA_OK)
      return rc;
  }
  return DEXA_OK;
}

static void refs_free(lease_ref *refs, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(refs[i].sid);
    free(refs[i].exec_id);
  }
  free(refs);
}

/* Copies the in-flight leases (rt->mu held): tasks may complete meanwhile. */
static lease_ref *snapshot(dexa_runtime *rt, size_t *n) {
  size_t count = 0;
  for (dexa_task *t = rt->inflight; t; t = t->next) count++;
  *n = 0;
  if (!count) return NULL;
  lease_ref *refs = calloc(count, sizeof *refs);
  for (dexa_task *t = rt->inflight; refs && t; t = t->next) {
    lease_ref *r = &refs[(*n)++];
    r->sid = strdup(t->row.session_id);
    r->exec_id = strdup(t->row.exec_id);
    r->attempt = t->row.attempt;
    r->deadline = t->deadline_ms;
    if (!r->sid || !r->exec_id) {
      refs_free(refs, *n);
      *n = 0;
      return NULL;
    }
  }
  return refs;
}

static void mark_lost(dexa_runtime *rt, const lease_ref *refs, size_t n) {
  for (dexa_task *t = rt->inflight; t; t = t->next)
    for (size_t i = 0; i < n; i++)
      if (refs[i].lost && refs[i].attempt == t->row.attempt &&
          strcmp(refs[i].exec_id, t->row.exec_id) == 0 &&
          strcmp(refs[i].sid, t->row.session_id) == 0)
        t->lost = 1;
}

static void renew_all(dexa_runtime *rt) {
  size_t n = 0;
  pthread_mutex_lock(&rt->mu);
  lease_ref *refs = snapshot(rt, &n);
  pthread_mutex_unlock(&rt->mu);
  if (!n) return;
  renew_arg a = {refs, n, rt->worker_id};
  int rc = dexa__gc_run(rt, renew_op, &a);
  if (rc == DEXA_OK) {
    pthread_mutex_lock(&rt->mu);
    mark_lost(rt, refs, n);
    pthread_mutex_unlock(&rt->mu);
    for (size_t i = 0; i < n; i++)
      if (refs[i].lost)
        dexa__log(rt, DEXA_LOG_WARNING, "lease-lost",
                  "%s of session %s: the lease was lost before it was renewed (another worker"
                  " may run the Step); its result will be dropped",
                  refs[i].exec_id, refs[i].sid);
  } else {
    char why[512];
    dexa__log(rt, DEXA_LOG_WARNING, "lease-renew",
              "cannot renew the leases of %zu running Step%s: %s; trying again in %lld ms", n,
              n == 1 ? "" : "s", dexa__store_error(rt, rc, why, sizeof why),
              (long long)(rt->lease_ms / 3 > 0 ? rt->lease_ms / 3 : 1));
  }
  refs_free(refs, n);
}

static void *heartbeat_main(void *arg) {
  dexa_runtime *rt = arg;
  pthread_setname_np(pthread_self(), "dexa-heartbeat");
  int64_t period = rt->lease_ms / 3 > 0 ? rt->lease_ms / 3 : 1;
  pthread_mutex_lock(&rt->mu);
  while (!rt->closing) {
    dexa__cond_wait_until(&rt->hb_cv, &rt->mu, dexa__mono_ms() + period);
    if (rt->closing) break;
    pthread_mutex_unlock(&rt->mu);
    renew_all(rt);
    pthread_mutex_lock(&rt->mu);
  }
  pthread_mutex_unlock(&rt->mu);
  return NULL;
}

int dexa__heartbeat_ensure(dexa_runtime *rt) {
  int rc = DEXA_OK;
  pthread_mutex_lock(&rt->mu);
  if (!rt->hb_running && !rt->closing) {
    if (pthread_create(&rt->hb_thread, NULL, heartbeat_main, rt) == 0)
      rt->hb_running = 1;
    else
      rc = DEXA_E_NOMEM;
  }
  pthread_mutex_unlock(&rt->mu);
  return rc;
}

void dexa__heartbeat_stop(dexa_runtime *rt) {
  pthread_mutex_lock(&rt->mu);
  rt->closing = 1;
  int running = rt->hb_running;
  rt->hb_running = 0;
  pthread_cond_broadcast(&rt->hb_cv);
  pthread_mutex_unlock(&rt->mu);
  if (running) pthread_join(rt->hb_thread, NULL);
}
