/* Models and harnesses written in JavaScript.
 *
 * The library calls generate (or a harness's run_segment or summarize) on a
 * runtime worker thread. The trampoline copies what JavaScript needs of the
 * request (its JSON, the harness's state and entries, the first new
 * message), queues the call on the model's threadsafe function and waits.
 * While it waits it runs, on its own thread, what JavaScript asks of the
 * request: live deltas and reads inside the segment must be called on the
 * thread running the segment (dexagents-threads(7)), so JavaScript queues
 * them on the call and the worker drains the queue. It also polls
 * dexa_model_request_cancelled and, when the turn is stopped, aborts the
 * request's AbortSignal. JavaScript's answer is a list of reply operations
 * (items, text, tool calls, usage, state, ...) that the worker applies to
 * the reply, again on its own thread. */
#include "model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How long a call may wait for JavaScript when the model sets no timeout:
 * the default RunModel timeout. */
#define DEFAULT_TIMEOUT_MS (15 * 60 * 1000)
/* How often a waiting worker polls for a stop. */
#define POLL_MS 50

typedef struct js_model {
  addon_state *st;
  napi_threadsafe_function tsfn; /* NULL once finalized; guarded by models_mu */
  int64_t timeout_ms;
  int refs;         /* the library's destroy and the function's finalize; models_mu */
  uint64_t next_id; /* models_mu */
} js_model;

/* Messages on a model's threadsafe function start with their kind. */
enum { MSG_START = 0, MSG_ABORT = 1, MSG_TOOL_RESULT = 2 };

/* What JavaScript asks the worker to do during a call. */
enum { OP_EMIT = 1, OP_CALL_TOOL = 2 };

typedef struct call_op {
  struct call_op *next;
  int kind;
  int delta_kind; /* OP_EMIT */
  int64_t seq;    /* OP_CALL_TOOL: JavaScript's number for the answer */
  char *text, *call_id, *name, *args;
  size_t text_len, args_len;
} call_op;

/* The reply operations JavaScript answers with, applied in order. */
enum {
  R_ITEM = 1,
  R_TEXT = 2,
  R_REASONING = 3,
  R_TOOL_CALL = 4,
  R_POLICY = 5,
  R_USAGE = 6,
  R_FINISH = 7,
  R_STATE = 8,
  R_ENTRY = 9,
  R_ERROR = 10,
  R_RAN = 11
};

typedef struct reply_op {
  int code;
  char *s[3]; /* NULL when absent */
  size_t n[3];
  double num[6];
} reply_op;

typedef struct model_call {
  int kind; /* MSG_START */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int refs; /* the worker's and the JavaScript side's; mu */
  js_model *jm;
  uint64_t id;
  int which; /* 0: generate or run_segment; 1: summarize */
  int harness;
  /* The request, copied for the JS thread. */
  char *json, *state, **entries;
  size_t json_len, state_len, *entry_lens, entry_count, first_new;
  /* Queued by JavaScript, run by the worker. */
  call_op *ops, *ops_tail;
  int done;     /* answered (or given up) */
  int finished; /* the worker stopped waiting: no more operations */
  int rc;
  reply_op *reply;
  size_t reply_count;
  struct model_call *prev, *next; /* in g_mcalls while the worker waits */
} model_call;

typedef struct abort_msg {
  int kind; /* MSG_ABORT */
  uint64_t id;
  char reason[200];
} abort_msg;

typedef struct tool_result_msg {
  int kind; /* MSG_TOOL_RESULT */
  uint64_t id;
  int64_t seq;
  int rc;
  char *out;
  size_t out_len;
} tool_result_msg;

/* Orders every use of a model's threadsafe function against its
 * finalization, and guards the calls waiting in every environment. */
static pthread_mutex_t models_mu = PTHREAD_MUTEX_INITIALIZER;
static model_call *g_mcalls;

/* ---- calls ------------------------------------------------------------------ */

static void op_free(call_op *op) {
  free(op->text);
  free(op->call_id);
  free(op->name);
  free(op->args);
  free(op);
}

static void reply_free(reply_op *r, size_t n) {
  for (size_t i = 0; i < n; i++)
    for (int k = 0; k < 3; k++) free(r[i].s[k]);
  free(r);
}

