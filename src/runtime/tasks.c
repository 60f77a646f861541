/* Tasks: a claimed Step method handed to a worker or to the host
 * (dexa_runtime_poll), and its completion. */
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime_internal.h"

int dexa__task_new(dexa_runtime *rt, const dexa__step_row *row, int64_t event_seq,
                   dexa_task **out) {
  dexa_task *t = calloc(1, sizeof *t);
  if (!t) return DEXA_E_NOMEM;
  t->rt = rt;
  /* The task takes the row's strings; the caller's row is emptied. */
  t->row = *row;
  memset((dexa__step_row *)row, 0, sizeof *row);
  dexa__step_opts o;
  (void)dexa__row_opts(rt, &t->row, &o);
  t->deadline_ms = t->row.started_ms + o.timeout_ms;
  t->reader = (dexa__reader){rt, t->row.session_id, NULL, NULL, 0};
  t->sink = (dexa__sink_ctx){rt, t->row.session_id, event_seq};
  dexa__call_for_row(rt, &t->call, &t->row, t->row.started_ms);
  t->call.attr_user_data = &t->reader;
  t->call.sink_user_data = &t->sink;
  *out = t;
  return DEXA_OK;
}

void dexa__task_free(dexa_task *t) {
  if (!t) return;
  dexa__reader_free(&t->reader);
  dexa__step_row_free(&t->row);
  free(t);
}

DEXA_EXTERN const dexa_call *dexa_task_call(const dexa_task *task) {
  return task ? &task->call : NULL;
}

typedef struct finish_arg {
  dexa_task *task;
  const dexa_result *res;
  int code;      /* the attempt's error when it failed */
  int outcome;   /* DEXA_OK or DEXA_E_TIMEOUT (dropped) */
} finish_arg;

/* The lease must still be ours: same attempt, same owner, not expired and
 * not cancelled. Anything else means another attempt owns the Step now. */
static int lease_held(const dexa__step_row *cur, const dexa_task *t, int64_t now) {
  return cur->state == DEXA__STEP_RUNNING && cur->attempt == t->row.attempt &&
         cur->method == t->row.method && !cur->cancelled && cur->lease_owner &&
         strcmp(cur->lease_owner, t->row.lease_owner) == 0 && cur->lease_until > now;
}

static int finish_op(dexa_runtime *rt, dexa__store_conn *c, void *arg) {
  finish_arg *a = arg;
  dexa_task *t = a->task;
  int64_t now = dexa__now(rt);
  dexa__step_row cur;
  int rc = c->ops->step_get(c, t->row.session_id, t->row.exec_id, &cur);
  a->outcome = DEXA_E_TIMEOUT;
  if (rc == DEXA_E_NOT_FOUND) return DEXA_OK;
  if (rc != DEXA_OK) return rc;
  if (!lease_held(&cur, t, now)) {
    /* A cancelled Step's result is dropped and its row goes with it. */
    if (cur.cancelled && cur.state == DEXA__STEP_RUNNING && cur.attempt == t->row.attempt)
      rc = c->ops->step_delete(c, cur.session_id, cur.exec_id);
    dexa__step_row_free(&cur);
    return rc;
  }
  a->outcome = DEXA_OK;
  int code = a->code;
  if (code == DEXA_OK) {
    code = dexa__apply_step_result(rt, c, &cur, a->res, now);
    if (code == DEXA_E_IO || code == DEXA_E_BUSY || code == DEXA_E_CORRUPT || code == DEXA_E_NOMEM) {
      dexa__step_row_free(&cur);
      return code;
    }
    if (code != DEXA_OK) {
      /* The result was malformed: that attempt failed. Reload the row. */
      dexa__step_row_free(&cur);
      rc = c->ops->step_get(c, t->row.session_id, t->row.exec_id, &cur);
      if (rc != DEXA_OK) return rc;
    }
  }
  if (code != DEXA_OK) {
    const char *msg = a->res ? dexa_result_errmsg(a->res) : NULL;
    if (!msg || !*msg) msg = a->res ? dexa_strerror(code) : "the attempt ended without a result";
    rc = dexa__attempt_failed(rt, c, &cur, code, msg,
                              a->res ? dexa_result_retry_after_ms(a->res) : 0, now);
  }
  dexa__step_row_free(&cur);
  return rc;
}

