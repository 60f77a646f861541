/* Group commit: the thread that finds no batch running becomes the leader,
 * takes every queued operation, runs each in its own savepoint of ONE write
 * transaction and commits once; each submitter returns only after that
 * commit, so nothing is acknowledged before it is durable. With
 * synchronous=FULL this turns N fsyncs into one. */
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

int dexa__gc_run(dexa_runtime *rt, dexa__op_fn fn, void *arg) {
  dexa__op op = {fn, arg, DEXA_OK, 0, NULL};
  pthread_mutex_lock(&rt->gc_mu);
  if (rt->gc_tail)
    rt->gc_tail->next = &op;
  else
    rt->gc_head = &op;
  rt->gc_tail = &op;
  while (!op.done) {
    if (rt->gc_leader || !rt->gc_head) {
      pthread_cond_wait(&rt->gc_cv, &rt->gc_mu);
      continue;
    }
    rt->gc_leader = 1;
    dexa__op *batch = take_batch(rt);
    pthread_mutex_unlock(&rt->gc_mu);
    run_batch(rt, batch);
    pthread_mutex_lock(&rt->gc_mu);
    /* op->next is the batch link; read it before done frees the op. */
    for (dexa__op *o = batch, *next; o; o = next) {
      next = o->next;
      o->done = 1;
    }
    rt->gc_leader = 0;
    pthread_cond_broadcast(&rt->gc_cv);
  }
  pthread_mutex_unlock(&rt->gc_mu);
  dexa__notify_commit(rt);
  return op.rc;
}
