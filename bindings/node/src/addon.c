/* Node-API addon of libdexagents: the native half of bindings/node.
 *
 * Handles are napi externals (models, agents, runtimes). Calls that may wait
 * (runtime client operations, events, wait_idle, close) run as
 * napi_async_work on libuv's pool and resolve a Promise with {rc, out}; the
 * JavaScript half (index.js) turns a non-zero rc into a DexaError. Tools are
 * JavaScript functions: the runtime's worker thread calls tool_trampoline,
 * which queues the call on the agent's napi_threadsafe_function and blocks
 * until the JavaScript side called done() (after the tool's function or its
 * Promise settled), or the tool timeout passed. */
#define NAPI_VERSION 8
#include <node_api.h>

#include <errno.h>
#include <stdio.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dexagents/dexagents.h>

#define CHECK_NAPI(env, call)                                         \
  do {                                                                \
    if ((call) != napi_ok) {                                          \
      napi_throw_error((env), "DEXA_E_INTERNAL", "N-API call failed: " #call); \
      return NULL;                                                    \
    }                                                                 \
  } while (0)

/* ---- helpers ---------------------------------------------------------- */

/* A new malloc'd UTF-8 copy of a JS string (NULL for null/undefined). */
static char *get_str(napi_env env, napi_value v, size_t *len_out) {
  napi_valuetype t;
  if (napi_typeof(env, v, &t) != napi_ok || t == napi_undefined || t == napi_null) return NULL;
  size_t len = 0;
  if (napi_get_value_string_utf8(env, v, NULL, 0, &len) != napi_ok) return NULL;
  char *s = malloc(len + 1);
  if (!s) return NULL;
  napi_get_value_string_utf8(env, v, s, len + 1, &len);
  if (len_out) *len_out = len;
  return s;
}

static char *prop_str(napi_env env, napi_value obj, const char *key) {
  napi_value v;
  bool has = false;
  if (napi_has_named_property(env, obj, key, &has) != napi_ok || !has) return NULL;
  if (napi_get_named_property(env, obj, key, &v) != napi_ok) return NULL;
  return get_str(env, v, NULL);
}

static int64_t prop_i64(napi_env env, napi_value obj, const char *key, int64_t dflt) {
  napi_value v;
  bool has = false;
  napi_valuetype t;
  if (napi_has_named_property(env, obj, key, &has) != napi_ok || !has) return dflt;
  if (napi_get_named_property(env, obj, key, &v) != napi_ok) return dflt;
  if (napi_typeof(env, v, &t) != napi_ok) return dflt;
  if (t == napi_boolean) {
    bool b = false;
    napi_get_value_bool(env, v, &b);
    return b;
  }
  if (t != napi_number) return dflt;
  int64_t r = dflt;
  napi_get_value_int64(env, v, &r);
  return r;
}

static napi_value str_val(napi_env env, const char *s, size_t len) {
  napi_value v;
  if (!s) {
    napi_get_null(env, &v);
    return v;
  }
  napi_create_string_utf8(env, s, len, &v);
  return v;
}

static napi_value int_val(napi_env env, int64_t n) {
  napi_value v;
  napi_create_int64(env, n, &v);
  return v;
}

/* Throws an Error with code (the DEXA_E_* name) and errno (the number). */
static napi_value throw_dexa(napi_env env, int rc, const char *msg) {
  napi_value code, text, err;
  const char *m = msg && *msg ? msg : dexa_strerror(rc);
  napi_create_string_utf8(env, dexa_error_name(rc), NAPI_AUTO_LENGTH, &code);
  napi_create_string_utf8(env, m, NAPI_AUTO_LENGTH, &text);
  napi_create_error(env, code, text, &err);
  napi_set_named_property(env, err, "errno", int_val(env, rc));
  napi_throw(env, err);
  return NULL;
}

static void *get_external(napi_env env, napi_value v) {
  void *p = NULL;
  if (napi_get_value_external(env, v, &p) != napi_ok) return NULL;
  return p;
}

/* ---- library information ----------------------------------------------- */

static napi_value js_version(napi_env env, napi_callback_info info) {
  return str_val(env, dexa_version(), NAPI_AUTO_LENGTH);
}

static napi_value js_error_info(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], obj;
  int32_t code = 0;
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 1 || napi_get_value_int32(env, argv[0], &code) != napi_ok)
    return throw_dexa(env, DEXA_E_INVALID_ARG, "errorInfo(code): code must be a number");
  napi_create_object(env, &obj);
  napi_set_named_property(env, obj, "name", str_val(env, dexa_error_name(code), NAPI_AUTO_LENGTH));
  napi_set_named_property(env, obj, "message", str_val(env, dexa_strerror(code), NAPI_AUTO_LENGTH));
  napi_set_named_property(env, obj, "errorClass", int_val(env, dexa_error_class(code)));
  return obj;
}