static void call_unref(model_call *c) {
  pthread_mutex_lock(&c->mu);
  int last = --c->refs == 0;
  pthread_mutex_unlock(&c->mu);
  if (!last) return;
  while (c->ops) {
    call_op *op = c->ops;
    c->ops = op->next;
    op_free(op);
  }
  reply_free(c->reply, c->reply_count);
  for (size_t i = 0; i < c->entry_count; i++) free(c->entries[i]);
  free(c->entries);
  free(c->entry_lens);
  free(c->json);
  free(c->state);
  pthread_mutex_destroy(&c->mu);
  pthread_cond_destroy(&c->cv);
  free(c);
}

/* Under models_mu. */
static void mcalls_unlink(model_call *c) {
  if (c->prev || c->next || g_mcalls == c) {
    if (c->prev) c->prev->next = c->next;
    else g_mcalls = c->next;
    if (c->next) c->next->prev = c->prev;
    c->prev = c->next = NULL;
  }
}

/* Answers c (the first answer wins; a later one's reply is freed). */
static void call_finish(model_call *c, int rc, reply_op *reply, size_t count) {
  pthread_mutex_lock(&c->mu);
  if (!c->done) {
    c->done = 1;
    c->rc = rc;
    c->reply = reply;
    c->reply_count = count;
    reply = NULL;
    pthread_cond_broadcast(&c->cv);
  }
  pthread_mutex_unlock(&c->mu);
  if (reply) reply_free(reply, count);
}

/* Copies what JavaScript needs of the request. */
static model_call *call_new(js_model *jm, int which, const dexa_model_request *req) {
  model_call *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->kind = MSG_START;
  pthread_mutex_init(&c->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&c->cv, &ca);
  pthread_condattr_destroy(&ca);
  c->refs = 2;
  c->jm = jm;
  c->which = which;
  const char *j = NULL;
  size_t n = 0;
  lib.dexa_model_request_json(req, &j, &n);
  c->json = dup_n(j ? j : "{}", j ? n : 2);
  c->json_len = j ? n : 2;
  int ok = c->json != NULL;
  if (lib.dexa_model_request_harness_state(req, &j, &n) == DEXA_OK) {
    c->harness = 1;
    if (j && !(c->state = dup_n(j, n))) ok = 0;
    c->state_len = n;
    c->first_new = lib.dexa_model_request_first_new_message(req);
    size_t count = lib.dexa_model_request_harness_entry_count(req);
    c->entries = calloc(count + 1, sizeof *c->entries);
    c->entry_lens = calloc(count + 1, sizeof *c->entry_lens);
    if (!c->entries || !c->entry_lens) ok = 0;
    for (size_t i = 0; ok && i < count; i++) {
      if (lib.dexa_model_request_harness_entry_at(req, i, &j, &n) != DEXA_OK) continue;
      if (!(c->entries[c->entry_count] = dup_n(j, n))) ok = 0;
      else c->entry_lens[c->entry_count++] = n;
    }
  }
  if (!ok) {
    call_unref(c);
    call_unref(c);
    return NULL;
  }
  return c;
}

/* Queues msg on jm's function; false (msg not taken) when it is gone. */
static bool post(js_model *jm, void *msg) {
  napi_status s = napi_closing;
  pthread_mutex_lock(&models_mu);
  if (jm->tsfn && !atomic_load(&jm->st->closing))
    s = napi_call_threadsafe_function(jm->tsfn, msg, napi_tsfn_nonblocking);
  pthread_mutex_unlock(&models_mu);
  return s == napi_ok;
}

static void post_abort(js_model *jm, uint64_t id, const char *reason) {
  abort_msg *m = calloc(1, sizeof *m);
  if (!m) return;
  m->kind = MSG_ABORT;
  m->id = id;
  snprintf(m->reason, sizeof m->reason, "%s", reason);
  if (!post(jm, m)) free(m);
}

