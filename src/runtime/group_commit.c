/* Group commit in two stages, on two threads of the runtime.
 *
 * The writer takes every queued operation, runs each in its own savepoint
 * of ONE write transaction and commits once. With a store that syncs after
 * commit (store.h: sync_after_commit, the SQLite store with
 * synchronous=full) that COMMIT returns as soon as the batch is in the WAL
 * and frees the write lock; the batch is then made durable, and only then
 * are its operations acknowledged: a synchronous submitter returns, an
 * asynchronous one's release runs, waiters hear of the commit. The syncer
 * thread makes batches durable while the writer writes the next ones, so
 * SQL work overlaps the disk's (one fdatasync covers every batch committed
 * before it). The writer never syncs itself: an operation arriving during
 * a sync would wait for it before its batch could even start (measured
 * on W1 and W2, test/bench: 10 to 17% more turns and resumes per second
 * than syncing on the writer when few operations were queued).
 *
 * Nothing is acknowledged before it is durable, with one exception a
 * worker may take: its own claim of retryable Steps, with the result of
 * the retryable Step it finished, is acknowledged at commit
 * (dexa__gc_run_claim). Committed data can be read before it is
 * durable: an operating-system crash in that window loses it, a process
 * crash never does (the WAL is in the page cache).
 *
 * A sync is run when a thread waits for one: a batch that only such
 * worker commits and asynchronous completions are in is not synced on
 * its own. Its waiters hear of it at commit, and the next batch a thread
 * waits on (the session's next RPC) makes it durable with the same sync,
 * or the syncer does within DEXA__LAZY_SYNC_MS. One session at a time a
 * turn is then one sync, not one per commit (test/bench/turns -k 1:
 * 4.3 to 1.x syncs per turn; the sync was 40% of the CPU of a turn).
 *
 * Workers hand in Step completions asynchronously (dexa__gc_submit): the
 * completion joins the next batch and the worker goes on with its next
 * claimed Step. The threads start with the first operation and stop in
 * dexa__gc_shutdown after acknowledging everything queued.
 *
 * A synchronous operation submitted while nothing is queued and no batch
 * is being written is not handed to the writer: its own thread writes it
 * at once (a batch of one, on the writer connection, gc_writing held), and
 * when its commit must be durable and no sync is running it syncs too.
 * One session at a time this spares the two thread hand-offs (and their
 * futex wake-ups and context switches) per commit, and per sync; under
 * load operations still queue behind the batch being written and go in
 * the writer's next batch. Measured on W1 (test/bench/turns -k 1):
 * 20% less CPU per turn, turn p50 1.5 to 1.05 ms. Asynchronous operations
 * always go to the writer, so a worker never writes while it could run its
 * next claimed Step (-k 10: no gain from leading them, 10% fewer turns/s). */
#include <stdlib.h>
#include <unistd.h>

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

/* Runs batch in one transaction; sets every op's rc and returns the error
 * that failed the batch as a whole (DEXA_OK: committed). */
static int run_batch_once(dexa_runtime *rt, dexa__op *batch) {
  dexa__store_conn *c = rt->writer;
  int rc = c->ops->begin_write(c);
  int fatal = rc;
  if (rc == DEXA_OK && !batch->next) {
    /* A batch of one needs no savepoint: when the op fails, the whole
     * transaction is rolled back instead (the same outcome, two
     * statements fewer per commit). */
    batch->rc = batch->fn(rt, c, batch->arg);
    if (batch->rc == DEXA_OK) {
      fatal = c->ops->commit(c);
      if (fatal == DEXA_OK) return DEXA_OK;
      batch->rc = fatal;
    } else if (batch->rc == DEXA_E_IO || batch->rc == DEXA_E_CORRUPT || batch->rc == DEXA_E_BUSY) {
      fatal = batch->rc;
    }
    c->ops->rollback(c);
    return fatal;
  }
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
  return fatal;
}