/* ---- models ------------------------------------------------------------ */

static void model_finalize(napi_env env, void *data, void *hint) { dexa_model_free(data); }

static napi_value wrap_model(napi_env env, dexa_model *m) {
  napi_value ext;
  if (napi_create_external(env, m, model_finalize, NULL, &ext) != napi_ok) {
    dexa_model_free(m);
    return throw_dexa(env, DEXA_E_NOMEM, "cannot wrap the model");
  }
  return ext;
}

/* modelNew(name, optionsJson|null): "mock/..." without options is the demo
 * model, anything else dexa_model_client_new. */
static napi_value js_model_new(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 1) return throw_dexa(env, DEXA_E_INVALID_ARG, "model name missing");
  char *name = get_str(env, argv[0], NULL);
  size_t olen = 0;
  char *opts = argc > 1 ? get_str(env, argv[1], &olen) : NULL;
  if (!name) {
    free(opts);
    return throw_dexa(env, DEXA_E_INVALID_ARG, "model name must be a string");
  }
  dexa_model *m = NULL;
  char err[512] = "";
  int rc = (!opts && strncmp(name, "mock/", 5) == 0)
               ? dexa_model_demo_new(&m, name)
               : dexa_model_client_new(&m, name, opts, olen, err, sizeof err);
  free(name);
  free(opts);
  if (rc != DEXA_OK) return throw_dexa(env, rc, err);
  return wrap_model(env, m);
}

/* claudeCodeNew(name, optionsJson): dexa_harness_claude_code_new. */
static napi_value js_claude_code_new(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  char *name = argc > 0 ? get_str(env, argv[0], NULL) : NULL;
  size_t olen = 0;
  char *opts = argc > 1 ? get_str(env, argv[1], &olen) : NULL;
  if (!name) {
    free(opts);
    return throw_dexa(env, DEXA_E_INVALID_ARG, "harness name must be a string");
  }
  dexa_model *m = NULL;
  char err[512] = "";
  int rc = dexa_harness_claude_code_new(&m, name, opts, olen, err, sizeof err);
  free(name);
  free(opts);
  if (rc != DEXA_OK) return throw_dexa(env, rc, err);
  return wrap_model(env, m);
}

static napi_value js_model_name(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  dexa_model *m = argc ? get_external(env, argv[0]) : NULL;
  if (!m) return throw_dexa(env, DEXA_E_INVALID_ARG, "not a model");
  return str_val(env, dexa_model_name(m), NAPI_AUTO_LENGTH);
}

/* ---- agents and JavaScript tools --------------------------------------- */

typedef struct agent_box agent_box;

typedef struct tool_slot {
  agent_box *box;
  int32_t index;
} tool_slot;

struct agent_box {
  dexa_agent *agent;
  napi_threadsafe_function tsfn; /* calls the JS dispatcher on the JS thread */
  tool_slot *slots;
  size_t slot_count;
  int64_t tool_timeout_ms;
  int refs; /* the external and the threadsafe function: both finalize (JS thread) */
};

/* One call of a JS tool, shared by the worker thread (which waits) and the
 * JS thread (which answers): two references, the last one frees. */
typedef struct tool_call {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int refs;
  int done;
  int js_released; /* the JS side's reference is dropped (finish ran) */
  int is_error;
  char *text;
  size_t text_len;
  char *content;
  size_t content_len;
  int32_t index;
  char *args;
  size_t args_len;
  char *name, *call_id, *session_id, *idem_key;
  int32_t attempt;
  struct tool_call *prev, *next; /* in g_calls while the JS side holds a reference */
} tool_call;

