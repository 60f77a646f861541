/* Runtimes: options, client operations and waits as jobs (their own
 * threads), host-driven tasks, closing, and the environment's teardown.
 *
 * Waits (events, wait_idle, poll) call the library in slices of 250 ms and
 * look between slices whether they were aborted (AbortSignal) or the
 * runtime is closing, so close() never waits long for a reader and an
 * aborted reader's thread ends soon. */
#include "runtime.h"
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLICE_MS 250

/* ---- options ---------------------------------------------------------------- */

typedef struct runtime_opts {
  dexa_runtime_options o;
  char *store, *sync, *worker;
} runtime_opts;

static void runtime_opts_free(runtime_opts *ro) {
  free(ro->store);
  free(ro->sync);
  free(ro->worker);
}

/* Reads {store, sqliteSynchronous, workerId, leaseMs, eventsRetained,
 * sessionCacheBytes, sessionIdleTimeoutMs, sessionRetentionMs,
 * sweepIntervalMs, onLog}; an unknown key throws. onLog is not read here
 * (js_runtime_new makes its log sink). */
static bool runtime_opts_read(napi_env env, napi_value v, runtime_opts *ro) {
  static const char *const keys[] = {"store", "sqliteSynchronous", "workerId", "leaseMs",
                                     "eventsRetained", "sessionCacheBytes",
                                     "sessionIdleTimeoutMs", "sessionRetentionMs",
                                     "sweepIntervalMs", "onLog", NULL};
  memset(ro, 0, sizeof *ro);
  lib.dexa_runtime_options_init(&ro->o, sizeof ro->o);
  if (!check_keys(env, v, keys, "runtime options")) return false;
  ro->store = prop_str(env, v, "store");
  ro->sync = prop_str(env, v, "sqliteSynchronous");
  ro->worker = prop_str(env, v, "workerId");
  if (ro->store) ro->o.store = ro->store;
  if (ro->sync) ro->o.sqlite_synchronous = ro->sync;
  if (ro->worker) ro->o.worker_id = ro->worker;
  ro->o.lease_ms = prop_i64(env, v, "leaseMs", ro->o.lease_ms);
  ro->o.events_retained = prop_i64(env, v, "eventsRetained", ro->o.events_retained);
  ro->o.session_cache_bytes = prop_i64(env, v, "sessionCacheBytes", ro->o.session_cache_bytes);
  ro->o.session_idle_timeout_ms =
      prop_i64(env, v, "sessionIdleTimeoutMs", ro->o.session_idle_timeout_ms);
  ro->o.session_retention_ms = prop_i64(env, v, "sessionRetentionMs", ro->o.session_retention_ms);
  ro->o.sweep_interval_ms = prop_i64(env, v, "sweepIntervalMs", ro->o.sweep_interval_ms);
  return true;
}

/* The fields of o as an object (what reaches the library). */
static napi_value options_object(napi_env env, const dexa_runtime_options *o) {
  napi_value obj;
  napi_create_object(env, &obj);
  napi_set_named_property(env, obj, "store", str_val(env, o->store, NAPI_AUTO_LENGTH));
  napi_set_named_property(env, obj, "sqlite_synchronous",
                          str_val(env, o->sqlite_synchronous, NAPI_AUTO_LENGTH));
  napi_set_named_property(env, obj, "worker_id", str_val(env, o->worker_id, NAPI_AUTO_LENGTH));
  napi_set_named_property(env, obj, "lease_ms", int_val(env, o->lease_ms));
  napi_set_named_property(env, obj, "events_retained", int_val(env, o->events_retained));
  napi_set_named_property(env, obj, "session_cache_bytes", int_val(env, o->session_cache_bytes));
  napi_set_named_property(env, obj, "session_idle_timeout_ms",
                          int_val(env, o->session_idle_timeout_ms));
  napi_set_named_property(env, obj, "session_retention_ms", int_val(env, o->session_retention_ms));
  napi_set_named_property(env, obj, "sweep_interval_ms", int_val(env, o->sweep_interval_ms));
  return obj;
}

/* runtimeOptions(opts): the dexa_runtime_options the options make, read
 * back field by field. */
napi_value js_runtime_options(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], obj = NULL;
  runtime_opts ro;
  if (!require_lib(env)) return NULL;
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (runtime_opts_read(env, argc ? argv[0] : NULL, &ro)) obj = options_object(env, &ro.o);
  runtime_opts_free(&ro);
  return obj;
}

