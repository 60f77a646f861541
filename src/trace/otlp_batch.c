/* The exporter: a bounded queue of spans and one background thread that
 * sends them in batches (the OpenTelemetry batch span processor). A Step
 * only ever appends a pointer under the mutex: when the queue is full the
 * span is dropped and counted, so tracing never slows a Step down. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dexagents/errors.h"
#include "trace/otlp.h"

struct dexa__otlp {
  dexa__otlp_config cfg;
  dexa__otlp_sender sender;
  pthread_mutex_t mu;
  pthread_cond_t work_cv; /* for the thread: spans, a flush, a stop */
  pthread_cond_t done_cv; /* for flushers: the queue went empty */
  dexa_span **ring;
  size_t head, count;
  uint64_t flush_req, flush_done;
  int stop;
  int busy; /* the thread is sending a batch */
  pthread_t thread;
  int started;
  dexa__otlp_stats stats;
};

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t mono) {
  struct timespec ts = {.tv_sec = mono / 1000, .tv_nsec = (mono % 1000) * 1000000};
  pthread_cond_timedwait(cv, mu, &ts);
}

static int retryable(int rc, long status) {
  return rc != DEXA_OK || status == 429 || status == 502 || status == 503 || status == 504;
}

/* Encodes and sends one batch with its retries (x->mu not held); returns
 * 1 when the collector took it. */
static int send_batch(dexa__otlp *x, dexa_span **spans, size_t n) {
  dexa__buf body;
  dexa__buf_init(&body);
  int rc = x->cfg.json ? dexa__otlp_encode_json(&body, &x->cfg, spans, n)
                       : dexa__otlp_encode_pb(&body, &x->cfg, spans, n);
  int ok = 0;
  int64_t deadline = mono_ms() + x->cfg.export_timeout_ms;
  int64_t backoff = x->cfg.initial_backoff_ms;
  for (int attempt = 1; rc == DEXA_OK; attempt++) {
    int64_t left = deadline - mono_ms();
    if (left <= 0) break;
    long status = 0;
    int64_t retry_after = 0;
    int src = x->sender.send(x->sender.ctx, body.data ? body.data : "", body.len,
                             left < x->cfg.timeout_ms ? left : x->cfg.timeout_ms, &status,
                             &retry_after);
    if (src == DEXA_OK && status >= 200 && status < 300) {
      ok = 1;
      break;
    }
    if (!retryable(src, status) || attempt >= x->cfg.max_attempts) break;
    int64_t delay = retry_after > 0 ? retry_after : backoff;
    backoff *= 2;
    pthread_mutex_lock(&x->mu);
    x->stats.retries++;
    int64_t until = mono_ms() + delay;
    if (until > deadline) until = deadline;
    /* A stop cuts the wait short (then one last try, within the deadline). */
    while (!x->stop && mono_ms() < until) wait_until(&x->work_cv, &x->mu, until);
    int stopping = x->stop;
    pthread_mutex_unlock(&x->mu);
    if (stopping && mono_ms() >= until) break;
  }
  dexa__buf_free(&body);
  return ok;
}

/* Takes up to max_batch spans off the queue (x->mu held). */
static size_t take_batch(dexa__otlp *x, dexa_span **batch) {
  size_t n = x->count < x->cfg.max_batch ? x->count : x->cfg.max_batch;
  for (size_t i = 0; i < n; i++) {
    batch[i] = x->ring[x->head];
    x->head = (x->head + 1) % x->cfg.max_queue;
  }
  x->count -= n;
  return n;
}

static void *export_main(void *arg) {
  dexa__otlp *x = arg;
  pthread_setname_np(pthread_self(), "dexa-otlp");
  dexa_span **batch = calloc(x->cfg.max_batch, sizeof *batch);
  pthread_mutex_lock(&x->mu);
  for (;;) {
    /* Idle until a span comes; the schedule delay counts from the first. */
    while (!x->stop && x->flush_req == x->flush_done && x->count == 0)
      pthread_cond_wait(&x->work_cv, &x->mu);
    int64_t due = mono_ms() + x->cfg.schedule_delay_ms;
    while (!x->stop && x->count < x->cfg.max_batch && x->flush_req == x->flush_done &&
           mono_ms() < due)
      wait_until(&x->work_cv, &x->mu, due);
    if (x->count == 0) {
      if (x->flush_req != x->flush_done) {
        x->flush_done = x->flush_req;
        pthread_cond_broadcast(&x->done_cv);
      }
      if (x->stop) break;
      continue;
    }
    if (!batch) { /* no memory for a batch: the spans are lost */
      while (x->count) {
        dexa__span_free(x->ring[x->head]);
        x->head = (x->head + 1) % x->cfg.max_queue;
        x->count--;
        x->stats.failed++;
      }
      continue;
    }
    size_t n = take_batch(x, batch);
    x->busy = 1;
    pthread_mutex_unlock(&x->mu);
    int ok = send_batch(x, batch, n);
    for (size_t i = 0; i < n; i++) dexa__span_free(batch[i]);
    pthread_mutex_lock(&x->mu);
    x->busy = 0;
    if (ok) x->stats.exported += (int64_t)n;
    else x->stats.failed += (int64_t)n;
  }
  pthread_cond_broadcast(&x->done_cv);
  pthread_mutex_unlock(&x->mu);
  free(batch);
  return NULL;
}