/* Process-wide state for the environment's teardown (see env_cleanup): the
 * calls handed to JavaScript and not answered yet, the open runtimes, and
 * whether the environment is going away. g_mu also orders every use of an
 * agent's threadsafe function against its finalization. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static tool_call *g_calls;
static int g_closing;

static char *dup_s(const char *s) {
  if (!s) s = "";
  size_t n = strlen(s);
  char *d = malloc(n + 1);
  if (d) memcpy(d, s, n + 1);
  return d;
}

static void tool_call_unref(tool_call *c) {
  pthread_mutex_lock(&c->mu);
  int last = --c->refs == 0;
  pthread_mutex_unlock(&c->mu);
  if (!last) return;
  pthread_mutex_destroy(&c->mu);
  pthread_cond_destroy(&c->cv);
  free(c->text);
  free(c->content);
  free(c->args);
  free(c->name);
  free(c->call_id);
  free(c->session_id);
  free(c->idem_key);
  free(c);
}

static void tool_call_unlink(tool_call *c) {
  pthread_mutex_lock(&g_mu);
  if (c->prev || c->next || g_calls == c) {
    if (c->prev) c->prev->next = c->next;
    else g_calls = c->next;
    if (c->next) c->next->prev = c->prev;
    c->prev = c->next = NULL;
  }
  pthread_mutex_unlock(&g_mu);
}

/* Completes c (the first completion wins; takes text and content). With
 * release, drops the JS side's reference: done() and the threadsafe
 * function's teardown call do, each at most once per call; env_cleanup only
 * wakes the worker (a call JavaScript never answered then stays allocated). */
static void tool_call_finish(tool_call *c, int release, int is_error, char *text,
                             size_t text_len, char *content, size_t content_len) {
  tool_call_unlink(c);
  pthread_mutex_lock(&c->mu);
  if (release && c->js_released) release = 0;
  if (release) c->js_released = 1;
  if (!c->done) {
    c->done = 1;
    c->is_error = is_error;
    c->text = text;
    c->text_len = text_len;
    c->content = content;
    c->content_len = content_len;
    text = content = NULL;
    pthread_cond_broadcast(&c->cv);
  }
  pthread_mutex_unlock(&c->mu);
  free(text);
  free(content);
  if (release) tool_call_unref(c);
}

/* done(text, isError, contentJson|null): called once by index.js. */
static napi_value js_tool_done(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  void *data = NULL;
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, &data));
  tool_call *c = data;
  if (!c) return NULL;
  size_t tl = 0, cl = 0;
  char *text = argc > 0 ? get_str(env, argv[0], &tl) : NULL;
  bool is_error = false;
  if (argc > 1) napi_get_value_bool(env, argv[1], &is_error);
  char *content = argc > 2 ? get_str(env, argv[2], &cl) : NULL;
  if (!text) {
    text = dup_s("tool result missing");
    tl = text ? strlen(text) : 0;
    is_error = true;
  }
  tool_call_finish(c, 1, is_error, text, tl, content, cl);
  return NULL;
}

/* On the JS thread: dispatcher(index, argsJson, call, done). */
static void tool_call_js(napi_env env, napi_value dispatcher, void *context, void *data) {
  tool_call *c = data;
  if (!env) { /* the environment is going away */
    tool_call_finish(c, 1, 1, dup_s("the JavaScript environment is closing"), 37, NULL, 0);
    return;
  }
  napi_value argv[4], undefined, callinfo, result;
  napi_get_undefined(env, &undefined);
  argv[0] = int_val(env, c->index);
  argv[1] = str_val(env, c->args, c->args_len);
  napi_create_object(env, &callinfo);
  napi_set_named_property(env, callinfo, "name", str_val(env, c->name, NAPI_AUTO_LENGTH));
  napi_set_named_property(env, callinfo, "callId", str_val(env, c->call_id, NAPI_AUTO_LENGTH));
  napi_set_named_property(env, callinfo, "sessionId", str_val(env, c->session_id, NAPI_AUTO_LENGTH));
  napi_set_named_property(env, callinfo, "idempotencyKey",
                          str_val(env, c->idem_key, NAPI_AUTO_LENGTH));
  napi_set_named_property(env, callinfo, "attempt", int_val(env, c->attempt));
  argv[2] = callinfo;
  if (napi_create_function(env, "done", NAPI_AUTO_LENGTH, js_tool_done, c, &argv[3]) != napi_ok ||
      napi_call_function(env, undefined, dispatcher, 4, argv, &result) != napi_ok) {
    /* the dispatcher threw (it does not: index.js catches): report, clear */
    bool pending = false;
    napi_is_exception_pending(env, &pending);
    if (pending) {
      napi_value ex;
      napi_get_and_clear_last_exception(env, &ex);
    }
    tool_call_finish(c, 1, 1, dup_s("the tool dispatcher failed"), 26, NULL, 0);
  }
}