/* Runs batch; with a store whose DEXA_E_BUSY means the transaction was
 * rolled back whole (store.h: batch_retry_ms: a conflict between
 * processes, a connection lost before COMMIT), runs it again after a
 * growing pause. Every op can run again: it starts from its arguments. */
static int batch_size(const dexa__op *batch) {
  int n = 0;
  for (const dexa__op *o = batch; o; o = o->next) n++;
  return n;
}

static void run_batch(dexa_runtime *rt, dexa__op *batch) {
  int64_t give_up = dexa__mono_ms() + rt->store->batch_retry_ms;
  int64_t pause_ms = 5;
  int rc;
  char why[512];
  while ((rc = run_batch_once(rt, batch)) == DEXA_E_BUSY && dexa__mono_ms() < give_up) {
    dexa__log(rt, DEXA_LOG_WARNING, "batch-busy",
              "store busy: a batch of %d operation%s was rolled back: %s; running it again in"
              " %lld ms",
              batch_size(batch), batch_size(batch) == 1 ? "" : "s",
              dexa__store_error(rt, rc, why, sizeof why), (long long)pause_ms);
    usleep((useconds_t)pause_ms * 1000);
    pause_ms = pause_ms < 500 ? pause_ms * 2 : 1000;
  }
  /* The operations' own errors go back to their callers; a batch that
   * could not be written at all is the store's trouble. */
  if (rc == DEXA_E_IO || rc == DEXA_E_BUSY || rc == DEXA_E_CORRUPT || rc == DEXA_E_NOMEM)
    dexa__log(rt, DEXA_LOG_WARNING, "batch-failed", "store: a batch of %d operation%s failed: %s",
              batch_size(batch), batch_size(batch) == 1 ? "" : "s",
              dexa__store_error(rt, rc, why, sizeof why));
}

static void append(dexa__op **head, dexa__op **tail, dexa__op *ops) {
  if (!ops) return;
  if (*tail)
    (*tail)->next = ops;
  else
    *head = ops;
  dexa__op *t = ops;
  while (t->next) t = t->next;
  *tail = t;
}

static dexa__op *take_batch(dexa_runtime *rt) {
  dexa__op *head = rt->gc_head, *tail = head;
  int n = 1;
  for (; tail->next && n < GC_MAX_BATCH; n++) tail = tail->next;
  rt->gc_head = tail->next;
  if (!rt->gc_head) rt->gc_tail = NULL;
  tail->next = NULL;
  return head;
}

static void fail_unsynced(dexa__op *ops, int rc) {
  /* Committed but not known to be on disk: the submitter must count on
   * neither its effects nor their absence. */
  for (dexa__op *o = ops; rc != DEXA_OK && o; o = o->next)
    if (o->rc == DEXA_OK) o->rc = rc;
}

/* Acknowledges durable ops (gc_mu held on entry and exit): marks the
 * synchronous ones done and releases the asynchronous ones; their
 * sessions' waiters, and an idle worker when wake_worker is set, hear of
 * the commit. */
static void acknowledge(dexa_runtime *rt, dexa__op *ops, int wake_worker) {
  dexa__op *async = NULL;
  /* op->next is the batch link; read it before done frees the op. */
  for (dexa__op *o = ops, *next; o; o = next) {
    next = o->next;
    if (o->release) {
      o->next = async;
      async = o;
    } else {
      o->done = 1;
      pthread_cond_signal(o->cv);
    }
  }
  pthread_mutex_unlock(&rt->gc_mu);
  dexa__notify_commit(rt, wake_worker);
  for (dexa__op *o = async, *next; o; o = next) {
    next = o->next;
    o->release(rt, o->arg, o->rc);
    free(o);
  }
  pthread_mutex_lock(&rt->gc_mu);
}

/* Acknowledges the ops of a committed batch that need not wait for
 * durability and returns the others (gc_mu held). */