/* ---- the log (onLog) --------------------------------------------------------------
 *
 * dexa_runtime_options.log is called on the runtime's threads (and on the
 * threads calling into it) with a message borrowed for the call. The sink
 * copies it and queues it on a threadsafe function whose JS side calls
 * onLog({level, levelName, message}) on the JS thread. A worker never
 * waits: the call is non-blocking and a full queue drops the message,
 * counted; the next message delivered is preceded by a warning saying how
 * many were dropped. The function is unref'd (a log keeps no process
 * alive) and released once dexa_runtime_free returned (no call can come
 * after that); under the sink's mutex, so no call follows the release or
 * the environment's teardown finalizing it. */

#define LOG_QUEUE 1024

struct log_sink {
  pthread_mutex_t mu;
  napi_threadsafe_function tsfn; /* NULL once released or finalized (under mu) */
  int64_t dropped;               /* refused by a full queue since the last one queued (under mu) */
  int refs;                      /* the runtime's and the function's (under mu) */
  addon_state *st;
};

typedef struct log_msg {
  int32_t level;
  int64_t dropped; /* dropped just before this one */
  char text[];
} log_msg;

static void log_sink_unref(log_sink *ls) {
  pthread_mutex_lock(&ls->mu);
  int last = --ls->refs == 0;
  pthread_mutex_unlock(&ls->mu);
  if (!last) return;
  pthread_mutex_destroy(&ls->mu);
  free(ls);
}

/* Any thread: the runtime's dexa_log_fn. */
static void log_trampoline(void *user, int32_t level, const char *message) {
  log_sink *ls = user;
  size_t n = message ? strlen(message) : 0;
  log_msg *m = malloc(sizeof *m + n + 1);
  if (m) {
    m->level = level;
    if (n) memcpy(m->text, message, n);
    m->text[n] = 0;
  }
  napi_status s = napi_closing;
  pthread_mutex_lock(&ls->mu);
  if (ls->tsfn && !atomic_load(&ls->st->closing)) {
    if (m) {
      m->dropped = ls->dropped;
      s = napi_call_threadsafe_function(ls->tsfn, m, napi_tsfn_nonblocking);
    }
    if (s == napi_ok) ls->dropped = 0;
    else if (!m || s == napi_queue_full) ls->dropped++;
  }
  pthread_mutex_unlock(&ls->mu);
  if (s != napi_ok) free(m);
}

static const char *log_level_name(int32_t level) {
  switch (level) {
    case DEXA_LOG_ERROR: return "error";
    case DEXA_LOG_WARNING: return "warning";
    case DEXA_LOG_INFO: return "info";
    case DEXA_LOG_DEBUG: return "debug";
    default: return "unknown";
  }
}

/* Calls onLog({level, levelName, message}); what it throws is ignored (a
 * log callback cannot fail the runtime), as in the Python binding. */
static void log_deliver(napi_env env, napi_value fn, int32_t level, const char *text) {
  napi_value obj, undef, ex;
  bool pending = false;
  napi_create_object(env, &obj);
  napi_set_named_property(env, obj, "level", int_val(env, level));
  napi_set_named_property(env, obj, "levelName",
                          str_val(env, log_level_name(level), NAPI_AUTO_LENGTH));
  napi_set_named_property(env, obj, "message", str_val(env, text, NAPI_AUTO_LENGTH));
  napi_get_undefined(env, &undef);
  napi_call_function(env, undef, fn, 1, &obj, NULL);
  napi_is_exception_pending(env, &pending);
  if (pending) napi_get_and_clear_last_exception(env, &ex);
}

/* The JS thread (env NULL: the function is going away; only frees). */
static void log_js(napi_env env, napi_value fn, void *context, void *data) {
  log_msg *m = data;
  if (env && fn) {
    if (m->dropped) {
      char t[160];
      snprintf(t, sizeof t, "%lld log message%s dropped: the JavaScript thread did not take them in time",
               (long long)m->dropped, m->dropped == 1 ? "" : "s");
      log_deliver(env, fn, DEXA_LOG_WARNING, t);
    }
    log_deliver(env, fn, m->level, m->text);
  }
  free(m);
}

/* The function is gone: released by log_sink_close, or finalized by the
 * environment's teardown (which may come first at exit). */