/* On a runtime worker thread: hands the call to the JS thread and waits. */
static int tool_trampoline(void *user_data, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  tool_slot *slot = user_data;
  agent_box *box = slot->box;
  tool_call *c = calloc(1, sizeof *c);
  if (!c) return DEXA_E_NOMEM;
  pthread_mutex_init(&c->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&c->cv, &ca);
  pthread_condattr_destroy(&ca);
  c->refs = 2;
  c->index = slot->index;
  const char *a = NULL;
  size_t al = 0;
  dexa_tool_invocation_arguments(inv, &a, &al);
  c->args = malloc(al + 1);
  if (c->args) {
    if (al) memcpy(c->args, a, al);
    c->args[al] = 0;
    c->args_len = al;
  }
  c->name = dup_s(dexa_tool_invocation_name(inv));
  c->call_id = dup_s(dexa_tool_invocation_call_id(inv));
  c->session_id = dup_s(dexa_tool_invocation_session_id(inv));
  c->idem_key = dup_s(dexa_tool_invocation_idempotency_key(inv));
  c->attempt = dexa_tool_invocation_attempt(inv);

  napi_status st = napi_closing;
  pthread_mutex_lock(&g_mu);
  if (!g_closing && box->tsfn) {
    c->next = g_calls;
    if (g_calls) g_calls->prev = c;
    g_calls = c;
    /* max_queue_size 0: never blocks */
    st = napi_call_threadsafe_function(box->tsfn, c, napi_tsfn_nonblocking);
    if (st != napi_ok) {
      g_calls = c->next;
      if (g_calls) g_calls->prev = NULL;
      c->next = NULL;
    }
  }
  pthread_mutex_unlock(&g_mu);
  if (st != napi_ok) {
    tool_call_unref(c); /* the JS side never sees it */
    tool_call_unref(c);
    const char *m = "the JavaScript environment is closing";
    return dexa_tool_output_set_text(out, m, strlen(m), 1);
  }
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  int64_t ms = box->tool_timeout_ms > 0 ? box->tool_timeout_ms : 600000;
  until.tv_sec += ms / 1000;
  until.tv_nsec += (ms % 1000) * 1000000;
  if (until.tv_nsec >= 1000000000) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000;
  }
  int rc = DEXA_OK;
  pthread_mutex_lock(&c->mu);
  while (!c->done) {
    if (pthread_cond_timedwait(&c->cv, &c->mu, &until) == ETIMEDOUT && !c->done) {
      rc = DEXA_E_TIMEOUT;
      break;
    }
  }
  if (rc == DEXA_OK) {
    rc = dexa_tool_output_set_text(out, c->text ? c->text : "", c->text_len, c->is_error);
    if (rc == DEXA_OK && c->content)
      rc = dexa_tool_output_set_content(out, c->content, c->content_len);
    if (rc == DEXA_E_INVALID_JSON) rc = DEXA_OK; /* content is optional */
  }
  pthread_mutex_unlock(&c->mu);
  tool_call_unref(c);
  return rc;
}

static void agent_box_unref(agent_box *box) {
  if (--box->refs > 0) return;
  free(box->slots);
  free(box);
}

/* The threadsafe function is gone: released by agent_finalize, or by the
 * environment's teardown (which may come first at exit). */
static void tsfn_finalize(napi_env env, void *data, void *hint) {
  agent_box *box = data;
  pthread_mutex_lock(&g_mu);
  box->tsfn = NULL;
  pthread_mutex_unlock(&g_mu);
  agent_box_unref(box);
}

static void agent_finalize(napi_env env, void *data, void *hint) {
  agent_box *box = data;
  dexa_agent_free(box->agent);
  box->agent = NULL;
  pthread_mutex_lock(&g_mu);
  napi_threadsafe_function tsfn = box->tsfn;
  pthread_mutex_unlock(&g_mu);
  if (tsfn) napi_release_threadsafe_function(tsfn, napi_tsfn_release);
  agent_box_unref(box);
}

/* agentNew({instructions, flowType, models:[model], tools:[{name, description,
 *   parameters (JSON text), effect, approval}], dispatcher, builtinTools,
 *   planMode, limits:{field: number}}) */