static void post_tool_result(js_model *jm, uint64_t id, int64_t seq, int rc, char *out,
                             size_t out_len) {
  tool_result_msg *m = calloc(1, sizeof *m);
  if (!m) {
    lib.dexa_free(out);
    return;
  }
  m->kind = MSG_TOOL_RESULT;
  m->id = id;
  m->seq = seq;
  m->rc = rc;
  m->out = out;
  m->out_len = out_len;
  if (!post(jm, m)) {
    lib.dexa_free(out);
    free(m);
  }
}

/* On the worker thread: one operation JavaScript asked for. */
static void run_op(model_call *c, const dexa_model_request *req, call_op *op) {
  if (op->kind == OP_EMIT) {
    lib.dexa_model_request_emit_delta(req, op->delta_kind, op->text, op->text_len);
    return;
  }
  char *out = NULL;
  size_t len = 0;
  int rc = lib.dexa_model_request_call_tool(req, op->call_id, op->name, op->args, op->args_len,
                                            &out, &len);
  post_tool_result(c->jm, c->id, op->seq, rc, out, len);
}

/* Operations queued too late (after the answer): a read is answered so
 * that JavaScript's Promise settles; a delta is dropped. */
static void drop_ops(model_call *c, call_op *ops) {
  while (ops) {
    call_op *op = ops;
    ops = op->next;
    if (op->kind == OP_CALL_TOOL) post_tool_result(c->jm, c->id, op->seq, DEXA_E_BAD_STATE, NULL, 0);
    op_free(op);
  }
}

static const char *op_name(int code) {
  static const char *const names[] = {"?", "item", "text", "reasoning", "tool call", "tool policy",
                                      "usage", "finish reason", "state", "state entry", "error",
                                      "framework tool call"};
  return code > 0 && code <= R_RAN ? names[code] : "?";
}

static int apply_one(const reply_op *o, dexa_model_reply *reply) {
  switch (o->code) {
  case R_ITEM: return lib.dexa_model_reply_add_item(reply, o->s[0], o->n[0]);
  case R_TEXT: return lib.dexa_model_reply_add_text(reply, o->s[0], o->n[0]);
  case R_REASONING: return lib.dexa_model_reply_add_reasoning(reply, o->s[0], o->n[0]);
  case R_TOOL_CALL:
    return lib.dexa_model_reply_add_tool_call(reply, o->s[0], o->s[1], o->s[2], o->n[2]);
  case R_POLICY:
    return lib.dexa_model_reply_set_tool_policy(reply, o->s[0], (int)o->num[0], (int)o->num[1]);
  case R_USAGE: {
    dexa_model_usage u;
    lib.dexa_model_usage_init(&u, sizeof u);
    u.input_tokens = (int64_t)o->num[0];
    u.output_tokens = (int64_t)o->num[1];
    u.cached_input_tokens = (int64_t)o->num[2];
    u.cache_write_tokens = (int64_t)o->num[3];
    u.reasoning_tokens = (int64_t)o->num[4];
    u.cost_usd = o->num[5];
    return lib.dexa_model_reply_set_token_usage(reply, &u);
  }
  case R_FINISH: return lib.dexa_model_reply_set_finish_reason(reply, o->s[0], o->s[1]);
  case R_STATE: return lib.dexa_model_reply_set_harness_state(reply, o->s[0], o->s[0] ? o->n[0] : 0);
  case R_ENTRY: return lib.dexa_model_reply_add_harness_entry(reply, o->s[0], o->n[0]);
  case R_RAN: return lib.dexa_model_reply_add_framework_tool_call(reply, o->s[0], o->n[0]);
  case R_ERROR:
    return lib.dexa_model_reply_set_error(reply, o->s[0] ? o->s[0] : "", (int64_t)o->num[0]);
  default: return DEXA_E_INVALID_ARG;
  }
}

/* On the worker thread: JavaScript's answer into the reply. A failed call
 * keeps only its error; a reply operation the library refuses fails the
 * call with its code. */
static int apply_reply(model_call *c, dexa_model_reply *reply) {
  for (size_t i = 0; i < c->reply_count; i++) {
    const reply_op *o = &c->reply[i];
    if (c->rc != DEXA_OK && o->code != R_ERROR) continue;
    int rc = apply_one(o, reply);
    if (rc != DEXA_OK && c->rc == DEXA_OK) {
      char msg[256];
      snprintf(msg, sizeof msg, "the JavaScript model's reply has a bad %s: %s", op_name(o->code),
               lib.dexa_strerror(rc));
      lib.dexa_model_reply_set_error(reply, msg, 0);
      return rc;
    }
  }
  return c->rc;
}

