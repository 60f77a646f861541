/* Host-driven mode: dexa_dispatch with an attribute reader written in
 * JavaScript, results, and the dispatch of a runtime's task.
 *
 * A dispatch runs on a job thread: the library's reader callbacks (get,
 * scan) and live events go to the JS thread through a threadsafe function
 * of that dispatch; the reader may answer with a Promise (an engine whose
 * state reads are asynchronous), and the dispatch thread waits for the
 * answer. JavaScript tools of the agent run the usual way meanwhile. */
#include "host.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime.h"

#define SLICE_MS 250

enum { REQ_GET = 0, REQ_SCAN = 1, REQ_EVENT = 2 };

typedef struct dispatch_job dispatch_job;

/* One reader request, shared by the dispatch thread (which waits) and the
 * JS thread (which answers): two references, the last one frees. */
typedef struct read_req {
  int kind;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int refs;
  int done;
  int failed;
  char *text; /* get: the key; scan: the prefix; event: the JSON */
  size_t text_len;
  char *value; /* get: the answer (NULL: absent) */
  size_t value_len;
  size_t count; /* scan: the pairs */
  char **keys, **values;
  size_t *klens, *vlens;
} read_req;

struct dispatch_job {
  job base;
  agent_box *agent;
  napi_ref keep_agent, keep_task;
  task_box *task;                /* a runtime's task, or NULL */
  pthread_mutex_t mu;            /* orders uses of tsfn against its finalization */
  napi_threadsafe_function tsfn; /* to the host's handler; NULL without one */
  cancel_cell *cancel;
  cancel_cell *stop; /* the host's "turn stopped" (dexa_call.cancelled), or NULL */
  dexa_call call;
  char *strs[6];     /* session id, name, step execution id, input, conditions, recovery */
  char *last_value;  /* borrowed by the library until the next reader callback */
  dexa_result *res;
  int rc;
  int reader_failed; /* the reader threw or was aborted */
  atomic_int refs;   /* the job, and the handler's threadsafe function */
};

static void dispatch_unref(dispatch_job *dj) {
  if (atomic_fetch_sub(&dj->refs, 1) != 1) return;
  pthread_mutex_destroy(&dj->mu);
  free(dj);
}

static void req_unref(read_req *r) {
  pthread_mutex_lock(&r->mu);
  int last = --r->refs == 0;
  pthread_mutex_unlock(&r->mu);
  if (!last) return;
  pthread_mutex_destroy(&r->mu);
  pthread_cond_destroy(&r->cv);
  free(r->text);
  free(r->value);
  for (size_t i = 0; i < r->count; i++) {
    free(r->keys[i]);
    free(r->values[i]);
  }
  free(r->keys);
  free(r->values);
  free(r->klens);
  free(r->vlens);
  free(r);
}

static read_req *req_new(int kind, const char *text, size_t len, int refs) {
  read_req *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->kind = kind;
  r->refs = refs;
  pthread_mutex_init(&r->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&r->cv, &ca);
  pthread_condattr_destroy(&ca);
  r->text = dup_n(text, len);
  r->text_len = len;
  if (!r->text) {
    free(r);
    return NULL;
  }
  return r;
}

static void req_finish(read_req *r, int failed) {
  pthread_mutex_lock(&r->mu);
  if (!r->done) {
    r->done = 1;
    r->failed = failed;
    pthread_cond_broadcast(&r->cv);
  }
  pthread_mutex_unlock(&r->mu);
}

/* Reads the scan answer: an array of [key, value] pairs. */
static bool read_pairs(napi_env env, napi_value arr, read_req *r) {
  uint32_t n = 0;
  bool is_arr = false;
  if (napi_is_array(env, arr, &is_arr) != napi_ok || !is_arr) return false;
  napi_get_array_length(env, arr, &n);
  r->keys = calloc(n + 1, sizeof *r->keys);
  r->values = calloc(n + 1, sizeof *r->values);
  r->klens = calloc(n + 1, sizeof *r->klens);
  r->vlens = calloc(n + 1, sizeof *r->vlens);
  if (!r->keys || !r->values || !r->klens || !r->vlens) return false;
  for (uint32_t i = 0; i < n; i++) {
    napi_value pair, k, v;
    napi_get_element(env, arr, i, &pair);
    if (napi_get_element(env, pair, 0, &k) != napi_ok || napi_get_element(env, pair, 1, &v) != napi_ok)
      return false;
    r->keys[i] = get_str(env, k, &r->klens[i]);
    r->values[i] = get_str(env, v, &r->vlens[i]);
    r->count = i + 1;
    if (!r->keys[i] || !r->values[i]) return false;
  }
  return true;
}