/* Completion plus the claim of the worker's next task in one operation, so
 * a busy worker costs one commit per Step instead of two. A failed claim
 * never undoes the completion: it runs in its own savepoint. */
typedef struct finish_claim_arg {
  finish_arg finish;
  dexa__claim claim;
  int want_next;
} finish_claim_arg;

static int finish_claim_op(dexa_runtime *rt, dexa__store_conn *c, void *arg) {
  finish_claim_arg *a = arg;
  int rc = finish_op(rt, c, &a->finish);
  if (rc != DEXA_OK || !a->want_next) return rc;
  if (c->ops->savepoint(c) != DEXA_OK) return DEXA_OK;
  if (dexa__claim_op(rt, c, &a->claim) == DEXA_OK) return c->ops->release(c);
  a->claim.task = NULL;
  return c->ops->rollback_to(c);
}

int dexa__task_finish_next(dexa_runtime *rt, dexa_task *task, const dexa_result *res,
                           int rc_dispatch, dexa_task **next) {
  finish_claim_arg a = {{task, res, rc_dispatch, DEXA_OK}, {NULL, 0, 0}, next != NULL};
  if (next) *next = NULL;
  if (a.finish.code == DEXA_OK && !res) a.finish.code = DEXA_E_TRANSIENT;
  if (a.finish.code == DEXA_OK && dexa_result_status(res) != DEXA_OK)
    a.finish.code = dexa_result_status(res);
  dexa__inflight_remove(rt, task);
  int rc = dexa__gc_run(rt, finish_claim_op, &a);
  if (rc == DEXA_OK) rc = a.finish.outcome;
  if (rc == DEXA_E_TIMEOUT)
    dexa__set_errmsg(rt, "%s: the lease was lost; the result was dropped", task->row.exec_id);
  else if (rc != DEXA_OK)
    dexa__set_errmsg(rt, "%s: cannot apply the result: %s", task->row.exec_id, dexa_strerror(rc));
  dexa__task_free(task);
  if (a.claim.task && (rc == DEXA_OK || rc == DEXA_E_TIMEOUT)) {
    dexa__inflight_add(rt, a.claim.task);
    (void)dexa__heartbeat_ensure(rt);
    *next = a.claim.task;
  } else {
    /* The batch failed: its claim was rolled back with it. */
    dexa__task_free(a.claim.task);
  }
  return rc;
}

int dexa__task_finish(dexa_runtime *rt, dexa_task *task, const dexa_result *res,
                      int rc_dispatch) {
  return dexa__task_finish_next(rt, task, res, rc_dispatch, NULL);
}

DEXA_EXTERN int dexa_runtime_complete(dexa_runtime *rt, dexa_task *task,
                                      const dexa_result *result) {
  if (!rt || !task || task->rt != rt) return DEXA_E_INVALID_ARG;
  return dexa__task_finish(rt, task, result, DEXA_OK);
}

DEXA_EXTERN void dexa_task_abandon(dexa_runtime *rt, dexa_task *task) {
  if (!rt || !task) return;
  /* No renewal from now on: the lease runs out and the attempt is lost. */
  dexa__inflight_remove(rt, task);
  dexa__task_free(task);
}

int dexa__claim_once(dexa_runtime *rt, dexa_task **task, int32_t *ran) {
  dexa__claim cl = {NULL, 0, 0};
  int rc = dexa__gc_run(rt, dexa__claim_op, &cl);
  *task = NULL;
  *ran = cl.ran;
  if (rc != DEXA_OK) {
    dexa__task_free(cl.task);
    return rc;
  }
  if (cl.task) {
    dexa__inflight_add(rt, cl.task);
    /* Without a heartbeat the lease simply runs out: the task still runs. */
    (void)dexa__heartbeat_ensure(rt);
  }
  *task = cl.task;
  return DEXA_OK;
}