static napi_value js_agent_new(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], models, tools, dispatcher, limits;
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 1) return throw_dexa(env, DEXA_E_INVALID_ARG, "agent options missing");
  napi_value o = argv[0];
  uint32_t nmodels = 0, ntools = 0;
  bool is_arr = false;
  if (napi_get_named_property(env, o, "models", &models) != napi_ok ||
      napi_is_array(env, models, &is_arr) != napi_ok || !is_arr)
    return throw_dexa(env, DEXA_E_INVALID_ARG, "models must be an array");
  napi_get_array_length(env, models, &nmodels);
  if (napi_get_named_property(env, o, "tools", &tools) == napi_ok &&
      napi_is_array(env, tools, &is_arr) == napi_ok && is_arr)
    napi_get_array_length(env, tools, &ntools);

  agent_box *box = calloc(1, sizeof *box);
  dexa_model **marr = calloc(nmodels ? nmodels : 1, sizeof *marr);
  if (box) box->refs = 1;
  if (!box || !marr) {
    free(box);
    free(marr);
    return throw_dexa(env, DEXA_E_NOMEM, NULL);
  }
  for (uint32_t i = 0; i < nmodels; i++) {
    napi_value m;
    napi_get_element(env, models, i, &m);
    marr[i] = get_external(env, m);
    if (!marr[i]) {
      free(box);
      free(marr);
      return throw_dexa(env, DEXA_E_INVALID_ARG, "models[] must be Model handles");
    }
  }
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  int rc = DEXA_OK;
  char err[512] = "";
  dexa_tool_source *src = NULL;
  char *instructions = prop_str(env, o, "instructions");
  char *flow_type = prop_str(env, o, "flowType");
  char *src_name = prop_str(env, o, "toolSourceName");
  napi_get_named_property(env, o, "limits", &limits);
  napi_valuetype lt;
  napi_typeof(env, limits, &lt);
  if (lt == napi_object) {
#define LIMIT(field, key) def.field = prop_i64(env, limits, key, def.field)
    LIMIT(context_window_tokens, "contextWindowTokens");
    LIMIT(compaction_threshold_pct, "compactionThresholdPct");
    LIMIT(compaction_keep_pct, "compactionKeepPct");
    LIMIT(retention_messages, "retentionMessages");
    LIMIT(keep_full_transcript, "keepFullTranscript");
    LIMIT(run_model_max_attempts, "runModelMaxAttempts");
    LIMIT(run_model_timeout_ms, "runModelTimeoutMs");
    LIMIT(tool_max_attempts, "toolMaxAttempts");
    LIMIT(tool_timeout_ms, "toolTimeoutMs");
    LIMIT(max_state_bytes, "maxStateBytes");
    LIMIT(max_message_bytes, "maxMessageBytes");
#undef LIMIT
  }
  box->tool_timeout_ms = def.tool_timeout_ms;
  def.instructions = instructions ? instructions : "";
  if (flow_type) def.flow_type = flow_type;
  def.models = marr;
  def.model_count = nmodels;
  def.builtin_tools = (uint32_t)prop_i64(env, o, "builtinTools", 0);
  def.plan_mode_enabled = (int32_t)prop_i64(env, o, "planMode", 0);

  if (ntools > 0) {
    box->slots = calloc(ntools, sizeof *box->slots);
    box->slot_count = ntools;
    napi_value resource_name;
    napi_create_string_utf8(env, "dexagents.tool", NAPI_AUTO_LENGTH, &resource_name);
    if (!box->slots) rc = DEXA_E_NOMEM;
    if (rc == DEXA_OK &&
        (napi_get_named_property(env, o, "dispatcher", &dispatcher) != napi_ok ||
         napi_create_threadsafe_function(env, dispatcher, NULL, resource_name, 0, 1, box,
                                         tsfn_finalize, NULL, tool_call_js,
                                         &box->tsfn) != napi_ok)) {
      rc = DEXA_E_INVALID_ARG;
      snprintf(err, sizeof err, "dispatcher must be a function");
    }
    /* The tools must not keep the process alive by themselves. */
    if (rc == DEXA_OK) {
      box->refs++;
      napi_unref_threadsafe_function(env, box->tsfn);
    }
    if (rc == DEXA_OK) rc = dexa_function_tools_new(&src, src_name ? src_name : "js");
    for (uint32_t i = 0; rc == DEXA_OK && i < ntools; i++) {
      napi_value t;
      napi_get_element(env, tools, i, &t);
      char *name = prop_str(env, t, "name");
      char *desc = prop_str(env, t, "description");
      char *params = prop_str(env, t, "parameters");
      box->slots[i].box = box;
      box->slots[i].index = (int32_t)i;
      rc = dexa_function_tools_add(src, name ? name : "", desc ? desc : "", params,
                                   (int)prop_i64(env, t, "effect", 1),
                                   (int)prop_i64(env, t, "approval", 0), tool_trampoline,
                                   &box->slots[i]);
      if (rc != DEXA_OK) snprintf(err, sizeof err, "tool %s: %s", name ? name : "?", dexa_strerror(rc));
      free(name);
      free(desc);
      free(params);
    }
    def.tool_sources = &src;
    def.tool_source_count = src ? 1 : 0;
  }
  if (rc == DEXA_OK) rc = dexa_agent_new(&box->agent, &def, err, sizeof err);
  dexa_tool_source_free(src); /* the agent holds its own reference */
  free(instructions);
  free(flow_type);
  free(src_name);
  free(marr);
  napi_value ext = NULL;
  if (rc == DEXA_OK && napi_create_external(env, box, agent_finalize, NULL, &ext) != napi_ok)
    rc = DEXA_E_NOMEM;
  if (rc != DEXA_OK) {
    agent_finalize(env, box, NULL);
    return throw_dexa(env, rc, err);
  }
  return ext;
}