static void log_finalize(napi_env env, void *data, void *hint) {
  log_sink *ls = data;
  pthread_mutex_lock(&ls->mu);
  ls->tsfn = NULL;
  pthread_mutex_unlock(&ls->mu);
  log_sink_unref(ls);
}

/* A sink calling fn (JS thread); NULL after throwing. */
static log_sink *log_sink_new(napi_env env, napi_value fn) {
  napi_value name;
  log_sink *ls = calloc(1, sizeof *ls);
  if (!ls) {
    throw_dexa(env, DEXA_E_NOMEM, NULL);
    return NULL;
  }
  pthread_mutex_init(&ls->mu, NULL);
  ls->refs = 2; /* the runtime's, the function's */
  ls->st = state_of(env);
  napi_create_string_utf8(env, "dexagents.log", NAPI_AUTO_LENGTH, &name);
  if (napi_create_threadsafe_function(env, fn, NULL, name, LOG_QUEUE, 1, ls, log_finalize, NULL,
                                      log_js, &ls->tsfn) != napi_ok) {
    pthread_mutex_destroy(&ls->mu);
    free(ls);
    throw_dexa(env, DEXA_E_INVALID_ARG, "onLog must be a function");
    return NULL;
  }
  napi_unref_threadsafe_function(env, ls->tsfn); /* a log keeps no process alive */
  return ls;
}

/* The C runtime is freed (or was never made): no log call can come any
 * more; the function is released (any thread). Messages already queued are
 * still delivered. */
static void log_sink_close(log_sink *ls) {
  if (!ls) return;
  pthread_mutex_lock(&ls->mu);
  if (ls->tsfn) napi_release_threadsafe_function(ls->tsfn, napi_tsfn_release);
  ls->tsfn = NULL;
  pthread_mutex_unlock(&ls->mu);
  log_sink_unref(ls);
}

/* ---- runtime boxes -------------------------------------------------------------- */

static void runtime_link(addon_state *st, runtime_box *rb) {
  runtime_box *head = st->runtimes;
  rb->next = head;
  if (head) head->prev = rb;
  st->runtimes = rb;
}

static void runtime_unlink(runtime_box *rb) {
  addon_state *st = rb->st;
  if (rb->prev) rb->prev->next = rb->next;
  else if (st->runtimes == rb) st->runtimes = rb->next;
  if (rb->next) rb->next->prev = rb->prev;
  rb->prev = rb->next = NULL;
}

/* JS thread: the external's finalizer and each task box's. A runtime never
 * closed is left to the process's exit (runtimes_env_closing frees it):
 * freeing it here could wait for a worker that waits for this thread. */
static void runtime_unref(runtime_box *rb) {
  if (--rb->refs > 0) return;
  pthread_mutex_lock(&rb->mu);
  int freed = rb->freed;
  pthread_mutex_unlock(&rb->mu);
  if (!freed) return;
  runtime_unlink(rb);
  pthread_mutex_destroy(&rb->mu);
  pthread_cond_destroy(&rb->cv);
  free(rb);
}

static void runtime_hold(napi_env env, runtime_box *rb, bool on);

/* The handle is gone without close(): nothing can close the runtime now, so
 * it no longer keeps the loop alive (the environment's teardown frees it). */
static void runtime_finalize(napi_env env, void *data, void *hint) {
  runtime_hold(env, data, false);
  runtime_unref(data);
}

bool runtime_acquire(napi_env env, runtime_box *rb) {
  pthread_mutex_lock(&rb->mu);
  bool ok = !atomic_load(&rb->closing) && !rb->freed;
  if (ok) rb->busy++;
  pthread_mutex_unlock(&rb->mu);
  if (!ok) throw_dexa(env, DEXA_E_INVALID_ARG, "the runtime is closed");
  return ok;
}

void runtime_release(runtime_box *rb) {
  pthread_mutex_lock(&rb->mu);
  if (--rb->busy == 0) pthread_cond_broadcast(&rb->cv);
  pthread_mutex_unlock(&rb->mu);
}

runtime_box *get_runtime(napi_env env, napi_value v) {
  runtime_box *rb = get_external(env, v);
  if (!rb) throw_dexa(env, DEXA_E_INVALID_ARG, "not a runtime");
  return rb;
}

/* Gives back every task still claimed and frees the C runtime, once no
 * operation runs. Any thread. */