static dexa__op *acknowledge_committed(dexa_runtime *rt, dexa__op *batch) {
  dexa__op *rest = NULL, **link = &rest;
  for (dexa__op *o = batch, *next; o; o = next) {
    next = o->next;
    o->next = NULL;
    if (!o->release && o->need_durable && !*o->need_durable) {
      o->done = 1;
      pthread_cond_signal(o->cv);
    } else {
      *link = o;
      link = &o->next;
    }
  }
  return rest;
}

/* Whether a committed batch may have left work for an idle worker: any op
 * that is not a quiet claim (dexa__op.quiet), or a batch that failed. */
static int wakes_a_worker(const dexa__op *batch) {
  for (const dexa__op *o = batch; o; o = o->next)
    if (o->rc != DEXA_OK || !o->quiet || !*o->quiet) return 1;
  return 0;
}

/* A thread waits for one of these ops to be durable: a synchronous op
 * still unacknowledged (asynchronous ones only free their arguments). */
static int someone_waits(const dexa__op *ops) {
  for (const dexa__op *o = ops; o; o = o->next)
    if (!o->release) return 1;
  return 0;
}

/* Makes every commit so far durable, then acknowledges ops (gc_mu held on
 * entry and exit; released meanwhile). */
static void sync_and_acknowledge(dexa_runtime *rt, dexa__op *ops) {
  pthread_mutex_unlock(&rt->gc_mu);
  int rc = rt->store->ops->sync(rt->store);
  if (rc != DEXA_OK) {
    char why[512];
    dexa__log(rt, DEXA_LOG_ERROR, "sync", "store: cannot make the latest commits durable: %s",
              dexa__store_error(rt, rc, why, sizeof why));
  }
  pthread_mutex_lock(&rt->gc_mu);
  fail_unsynced(ops, rc);
  int wake = rt->gc_wake_pending;
  rt->gc_wake_pending = 0;
  acknowledge(rt, ops, wake);
}

/* Takes every committed batch and makes it durable (gc_mu held, no sync
 * running): the syncer thread's work, or a leader's for its own op. */
static void sync_all(dexa_runtime *rt) {
  /* Every batch committed so far, and their ops still to acknowledge
   * (the ones acknowledged at commit are gone from the list). */
  dexa__op *ops = rt->gc_unsynced;
  rt->gc_unsynced = rt->gc_unsynced_tail = NULL;
  rt->gc_unsynced_batches = 0;
  rt->gc_sync_waited = 0;
  rt->gc_lazy_due = 0;
  rt->gc_syncing = 1;
  sync_and_acknowledge(rt, ops);
  rt->gc_syncing = 0;
  /* Batches committed during this sync: the syncer thread takes them. */
  if (rt->gc_unsynced_batches) pthread_cond_signal(&rt->gc_sync_cv);
}

/* Whether the syncer should sync now (gc_mu held); otherwise *until is
 * when to look again (0: when signalled). */
static int sync_due(dexa_runtime *rt, int64_t *until) {
  *until = 0;
  if (!rt->gc_unsynced_batches || rt->gc_syncing) return 0;
  if (rt->gc_sync_waited || rt->gc_stop || dexa__mono_ms() >= rt->gc_lazy_due) return 1;
  *until = rt->gc_lazy_due;
  return 0;
}

static void *syncer_main(void *arg) {
  dexa_runtime *rt = arg;
  pthread_setname_np(pthread_self(), "dexa-syncer");
  pthread_mutex_lock(&rt->gc_mu);
  for (;;) {
    int64_t until;
    if (sync_due(rt, &until)) {
      sync_all(rt);
      continue;
    }
    /* Stopping: done once nothing is left and no batch can follow. */
    if (rt->gc_stop && !rt->gc_unsynced_batches && !rt->gc_writer_running && !rt->gc_writing)
      break;
    rt->gc_syncer_alarm = until;
    if (until)
      dexa__cond_wait_until(&rt->gc_sync_cv, &rt->gc_mu, until);
    else
      pthread_cond_wait(&rt->gc_sync_cv, &rt->gc_mu);
    rt->gc_syncer_alarm = -1;
  }
  pthread_mutex_unlock(&rt->gc_mu);
  return NULL;
}