static napi_value js_agent_describe(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  agent_box *box = argc ? get_external(env, argv[0]) : NULL;
  if (!box) return throw_dexa(env, DEXA_E_INVALID_ARG, "not an agent");
  char *out = NULL;
  size_t len = 0;
  int rc = dexa_flow_describe(&out, &len, box->agent);
  if (rc != DEXA_OK) return throw_dexa(env, rc, NULL);
  napi_value v = str_val(env, out, len);
  dexa_free(out);
  return v;
}

/* ---- runtimes ---------------------------------------------------------- */

typedef struct runtime_box {
  dexa_runtime *rt;
  napi_ref agent_ref; /* keeps the agent (and its tools) alive */
  int closing;
  int busy;           /* async operations in flight */
  struct runtime_box *prev, *next; /* g_runtimes: open runtimes (JS thread only) */
} runtime_box;

static runtime_box *g_runtimes;

static void runtime_unlink(runtime_box *rb) {
  if (rb->prev) rb->prev->next = rb->next;
  else if (g_runtimes == rb) g_runtimes = rb->next;
  if (rb->next) rb->next->prev = rb->prev;
  rb->prev = rb->next = NULL;
}

static void runtime_finalize(napi_env env, void *data, void *hint) {
  runtime_box *rb = data;
  /* Only reached once close() finished (index.js keeps the handle while
   * open); a runtime never closed is left to the process's exit, because
   * freeing it here could wait for a worker that waits for this thread. */
  if (!rb->rt) free(rb);
}

/* runtimeNew(agent, {store, sqliteSynchronous, leaseMs, workerId, eventsRetained}) */
static napi_value js_runtime_new(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  agent_box *box = argc ? get_external(env, argv[0]) : NULL;
  if (!box) return throw_dexa(env, DEXA_E_INVALID_ARG, "not an agent");
  dexa_runtime_options o;
  dexa_runtime_options_init(&o, sizeof o);
  char *store = NULL, *sync = NULL, *worker = NULL;
  if (argc > 1) {
    napi_valuetype t;
    napi_typeof(env, argv[1], &t);
    if (t == napi_object) {
      store = prop_str(env, argv[1], "store");
      sync = prop_str(env, argv[1], "sqliteSynchronous");
      worker = prop_str(env, argv[1], "workerId");
      o.lease_ms = prop_i64(env, argv[1], "leaseMs", o.lease_ms);
      o.events_retained = prop_i64(env, argv[1], "eventsRetained", o.events_retained);
      o.session_cache_bytes = prop_i64(env, argv[1], "sessionCacheBytes", o.session_cache_bytes);
    }
  }
  if (store) o.store = store;
  if (sync) o.sqlite_synchronous = sync;
  if (worker) o.worker_id = worker;
  runtime_box *rb = calloc(1, sizeof *rb);
  char err[512] = "";
  int rc = rb ? dexa_runtime_new(&rb->rt, box->agent, &o, err, sizeof err) : DEXA_E_NOMEM;
  free(store);
  free(sync);
  free(worker);
  napi_value ext;
  if (rc == DEXA_OK && napi_create_external(env, rb, runtime_finalize, NULL, &ext) != napi_ok)
    rc = DEXA_E_NOMEM;
  if (rc != DEXA_OK) {
    if (rb) dexa_runtime_free(rb->rt);
    free(rb);
    return throw_dexa(env, rc, err);
  }
  napi_create_reference(env, argv[0], 1, &rb->agent_ref);
  rb->next = g_runtimes;
  if (g_runtimes) g_runtimes->prev = rb;
  g_runtimes = rb;
  return ext;
}

