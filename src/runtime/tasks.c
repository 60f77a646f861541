/* Tasks: a claimed Step method handed to a worker or to the host
 * (dexa_runtime_poll), and its completion. */
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime_internal.h"

/* The call's cancelled callback: cheap, any thread. */
static int task_cancelled(void *user) {
  dexa_task *t = user;
  return atomic_load_explicit(&t->cancel, memory_order_relaxed);
}

int dexa__task_new(dexa_runtime *rt, const dexa__step_row *row, int64_t event_seq,
                   int64_t data_ver, dexa_task **out) {
  dexa_task *t = calloc(1, sizeof *t);
  if (!t) return DEXA_E_NOMEM;
  t->rt = rt;
  /* The task takes the row's strings; the caller's row is emptied. */
  t->row = *row;
  memset((dexa__step_row *)row, 0, sizeof *row);
  dexa__step_opts o;
  (void)dexa__row_opts(rt, &t->row, &o);
  t->deadline_ms = t->row.started_ms + o.timeout_ms;
  t->reader = (dexa__reader){.rt = rt, .session_id = t->row.session_id, .claimed_ver = data_ver};
  t->sink = (dexa__sink_ctx){rt, t->row.session_id, event_seq};
  dexa__call_for_row(rt, &t->call, &t->row, t->row.started_ms);
  t->call.attr_user_data = &t->reader;
  t->call.sink_user_data = &t->sink;
  atomic_init(&t->cancel, 0);
  t->call.cancel_user_data = t;
  t->call.cancelled = task_cancelled;
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
  dexa__touch_session(rt, t->row.session_id);
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
  /* in: the finished Step is single-attempt (its result, which cannot be
   * had again, must not wait for a lazy sync); out: the commit must be
   * durable before the worker goes on (dexa__gc_run_claim) */
  int durable;
} finish_claim_arg;


/* Runs a claim in a savepoint of its own, so a failed claim is undone
 * alone and leaves cl empty; the error is the savepoint's, not the claim's. */
static int claim_in_savepoint(dexa_runtime *rt, dexa__store_conn *c, dexa__claim *cl) {
  if (c->ops->savepoint(c) != DEXA_OK) return DEXA_OK;
  if (dexa__claim_op(rt, c, cl) == DEXA_OK) return c->ops->release(c);
  dexa__claim_drop(cl);
  cl->quiet = 0;
  return c->ops->rollback_to(c);
}

static int finish_claim_op(dexa_runtime *rt, dexa__store_conn *c, void *arg) {
  finish_claim_arg *a = arg;
  a->claim.quiet = 0;
  int rc = finish_op(rt, c, &a->finish);
  if (rc == DEXA_OK && a->want_next) rc = claim_in_savepoint(rt, c, &a->claim);
  a->durable |= a->claim.single;
  return rc;
}

static void finish_note(dexa_runtime *rt, const dexa_task *task, int rc) {
  char why[512];
  if (rc == DEXA_E_TIMEOUT) {
    dexa__set_errmsg(rt, "%s: the lease was lost; the result was dropped", task->row.exec_id);
    dexa__log(rt, DEXA_LOG_WARNING, "lease-lost-result",
              "%s of session %s: the lease was lost; the result was dropped (the Step runs"
              " again or was cancelled)",
              task->row.exec_id, task->row.session_id);
  } else if (rc != DEXA_OK) {
    dexa__store_error(rt, rc, why, sizeof why);
    dexa__set_errmsg(rt, "%s: cannot apply the result: %s", task->row.exec_id, why);
    dexa__log(rt, DEXA_LOG_ERROR, "apply-result",
              "%s of session %s: cannot apply the result: %s; the Step runs again after its"
              " lease",
              task->row.exec_id, task->row.session_id, why);
  }
}

static int attempt_code(const dexa_result *res, int rc_dispatch) {
  if (rc_dispatch == DEXA_OK && !res) return DEXA_E_TRANSIENT;
  if (rc_dispatch == DEXA_OK && dexa_result_status(res) != DEXA_OK) return dexa_result_status(res);
  return rc_dispatch;
}

dexa_task *dexa__claimed_pop(dexa_runtime *rt) {
  pthread_mutex_lock(&rt->mu);
  dexa_task *t = NULL;
  if (rt->claimed_count) {
    t = rt->claimed[0];
    rt->claimed_count--;
    memmove(rt->claimed, rt->claimed + 1, rt->claimed_count * sizeof *rt->claimed);
  }
  pthread_mutex_unlock(&rt->mu);
  return t;
}

static int claimed_waiting(dexa_runtime *rt) {
  pthread_mutex_lock(&rt->mu);
  int n = rt->claimed_count > 0;
  pthread_mutex_unlock(&rt->mu);
  return n;
}