static void runtime_free_now(runtime_box *rb) {
  pthread_mutex_lock(&rb->mu);
  while (rb->busy) pthread_cond_wait(&rb->cv, &rb->mu);
  dexa_runtime *rt = rb->freed ? NULL : rb->rt;
  for (task_box *t = rb->tasks; t && rt; t = t->next) {
    if (t->task) lib.dexa_task_abandon(rt, t->task);
    t->task = NULL;
  }
  rb->freed = 1; /* no one uses rt past this point */
  log_sink *ls = rb->log; /* the first to free it closes the log */
  rb->log = NULL;
  pthread_mutex_unlock(&rb->mu);
  lib.dexa_runtime_free(rt); /* joins the workers; NULL is a no-op */
  log_sink_close(ls);       /* after the last log call */
}

/* runtimeNew(agent, options) -> {handle, options}: options are the fields of
 * the dexa_runtime_options given to dexa_runtime_new, read back. options.onLog
 * (a function) receives the runtime's log messages (see the log above). */
napi_value js_runtime_new(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2], ext, res;
  runtime_opts ro;
  if (!require_lib(env)) return NULL;
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  agent_box *box = argc ? get_external(env, argv[0]) : NULL;
  if (!box || !box->agent) return throw_dexa(env, DEXA_E_INVALID_ARG, "not an agent");
  if (!runtime_opts_read(env, argc > 1 ? argv[1] : NULL, &ro)) {
    runtime_opts_free(&ro);
    return NULL;
  }
  napi_value on_log = argc > 1 ? prop(env, argv[1], "onLog") : NULL;
  log_sink *ls = NULL;
  if (on_log) {
    napi_valuetype t = napi_undefined;
    napi_typeof(env, on_log, &t);
    if (t != napi_function) {
      runtime_opts_free(&ro);
      return throw_dexa(env, DEXA_E_INVALID_ARG, "onLog must be a function");
    }
    if (!(ls = log_sink_new(env, on_log))) {
      runtime_opts_free(&ro);
      return NULL;
    }
    ro.o.log = log_trampoline;
    ro.o.log_user_data = ls;
  }
  runtime_box *rb = calloc(1, sizeof *rb);
  char err[512] = "";
  int rc = rb ? lib.dexa_runtime_new(&rb->rt, box->agent, &ro.o, err, sizeof err) : DEXA_E_NOMEM;
  napi_value used = options_object(env, &ro.o);
  runtime_opts_free(&ro);
  if (rc == DEXA_OK && napi_create_external(env, rb, runtime_finalize, NULL, &ext) != napi_ok)
    rc = DEXA_E_NOMEM;
  if (rc != DEXA_OK) {
    if (rb) lib.dexa_runtime_free(rb->rt);
    free(rb);
    log_sink_close(ls);
    return throw_dexa(env, rc, err);
  }
  rb->log = ls;
  pthread_mutex_init(&rb->mu, NULL);
  pthread_cond_init(&rb->cv, NULL);
  rb->refs = 1;
  rb->agent = box;
  rb->st = state_of(env);
  napi_create_reference(env, argv[0], 1, &rb->agent_ref);
  runtime_link(rb->st, rb);
  napi_create_object(env, &res);
  napi_set_named_property(env, res, "handle", ext);
  napi_set_named_property(env, res, "options", used);
  return res;
}

/* runtimeStart(rt, threads): starting threads does not wait. */
napi_value js_runtime_start(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  int32_t n = 2;
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  runtime_box *rb = argc ? get_runtime(env, argv[0]) : NULL;
  if (!rb || !runtime_acquire(env, rb)) return NULL;
  if (argc > 1) napi_get_value_int32(env, argv[1], &n);
  int rc = lib.dexa_runtime_start(rb->rt, n);
  char err[512];
  snprintf(err, sizeof err, "%s", rc == DEXA_OK ? "" : lib.dexa_runtime_errmsg(rb->rt));
  runtime_release(rb);
  if (rc != DEXA_OK) return throw_dexa(env, rc, err);
  return NULL;
}

napi_value js_runtime_errmsg(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  runtime_box *rb = argc ? get_runtime(env, argv[0]) : NULL;
  if (!rb) return NULL;
  pthread_mutex_lock(&rb->mu);
  napi_value v = str_val(env, rb->freed ? "" : lib.dexa_runtime_errmsg(rb->rt), NAPI_AUTO_LENGTH);
  pthread_mutex_unlock(&rb->mu);
  return v;
}