/* A committed batch that no thread waits on to be durable: its waiters
 * hear of it now, and its sync is left for the next batch someone waits
 * on, or for the syncer at most DEXA__LAZY_SYNC_MS later, whichever comes
 * first (gc_mu held on entry and exit; released meanwhile). */
static void defer_sync(dexa_runtime *rt, int wake_worker) {
  if (!rt->gc_lazy_due) rt->gc_lazy_due = dexa__mono_ms() + DEXA__LAZY_SYNC_MS;
  /* A syncer asleep with no alarm, or one set too late, must hear of the
   * new deadline; one that wakes before it looks again anyway (so one
   * session at a time costs the syncer a wake-up per alarm, not per turn).
   * Signalled unlocked, so it does not wake into a held mutex. */
  int64_t alarm = rt->gc_syncer_alarm;
  int tell = alarm == 0 || alarm > rt->gc_lazy_due;
  pthread_mutex_unlock(&rt->gc_mu);
  if (tell) pthread_cond_signal(&rt->gc_sync_cv);
  dexa__notify_commit(rt, wake_worker);
  pthread_mutex_lock(&rt->gc_mu);
}

/* After a batch is committed (gc_mu held, gc_writing cleared): ops queued
 * meanwhile go to the writer thread; with a store that syncs after commit
 * the batch waits for a sync when a thread waits on it, which the syncer
 * thread runs unless lead is set, no sync is running and no other batch
 * is queued or being written (then this thread syncs). */
static void batch_committed(dexa_runtime *rt, dexa__op *batch, int lead) {
  if (rt->gc_head) pthread_cond_signal(&rt->gc_work_cv);
  /* Read before any op is acknowledged: a synchronous op's submitter
   * returns then, and its quiet flag with it. */
  int wake = wakes_a_worker(batch);
  if (!rt->store->sync_after_commit) {
    acknowledge(rt, batch, wake);
    return;
  }
  dexa__op *rest = acknowledge_committed(rt, batch);
  append(&rt->gc_unsynced, &rt->gc_unsynced_tail, rest);
  rt->gc_unsynced_batches++;
  if (!someone_waits(rest)) {
    defer_sync(rt, wake);
    return;
  }
  rt->gc_wake_pending |= wake;
  rt->gc_sync_waited = 1;
  /* Another batch queued or being written commits soon: the syncer thread
   * takes both in one sync (leading it here cost more syncs at -k 10). */
  if (lead && !rt->gc_syncing && !rt->gc_head && !rt->gc_writing)
    sync_all(rt);
  else
    pthread_cond_signal(&rt->gc_sync_cv);
}

static void *writer_main(void *arg) {
  dexa_runtime *rt = arg;
  pthread_setname_np(pthread_self(), "dexa-writer");
  pthread_mutex_lock(&rt->gc_mu);
  for (;;) {
    while ((!rt->gc_head || rt->gc_writing) && !rt->gc_stop)
      pthread_cond_wait(&rt->gc_work_cv, &rt->gc_mu);
    if (!rt->gc_head && !rt->gc_writing) break; /* stopping and nothing left */
    if (!rt->gc_head || rt->gc_writing) {       /* stopping: a leader is writing */
      pthread_cond_wait(&rt->gc_work_cv, &rt->gc_mu);
      continue;
    }
    dexa__op *batch = take_batch(rt);
    rt->gc_writing = 1;
    pthread_mutex_unlock(&rt->gc_mu);
    run_batch(rt, batch);
    dexa__mark_committed(rt);
    pthread_mutex_lock(&rt->gc_mu);
    rt->gc_writing = 0;
    batch_committed(rt, batch, 0);
  }
  rt->gc_writer_running = 0;
  pthread_cond_signal(&rt->gc_sync_cv);
  pthread_mutex_unlock(&rt->gc_mu);
  return NULL;
}