static void deadline_after(struct timespec *ts, int64_t ms) {
  clock_gettime(CLOCK_MONOTONIC, ts);
  ts->tv_sec += ms / 1000;
  ts->tv_nsec += (ms % 1000) * 1000000;
  if (ts->tv_nsec >= 1000000000) {
    ts->tv_sec++;
    ts->tv_nsec -= 1000000000;
  }
}

/* Waits for JavaScript's answer, running its operations meanwhile and
 * watching for a stop. Returns 1 when the wait timed out. Locked by the
 * caller on entry and exit. */
static int wait_answer(model_call *c, const dexa_model_request *req, int64_t timeout_ms) {
  int64_t deadline = mono_ms() + timeout_ms;
  int abort_sent = 0;
  for (;;) {
    while (c->ops) {
      call_op *op = c->ops;
      c->ops = op->next;
      if (!c->ops) c->ops_tail = NULL;
      pthread_mutex_unlock(&c->mu);
      run_op(c, req, op);
      op_free(op);
      pthread_mutex_lock(&c->mu);
    }
    if (c->done) return 0;
    if (!abort_sent && lib.dexa_model_request_cancelled(req)) {
      abort_sent = 1;
      pthread_mutex_unlock(&c->mu);
      post_abort(c->jm, c->id, "the turn was stopped");
      pthread_mutex_lock(&c->mu);
      continue;
    }
    int64_t left = deadline - mono_ms();
    if (left <= 0) return 1;
    struct timespec until;
    deadline_after(&until, left < POLL_MS ? left : POLL_MS);
    pthread_cond_timedwait(&c->cv, &c->mu, &until);
  }
}

static int model_run(js_model *jm, int which, const dexa_model_request *req,
                     dexa_model_reply *reply) {
  model_call *c = call_new(jm, which, req);
  if (!c) return DEXA_E_NOMEM;
  pthread_mutex_lock(&models_mu);
  c->id = ++jm->next_id;
  c->next = g_mcalls;
  if (g_mcalls) g_mcalls->prev = c;
  g_mcalls = c;
  pthread_mutex_unlock(&models_mu);
  if (!post(jm, c)) {
    pthread_mutex_lock(&models_mu);
    mcalls_unlink(c);
    pthread_mutex_unlock(&models_mu);
    call_unref(c); /* JavaScript never sees it */
    call_unref(c);
    lib.dexa_model_reply_set_error(reply, "the JavaScript environment is closing", 0);
    return DEXA_E_TRANSIENT;
  }
  int64_t timeout = jm->timeout_ms > 0 ? jm->timeout_ms : DEFAULT_TIMEOUT_MS;
  pthread_mutex_lock(&c->mu);
  int timed_out = wait_answer(c, req, timeout);
  c->finished = 1;
  call_op *late = c->ops;
  c->ops = c->ops_tail = NULL;
  pthread_mutex_unlock(&c->mu);
  pthread_mutex_lock(&models_mu);
  mcalls_unlink(c);
  pthread_mutex_unlock(&models_mu);
  drop_ops(c, late);
  int rc;
  if (timed_out) {
    char msg[128];
    snprintf(msg, sizeof msg, "the JavaScript model did not answer within %lld ms",
             (long long)timeout);
    post_abort(jm, c->id, msg);
    lib.dexa_model_reply_set_error(reply, msg, 0);
    rc = DEXA_E_TIMEOUT;
  } else {
    rc = apply_reply(c, reply);
  }
  call_unref(c);
  return rc;
}

static int js_generate(void *user, const dexa_model_request *req, dexa_model_reply *reply) {
  return model_run(user, 0, req, reply);
}

static int js_summarize(void *user, const dexa_model_request *req, dexa_model_reply *reply) {
  return model_run(user, 1, req, reply);
}

static void js_model_unref(js_model *jm) {
  pthread_mutex_lock(&models_mu);
  int last = --jm->refs == 0;
  pthread_mutex_unlock(&models_mu);
  if (last) free(jm);
}