/* ---- operations -------------------------------------------------------------------- */

enum op_kind {
  OP_START_SESSION, OP_CALL, OP_READ_EVENTS, OP_WAIT_IDLE, OP_LIST_SESSIONS, OP_RUN_READY,
  OP_STOP, OP_POLL, OP_COMPLETE, OP_LAST = OP_COMPLETE
};
enum { ENDED_NO, ENDED_CLOSED, ENDED_ABORTED };

typedef struct op {
  job base;
  enum op_kind kind;
  runtime_box *rb;
  cancel_cell *cancel;
  char *a, *b, *c; /* session id; rpc / token / after; input */
  size_t c_len;
  int64_t n1, n2;  /* limit / max / timeout */
  int rc;
  int ended;
  char *out;
  size_t out_len;
  char errmsg[512];
  dexa_task *task;             /* poll's result, complete's task */
  const dexa_result *result;   /* complete's result (kept by ref) */
  napi_ref keep;               /* complete: the result's external */
} op;

static bool op_stop(op *o) {
  if (atomic_load(&o->rb->closing)) o->ended = ENDED_CLOSED;
  else if (cancel_is_set(o->cancel)) o->ended = ENDED_ABORTED;
  return o->ended != ENDED_NO;
}

/* The next slice of a wait of total ms (< 0: forever) begun at start, or
 * -1 when the wait is over. */
static int64_t next_slice(int64_t total, int64_t start, bool first) {
  if (total < 0) return SLICE_MS;
  int64_t left = total - (mono_ms() - start);
  if (left <= 0) return first ? 0 : -1;
  return left < SLICE_MS ? left : SLICE_MS;
}

/* The events document of an empty read starts so (see
 * dexa_runtime_read_events(3): {"events":[...],"token":...}). */
static bool no_events(const char *out) { return out && strncmp(out, "{\"events\":[]", 12) == 0; }

static void exec_read_events(op *o, dexa_runtime *rt) {
  int64_t start = mono_ms(), ms;
  for (bool first = true; !op_stop(o) && (ms = next_slice(o->n2, start, first)) >= 0; first = false) {
    lib.dexa_free(o->out);
    o->out = NULL;
    o->rc = lib.dexa_runtime_read_events(rt, o->a, o->b, (int32_t)o->n1, ms, &o->out, &o->out_len);
    if (o->rc != DEXA_OK || !no_events(o->out)) return;
  }
}

static void exec_wait(op *o, dexa_runtime *rt) {
  int64_t start = mono_ms(), ms;
  o->rc = DEXA_E_TIMEOUT;
  for (bool first = true; !op_stop(o) && (ms = next_slice(o->n2, start, first)) >= 0; first = false) {
    if (o->kind == OP_WAIT_IDLE)
      o->rc = lib.dexa_runtime_wait_idle(rt, o->a, ms);
    else
      o->rc = lib.dexa_runtime_poll(rt, &o->task, ms);
    if (o->rc != DEXA_E_TIMEOUT) return;
  }
}

/* A polled task joins the runtime's list before the operation ends, so a
 * close that starts now gives it back. */
static void adopt_task(op *o) {
  task_box *t = calloc(1, sizeof *t);
  if (!t) {
    lib.dexa_task_abandon(o->rb->rt, o->task);
    o->task = NULL;
    o->rc = DEXA_E_NOMEM;
    return;
  }
  t->task = o->task;
  t->rb = o->rb;
  pthread_mutex_lock(&o->rb->mu);
  t->next = o->rb->tasks;
  o->rb->tasks = t;
  pthread_mutex_unlock(&o->rb->mu);
  o->task = (dexa_task *)t; /* settle wraps the box */
}

