/* The runtime handle: options, creation from an agent (or a description and
 * a dispatch function, for tests), clocks and error messages. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dexagents/agent.h"
#include "dexagents/runtime.h"
#include "runtime/runtime_internal.h"
#include "util/buf.h"

/* The 1.0 size: every field up to clock_user_data. */
#define OPTIONS_V1_SIZE (offsetof(dexa_runtime_options, clock_user_data) + sizeof(void *))
/* 64 MiB: a session at 10 turns holds about 30 KB of attributes, so a few
 * thousand active sessions fit. */
#define DEFAULT_SESSION_CACHE_BYTES ((size_t)64 << 20)

DEXA_EXTERN int dexa_runtime_options_init(dexa_runtime_options *o, size_t struct_size) {
  if (!o) return DEXA_E_INVALID_ARG;
  if (struct_size < OPTIONS_V1_SIZE) return DEXA_E_STRUCT_SIZE;
  size_t n = struct_size < sizeof *o ? struct_size : sizeof *o;
  memset(o, 0, n);
  o->struct_size = (uint32_t)n;
  o->lease_ms = 10000;
  if (n >= offsetof(dexa_runtime_options, events_retained) + sizeof(int64_t))
    o->events_retained = 10000;
  if (n >= offsetof(dexa_runtime_options, session_cache_bytes) + sizeof(int64_t))
    o->session_cache_bytes = DEFAULT_SESSION_CACHE_BYTES;
  if (n >= offsetof(dexa_runtime_options, session_idle_timeout_ms) + sizeof(int64_t))
    o->session_idle_timeout_ms = DEXA__DEFAULT_IDLE_MS;
  if (n >= offsetof(dexa_runtime_options, session_retention_ms) + sizeof(int64_t))
    o->session_retention_ms = DEXA__DEFAULT_RETENTION_MS;
  if (n >= offsetof(dexa_runtime_options, sweep_interval_ms) + sizeof(int64_t))
    o->sweep_interval_ms = DEXA__DEFAULT_SWEEP_MS;
  return DEXA_OK;
}

int64_t dexa__now(const dexa_runtime *rt) {
  if (rt->clock) return rt->clock(rt->clock_user);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t dexa__mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void dexa__cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t mono_ms) {
  struct timespec ts = {.tv_sec = mono_ms / 1000, .tv_nsec = (mono_ms % 1000) * 1000000};
  pthread_cond_timedwait(cv, mu, &ts);
}

void dexa__set_errmsg(dexa_runtime *rt, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  pthread_mutex_lock(&rt->mu);
  vsnprintf(rt->errmsg, sizeof rt->errmsg, fmt, ap);
  pthread_mutex_unlock(&rt->mu);
  va_end(ap);
}

DEXA_EXTERN const char *dexa_runtime_errmsg(const dexa_runtime *rt) {
  return rt ? rt->errmsg : "";
}

size_t dexa__session_bucket(const char *sid) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (const unsigned char *p = (const unsigned char *)sid; *p; p++) h = (h ^ *p) * 16777619u;
  return h % DEXA__SESSION_BUCKETS;
}

void dexa__touch_session(dexa_runtime *rt, const char *sid) {
  rt->batch_touched[dexa__session_bucket(sid)] = 1;
}

uint64_t dexa__session_gen(dexa_runtime *rt, const char *sid) {
  pthread_mutex_lock(&rt->mu);
  uint64_t g = rt->session_gen[dexa__session_bucket(sid)];
  pthread_mutex_unlock(&rt->mu);
  return g;
}

int64_t dexa__poll_ms(const dexa_runtime *rt) {
  return rt->store && rt->store->poll_ms > 0 ? rt->store->poll_ms : 100;
}

void dexa__wait_session_change(dexa_runtime *rt, const char *sid, uint64_t gen,
                               int64_t deadline) {
  int64_t now = dexa__mono_ms();
  int64_t poll = dexa__poll_ms(rt);
  int64_t until = now + poll < deadline ? now + poll : deadline;
  size_t b = dexa__session_bucket(sid);
  pthread_mutex_lock(&rt->mu);
  while (rt->session_gen[b] == gen && dexa__mono_ms() < until)
    dexa__cond_wait_until(&rt->session_cv[b], &rt->mu, until);
  pthread_mutex_unlock(&rt->mu);
}