/* Queues n claimed tasks (in flight, leases renewed) in rt->claimed for
 * any idle worker, and wakes the idle workers. */
static void claimed_push(dexa_runtime *rt, dexa_task *const *tasks, int n) {
  pthread_mutex_lock(&rt->mu);
  for (int i = 0; i < n; i++) {
    if (rt->claimed_count == rt->claimed_cap) {
      size_t cap = rt->claimed_cap ? rt->claimed_cap * 2 : 32;
      dexa_task **p = realloc(rt->claimed, cap * sizeof *p);
      if (!p) { /* no room: its lease runs out and it is retried */
        pthread_mutex_unlock(&rt->mu);
        dexa__log(rt, DEXA_LOG_WARNING, "claim-nomem",
                  "%s: out of memory for a claimed Step; it runs again after its lease",
                  tasks[i]->row.exec_id);
        dexa_task_abandon(rt, tasks[i]);
        pthread_mutex_lock(&rt->mu);
        continue;
      }
      rt->claimed = p;
      rt->claimed_cap = cap;
    }
    rt->claimed[rt->claimed_count++] = tasks[i];
  }
  rt->work_gen++;
  int idle = rt->idle_workers;
  pthread_mutex_unlock(&rt->mu);
  /* One idle worker per task: a broadcast woke every idle worker, and all
   * but one found nothing. */
  if (n >= idle)
    pthread_cond_broadcast(&rt->work_cv);
  else
    for (int i = 0; i < n; i++) pthread_cond_signal(&rt->work_cv);
}

/* Hands over the tasks a successful claim took (leases now renewed): the
 * first to the caller, the others to rt->claimed for any idle worker. */
static void adopt_claim(dexa_runtime *rt, dexa__claim *cl, dexa_task **next) {
  *next = cl->task;
  if (!cl->task) return;
  dexa__inflight_add(rt, cl->task);
  int n = cl->more ? cl->more->count : 0;
  for (int i = 0; i < n; i++) dexa__inflight_add(rt, cl->more->items[i]);
  (void)dexa__heartbeat_ensure(rt);
  if (!n) return;
  claimed_push(rt, cl->more->items, n);
  cl->more->count = 0;
}

/* Commits wake one waiter for work (runtime.c: dexa__notify_commit); a
 * claim that took as much as it may, or stopped before a single-attempt
 * Step, may have left ready work, so it passes the wake-up on. */
static void wake_next(dexa_runtime *rt) {
  /* Idle waiters look at work_gen under rt->mu: bumping it there means a
   * worker about to wait does not miss this wake-up, which is sent
   * unlocked so the woken one does not block on the mutex at once. */
  pthread_mutex_lock(&rt->mu);
  rt->work_gen++;
  pthread_mutex_unlock(&rt->mu);
  pthread_cond_signal(&rt->work_cv);
}

int dexa__claim_for_idle(dexa_runtime *rt, dexa__store_conn *c, dexa__claim *cl,
                         dexa__taskq *q) {
  dexa__claim_drop(cl); /* a batch that runs again claims afresh */
  pthread_mutex_lock(&rt->mu);
  int idle = rt->stopping ? 0 : rt->idle_workers;
  pthread_mutex_unlock(&rt->mu);
  /* Up to one Step per idle worker: a claim that takes fewer than it may
   * has seen every ready row, so its commit need wake nobody else. */
  if (idle > DEXA__CLAIM_BATCH) idle = DEXA__CLAIM_BATCH;
  *cl = (dexa__claim){NULL, 0, 0, q, idle, 0, 0, 0, 0};
  return idle < 1 ? DEXA_OK : claim_in_savepoint(rt, c, cl);
}

void dexa__hand_claim_over(dexa_runtime *rt, dexa__claim *cl, int committed) {
  if (!committed || !cl->task) {
    dexa__claim_drop(cl);
    return;
  }
  dexa_task *t[1 + DEXA__CLAIM_BATCH];
  int n = 0;
  t[n++] = cl->task;
  cl->task = NULL;
  for (int i = 0; cl->more && i < cl->more->count; i++) t[n++] = cl->more->items[i];
  if (cl->more) cl->more->count = 0;
  for (int i = 0; i < n; i++) dexa__inflight_add(rt, t[i]);
  (void)dexa__heartbeat_ensure(rt);
  /* A claim that was not quiet woke a worker at commit already. */
  claimed_push(rt, t, n);
}

static int single_attempt(dexa_runtime *rt, const dexa_task *t) {
  dexa__step_opts o;
  (void)dexa__row_opts(rt, &t->row, &o);
  return o.max_attempts == 1;
}

/* A worker (for_worker) goes on once the completion and its next claim are
 * committed, unless it claimed a single-attempt Step; a host hears of its
 * completion only once it is durable. */