static void op_exec(job *j) {
  op *o = (op *)j;
  dexa_runtime *rt = o->rb->rt;
  int32_t ran = 0;
  switch (o->kind) {
    case OP_START_SESSION:
      o->rc = lib.dexa_runtime_start_session(rt, o->a, o->c, o->c_len, &o->out, &o->out_len);
      break;
    case OP_CALL:
      o->rc = lib.dexa_runtime_call(rt, o->a, o->b, o->c, o->c_len, &o->out, &o->out_len);
      break;
    case OP_READ_EVENTS: exec_read_events(o, rt); break;
    case OP_WAIT_IDLE:
    case OP_POLL: exec_wait(o, rt); break;
    case OP_LIST_SESSIONS:
      o->rc = lib.dexa_runtime_list_sessions(rt, o->b, (int32_t)o->n1, &o->out, &o->out_len);
      break;
    case OP_RUN_READY:
      o->rc = lib.dexa_runtime_run_ready(rt, &ran);
      o->n1 = ran;
      break;
    case OP_STOP: o->rc = lib.dexa_runtime_stop(rt); break;
    case OP_COMPLETE: o->rc = lib.dexa_runtime_complete(rt, o->task, o->result); break;
  }
  if (o->kind == OP_POLL && o->rc == DEXA_OK && o->task) adopt_task(o);
  if (o->rc != DEXA_OK && o->rc != DEXA_E_TIMEOUT)
    snprintf(o->errmsg, sizeof o->errmsg, "%s", lib.dexa_runtime_errmsg(rt));
  runtime_release(o->rb);
}

static void task_finalize(napi_env env, void *data, void *hint);

/* Resolves {rc, out, errmsg, n, ended, task}: index.js decides what is an
 * error. */
static napi_value op_settle(napi_env env, job *j) {
  op *o = (op *)j;
  napi_value res, ended;
  static const char *const ended_names[] = {NULL, "closed", "aborted"};
  napi_create_object(env, &res);
  napi_set_named_property(env, res, "rc", int_val(env, o->rc));
  napi_set_named_property(env, res, "out", str_val(env, o->out, o->out_len));
  napi_set_named_property(env, res, "errmsg", str_val(env, o->errmsg, NAPI_AUTO_LENGTH));
  napi_set_named_property(env, res, "n", int_val(env, o->n1));
  ended = str_val(env, ended_names[o->ended], NAPI_AUTO_LENGTH);
  napi_set_named_property(env, res, "ended", ended);
  if (o->kind == OP_POLL && o->task) {
    napi_value ext;
    task_box *t = (task_box *)o->task;
    o->task = NULL;
    if (napi_create_external(env, t, task_finalize, NULL, &ext) == napi_ok) {
      o->rb->refs++;
      napi_set_named_property(env, res, "task", ext);
    } else {
      task_finalize(env, t, (void *)1);
    }
  }
  if (o->keep) {
    napi_delete_reference(env, o->keep);
    o->keep = NULL;
  }
  return res;
}

static void op_destroy(job *j) {
  op *o = (op *)j;
  lib.dexa_free(o->out);
  free(o->a);
  free(o->b);
  free(o->c);
  cancel_unref(o->cancel);
  free(o);
}

static op *op_new(napi_env env, runtime_box *rb, enum op_kind kind) {
  if (!runtime_acquire(env, rb)) return NULL;
  op *o = calloc(1, sizeof *o);
  if (!o) {
    runtime_release(rb);
    throw_dexa(env, DEXA_E_NOMEM, NULL);
    return NULL;
  }
  o->kind = kind;
  o->rb = rb;
  o->base.exec = op_exec;
  o->base.settle = op_settle;
  o->base.destroy = op_destroy;
  return o;
}

/* runtimeOp(rt, kind, a, b, c, n1, n2, cancelToken|null) -> Promise<{...}> */
napi_value js_runtime_op(napi_env env, napi_callback_info info) {
  size_t argc = 8;
  napi_value argv[8], promise;
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 7) return throw_dexa(env, DEXA_E_INVALID_ARG, "runtimeOp: 7 arguments");
  runtime_box *rb = get_runtime(env, argv[0]);
  int32_t kind = -1;
  if (!rb) return NULL;
  napi_get_value_int32(env, argv[1], &kind);
  if (kind < 0 || kind > OP_LAST || kind == OP_COMPLETE)
    return throw_dexa(env, DEXA_E_INVALID_ARG, "runtimeOp: unknown operation");
  op *o = op_new(env, rb, (enum op_kind)kind);
  if (!o) return NULL;
  o->a = get_str(env, argv[2], NULL);
  o->b = get_str(env, argv[3], NULL);
  o->c = get_str(env, argv[4], &o->c_len);
  napi_get_value_int64(env, argv[5], &o->n1);
  napi_get_value_int64(env, argv[6], &o->n2);
  if (argc > 7) o->cancel = cancel_ref(get_external(env, argv[7]));
  if (job_start(env, &o->base, &promise) != 0) {
    runtime_release(rb);
    return NULL;
  }
  return promise;
}