/* reply(ok, value): get: value is the JSON text or null; scan: [[key,
 * value], ...]. ok false: the reader failed (index.js keeps its error). */
static napi_value js_reply(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  void *data = NULL;
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, &data));
  read_req *r = data;
  bool ok = false;
  if (!r) return NULL;
  if (argc > 0) napi_get_value_bool(env, argv[0], &ok);
  pthread_mutex_lock(&r->mu);
  int answered = r->done;
  pthread_mutex_unlock(&r->mu);
  if (!answered && ok && argc > 1) {
    if (r->kind == REQ_GET) {
      napi_valuetype t;
      napi_typeof(env, argv[1], &t);
      if (t == napi_string) r->value = get_str(env, argv[1], &r->value_len);
      else ok = t == napi_null || t == napi_undefined;
    } else {
      ok = read_pairs(env, argv[1], r);
    }
  }
  req_finish(r, !ok);
  req_unref(r);
  return NULL;
}

/* On the JS thread: handler(kind, text, reply). */
static void req_js(napi_env env, napi_value handler, void *context, void *data) {
  read_req *r = data;
  napi_value argv[3], undefined, result;
  if (!env) {
    req_finish(r, 1);
    req_unref(r);
    return;
  }
  napi_get_undefined(env, &undefined);
  argv[0] = int_val(env, r->kind);
  argv[1] = str_val(env, r->text, r->text_len);
  if (r->kind == REQ_EVENT) {
    argv[2] = undefined;
    if (napi_call_function(env, undefined, handler, 3, argv, &result) != napi_ok) {
      napi_value ex;
      napi_get_and_clear_last_exception(env, &ex);
    }
    req_unref(r);
    return;
  }
  if (napi_create_function(env, "reply", NAPI_AUTO_LENGTH, js_reply, r, &argv[2]) != napi_ok ||
      napi_call_function(env, undefined, handler, 3, argv, &result) != napi_ok) {
    napi_value ex;
    napi_get_and_clear_last_exception(env, &ex);
    req_finish(r, 1);
    req_unref(r);
  }
}

static bool post(dispatch_job *dj, read_req *r) {
  pthread_mutex_lock(&dj->mu);
  napi_status s = napi_closing;
  if (dj->tsfn && !atomic_load(&dj->base.st->closing))
    s = napi_call_threadsafe_function(dj->tsfn, r, napi_tsfn_nonblocking);
  pthread_mutex_unlock(&dj->mu);
  return s == napi_ok;
}

/* Waits for r's answer, in slices, until the dispatch is aborted or the
 * environment closes. True when answered without failure. */
static bool wait_answer(dispatch_job *dj, read_req *r) {
  bool ok = false;
  pthread_mutex_lock(&r->mu);
  while (!r->done) {
    if (cancel_is_set(dj->cancel) || atomic_load(&dj->base.st->closing)) break;
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += SLICE_MS * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&r->cv, &r->mu, &until);
  }
  ok = r->done && !r->failed;
  pthread_mutex_unlock(&r->mu);
  return ok;
}

/* Sends a request and waits; NULL (and reader_failed) when it failed. */
static read_req *ask(dispatch_job *dj, int kind, const char *text, size_t len) {
  read_req *r = req_new(kind, text, len, 2);
  if (!r) return NULL;
  if (!post(dj, r)) {
    req_unref(r);
    req_unref(r);
    dj->reader_failed = 1;
    return NULL;
  }
  if (!wait_answer(dj, r)) {
    dj->reader_failed = 1;
    req_unref(r);
    return NULL;
  }
  return r;
}

static int attr_get(void *user, const char *key, size_t key_len, const char **value,
                    size_t *value_len) {
  dispatch_job *dj = user;
  read_req *r = ask(dj, REQ_GET, key, key_len);
  if (!r) return DEXA_E_CALLBACK_FAILED;
  int rc = DEXA_E_NOT_FOUND;
  if (r->value) {
    free(dj->last_value);
    dj->last_value = r->value;
    r->value = NULL;
    *value = dj->last_value;
    *value_len = r->value_len;
    rc = DEXA_OK;
  }
  req_unref(r);
  return rc;
}