/* Something due now? A cheap read, so idle pollers never take the write lock. */
static int due_now(dexa_runtime *rt, int64_t *next_due) {
  dexa__store_conn *c = NULL;
  *next_due = DEXA__NO_DUE;
  if (dexa__pool_acquire(rt, &c) != DEXA_OK) return 1;
  int rc = c->ops->step_next_due(c, next_due);
  dexa__pool_release(rt, c);
  return rc != DEXA_OK || *next_due <= dexa__now(rt);
}

/* Waits for a commit signal, at most until the next due row, the deadline,
 * or 100 ms (other processes write the same store without signalling). */
static void idle_wait(dexa_runtime *rt, uint64_t gen, int64_t next_due, int64_t deadline) {
  int64_t now_m = dexa__mono_ms();
  int64_t until = now_m + 100;
  if (next_due != DEXA__NO_DUE) {
    int64_t in = next_due - dexa__now(rt);
    if (in < 100) until = now_m + (in > 0 ? in : 0);
  }
  if (until > deadline) until = deadline;
  pthread_mutex_lock(&rt->mu);
  if (rt->work_gen == gen && !rt->stopping) dexa__cond_wait_until(&rt->work_cv, &rt->mu, until);
  pthread_mutex_unlock(&rt->mu);
}

int dexa__poll(dexa_runtime *rt, dexa_task **out, int64_t timeout_ms, int for_worker) {
  int64_t deadline = dexa__mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
  *out = NULL;
  for (;;) {
    pthread_mutex_lock(&rt->mu);
    uint64_t gen = rt->work_gen;
    int stop = for_worker && rt->stopping;
    pthread_mutex_unlock(&rt->mu);
    if (stop) return DEXA_E_TIMEOUT;
    int64_t next_due;
    if (due_now(rt, &next_due)) {
      int32_t ran = 0;
      int rc = dexa__claim_once(rt, out, &ran);
      if (rc != DEXA_OK) return rc;
      if (*out) return DEXA_OK;
      if (ran) continue;
    }
    if (dexa__mono_ms() >= deadline) return DEXA_E_TIMEOUT;
    idle_wait(rt, gen, next_due, deadline);
  }
}

DEXA_EXTERN int dexa_runtime_poll(dexa_runtime *rt, dexa_task **out, int64_t timeout_ms) {
  if (!out) return DEXA_E_INVALID_ARG;
  *out = NULL;
  if (!rt) return DEXA_E_INVALID_ARG;
  return dexa__poll(rt, out, timeout_ms, 0);
}

int dexa__task_run(dexa_runtime *rt, dexa_task *t, dexa_task **next) {
  dexa_result *res = NULL;
  t->call.now_ms = dexa__now(rt);
  int rc = dexa__dispatch_call(rt, &t->call, &res);
  rc = dexa__task_finish_next(rt, t, res, rc, next);
  dexa_result_free(res);
  return rc;
}

DEXA_EXTERN int dexa_runtime_run_ready(dexa_runtime *rt, int32_t *ran) {
  if (ran) *ran = 0;
  if (!rt) return DEXA_E_INVALID_ARG;
  dexa_task *t = NULL;
  for (;;) {
    int32_t inline_ran = 0;
    if (!t) {
      int rc = dexa__claim_once(rt, &t, &inline_ran);
      if (rc != DEXA_OK) return rc;
      if (ran) *ran += inline_ran;
      if (!t && !inline_ran) return DEXA_OK;
      if (!t) continue;
    }
    dexa_task *next = NULL;
    int rc = dexa__task_run(rt, t, &next);
    if (ran) (*ran)++;
    t = next;
    /* A dropped result (lease lost) is not the caller's error. */
    if (rc != DEXA_OK && rc != DEXA_E_TIMEOUT) {
      if (t) dexa_task_abandon(rt, t);
      return rc;
    }
  }
}