void dexa__session_changed(dexa_runtime *rt, size_t bucket) {
  rt->session_gen[bucket]++;
  pthread_cond_broadcast(&rt->session_cv[bucket]);
}

void dexa__mark_committed(dexa_runtime *rt) {
  pthread_mutex_lock(&rt->mu);
  for (size_t b = 0; b < DEXA__SESSION_BUCKETS; b++)
    if (rt->batch_touched[b]) {
      rt->batch_touched[b] = 0;
      rt->committed_touched[b] = 1;
    }
  pthread_mutex_unlock(&rt->mu);
}

void dexa__notify_commit(dexa_runtime *rt, int wake_worker) {
  /* The generations change under rt->mu; the waiters are woken after it
   * is unlocked, so none wakes only to block on the mutex (a commit
   * touches a few sessions: the rest are broadcast to under the lock). */
  enum { WAKE_AFTER = 8 };
  size_t later[WAKE_AFTER], n_later = 0;
  pthread_mutex_lock(&rt->mu);
  rt->work_gen++;
  for (size_t b = 0; b < DEXA__SESSION_BUCKETS; b++)
    if (rt->committed_touched[b]) {
      rt->committed_touched[b] = 0;
      rt->session_gen[b]++;
      if (n_later < WAKE_AFTER)
        later[n_later++] = b;
      else
        pthread_cond_broadcast(&rt->session_cv[b]);
    }
  /* One idle worker (or poller) looks: most commits make at most one
   * claim's worth of work ready, and a claim that took all it could wakes
   * the next waiter (tasks.c: claim_into), so work never waits for a
   * poll period; waking every idle worker on every commit cost each of
   * them a wake-up and a due-row query for nothing. A worker's own claim
   * that left no work (dexa__claim.quiet) wakes none. */
  pthread_mutex_unlock(&rt->mu);
  for (size_t i = 0; i < n_later; i++) pthread_cond_broadcast(&rt->session_cv[later[i]]);
  if (wake_worker) pthread_cond_signal(&rt->work_cv);
}

/* The store's wake hook: another process committed a change to sid (NULL:
 * to any session). Wakes this process's idle workers and sid's waiters. */
static void store_wake(void *ctx, const char *sid) {
  dexa_runtime *rt = ctx;
  pthread_mutex_lock(&rt->mu);
  rt->work_gen++;
  if (sid) {
    dexa__session_changed(rt, dexa__session_bucket(sid));
  } else {
    for (size_t b = 0; b < DEXA__SESSION_BUCKETS; b++) dexa__session_changed(rt, b);
  }
  pthread_cond_broadcast(&rt->work_cv);
  pthread_mutex_unlock(&rt->mu);
}

char *dexa__error_doc(int code, const char *message, size_t *len) {
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_printf(&b, "{\"error\":{\"code\":%d,\"name\":", code);
  dexa__buf_json_cstr(&b, dexa_error_name(code));
  dexa__buf_puts(&b, ",\"message\":");
  dexa__buf_json_cstr(&b, message && *message ? message : dexa_strerror(code));
  dexa__buf_puts(&b, "}}");
  return dexa__buf_steal(&b, len);
}

static int init_sync(dexa_runtime *rt) {
  pthread_condattr_t ca;
  if (pthread_condattr_init(&ca) != 0) return DEXA_E_NOMEM;
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  int bad = pthread_mutex_init(&rt->mu, NULL) | pthread_mutex_init(&rt->gc_mu, NULL) |
            pthread_mutex_init(&rt->pool_mu, NULL) | pthread_mutex_init(&rt->ring_mu, NULL) |
            pthread_mutex_init(&rt->log_mu, NULL) |
            pthread_cond_init(&rt->work_cv, &ca) |
            pthread_cond_init(&rt->hb_cv, &ca) |
            pthread_cond_init(&rt->gc_sync_cv, &ca) | pthread_cond_init(&rt->gc_work_cv, &ca);
  for (size_t b = 0; b < DEXA__SESSION_BUCKETS; b++)
    bad |= pthread_cond_init(&rt->session_cv[b], &ca);
  pthread_condattr_destroy(&ca);
  return bad ? DEXA_E_NOMEM : DEXA_OK;
}