static int finish_with_claim(dexa_runtime *rt, dexa_task *task, const dexa_result *res,
                             int rc_dispatch, dexa_task **next, dexa__taskq *more,
                             int for_worker) {
  finish_claim_arg a = {{task, res, attempt_code(res, rc_dispatch), DEXA_OK},
                        {NULL, 0, 0, more, DEXA__CLAIM_BATCH, 0, 0, 0, for_worker}, next != NULL,
                        single_attempt(rt, task)};
  if (next) *next = NULL;
  dexa__inflight_remove(rt, task);
  int rc = for_worker ? dexa__gc_run_claim(rt, finish_claim_op, &a, &a.durable, &a.claim.quiet)
                      : dexa__gc_run(rt, finish_claim_op, &a);
  if (rc == DEXA_OK) rc = a.finish.outcome;
  finish_note(rt, task, rc);
  dexa__task_free(task);
  if (a.claim.task && (rc == DEXA_OK || rc == DEXA_E_TIMEOUT)) {
    int full = a.claim.stop || 1 + (more ? more->count : 0) >= a.claim.want;
    adopt_claim(rt, &a.claim, next);
    if (full) wake_next(rt);
  } else
    dexa__claim_drop(&a.claim); /* the batch failed: its claim was rolled back with it */
  return rc;
}

int dexa__task_finish_next(dexa_runtime *rt, dexa_task *task, const dexa_result *res,
                           int rc_dispatch, dexa_task **next) {
  return finish_with_claim(rt, task, res, rc_dispatch, next, NULL, 0);
}

/* An asynchronous completion: owns its task and result until released. */
typedef struct async_finish {
  finish_arg finish;
  dexa_result *res;
} async_finish;

static int async_finish_op(dexa_runtime *rt, dexa__store_conn *c, void *arg) {
  return finish_op(rt, c, &((async_finish *)arg)->finish);
}

static void async_finish_release(dexa_runtime *rt, void *arg, int rc) {
  async_finish *a = arg;
  if (rc == DEXA_OK) rc = a->finish.outcome;
  finish_note(rt, a->finish.task, rc);
  dexa__task_free(a->finish.task);
  dexa_result_free(a->res);
  free(a);
}

/* Completes task without waiting for the commit; takes res. */
static int finish_async(dexa_runtime *rt, dexa_task *task, dexa_result *res, int rc_dispatch) {
  async_finish *a = calloc(1, sizeof *a);
  if (!a) {
    int rc = dexa__task_finish(rt, task, res, rc_dispatch);
    dexa_result_free(res);
    return rc;
  }
  a->finish = (finish_arg){task, res, attempt_code(res, rc_dispatch), DEXA_OK};
  a->res = res;
  dexa__inflight_remove(rt, task);
  int rc = dexa__gc_submit(rt, async_finish_op, a, async_finish_release);
  if (rc != DEXA_OK) { /* not queued: complete it the plain way */
    dexa__inflight_add(rt, task);
    rc = dexa__task_finish(rt, task, res, rc_dispatch);
    dexa_result_free(res);
    free(a);
  }
  return rc;
}