/* Starts the threads on first use (gc_mu held). */
static int ensure_threads(dexa_runtime *rt) {
  if (rt->gc_writer_running) return DEXA_OK;
  if (rt->gc_stop) return DEXA_E_BAD_STATE;
  if (rt->store->sync_after_commit && !rt->gc_syncer_started) {
    if (pthread_create(&rt->gc_syncer, NULL, syncer_main, rt) != 0) return DEXA_E_NOMEM;
    rt->gc_syncer_started = 1;
  }
  if (pthread_create(&rt->gc_writer, NULL, writer_main, rt) != 0) return DEXA_E_NOMEM;
  rt->gc_writer_running = rt->gc_writer_started = 1;
  return DEXA_OK;
}

/* Queues op, or, when nothing is queued and no batch is being written,
 * writes it at once on this thread: a batch of one, without handing it to
 * the writer thread and back (gc_mu held on entry and exit). A
 * synchronous op whose commit must be durable is then synced on this
 * thread too when no sync is running. */
static int enqueue(dexa_runtime *rt, dexa__op *op) {
  int rc = ensure_threads(rt);
  if (rc != DEXA_OK) return rc;
  if (rt->gc_head || rt->gc_writing || op->release) {
    append(&rt->gc_head, &rt->gc_tail, op);
    pthread_cond_signal(&rt->gc_work_cv);
    return DEXA_OK;
  }
  op->next = NULL;
  rt->gc_writing = 1;
  pthread_mutex_unlock(&rt->gc_mu);
  run_batch(rt, op);
  dexa__mark_committed(rt);
  pthread_mutex_lock(&rt->gc_mu);
  rt->gc_writing = 0;
  batch_committed(rt, op, 1);
  return DEXA_OK;
}

int dexa__gc_run(dexa_runtime *rt, dexa__op_fn fn, void *arg) {
  return dexa__gc_run_claim(rt, fn, arg, NULL, NULL);
}

int dexa__gc_run_claim(dexa_runtime *rt, dexa__op_fn fn, void *arg, const int *need_durable,
                       const int *quiet) {
  pthread_cond_t cv;
  if (pthread_cond_init(&cv, NULL) != 0) return DEXA_E_NOMEM;
  dexa__op op = {fn, arg, DEXA_OK, 0, need_durable, quiet, NULL, &cv, NULL};
  pthread_mutex_lock(&rt->gc_mu);
  int rc = enqueue(rt, &op);
  while (rc == DEXA_OK && !op.done) pthread_cond_wait(&cv, &rt->gc_mu);
  pthread_mutex_unlock(&rt->gc_mu);
  pthread_cond_destroy(&cv);
  return rc == DEXA_OK ? op.rc : rc;
}

int dexa__gc_submit(dexa_runtime *rt, dexa__op_fn fn, void *arg,
                    void (*release)(dexa_runtime *rt, void *arg, int rc)) {
  dexa__op *op = calloc(1, sizeof *op);
  if (!op) return DEXA_E_NOMEM;
  op->fn = fn;
  op->arg = arg;
  op->release = release;
  pthread_mutex_lock(&rt->gc_mu);
  int rc = enqueue(rt, op);
  pthread_mutex_unlock(&rt->gc_mu);
  if (rc != DEXA_OK) free(op); /* not queued, not run */
  return rc;
}

void dexa__gc_shutdown(dexa_runtime *rt) {
  pthread_mutex_lock(&rt->gc_mu);
  rt->gc_stop = 1;
  pthread_cond_broadcast(&rt->gc_work_cv);
  pthread_cond_broadcast(&rt->gc_sync_cv);
  pthread_mutex_unlock(&rt->gc_mu);
  /* Each drains its stage before it returns. */
  if (rt->gc_writer_started) pthread_join(rt->gc_writer, NULL);
  if (rt->gc_syncer_started) pthread_join(rt->gc_syncer, NULL);
  rt->gc_writer_started = rt->gc_syncer_started = 0;
}