/* ---- tasks ------------------------------------------------------------------------- */

dexa_task *task_take(task_box *t) {
  pthread_mutex_lock(&t->rb->mu);
  dexa_task *task = t->rb->freed || t->dispatching ? NULL : t->task;
  if (task) t->task = NULL;
  pthread_mutex_unlock(&t->rb->mu);
  return task;
}

const dexa_call *task_dispatch_begin(task_box *t) {
  pthread_mutex_lock(&t->rb->mu);
  const dexa_call *c = NULL;
  if (t->task && !t->rb->freed && !t->dispatching) {
    t->dispatching = 1;
    c = lib.dexa_task_call(t->task);
  }
  pthread_mutex_unlock(&t->rb->mu);
  return c;
}

const dexa_call *task_call_of(task_box *t) { return lib.dexa_task_call(t->task); }

void task_dispatch_end(task_box *t) {
  pthread_mutex_lock(&t->rb->mu);
  t->dispatching = 0;
  pthread_mutex_unlock(&t->rb->mu);
}

static void task_unlink(task_box *t) {
  runtime_box *rb = t->rb;
  pthread_mutex_lock(&rb->mu);
  for (task_box **p = &rb->tasks; *p; p = &(*p)->next) {
    if (*p == t) {
      *p = t->next;
      break;
    }
  }
  if (t->task && !rb->freed) lib.dexa_task_abandon(rb->rt, t->task);
  t->task = NULL;
  pthread_mutex_unlock(&rb->mu);
}

/* A task that was never completed is given back when it is collected. */
static void task_finalize(napi_env env, void *data, void *hint) {
  task_box *t = data;
  runtime_box *rb = t->rb;
  task_unlink(t);
  free(t);
  if (!hint) runtime_unref(rb);
}

task_box *get_task(napi_env env, napi_value v) {
  task_box *t = get_external(env, v);
  if (!t) throw_dexa(env, DEXA_E_INVALID_ARG, "not a task");
  return t;
}

/* taskInfo(task) -> {kind, sessionId, name, stepExecutionId, attempt, input,
 * conditions, recoveryError, nowMs} (JSON texts as text), or null when the
 * task is gone. */
napi_value js_task_info(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], o;
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  task_box *t = argc ? get_task(env, argv[0]) : NULL;
  if (!t) return NULL;
  pthread_mutex_lock(&t->rb->mu);
  const dexa_call *c = t->task && !t->rb->freed ? lib.dexa_task_call(t->task) : NULL;
  if (!c) {
    pthread_mutex_unlock(&t->rb->mu);
    napi_get_null(env, &o);
    return o;
  }
  napi_create_object(env, &o);
  napi_set_named_property(env, o, "kind", int_val(env, c->kind));
  napi_set_named_property(env, o, "sessionId", str_val(env, c->session_id, NAPI_AUTO_LENGTH));
  napi_set_named_property(env, o, "name", str_val(env, c->name, NAPI_AUTO_LENGTH));
  napi_set_named_property(env, o, "stepExecutionId",
                          str_val(env, c->step_execution_id, NAPI_AUTO_LENGTH));
  napi_set_named_property(env, o, "attempt", int_val(env, c->attempt));
  napi_set_named_property(env, o, "input", str_val(env, c->input, c->input_len));
  napi_set_named_property(env, o, "conditions", str_val(env, c->conditions, c->conditions_len));
  napi_set_named_property(env, o, "recoveryError",
                          str_val(env, c->recovery_error, c->recovery_error_len));
  napi_set_named_property(env, o, "nowMs", int_val(env, c->now_ms));
  pthread_mutex_unlock(&t->rb->mu);
  return o;
}

/* taskAbandon(task): gives it back (retried once its lease ends). */
napi_value js_task_abandon(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  task_box *t = argc ? get_task(env, argv[0]) : NULL;
  if (!t) return NULL;
  pthread_mutex_lock(&t->rb->mu);
  int busy = t->dispatching;
  if (!busy && t->task && !t->rb->freed) lib.dexa_task_abandon(t->rb->rt, t->task);
  if (!busy) t->task = NULL;
  pthread_mutex_unlock(&t->rb->mu);
  if (busy) return throw_dexa(env, DEXA_E_BAD_STATE, "the task is being dispatched");
  return NULL;
}