/* The library released its last reference (any thread). */
static void js_destroy(void *user) {
  js_model *jm = user;
  pthread_mutex_lock(&models_mu);
  napi_threadsafe_function f = jm->tsfn;
  pthread_mutex_unlock(&models_mu);
  if (f) napi_release_threadsafe_function(f, napi_tsfn_release);
  js_model_unref(jm);
}

static void tsfn_finalize(napi_env env, void *data, void *hint) {
  js_model *jm = data;
  pthread_mutex_lock(&models_mu);
  jm->tsfn = NULL;
  pthread_mutex_unlock(&models_mu);
  js_model_unref(jm);
}

/* ---- the JS thread ------------------------------------------------------------ */

static void clear_exception(napi_env env) {
  bool pending = false;
  napi_value ex;
  napi_is_exception_pending(env, &pending);
  if (pending) napi_get_and_clear_last_exception(env, &ex);
}

static void handle_finalize(napi_env env, void *data, void *hint) { call_unref(data); }

static napi_value request_info(napi_env env, const model_call *c) {
  napi_value o, entries;
  napi_create_object(env, &o);
  napi_set_named_property(env, o, "json", str_val(env, c->json, c->json_len));
  napi_set_named_property(env, o, "which", int_val(env, c->which));
  napi_set_named_property(env, o, "harness", bool_val(env, c->harness));
  napi_set_named_property(env, o, "state", str_val(env, c->state, c->state_len));
  napi_set_named_property(env, o, "firstNew", int_val(env, (int64_t)c->first_new));
  napi_create_array_with_length(env, c->entry_count, &entries);
  for (size_t i = 0; i < c->entry_count; i++)
    napi_set_element(env, entries, (uint32_t)i, str_val(env, c->entries[i], c->entry_lens[i]));
  napi_set_named_property(env, o, "entries", entries);
  return o;
}

/* dispatcher(kind, id, a, b, c): (0, id, handle, info) starts a call,
 * (1, id, reason) aborts it, (2, id, seq, rc, outJson|null) answers a read. */
static void call_js(napi_env env, napi_value dispatcher, void *context, void *data) {
  int kind = *(int *)data;
  napi_value argv[5], undefined, result;
  if (env) {
    napi_get_undefined(env, &undefined);
    for (int i = 0; i < 5; i++) argv[i] = undefined;
    argv[0] = int_val(env, kind);
  }
  if (kind == MSG_ABORT) {
    abort_msg *m = data;
    if (env) {
      argv[1] = int_val(env, (int64_t)m->id);
      argv[2] = str_val(env, m->reason, NAPI_AUTO_LENGTH);
      if (napi_call_function(env, undefined, dispatcher, 3, argv, &result) != napi_ok)
        clear_exception(env);
    }
    free(m);
    return;
  }
  if (kind == MSG_TOOL_RESULT) {
    tool_result_msg *m = data;
    if (env) {
      argv[1] = int_val(env, (int64_t)m->id);
      argv[2] = int_val(env, m->seq);
      argv[3] = int_val(env, m->rc);
      argv[4] = str_val(env, m->out, m->out_len);
      if (napi_call_function(env, undefined, dispatcher, 5, argv, &result) != napi_ok)
        clear_exception(env);
    }
    lib.dexa_free(m->out);
    free(m);
    return;
  }
  model_call *c = data;
  if (!env) { /* the environment is going away: JavaScript never saw it */
    call_finish(c, DEXA_E_TRANSIENT, NULL, 0);
    call_unref(c);
    return;
  }
  argv[1] = int_val(env, (int64_t)c->id);
  if (napi_create_external(env, c, handle_finalize, NULL, &argv[2]) != napi_ok) {
    call_finish(c, DEXA_E_NOMEM, NULL, 0);
    call_unref(c);
    return;
  }
  argv[3] = request_info(env, c);
  if (napi_call_function(env, undefined, dispatcher, 4, argv, &result) != napi_ok) {
    clear_exception(env); /* lib/model.js catches everything: this is a bug */
    call_finish(c, DEXA_E_INTERNAL, NULL, 0);
  }
}