static int attr_scan(void *user, const char *prefix, size_t prefix_len, dexa_attr_visit_fn visit,
                     void *ctx) {
  dispatch_job *dj = user;
  read_req *r = ask(dj, REQ_SCAN, prefix, prefix_len);
  if (!r) return DEXA_E_CALLBACK_FAILED;
  int rc = DEXA_OK;
  for (size_t i = 0; i < r->count; i++) {
    int v = visit(ctx, r->keys[i], r->klens[i], r->values[i], r->vlens[i]);
    if (v < 0) rc = v;
    if (v != 0) break;
  }
  req_unref(r);
  return rc;
}

static void event_sink(void *user, const char *json, size_t len) {
  dispatch_job *dj = user;
  read_req *r = req_new(REQ_EVENT, json, len, 1);
  if (r && !post(dj, r)) req_unref(r);
}

static void handler_finalize(napi_env env, void *data, void *hint) {
  dispatch_job *dj = data;
  pthread_mutex_lock(&dj->mu);
  dj->tsfn = NULL;
  pthread_mutex_unlock(&dj->mu);
  dispatch_unref(dj);
}

/* ---- the job ---------------------------------------------------------------------- */

static int stop_cb(void *cell) { return cancel_is_set(cell); }

static void dispatch_exec(job *j) {
  dispatch_job *dj = (dispatch_job *)j;
  if (dj->task) { /* marked as dispatching on the JS thread: its call stays */
    const dexa_call *c = task_call_of(dj->task);
    if (dj->tsfn || dj->stop) { /* live events to the host's handler, or its stop */
      dexa_call copy = *c;
      if (dj->tsfn) {
        copy.sink_user_data = dj;
        copy.event_sink = event_sink;
      }
      if (dj->stop) {
        copy.cancelled = stop_cb;
        copy.cancel_user_data = dj->stop;
      }
      dj->rc = lib.dexa_dispatch(&dj->res, dj->agent->agent, &copy);
    } else {
      dj->rc = lib.dexa_dispatch(&dj->res, dj->agent->agent, c);
    }
    task_dispatch_end(dj->task);
    runtime_release(dj->task->rb);
    return;
  }
  dj->rc = lib.dexa_dispatch(&dj->res, dj->agent->agent, &dj->call);
}

static void result_finalize(napi_env env, void *data, void *hint) { lib.dexa_result_free(data); }

/* Resolves {rc, result: external|null, readerFailed}. */
static napi_value dispatch_settle(napi_env env, job *j) {
  dispatch_job *dj = (dispatch_job *)j;
  napi_value o, ext;
  napi_create_object(env, &o);
  napi_set_named_property(env, o, "rc", int_val(env, dj->rc));
  napi_set_named_property(env, o, "readerFailed", bool_val(env, dj->reader_failed));
  if (dj->res && napi_create_external(env, dj->res, result_finalize, NULL, &ext) == napi_ok) {
    dj->res = NULL;
    napi_set_named_property(env, o, "result", ext);
  }
  if (dj->keep_agent) napi_delete_reference(env, dj->keep_agent);
  if (dj->keep_task) napi_delete_reference(env, dj->keep_task);
  dj->keep_agent = dj->keep_task = NULL;
  pthread_mutex_lock(&dj->mu);
  napi_threadsafe_function tsfn = dj->tsfn;
  pthread_mutex_unlock(&dj->mu);
  if (tsfn) napi_release_threadsafe_function(tsfn, napi_tsfn_release);
  return o;
}

static void dispatch_destroy(job *j) {
  dispatch_job *dj = (dispatch_job *)j;
  lib.dexa_result_free(dj->res);
  dj->res = NULL;
  for (size_t i = 0; i < sizeof dj->strs / sizeof dj->strs[0]; i++) free(dj->strs[i]);
  memset(dj->strs, 0, sizeof dj->strs);
  free(dj->last_value);
  dj->last_value = NULL;
  cancel_unref(dj->cancel);
  dj->cancel = NULL;
  cancel_unref(dj->stop);
  dj->stop = NULL;
  dispatch_unref(dj);
}

/* A dispatch that never started: releases what the JS thread holds. */
static void dispatch_drop(napi_env env, dispatch_job *dj) {
  if (dj->keep_agent) napi_delete_reference(env, dj->keep_agent);
  if (dj->keep_task) napi_delete_reference(env, dj->keep_task);
  dj->keep_agent = dj->keep_task = NULL;
  if (dj->tsfn) napi_release_threadsafe_function(dj->tsfn, napi_tsfn_release);
  dispatch_destroy(&dj->base);
}