/* An appended int64 option: the caller's when its struct has the field. */
#define OPT_I64(o, field, dflt) \
  ((o) && (o)->struct_size >= offsetof(dexa_runtime_options, field) + sizeof(int64_t) ? (o)->field : (dflt))

static void copy_lifetime(dexa_runtime *rt, const dexa_runtime_options *o) {
  int64_t idle = OPT_I64(o, session_idle_timeout_ms, DEXA__DEFAULT_IDLE_MS);
  int64_t keep = OPT_I64(o, session_retention_ms, DEXA__DEFAULT_RETENTION_MS);
  int64_t every = OPT_I64(o, sweep_interval_ms, DEXA__DEFAULT_SWEEP_MS);
  rt->idle_ms = idle > 0 ? idle : 0;
  rt->retention_ms = keep > 0 ? keep : 0;
  rt->sweep_interval_ms = every > 0 ? every : 0;
  /* Activity is written when it moved by a 64th of the timeout (at most an
   * hour), so most commits write none; the sweep allows for that lag. */
  int64_t step = rt->idle_ms > 0 ? rt->idle_ms / 64 : 3600000;
  rt->touch_step = step < 1 ? 1 : step > 3600000 ? 3600000 : step;
  atomic_init(&rt->sweep_due, 0);
  atomic_init(&rt->sweeping, 0);
}

static void copy_options(dexa_runtime *rt, const dexa_runtime_options *o) {
  rt->lease_ms = 10000;
  rt->events_retained = 10000;
  copy_lifetime(rt, o);
  snprintf(rt->worker_id, sizeof rt->worker_id, "worker-%ld", (long)getpid());
  char host[128];
  if (gethostname(host, sizeof host) == 0) {
    host[sizeof host - 1] = '\0';
    snprintf(rt->worker_id, sizeof rt->worker_id, "%s-%ld", host, (long)getpid());
  }
  if (!o) return;
  if (o->lease_ms > 0) rt->lease_ms = o->lease_ms;
  if (o->worker_id && *o->worker_id) snprintf(rt->worker_id, sizeof rt->worker_id, "%s", o->worker_id);
  rt->clock = o->clock;
  rt->clock_user = o->clock_user_data;
  if (o->struct_size >= offsetof(dexa_runtime_options, log_user_data) + sizeof(void *)) {
    rt->log = o->log;
    rt->log_user = o->log_user_data;
  }
  if (o->struct_size >= offsetof(dexa_runtime_options, events_retained) + sizeof(int64_t))
    rt->events_retained = o->events_retained < 0 ? 0 : o->events_retained;
}

/* The session cache's bound: from options that have the field, else the
 * default. */
static size_t session_cache_bytes(const dexa_runtime_options *o) {
  if (!o || o->struct_size < offsetof(dexa_runtime_options, session_cache_bytes) + sizeof(int64_t))
    return DEFAULT_SESSION_CACHE_BYTES;
  return o->session_cache_bytes > 0 ? (size_t)o->session_cache_bytes : 0;
}

/* The store's log goes to the runtime's (rate-limited by the same kinds). */
static void store_log(void *ctx, int32_t level, const char *kind, const char *message) {
  dexa__log(ctx, level, kind, "%s", message);
}

static int open_store(dexa_runtime *rt, const dexa_runtime_options *o, char *errmsg, size_t n) {
  dexa__store_config cfg = {o ? o->store : NULL, o ? o->sqlite_synchronous : NULL,
                            session_cache_bytes(o), rt->log ? store_log : NULL, rt};
  int rc = dexa__store_open(&rt->store, &cfg, errmsg, n);
  if (rc == DEXA_OK) rc = rt->store->ops->conn_open(rt->store, &rt->writer);
  if (rc == DEXA_OK && rt->store->ops->set_wake) rt->store->ops->set_wake(rt->store, store_wake, rt);
  if (rc != DEXA_OK && errmsg && !*errmsg) snprintf(errmsg, n, "cannot open the store: %s", dexa_strerror(rc));
  return rc;
}