static void model_finalize(napi_env env, void *data, void *hint) { lib.dexa_model_free(data); }

/* modelNewJs(name, dispatcher, {harness, flags, summarize, timeoutMs}) ->
 * the model's external (a dexa_model *, as modelNew's). */
napi_value js_model_new_js(napi_env env, napi_callback_info info) {
  static const char *const keys[] = {"harness", "flags", "summarize", "timeoutMs", NULL};
  size_t argc = 3;
  napi_value argv[3], fname, ext;
  if (!require_lib(env)) return NULL;
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  char *name = argc ? get_str(env, argv[0], NULL) : NULL;
  napi_value opts = argc > 2 ? argv[2] : NULL;
  if (!name) return throw_dexa(env, DEXA_E_INVALID_ARG, "the model name must be a string");
  if (!check_keys(env, opts, keys, "modelNewJs")) {
    free(name);
    return NULL;
  }
  js_model *jm = calloc(1, sizeof *jm);
  if (!jm) {
    free(name);
    return throw_dexa(env, DEXA_E_NOMEM, NULL);
  }
  jm->st = state_of(env);
  jm->timeout_ms = prop_i64(env, opts, "timeoutMs", 0);
  jm->refs = 1; /* the library's, taken below */
  napi_create_string_utf8(env, "dexagents.model", NAPI_AUTO_LENGTH, &fname);
  if (argc < 2 || napi_create_threadsafe_function(env, argv[1], NULL, fname, 0, 1, jm,
                                                  tsfn_finalize, NULL, call_js,
                                                  &jm->tsfn) != napi_ok) {
    free(jm);
    free(name);
    return throw_dexa(env, DEXA_E_INVALID_ARG, "the dispatcher must be a function");
  }
  jm->refs++;
  napi_unref_threadsafe_function(env, jm->tsfn); /* a model alone keeps no process alive */
  dexa_model *m = NULL;
  int rc;
  if (prop_i64(env, opts, "harness", 0)) {
    dexa_harness_vtable vt;
    lib.dexa_harness_vtable_init(&vt, sizeof vt);
    vt.flags = (uint32_t)prop_i64(env, opts, "flags", 0);
    vt.run_segment = js_generate;
    vt.summarize = prop_i64(env, opts, "summarize", 0) ? js_summarize : NULL;
    vt.destroy = js_destroy;
    rc = lib.dexa_harness_new(&m, name, &vt, jm);
  } else {
    dexa_model_vtable vt;
    lib.dexa_model_vtable_init(&vt, sizeof vt);
    vt.generate = js_generate;
    vt.destroy = js_destroy;
    rc = lib.dexa_model_new(&m, name, &vt, jm);
  }
  free(name);
  if (rc != DEXA_OK) {
    js_destroy(jm); /* never given to the library */
    return throw_dexa(env, rc, "cannot make the model");
  }
  if (napi_create_external(env, m, model_finalize, NULL, &ext) != napi_ok) {
    lib.dexa_model_free(m);
    return throw_dexa(env, DEXA_E_NOMEM, "cannot wrap the model");
  }
  return ext;
}

static model_call *get_call(napi_env env, napi_value v) { return get_external(env, v); }

/* Queues op on c unless the worker stopped waiting; false then. */
static bool enqueue(model_call *c, call_op *op) {
  pthread_mutex_lock(&c->mu);
  bool ok = !c->finished && !c->done;
  if (ok) {
    if (c->ops_tail) c->ops_tail->next = op;
    else c->ops = op;
    c->ops_tail = op;
    pthread_cond_broadcast(&c->cv);
  }
  pthread_mutex_unlock(&c->mu);
  if (!ok) op_free(op);
  return ok;
}

/* modelCallEmit(handle, kind, text) -> false when the call is over. */
napi_value js_model_call_emit(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  int32_t kind = DEXA_DELTA_TEXT;
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  model_call *c = argc ? get_call(env, argv[0]) : NULL;
  call_op *op = c ? calloc(1, sizeof *op) : NULL;
  if (!op) return bool_val(env, false);
  if (argc > 1) napi_get_value_int32(env, argv[1], &kind);
  op->kind = OP_EMIT;
  op->delta_kind = kind;
  op->text = argc > 2 ? get_str(env, argv[2], &op->text_len) : NULL;
  if (!op->text) {
    op_free(op);
    return throw_dexa(env, DEXA_E_INVALID_ARG, "emitDelta(text): text must be a string");
  }
  return bool_val(env, enqueue(c, op));
}