static dispatch_job *dispatch_new(napi_env env, napi_value agent_v, napi_value handler,
                                  napi_value cancel) {
  agent_box *box = get_external(env, agent_v);
  if (!box || !box->agent) {
    throw_dexa(env, DEXA_E_INVALID_ARG, "not an agent");
    return NULL;
  }
  dispatch_job *dj = calloc(1, sizeof *dj);
  if (!dj) {
    throw_dexa(env, DEXA_E_NOMEM, NULL);
    return NULL;
  }
  pthread_mutex_init(&dj->mu, NULL);
  atomic_init(&dj->refs, 1);
  dj->agent = box;
  dj->base.exec = dispatch_exec;
  dj->base.settle = dispatch_settle;
  dj->base.destroy = dispatch_destroy;
  dj->cancel = cancel_ref(get_external(env, cancel));
  napi_create_reference(env, agent_v, 1, &dj->keep_agent);
  napi_valuetype t = napi_undefined;
  if (handler) napi_typeof(env, handler, &t);
  if (t == napi_function) {
    napi_value name;
    napi_create_string_utf8(env, "dexagents.reader", NAPI_AUTO_LENGTH, &name);
    atomic_fetch_add(&dj->refs, 1);
    if (napi_create_threadsafe_function(env, handler, NULL, name, 0, 1, dj, handler_finalize, NULL,
                                        req_js, &dj->tsfn) != napi_ok) {
      atomic_fetch_sub(&dj->refs, 1);
      dispatch_drop(env, dj);
      throw_dexa(env, DEXA_E_INTERNAL, "cannot create the reader's threadsafe function");
      return NULL;
    }
    napi_unref_threadsafe_function(env, dj->tsfn); /* the job keeps the loop alive */
  }
  return dj;
}

/* Fills dj->call from {kind, sessionId, name, stepExecutionId, attempt,
 * input, conditions, recoveryError, nowMs} (JSON values as text). */
static bool read_call(napi_env env, napi_value v, dispatch_job *dj) {
  static const char *const keys[] = {"kind", "sessionId", "name", "stepExecutionId", "attempt",
                                     "input", "conditions", "recoveryError", "nowMs", NULL};
  if (!check_keys(env, v, keys, "dispatch call")) return false;
  dexa_call *c = &dj->call;
  lib.dexa_call_init(c, sizeof *c);
  size_t in_len = 0, cond_len = 0, rec_len = 0;
  c->kind = (int32_t)prop_i64(env, v, "kind", 0);
  c->session_id = dj->strs[0] = prop_str(env, v, "sessionId");
  c->name = dj->strs[1] = prop_str(env, v, "name");
  c->step_execution_id = dj->strs[2] = prop_str(env, v, "stepExecutionId");
  c->attempt = (int32_t)prop_i64(env, v, "attempt", 1);
  c->input = dj->strs[3] = get_str(env, prop(env, v, "input"), &in_len);
  c->input_len = in_len;
  c->conditions = dj->strs[4] = get_str(env, prop(env, v, "conditions"), &cond_len);
  c->conditions_len = cond_len;
  c->recovery_error = dj->strs[5] = get_str(env, prop(env, v, "recoveryError"), &rec_len);
  c->recovery_error_len = rec_len;
  c->now_ms = prop_i64(env, v, "nowMs", 0);
  c->attr_user_data = dj;
  c->attr_get = attr_get;
  c->attr_scan = attr_scan;
  c->sink_user_data = dj;
  c->event_sink = event_sink;
  if (dj->stop) {
    c->cancelled = stop_cb;
    c->cancel_user_data = dj->stop;
  }
  return true;
}

/* dispatch(agent, call, handler, cancelToken|null, stopToken|null) ->
 * Promise<{rc, result, readerFailed}>. stopToken, once cancelled, is the
 * call's "turn stopped" (dexa_call.cancelled). */
napi_value js_dispatch(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5], promise;
  if (!require_lib(env)) return NULL;
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 3) return throw_dexa(env, DEXA_E_INVALID_ARG, "dispatch: 3 arguments");
  dispatch_job *dj = dispatch_new(env, argv[0], argv[2], argc > 3 ? argv[3] : NULL);
  if (!dj) return NULL;
  dj->stop = argc > 4 ? cancel_ref(get_external(env, argv[4])) : NULL;
  if (!read_call(env, argv[1], dj)) {
    dispatch_drop(env, dj);
    return NULL;
  }
  if (job_start(env, &dj->base, &promise) != 0) return NULL;
  return promise;
}

