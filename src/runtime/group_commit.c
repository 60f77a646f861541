/* Group commit: the thread that finds no batch running becomes the leader,
 * takes every queued operation, runs each in its own savepoint of ONE write
 * transaction and commits once; each synchronous submitter returns only
 * after that commit, so nothing is acknowledged before it is durable. With
 * synchronous=FULL this turns N fsyncs into one.
 *
 * Workers hand in Step completions asynchronously (dexa__gc_submit) while a
 * batch is being written: the completion joins the next batch and the
 * worker goes on with its next claimed Step. A leader keeps writing batches
 * while only asynchronous operations remain queued, so none is stranded. */
#include <stdlib.h>

#include "runtime/runtime_internal.h"

#define GC_MAX_BATCH 64

static int run_one(dexa_runtime *rt, dexa__store_conn *c, dexa__op *op) {
  const dexa__store_ops *ops = c->ops;
  int rc = ops->savepoint(c);
  if (rc != DEXA_OK) return rc;
  rc = op->fn(rt, c, op->arg);
  if (rc == DEXA_OK) return ops->release(c);
  int rb = ops->rollback_to(c);
  /* If the savepoint cannot be undone the whole batch must go. */
  return rb == DEXA_OK ? rc : rb;
}

/* Runs batch in one transaction; sets every op's rc. */
static void run_batch(dexa_runtime *rt, dexa__op *batch) {
  dexa__store_conn *c = rt->writer;
  int rc = c->ops->begin_write(c);
  int fatal = rc;
  for (dexa__op *op = batch; op; op = op->next) {
    if (fatal != DEXA_OK) {
      op->rc = fatal;
      continue;
    }
    op->rc = run_one(rt, c, op);
    /* A savepoint that could not be rolled back leaves the transaction in
     * an unknown state: fail this batch as a whole. */
    if (op->rc == DEXA_E_IO || op->rc == DEXA_E_CORRUPT || op->rc == DEXA_E_BUSY) fatal = op->rc;
  }
  if (fatal == DEXA_OK) fatal = c->ops->commit(c);
  if (fatal != DEXA_OK) {
    c->ops->rollback(c);
    for (dexa__op *op = batch; op; op = op->next)
      if (op->rc == DEXA_OK) op->rc = fatal;
  }
}

static dexa__op *take_batch(dexa_runtime *rt) {
  dexa__op *head = rt->gc_head, *tail = head;
  int n = 1;
  while (tail->next && n < GC_MAX_BATCH) {
    tail = tail->next;
    n++;
  }
  rt->gc_head = tail->next;
  if (!rt->gc_head) rt->gc_tail = NULL;
  tail->next = NULL;
  return head;
}

static void append(dexa_runtime *rt, dexa__op *op) {
  if (rt->gc_tail)
    rt->gc_tail->next = op;
  else
    rt->gc_head = op;
  rt->gc_tail = op;
}

/* Called with gc_mu held by the leader: writes one batch, then marks the
 * synchronous ops done and releases the asynchronous ones. */
static void lead_one_batch(dexa_runtime *rt) {
  dexa__op *batch = take_batch(rt);
  pthread_mutex_unlock(&rt->gc_mu);
  run_batch(rt, batch);
  dexa__op *async = NULL;
  pthread_mutex_lock(&rt->gc_mu);
  /* op->next is the batch link; read it before done frees the op. */
  for (dexa__op *o = batch, *next; o; o = next) {
    next = o->next;
    if (o->release) {
      o->next = async;
      async = o;
    } else {
      o->done = 1;
    }
  }
  pthread_cond_broadcast(&rt->gc_cv);
  pthread_mutex_unlock(&rt->gc_mu);
  dexa__notify_commit(rt);
  for (dexa__op *o = async, *next; o; o = next) {
    next = o->next;
    o->release(rt, o->arg, o->rc);
    free(o);
  }
  pthread_mutex_lock(&rt->gc_mu);
}

/* Leads batches while own (if any) is not done, and afterwards while only
 * asynchronous ops are queued (a waiting submitter takes over otherwise). */
static void lead(dexa_runtime *rt, const dexa__op *own) {
  rt->gc_leader = 1;
  while (rt->gc_head && ((own && !own->done) || rt->gc_waiters == 0)) lead_one_batch(rt);
  rt->gc_leader = 0;
  pthread_cond_broadcast(&rt->gc_cv);
}

int dexa__gc_run(dexa_runtime *rt, dexa__op_fn fn, void *arg) {
  dexa__op op = {fn, arg, DEXA_OK, 0, NULL, NULL};
  pthread_mutex_lock(&rt->gc_mu);
  append(rt, &op);
  rt->gc_waiters++;
  while (!op.done) {
    if (rt->gc_leader) {
      pthread_cond_wait(&rt->gc_cv, &rt->gc_mu);
      continue;
    }
    rt->gc_waiters--;
    lead(rt, &op);
    rt->gc_waiters++;
  }
  rt->gc_waiters--;
  pthread_mutex_unlock(&rt->gc_mu);
  return op.rc;
}

int dexa__gc_submit(dexa_runtime *rt, dexa__op_fn fn, void *arg,
                    void (*release)(dexa_runtime *rt, void *arg, int rc)) {
  dexa__op *op = calloc(1, sizeof *op);
  if (!op) return DEXA_E_NOMEM;
  op->fn = fn;
  op->arg = arg;
  op->release = release;
  pthread_mutex_lock(&rt->gc_mu);
  append(rt, op);
  /* A leader at work (or a waiter about to lead) writes it with the next
   * batch; otherwise this thread writes it now. */
  if (!rt->gc_leader && rt->gc_waiters == 0) lead(rt, NULL);
  pthread_mutex_unlock(&rt->gc_mu);
  return DEXA_OK;
}