int dexa__task_run_worker(dexa_runtime *rt, dexa_task *t, int stopping, dexa_task **next) {
  dexa_result *res = NULL;
  t->call.now_ms = dexa__now(rt);
  int rc = dexa__dispatch_call(rt, &t->call, &res);
  *next = NULL;
  if (claimed_waiting(rt) || stopping) {
    /* More claimed work waits: do not wait for this commit, except for a
     * single-attempt Step, whose result should be durable at once. */
    if (single_attempt(rt, t)) {
      rc = dexa__task_finish(rt, t, res, rc);
      dexa_result_free(res);
    } else {
      rc = finish_async(rt, t, res, rc);
    }
    *next = dexa__claimed_pop(rt);
    return rc;
  }
  dexa__taskq more = {{NULL}, 0};
  rc = finish_with_claim(rt, t, res, rc, next, &more, 1);
  dexa_result_free(res);
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

/* Claims ready work: one task, or up to DEXA__CLAIM_BATCH with q. A worker
 * starts a retryable Step once its claim is committed (see
 * dexa__gc_run_claim); the host's poll returns durable claims only. */
static int claim_into(dexa_runtime *rt, dexa_task **task, dexa__taskq *q, int32_t *ran,
                      int for_worker) {
  dexa__claim cl = {NULL, 0, 0, q, q ? DEXA__CLAIM_BATCH : 1, 0, 0, 0, for_worker};
  int rc = for_worker ? dexa__gc_run_claim(rt, dexa__claim_op, &cl, &cl.single, &cl.quiet)
                      : dexa__gc_run(rt, dexa__claim_op, &cl);
  *task = NULL;
  *ran = cl.ran;
  if (rc != DEXA_OK) {
    dexa__claim_drop(&cl);
    return rc;
  }
  int full = cl.task && (cl.stop || 1 + (q ? q->count : 0) >= cl.want);
  adopt_claim(rt, &cl, task);
  if (full) wake_next(rt);
  return DEXA_OK;
}

int dexa__claim_once(dexa_runtime *rt, dexa_task **task, int32_t *ran) {
  return claim_into(rt, task, NULL, ran, 0);
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
 * or the store's poll period (another process's commit may not signal). */
static void idle_wait(dexa_runtime *rt, uint64_t gen, int64_t next_due, int64_t deadline,
                      int for_worker) {
  int64_t now_m = dexa__mono_ms();
  int64_t poll = dexa__poll_ms(rt);
  int64_t until = now_m + poll;
  if (next_due != DEXA__NO_DUE) {
    int64_t in = next_due - dexa__now(rt);
    if (in < poll) until = now_m + (in > 0 ? in : 0);
  }
  if (until > deadline) until = deadline;
  pthread_mutex_lock(&rt->mu);
  if (rt->work_gen == gen && !rt->stopping) {
    rt->idle_workers += for_worker; /* RPCs may claim for it (dexa__claim_for_idle) */
    dexa__cond_wait_until(&rt->work_cv, &rt->mu, until);
    rt->idle_workers -= for_worker;
  }
  pthread_mutex_unlock(&rt->mu);
}

/* The current work generation (takes rt->mu). */
static uint64_t work_gen(dexa_runtime *rt) {
  pthread_mutex_lock(&rt->mu);
  uint64_t gen = rt->work_gen;
  pthread_mutex_unlock(&rt->mu);
  return gen;
}

static int poll_into(dexa_runtime *rt, dexa_task **out, dexa__taskq *q, int64_t timeout_ms,
                     int for_worker) {
  int64_t deadline = dexa__mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
  int64_t held_wait = 0; /* waiting for due rows another transaction holds */
  *out = NULL;
  for (;;) {
    if ((*out = dexa__claimed_pop(rt))) return DEXA_OK;
    pthread_mutex_lock(&rt->mu);
    uint64_t gen = rt->work_gen;
    int stop = for_worker && rt->stopping;
    pthread_mutex_unlock(&rt->mu);
    if (stop) return DEXA_E_TIMEOUT;
    int64_t next_due;
    if (due_now(rt, &next_due)) {
      int32_t ran = 0;
      int rc = claim_into(rt, out, q, &ran, for_worker);
      if (rc != DEXA_OK) return rc;
      if (*out) return DEXA_OK;
      if (ran) continue;
      /* Rows still due that the claim did not take are held by another
       * process's transaction (PostgreSQL skips locked rows): wait for a
       * commit to be announced, not for their due time, which has passed
       * (a loop of empty claims otherwise), but look again soon. */
      gen = work_gen(rt);
      if (due_now(rt, &next_due)) {
        held_wait = held_wait ? held_wait * 2 : 2;
        if (held_wait > dexa__poll_ms(rt)) held_wait = dexa__poll_ms(rt);
        next_due = dexa__now(rt) + held_wait;
      } else {
        held_wait = 0;
      }
    }
    if (dexa__mono_ms() >= deadline) return DEXA_E_TIMEOUT;
    idle_wait(rt, gen, next_due, deadline, for_worker);
  }
}

int dexa__poll(dexa_runtime *rt, dexa_task **out, int64_t timeout_ms, int for_worker) {
  return poll_into(rt, out, NULL, timeout_ms, for_worker);
}

int dexa__poll_batch(dexa_runtime *rt, dexa_task **out, int64_t timeout_ms) {
  dexa__taskq more = {{NULL}, 0};
  return poll_into(rt, out, &more, timeout_ms, 1);
}

DEXA_EXTERN int dexa_runtime_poll(dexa_runtime *rt, dexa_task **out, int64_t timeout_ms) {
  if (!out) return DEXA_E_INVALID_ARG;
  *out = NULL;
  if (!rt) return DEXA_E_INVALID_ARG;
  dexa__sweep_maybe(rt);
  int rc = dexa__poll(rt, out, timeout_ms, 0);
  if (rc != DEXA_OK && rc != DEXA_E_TIMEOUT) {
    char why[512];
    dexa__set_errmsg(rt, "poll: cannot claim ready Steps: %s", dexa__store_error(rt, rc, why, sizeof why));
  }
  return rc;
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
  dexa__sweep_maybe(rt);
  dexa_task *t = NULL;
  for (;;) {
    int32_t inline_ran = 0;
    if (!t) {
      int rc = dexa__claim_once(rt, &t, &inline_ran);
      if (rc != DEXA_OK) {
        char why[512];
        dexa__set_errmsg(rt, "run_ready: cannot claim ready Steps: %s",
                         dexa__store_error(rt, rc, why, sizeof why));
        return rc;
      }
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