static runtime_box *get_runtime(napi_env env, napi_value v) {
  runtime_box *rb = get_external(env, v);
  if (!rb || !rb->rt || rb->closing) {
    throw_dexa(env, DEXA_E_INVALID_ARG, "the runtime is closed");
    return NULL;
  }
  return rb;
}

/* runtimeStart(rt, threads) / runtimeStop(rt): synchronous (stop waits for
 * the current Steps, which may be JS tools: use the async close instead
 * while tools may run). */
static napi_value js_runtime_start(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  int32_t n = 2;
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  runtime_box *rb = argc ? get_runtime(env, argv[0]) : NULL;
  if (!rb) return NULL;
  if (argc > 1) napi_get_value_int32(env, argv[1], &n);
  int rc = dexa_runtime_start(rb->rt, n);
  if (rc != DEXA_OK) return throw_dexa(env, rc, dexa_runtime_errmsg(rb->rt));
  return NULL;
}

static napi_value js_runtime_errmsg(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  runtime_box *rb = argc ? get_external(env, argv[0]) : NULL;
  return str_val(env, rb && rb->rt ? dexa_runtime_errmsg(rb->rt) : "", NAPI_AUTO_LENGTH);
}

/* ---- asynchronous operations ------------------------------------------- */

enum op_kind {
  OP_START_SESSION, OP_CALL, OP_READ_EVENTS, OP_WAIT_IDLE, OP_LIST_SESSIONS, OP_RUN_READY,
  OP_STOP, OP_CLOSE
};

typedef struct op {
  enum op_kind kind;
  runtime_box *rb;
  napi_async_work work;
  napi_deferred deferred;
  char *a, *b, *c; /* session id, rpc / token / after, input */
  size_t c_len;
  int64_t n1, n2;
  int rc;
  char *out;
  size_t out_len;
  char errmsg[512];
} op;

static void op_execute(napi_env env, void *data) {
  op *o = data;
  dexa_runtime *rt = o->rb->rt;
  int32_t ran = 0;
  switch (o->kind) {
    case OP_START_SESSION:
      o->rc = dexa_runtime_start_session(rt, o->a, o->c, o->c_len, &o->out, &o->out_len);
      break;
    case OP_CALL:
      o->rc = dexa_runtime_call(rt, o->a, o->b, o->c, o->c_len, &o->out, &o->out_len);
      break;
    case OP_READ_EVENTS:
      o->rc = dexa_runtime_read_events(rt, o->a, o->b, (int32_t)o->n1, o->n2, &o->out,
                                       &o->out_len);
      break;
    case OP_WAIT_IDLE:
      o->rc = dexa_runtime_wait_idle(rt, o->a, o->n1);
      break;
    case OP_LIST_SESSIONS:
      o->rc = dexa_runtime_list_sessions(rt, o->b, (int32_t)o->n1, &o->out, &o->out_len);
      break;
    case OP_RUN_READY:
      o->rc = dexa_runtime_run_ready(rt, &ran);
      o->n1 = ran;
      break;
    case OP_STOP:
      o->rc = dexa_runtime_stop(rt);
      break;
    case OP_CLOSE:
      dexa_runtime_free(rt);
      o->rc = DEXA_OK;
      break;
  }
  if (o->rc != DEXA_OK && o->kind != OP_CLOSE)
    snprintf(o->errmsg, sizeof o->errmsg, "%s", dexa_runtime_errmsg(rt));
}

/* Resolves {rc, out, errmsg, n}: index.js decides what is an error. */
static void op_complete(napi_env env, napi_status status, void *data) {
  op *o = data;
  napi_value res;
  napi_create_object(env, &res);
  napi_set_named_property(env, res, "rc", int_val(env, o->rc));
  napi_set_named_property(env, res, "out", str_val(env, o->out, o->out_len));
  napi_set_named_property(env, res, "errmsg", str_val(env, o->errmsg, NAPI_AUTO_LENGTH));
  napi_set_named_property(env, res, "n", int_val(env, o->n1));
  o->rb->busy--;
  if (o->kind == OP_CLOSE) {
    runtime_unlink(o->rb);
    o->rb->rt = NULL;
    napi_delete_reference(env, o->rb->agent_ref);
    o->rb->agent_ref = NULL;
  }
  napi_resolve_deferred(env, o->deferred, res);
  napi_delete_async_work(env, o->work);
  dexa_free(o->out);
  free(o->a);
  free(o->b);
  free(o->c);
  free(o);
}