int dexa__otlp_new(dexa__otlp **out, dexa__otlp_config *cfg, dexa__otlp_sender sender) {
  *out = NULL;
  dexa__otlp *x = calloc(1, sizeof *x);
  if (x) x->ring = calloc(cfg->max_queue ? cfg->max_queue : 1, sizeof *x->ring);
  if (!x || !x->ring) goto fail;
  x->cfg = *cfg;
  memset(cfg, 0, sizeof *cfg);
  if (x->cfg.max_queue == 0) x->cfg.max_queue = 1;
  if (x->cfg.max_batch == 0 || x->cfg.max_batch > x->cfg.max_queue) x->cfg.max_batch = x->cfg.max_queue;
  x->sender = sender;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_mutex_init(&x->mu, NULL);
  pthread_cond_init(&x->work_cv, &ca);
  pthread_cond_init(&x->done_cv, &ca);
  pthread_condattr_destroy(&ca);
  if (pthread_create(&x->thread, NULL, export_main, x) != 0) {
    dexa__otlp_free(x);
    return DEXA_E_NOMEM;
  }
  x->started = 1;
  *out = x;
  return DEXA_OK;
fail:
  if (x) free(x->ring);
  free(x);
  dexa__otlp_config_free(cfg);
  if (sender.free) sender.free(sender.ctx);
  return DEXA_E_NOMEM;
}

int dexa__otlp_enqueue(dexa__otlp *x, dexa_span *span) {
  if (!span) return 1;
  if (!x) {
    dexa__span_free(span);
    return 0;
  }
  pthread_mutex_lock(&x->mu);
  if (x->stop || x->count == x->cfg.max_queue) {
    x->stats.dropped++;
    pthread_mutex_unlock(&x->mu);
    dexa__span_free(span);
    return 0;
  }
  x->ring[(x->head + x->count) % x->cfg.max_queue] = span;
  x->count++;
  if (x->count == 1 || x->count == x->cfg.max_batch) pthread_cond_signal(&x->work_cv);
  pthread_mutex_unlock(&x->mu);
  return 1;
}

int dexa__otlp_flush(dexa__otlp *x, int64_t timeout_ms) {
  if (!x) return DEXA_OK;
  int64_t deadline = mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
  pthread_mutex_lock(&x->mu);
  uint64_t mine = ++x->flush_req;
  pthread_cond_signal(&x->work_cv);
  while (x->started && x->flush_done < mine && !(x->stop && !x->busy && x->count == 0) &&
         mono_ms() < deadline)
    wait_until(&x->done_cv, &x->mu, deadline);
  int rc = x->flush_done >= mine ? DEXA_OK : DEXA_E_TIMEOUT;
  pthread_mutex_unlock(&x->mu);
  return rc;
}

void dexa__otlp_free(dexa__otlp *x) {
  if (!x) return;
  if (x->started) {
    (void)dexa__otlp_flush(x, x->cfg.export_timeout_ms);
    pthread_mutex_lock(&x->mu);
    x->stop = 1;
    /* What the flush could not send in time is not sent: a bounded stop. */
    while (x->count) {
      dexa__span_free(x->ring[x->head]);
      x->head = (x->head + 1) % x->cfg.max_queue;
      x->count--;
      x->stats.failed++;
    }
    pthread_cond_broadcast(&x->work_cv);
    pthread_mutex_unlock(&x->mu);
    pthread_join(x->thread, NULL);
  }
  pthread_mutex_destroy(&x->mu);
  pthread_cond_destroy(&x->work_cv);
  pthread_cond_destroy(&x->done_cv);
  free(x->ring);
  if (x->sender.free) x->sender.free(x->sender.ctx);
  dexa__otlp_config_free(&x->cfg);
  free(x);
}

void dexa__otlp_get_stats(dexa__otlp *x, dexa__otlp_stats *out) {
  memset(out, 0, sizeof *out);
  if (!x) return;
  pthread_mutex_lock(&x->mu);
  *out = x->stats;
  out->queued = (int64_t)x->count;
  pthread_mutex_unlock(&x->mu);
}

const dexa__otlp_config *dexa__otlp_get_config(const dexa__otlp *x) { return x ? &x->cfg : NULL; }