/* modelCallTool(handle, seq, callId, name, argsJson) -> false when the
 * call is over (no answer will come). */
napi_value js_model_call_tool(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  model_call *c = argc ? get_call(env, argv[0]) : NULL;
  call_op *op = c && argc == 5 ? calloc(1, sizeof *op) : NULL;
  if (!op) return bool_val(env, false);
  op->kind = OP_CALL_TOOL;
  napi_get_value_int64(env, argv[1], &op->seq);
  op->call_id = get_str(env, argv[2], NULL);
  op->name = get_str(env, argv[3], NULL);
  op->args = get_str(env, argv[4], &op->args_len);
  if (!op->call_id || !op->name || !op->args) {
    op_free(op);
    return throw_dexa(env, DEXA_E_INVALID_ARG, "callTool: callId, name and arguments are needed");
  }
  return bool_val(env, enqueue(c, op));
}

static bool read_reply_op(napi_env env, napi_value arr, reply_op *o) {
  uint32_t n = 0;
  napi_value v;
  napi_valuetype t;
  int32_t code = 0;
  if (napi_get_array_length(env, arr, &n) != napi_ok || n < 1) return false;
  napi_get_element(env, arr, 0, &v);
  if (napi_get_value_int32(env, v, &code) != napi_ok) return false;
  o->code = code;
  int si = 0, ni = 0;
  for (uint32_t i = 1; i < n; i++) {
    napi_get_element(env, arr, i, &v);
    napi_typeof(env, v, &t);
    if (t == napi_number && ni < 6) {
      napi_get_value_double(env, v, &o->num[ni++]);
    } else if ((t == napi_string || t == napi_null || t == napi_undefined) && si < 3) {
      o->s[si] = t == napi_string ? get_str(env, v, &o->n[si]) : NULL;
      si++;
    }
  }
  return true;
}

/* modelCallDone(handle, rc, ops): ops is an array of [code, strings...,
 * numbers...] (lib/model.js writes them). */
napi_value js_model_call_done(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  int32_t rc = DEXA_OK;
  uint32_t n = 0;
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  model_call *c = argc ? get_call(env, argv[0]) : NULL;
  if (!c) return NULL;
  if (argc > 1) napi_get_value_int32(env, argv[1], &rc);
  if (argc > 2) napi_get_array_length(env, argv[2], &n);
  reply_op *ops = calloc(n + 1, sizeof *ops);
  if (!ops) {
    call_finish(c, DEXA_E_NOMEM, NULL, 0);
    return NULL;
  }
  size_t count = 0;
  for (uint32_t i = 0; i < n; i++) {
    napi_value e;
    napi_get_element(env, argv[2], i, &e);
    if (read_reply_op(env, e, &ops[count])) count++;
  }
  call_finish(c, rc, ops, count);
  return NULL;
}

/* ---- closing ------------------------------------------------------------------ */

/* Takes the first waiting call of st. */
static model_call *mcalls_take(addon_state *st) {
  pthread_mutex_lock(&models_mu);
  model_call *c = g_mcalls;
  while (c && c->jm->st != st) c = c->next;
  if (c) {
    mcalls_unlink(c);
    pthread_mutex_lock(&c->mu);
    c->refs++; /* kept while it is finished here */
    pthread_mutex_unlock(&c->mu);
  }
  pthread_mutex_unlock(&models_mu);
  return c;
}

void models_env_closing(addon_state *st) {
  model_call *c;
  while ((c = mcalls_take(st))) {
    call_finish(c, DEXA_E_TRANSIENT, NULL, 0);
    call_unref(c);
  }
}

void models_abandon(addon_state *st, const char *reason) {
  model_call *c;
  while ((c = mcalls_take(st))) {
    call_finish(c, DEXA_E_TRANSIENT, NULL, 0);
    post_abort(c->jm, c->id, reason);
    call_unref(c);
  }
}