int dexa__runtime_new_with_dispatch(dexa_runtime **out, const char *desc_json,
                                    dexa__dispatch_fn fn, void *user,
                                    const dexa_runtime_options *opts, char *errmsg,
                                    size_t errmsg_size) {
  if (errmsg && errmsg_size) errmsg[0] = '\0';
  if (!out) return DEXA_E_INVALID_ARG;
  *out = NULL;
  if (!desc_json || !fn) return DEXA_E_INVALID_ARG;
  if (opts && opts->struct_size < OPTIONS_V1_SIZE) return DEXA_E_STRUCT_SIZE;
  dexa_runtime *rt = calloc(1, sizeof *rt);
  if (!rt) return DEXA_E_NOMEM;
  int rc = init_sync(rt);
  if (rc != DEXA_OK) {
    free(rt);
    return rc;
  }
  rt->dispatch = fn;
  rt->dispatch_user = user;
  copy_options(rt, opts);
  rc = dexa__flow_desc_parse(&rt->desc, desc_json, strlen(desc_json), errmsg, errmsg_size);
  if (rc == DEXA_OK) rc = open_store(rt, opts, errmsg, errmsg_size);
  if (rc == DEXA_OK) rc = dexa__trace_open(rt, opts);
  if (rc != DEXA_OK) {
    dexa_runtime_free(rt);
    return rc;
  }
  *out = rt;
  return DEXA_OK;
}

static int agent_dispatch(void *user, dexa_result **out, const dexa_call *call) {
  return dexa_dispatch(out, (const dexa_agent *)user, call);
}

DEXA_EXTERN int dexa_runtime_new(dexa_runtime **out, const dexa_agent *agent,
                                 const dexa_runtime_options *options, char *errmsg,
                                 size_t errmsg_size) {
  if (errmsg && errmsg_size) errmsg[0] = '\0';
  if (!out) return DEXA_E_INVALID_ARG;
  *out = NULL;
  if (!agent) return DEXA_E_INVALID_ARG;
  char *desc = NULL;
  size_t len = 0;
  int rc = dexa_flow_describe(&desc, &len, agent);
  if (rc != DEXA_OK) {
    if (errmsg) snprintf(errmsg, errmsg_size, "dexa_flow_describe: %s", dexa_strerror(rc));
    return rc == DEXA_E_NOMEM ? rc : DEXA_E_INTERNAL;
  }
  rc = dexa__runtime_new_with_dispatch(out, desc, agent_dispatch, (void *)agent, options,
                                       errmsg, errmsg_size);
  /* A description the runtime cannot read is the library's bug. */
  if (rc == DEXA_E_INVALID_JSON) rc = DEXA_E_INTERNAL;
  if (*out) (*out)->agent = agent;
  dexa_free(desc);
  return rc;
}

DEXA_EXTERN void dexa_runtime_free(dexa_runtime *rt) {
  if (!rt) return;
  dexa_runtime_stop(rt);
  for (dexa_task *t; (t = dexa__claimed_pop(rt));) dexa_task_abandon(rt, t);
  free(rt->claimed);
  dexa__heartbeat_stop(rt);
  dexa__gc_shutdown(rt);
  dexa__trace_close(rt); /* sends what it holds, for a bounded time */
  /* Tasks still claimed are resumed by the next process after their lease. */
  while (rt->inflight) {
    dexa_task *t = rt->inflight;
    dexa__inflight_remove(rt, t);
    dexa__task_free(t);
  }
  for (size_t i = 0; i < rt->pool_count; i++) rt->store->ops->conn_close(rt->pool[i]);
  free(rt->pool);
  if (rt->writer) rt->store->ops->conn_close(rt->writer);
  if (rt->store) rt->store->ops->close(rt->store);
  dexa__ring_free(rt);
  dexa__flow_desc_free(&rt->desc);
  pthread_mutex_destroy(&rt->mu);
  pthread_mutex_destroy(&rt->gc_mu);
  pthread_mutex_destroy(&rt->pool_mu);
  pthread_mutex_destroy(&rt->ring_mu);
  pthread_mutex_destroy(&rt->log_mu);
  pthread_cond_destroy(&rt->work_cv);
  for (size_t b = 0; b < DEXA__SESSION_BUCKETS; b++) pthread_cond_destroy(&rt->session_cv[b]);
  pthread_cond_destroy(&rt->hb_cv);
  pthread_cond_destroy(&rt->gc_sync_cv);
  pthread_cond_destroy(&rt->gc_work_cv);
  free(rt);
}