/* runtimeOp(rt, kind, a, b, c, n1, n2) -> Promise<{rc, out, errmsg, n}> */
static napi_value js_runtime_op(napi_env env, napi_callback_info info) {
  size_t argc = 7;
  napi_value argv[7], promise, name;
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 7) return throw_dexa(env, DEXA_E_INVALID_ARG, "runtimeOp: 7 arguments");
  runtime_box *rb = get_runtime(env, argv[0]);
  if (!rb) return NULL;
  int32_t kind = 0;
  napi_get_value_int32(env, argv[1], &kind);
  if (kind < OP_START_SESSION || kind > OP_CLOSE)
    return throw_dexa(env, DEXA_E_INVALID_ARG, "runtimeOp: unknown operation");
  if (kind == OP_CLOSE && rb->busy)
    return throw_dexa(env, DEXA_E_BAD_STATE, "close: operations still running");
  op *o = calloc(1, sizeof *o);
  if (!o) return throw_dexa(env, DEXA_E_NOMEM, NULL);
  o->kind = (enum op_kind)kind;
  o->rb = rb;
  o->a = get_str(env, argv[2], NULL);
  o->b = get_str(env, argv[3], NULL);
  o->c = get_str(env, argv[4], &o->c_len);
  napi_get_value_int64(env, argv[5], &o->n1);
  napi_get_value_int64(env, argv[6], &o->n2);
  napi_create_string_utf8(env, "dexagents.runtime", NAPI_AUTO_LENGTH, &name);
  if (napi_create_promise(env, &o->deferred, &promise) != napi_ok ||
      napi_create_async_work(env, NULL, name, op_execute, op_complete, o, &o->work) != napi_ok ||
      napi_queue_async_work(env, o->work) != napi_ok) {
    free(o->a);
    free(o->b);
    free(o->c);
    free(o);
    return throw_dexa(env, DEXA_E_INTERNAL, "cannot queue the operation");
  }
  rb->busy++;
  if (kind == OP_CLOSE) rb->closing = 1;
  return promise;
}

/* ---- teardown ----------------------------------------------------------- */

/* The environment is going away (process exit, or a worker thread's end)
 * with runtimes still open: no JavaScript runs any more, so every tool call
 * waiting for it gets an error result at once, new ones are refused, and
 * each open runtime without an operation in flight is freed (its workers
 * finish their Steps and stop) before the process's exit handlers run. */
static void env_cleanup(void *arg) {
  pthread_mutex_lock(&g_mu);
  g_closing = 1;
  while (g_calls) {
    tool_call *c = g_calls;
    pthread_mutex_unlock(&g_mu);
    tool_call_finish(c, 0, 1, dup_s("the JavaScript environment is closing"), 37, NULL, 0);
    pthread_mutex_lock(&g_mu);
  }
  pthread_mutex_unlock(&g_mu);
  for (runtime_box *rb = g_runtimes, *next; rb; rb = next) {
    next = rb->next;
    if (rb->rt && !rb->busy) {
      dexa_runtime_free(rb->rt);
      rb->rt = NULL;
    } else if (rb->rt) {
      dexa_runtime_stop(rb->rt);
    }
    runtime_unlink(rb);
  }
}

/* ---- module ------------------------------------------------------------ */

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor d[] = {
      {"version", NULL, js_version, NULL, NULL, NULL, napi_enumerable, NULL},
      {"errorInfo", NULL, js_error_info, NULL, NULL, NULL, napi_enumerable, NULL},
      {"modelNew", NULL, js_model_new, NULL, NULL, NULL, napi_enumerable, NULL},
      {"modelName", NULL, js_model_name, NULL, NULL, NULL, napi_enumerable, NULL},
      {"claudeCodeNew", NULL, js_claude_code_new, NULL, NULL, NULL, napi_enumerable, NULL},
      {"agentNew", NULL, js_agent_new, NULL, NULL, NULL, napi_enumerable, NULL},
      {"agentDescribe", NULL, js_agent_describe, NULL, NULL, NULL, napi_enumerable, NULL},
      {"runtimeNew", NULL, js_runtime_new, NULL, NULL, NULL, napi_enumerable, NULL},
      {"runtimeStart", NULL, js_runtime_start, NULL, NULL, NULL, napi_enumerable, NULL},
      {"runtimeErrmsg", NULL, js_runtime_errmsg, NULL, NULL, NULL, napi_enumerable, NULL},
      {"runtimeOp", NULL, js_runtime_op, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  napi_define_properties(env, exports, sizeof d / sizeof d[0], d);
  napi_add_env_cleanup_hook(env, env_cleanup, NULL);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