/* runtimeComplete(rt, task, result|null) -> Promise<{rc, errmsg}> */
napi_value js_runtime_complete(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3], promise;
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  runtime_box *rb = argc > 0 ? get_runtime(env, argv[0]) : NULL;
  task_box *t = rb && argc > 1 ? get_task(env, argv[1]) : NULL;
  if (!t) return NULL;
  const dexa_result *res = argc > 2 ? get_external(env, argv[2]) : NULL;
  op *o = op_new(env, rb, OP_COMPLETE);
  if (!o) return NULL;
  o->task = task_take(t);
  if (!o->task) {
    runtime_release(rb);
    op_destroy(&o->base);
    return throw_dexa(env, DEXA_E_BAD_STATE,
                      "the task was completed or abandoned, or is being dispatched");
  }
  o->result = res;
  if (res) napi_create_reference(env, argv[2], 1, &o->keep);
  if (job_start(env, &o->base, &promise) != 0) {
    runtime_release(rb);
    return NULL;
  }
  return promise;
}

/* ---- closing ---------------------------------------------------------------------- */

typedef struct close_job {
  job base;
  runtime_box *rb;
} close_job;

static void close_exec(job *j) { runtime_free_now(((close_job *)j)->rb); }

static napi_value close_settle(napi_env env, job *j) {
  runtime_box *rb = ((close_job *)j)->rb;
  runtime_hold(env, rb, false);
  if (rb->agent_ref) {
    napi_delete_reference(env, rb->agent_ref);
    rb->agent_ref = NULL;
  }
  napi_value v;
  napi_get_undefined(env, &v);
  return v;
}

static void close_destroy(job *j) { free(j); }

/* runtimeClose(rt) -> Promise: no new operation; waits end; the workers
 * finish their Steps; the store closes. Calling it again is harmless. */
napi_value js_runtime_close(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], promise;
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  runtime_box *rb = argc ? get_runtime(env, argv[0]) : NULL;
  if (!rb) return NULL;
  if (atomic_exchange(&rb->closing, 1)) {
    napi_value v;
    napi_get_undefined(env, &v);
    return v; /* index.js keeps the first close's Promise */
  }
  close_job *c = calloc(1, sizeof *c);
  if (!c) return throw_dexa(env, DEXA_E_NOMEM, NULL);
  c->rb = rb;
  c->base.exec = close_exec;
  c->base.settle = close_settle;
  c->base.destroy = close_destroy;
  if (job_start(env, &c->base, &promise) != 0) return NULL;
  return promise;
}

static void runtime_hold(napi_env env, runtime_box *rb, bool on) {
  if (rb->holding == on) return;
  rb->holding = on;
  state_hold(env, rb->st, on ? 1 : -1);
}

/* runtimeHold(rt, on): whether the runtime keeps the event loop alive (its
 * worker threads run sessions in the background, like a server). */
napi_value js_runtime_hold(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  bool on = false;
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  runtime_box *rb = argc ? get_runtime(env, argv[0]) : NULL;
  if (!rb) return NULL;
  if (argc > 1) napi_get_value_bool(env, argv[1], &on);
  runtime_hold(env, rb, on && !atomic_load(&rb->closing));
  return NULL;
}

/* runtimeAbandonTools(rt, reason): close() ran out of time: the agent's
 * running JavaScript tools are given up (their Steps are left as after a
 * crash) and their AbortSignals abort. */
napi_value js_runtime_abandon_tools(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  runtime_box *rb = argc ? get_runtime(env, argv[0]) : NULL;
  if (!rb) return NULL;
  char *reason = argc > 1 ? get_str(env, argv[1], NULL) : NULL;
  tools_abandon(rb->agent, reason ? reason : "the runtime closed");
  models_abandon(rb->agent->st, reason ? reason : "the runtime closed");
  free(reason);
  return NULL;
}

void runtimes_env_closing(addon_state *st) {
  for (runtime_box *rb = st->runtimes; rb; rb = rb->next) atomic_store(&rb->closing, 1);
  jobs_wait(st); /* every wait ends within a slice; tools fail fast */
  for (runtime_box *rb = st->runtimes; rb; rb = rb->next) runtime_free_now(rb);
}