/* taskDispatch(rt, task, agent, handler|null, stopToken|null) -> Promise<{rc, result}> */
napi_value js_task_dispatch(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5], promise;
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 4) return throw_dexa(env, DEXA_E_INVALID_ARG, "taskDispatch: 4 arguments");
  runtime_box *rb = get_runtime(env, argv[0]);
  task_box *t = rb ? get_task(env, argv[1]) : NULL;
  if (!t) return NULL;
  if (!runtime_acquire(env, rb)) return NULL;
  dispatch_job *dj = dispatch_new(env, argv[2], argv[3], NULL);
  if (!dj) {
    runtime_release(rb);
    return NULL;
  }
  dj->stop = argc > 4 ? cancel_ref(get_external(env, argv[4])) : NULL;
  if (!task_dispatch_begin(t)) { /* gone, or dispatched already */
    runtime_release(rb);
    dispatch_drop(env, dj);
    return throw_dexa(env, DEXA_E_BAD_STATE,
                      "the task was completed or abandoned, or is being dispatched");
  }
  dj->task = t;
  napi_create_reference(env, argv[1], 1, &dj->keep_task);
  if (job_start(env, &dj->base, &promise) != 0) {
    task_dispatch_end(t);
    runtime_release(rb);
    return NULL;
  }
  return promise;
}

/* ---- results ----------------------------------------------------------------------- */

static napi_value text_or_null(napi_env env, int (*get)(const dexa_result *, const char **, size_t *),
                               const dexa_result *res) {
  const char *p = NULL;
  size_t n = 0;
  get(res, &p, &n);
  return str_val(env, p, n);
}

typedef int (*pair_at_fn)(const dexa_result *, size_t, const char **, size_t *, const char **,
                          size_t *);

static napi_value pairs(napi_env env, const dexa_result *res, size_t count, pair_at_fn at) {
  napi_value arr;
  napi_create_array_with_length(env, count, &arr);
  for (size_t i = 0; i < count; i++) {
    const char *k = NULL, *v = NULL;
    size_t kl = 0, vl = 0;
    napi_value pair;
    at(res, i, &k, &kl, &v, &vl);
    napi_create_array_with_length(env, 2, &pair);
    napi_set_element(env, pair, 0, str_val(env, k, kl));
    napi_set_element(env, pair, 1, str_val(env, v, vl));
    napi_set_element(env, arr, (uint32_t)i, pair);
  }
  return arr;
}

/* resultRead(result) -> {status, error, retryAfterMs, writes: [[key, text|null]],
 * publishes: [[channel, text]], events: [text], wait, decision, response} */
napi_value js_result_read(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], o, events;
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  const dexa_result *res = argc ? get_external(env, argv[0]) : NULL;
  if (!res) return throw_dexa(env, DEXA_E_INVALID_ARG, "not a result");
  napi_create_object(env, &o);
  napi_set_named_property(env, o, "status", int_val(env, lib.dexa_result_status(res)));
  napi_set_named_property(env, o, "error", str_val(env, lib.dexa_result_errmsg(res), NAPI_AUTO_LENGTH));
  napi_set_named_property(env, o, "retryAfterMs", int_val(env, lib.dexa_result_retry_after_ms(res)));
  napi_set_named_property(env, o, "writes",
                          pairs(env, res, lib.dexa_result_write_count(res), lib.dexa_result_write_at));
  napi_set_named_property(env, o, "publishes", pairs(env, res, lib.dexa_result_publish_count(res),
                                                     lib.dexa_result_publish_at));
  size_t ne = lib.dexa_result_event_count(res);
  napi_create_array_with_length(env, ne, &events);
  for (size_t i = 0; i < ne; i++) {
    const char *p = NULL;
    size_t n = 0;
    lib.dexa_result_event_at(res, i, &p, &n);
    napi_set_element(env, events, (uint32_t)i, str_val(env, p, n));
  }
  napi_set_named_property(env, o, "events", events);
  napi_set_named_property(env, o, "wait", text_or_null(env, lib.dexa_result_wait, res));
  napi_set_named_property(env, o, "decision", text_or_null(env, lib.dexa_result_decision, res));
  napi_set_named_property(env, o, "response", text_or_null(env, lib.dexa_result_response, res));
  return o;
}
