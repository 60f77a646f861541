/* Models, agents, JavaScript tools and MCP tool sources.
 *
 * A JavaScript tool runs on the JS thread: the runtime's worker thread
 * calls tool_trampoline, which queues the call on the agent's threadsafe
 * function and blocks until JavaScript answered through done() (after the
 * tool's function or its Promise settled), the tool timeout passed, or the
 * call was given up (runtime closed with a timeout, environment teardown).
 * A call the worker stops waiting for aborts the tool's AbortSignal. */
#include "agent.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- models -------------------------------------------------------------- */

static void model_finalize(napi_env env, void *data, void *hint) { lib.dexa_model_free(data); }

/* modelNew(name, optionsJson|null): "mock/..." without options is the demo
 * model, anything else dexa_model_client_new. */
napi_value js_model_new(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2], ext;
  if (!require_lib(env)) return NULL;
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  char *name = argc ? get_str(env, argv[0], NULL) : NULL;
  size_t olen = 0;
  char *opts = argc > 1 ? get_str(env, argv[1], &olen) : NULL;
  if (!name) {
    free(opts);
    return throw_dexa(env, DEXA_E_INVALID_ARG, "the model name must be a string");
  }
  dexa_model *m = NULL;
  char err[512] = "";
  int rc = (!opts && strncmp(name, "mock/", 5) == 0)
               ? lib.dexa_model_demo_new(&m, name)
               : lib.dexa_model_client_new(&m, name, opts, olen, err, sizeof err);
  free(name);
  free(opts);
  if (rc != DEXA_OK) return throw_dexa(env, rc, err);
  if (napi_create_external(env, m, model_finalize, NULL, &ext) != napi_ok) {
    lib.dexa_model_free(m);
    return throw_dexa(env, DEXA_E_NOMEM, "cannot wrap the model");
  }
  return ext;
}

napi_value js_model_name(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  dexa_model *m = argc ? get_external(env, argv[0]) : NULL;
  if (!m) return throw_dexa(env, DEXA_E_INVALID_ARG, "not a model");
  return str_val(env, lib.dexa_model_name(m), NAPI_AUTO_LENGTH);
}

/* ---- JavaScript tools ------------------------------------------------------ */

struct tool_slot {
  agent_box *box;
  int32_t index;
};

/* Messages on an agent's threadsafe function start with their kind. */
enum { MSG_CALL = 0, MSG_ABORT = 1 };

/* One call of a JS tool, shared by the worker thread (which waits) and the
 * JS thread (which answers): two references, the last one frees. */
typedef struct tool_call {
  int kind; /* MSG_CALL */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int refs;
  int done;
  int started;     /* handed to the JavaScript function */
  int js_released; /* the JS side's reference is dropped */
  int rc;          /* DEXA_OK: the result below; else what call_tool returns */
  int is_error;
  char *text;
  size_t text_len;
  char *content;
  size_t content_len;
  uint64_t id;
  agent_box *box;
  int32_t index;
  char *args;
  size_t args_len;
  char *name, *call_id, *session_id, *idem_key;
  int32_t attempt;
  struct tool_call *prev, *next; /* in g_calls while the JS side holds a reference */
} tool_call;

typedef struct abort_msg {
  int kind; /* MSG_ABORT */
  uint64_t id;
  char reason[200];
} abort_msg;

/* The calls handed to JavaScript and not answered yet, in every
 * environment of the process; tools_mu also orders every use of an agent's
 * threadsafe function against its finalization. */
static pthread_mutex_t tools_mu = PTHREAD_MUTEX_INITIALIZER;
static tool_call *g_calls;

static const char NOT_RUN[] = "the JavaScript environment is closing: the tool did not run";

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

/* Under tools_mu. */
static void calls_unlink(tool_call *c) {
  if (c->prev || c->next || g_calls == c) {
    if (c->prev) c->prev->next = c->next;
    else g_calls = c->next;
    if (c->next) c->next->prev = c->prev;
    c->prev = c->next = NULL;
  }
}

/* Completes c (the first completion wins): with rc DEXA_OK the result is
 * text/content (taken), else the worker returns rc. With release, drops the
 * JS side's reference (done() and the threadsafe function's teardown do,
 * each at most once per call). */
static void tool_call_finish(tool_call *c, int release, int rc, int is_error, char *text,
                             size_t text_len, char *content, size_t content_len) {
  pthread_mutex_lock(&tools_mu);
  calls_unlink(c);
  pthread_mutex_unlock(&tools_mu);
  pthread_mutex_lock(&c->mu);
  if (release && c->js_released) release = 0;
  if (release) c->js_released = 1;
  if (!c->done) {
    c->done = 1;
    c->rc = rc;
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
  tool_call_finish(c, 1, DEXA_OK, is_error, text, tl, content, cl);
  return NULL;
}

static napi_value call_info(napi_env env, const tool_call *c) {
  napi_value o;
  napi_create_object(env, &o);
  napi_set_named_property(env, o, "name", str_val(env, c->name, NAPI_AUTO_LENGTH));
  napi_set_named_property(env, o, "callId", str_val(env, c->call_id, NAPI_AUTO_LENGTH));
  napi_set_named_property(env, o, "sessionId", str_val(env, c->session_id, NAPI_AUTO_LENGTH));
  napi_set_named_property(env, o, "idempotencyKey", str_val(env, c->idem_key, NAPI_AUTO_LENGTH));
  napi_set_named_property(env, o, "attempt", int_val(env, c->attempt));
  return o;
}

static void clear_exception(napi_env env) {
  bool pending = false;
  napi_value ex;
  napi_is_exception_pending(env, &pending);
  if (pending) napi_get_and_clear_last_exception(env, &ex);
}

/* On the JS thread: dispatcher(kind, id, index, argsJson|reason, callInfo, done). */
static void tool_msg_js(napi_env env, napi_value dispatcher, void *context, void *data) {
  napi_value argv[6], undefined, result;
  if (*(int *)data == MSG_ABORT) {
    abort_msg *m = data;
    if (env) {
      napi_get_undefined(env, &undefined);
      argv[0] = int_val(env, MSG_ABORT);
      argv[1] = int_val(env, (int64_t)m->id);
      argv[2] = int_val(env, -1);
      argv[3] = str_val(env, m->reason, NAPI_AUTO_LENGTH);
      argv[4] = undefined;
      argv[5] = undefined;
      if (napi_call_function(env, undefined, dispatcher, 6, argv, &result) != napi_ok)
        clear_exception(env);
    }
    free(m);
    return;
  }
  tool_call *c = data;
  if (!env) { /* the environment is going away: JavaScript never saw it */
    tool_call_finish(c, 1, DEXA_OK, 1, dup_s(NOT_RUN), sizeof NOT_RUN - 1, NULL, 0);
    return;
  }
  pthread_mutex_lock(&c->mu);
  c->started = 1;
  pthread_mutex_unlock(&c->mu);
  napi_get_undefined(env, &undefined);
  argv[0] = int_val(env, MSG_CALL);
  argv[1] = int_val(env, (int64_t)c->id);
  argv[2] = int_val(env, c->index);
  argv[3] = str_val(env, c->args, c->args_len);
  argv[4] = call_info(env, c);
  if (napi_create_function(env, "done", NAPI_AUTO_LENGTH, js_tool_done, c, &argv[5]) != napi_ok ||
      napi_call_function(env, undefined, dispatcher, 6, argv, &result) != napi_ok) {
    clear_exception(env); /* index.js catches everything: this is a bug */
    const char *m = "the tool dispatcher failed";
    tool_call_finish(c, 1, DEXA_OK, 1, dup_s(m), strlen(m), NULL, 0);
  }
}

/* Queues an abort of call id for JavaScript (its AbortSignal). */
static void post_abort(agent_box *box, uint64_t id, const char *reason) {
  abort_msg *m = calloc(1, sizeof *m);
  if (!m) return;
  m->kind = MSG_ABORT;
  m->id = id;
  snprintf(m->reason, sizeof m->reason, "%s", reason);
  pthread_mutex_lock(&tools_mu);
  napi_status s = napi_closing;
  if (box->tsfn && !atomic_load(&box->st->closing))
    s = napi_call_threadsafe_function(box->tsfn, m, napi_tsfn_nonblocking);
  pthread_mutex_unlock(&tools_mu);
  if (s != napi_ok) free(m);
}

static tool_call *tool_call_new(tool_slot *slot, const dexa_tool_invocation *inv) {
  tool_call *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->kind = MSG_CALL;
  pthread_mutex_init(&c->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&c->cv, &ca);
  pthread_condattr_destroy(&ca);
  c->refs = 2;
  c->box = slot->box;
  c->index = slot->index;
  const char *a = NULL;
  size_t al = 0;
  lib.dexa_tool_invocation_arguments(inv, &a, &al);
  c->args = dup_n(a ? a : "", a ? al : 0);
  c->args_len = a ? al : 0;
  c->name = dup_s(lib.dexa_tool_invocation_name(inv));
  c->call_id = dup_s(lib.dexa_tool_invocation_call_id(inv));
  c->session_id = dup_s(lib.dexa_tool_invocation_session_id(inv));
  c->idem_key = dup_s(lib.dexa_tool_invocation_idempotency_key(inv));
  c->attempt = lib.dexa_tool_invocation_attempt(inv);
  return c;
}

/* Hands c to the JS thread; false when the environment is closing. */
static bool tool_call_post(agent_box *box, tool_call *c) {
  napi_status st = napi_closing;
  pthread_mutex_lock(&tools_mu);
  if (!atomic_load(&box->st->closing) && box->tsfn) {
    c->id = ++box->next_call_id;
    c->next = g_calls;
    if (g_calls) g_calls->prev = c;
    g_calls = c;
    st = napi_call_threadsafe_function(box->tsfn, c, napi_tsfn_nonblocking);
    if (st != napi_ok) calls_unlink(c);
  }
  pthread_mutex_unlock(&tools_mu);
  return st == napi_ok;
}

static void deadline_after(struct timespec *until, int64_t ms) {
  clock_gettime(CLOCK_MONOTONIC, until);
  until->tv_sec += ms / 1000;
  until->tv_nsec += (ms % 1000) * 1000000;
  if (until->tv_nsec >= 1000000000) {
    until->tv_sec++;
    until->tv_nsec -= 1000000000;
  }
}

/* On a runtime worker thread: hands the call to the JS thread and waits. */
static int tool_trampoline(void *user_data, const dexa_tool_invocation *inv,
                           dexa_tool_output *out) {
  tool_slot *slot = user_data;
  agent_box *box = slot->box;
  tool_call *c = tool_call_new(slot, inv);
  if (!c) return DEXA_E_NOMEM;
  if (!tool_call_post(box, c)) {
    tool_call_unref(c); /* the JS side never sees it */
    tool_call_unref(c);
    return lib.dexa_tool_output_set_text(out, NOT_RUN, sizeof NOT_RUN - 1, 1);
  }
  struct timespec until;
  int64_t ms = box->tool_timeout_ms > 0 ? box->tool_timeout_ms : 600000;
  deadline_after(&until, ms);
  int timed_out = 0;
  pthread_mutex_lock(&c->mu);
  while (!c->done && !timed_out)
    timed_out = pthread_cond_timedwait(&c->cv, &c->mu, &until) == ETIMEDOUT && !c->done;
  int rc = timed_out ? DEXA_E_TIMEOUT : c->rc;
  if (rc == DEXA_OK) {
    rc = lib.dexa_tool_output_set_text(out, c->text ? c->text : "", c->text_len, c->is_error);
    if (rc == DEXA_OK && c->content)
      rc = lib.dexa_tool_output_set_content(out, c->content, c->content_len);
    if (rc == DEXA_E_INVALID_JSON) rc = DEXA_OK; /* content is optional */
  }
  uint64_t id = c->id;
  pthread_mutex_unlock(&c->mu);
  if (timed_out) {
    char reason[96];
    snprintf(reason, sizeof reason, "the tool timed out after %lld ms", (long long)ms);
    post_abort(box, id, reason);
  }
  tool_call_unref(c);
  return rc;
}

/* Takes the first waiting call matching (box, or every box of st). */
static tool_call *calls_take(agent_box *box, addon_state *st) {
  pthread_mutex_lock(&tools_mu);
  tool_call *c = g_calls;
  while (c && !(box ? c->box == box : c->box->st == st)) c = c->next;
  if (c) calls_unlink(c);
  pthread_mutex_unlock(&tools_mu);
  return c;
}

void tools_env_closing(addon_state *st) {
  tool_call *c;
  while ((c = calls_take(NULL, st))) {
    pthread_mutex_lock(&c->mu);
    int started = c->started;
    pthread_mutex_unlock(&c->mu);
    if (started)
      tool_call_finish(c, 0, DEXA_E_TRANSIENT, 0, NULL, 0, NULL, 0);
    else
      tool_call_finish(c, 0, DEXA_OK, 1, dup_s(NOT_RUN), sizeof NOT_RUN - 1, NULL, 0);
  }
}

void tools_abandon(agent_box *box, const char *reason) {
  tool_call *c;
  while ((c = calls_take(box, NULL))) {
    /* The JS side keeps its reference: done() may still come and frees. */
    tool_call_finish(c, 0, DEXA_E_TRANSIENT, 0, NULL, 0, NULL, 0);
    post_abort(box, c->id, reason);
  }
}

/* ---- agents ---------------------------------------------------------------- */

static void agent_box_unref(agent_box *box) {
  if (--box->refs > 0) return;
  free(box->slots);
  free(box);
}

/* The threadsafe function is gone: released by agent_finalize, or by the
 * environment's teardown (which may come first at exit). */
static void tsfn_finalize(napi_env env, void *data, void *hint) {
  agent_box *box = data;
  pthread_mutex_lock(&tools_mu);
  box->tsfn = NULL;
  pthread_mutex_unlock(&tools_mu);
  agent_box_unref(box);
}

static void agent_finalize(napi_env env, void *data, void *hint) {
  agent_box *box = data;
  lib.dexa_agent_free(box->agent);
  box->agent = NULL;
  pthread_mutex_lock(&tools_mu);
  napi_threadsafe_function tsfn = box->tsfn;
  pthread_mutex_unlock(&tools_mu);
  if (tsfn) napi_release_threadsafe_function(tsfn, napi_tsfn_release);
  agent_box_unref(box);
}

/* The limits of dexa_agent_def by their JavaScript names. */
static const struct limit_field {
  const char *key;
  size_t offset;
  size_t size;
} LIMITS[] = {
#define LIMIT(key, field)                                                                  \
  { key, offsetof(dexa_agent_def, field), sizeof(((dexa_agent_def *)0)->field) }
    LIMIT("contextWindowTokens", context_window_tokens),
    LIMIT("compactionThresholdPct", compaction_threshold_pct),
    LIMIT("compactionKeepPct", compaction_keep_pct),
    LIMIT("retentionMessages", retention_messages),
    LIMIT("keepFullTranscript", keep_full_transcript),
    LIMIT("runModelMaxAttempts", run_model_max_attempts),
    LIMIT("runModelTimeoutMs", run_model_timeout_ms),
    LIMIT("toolMaxAttempts", tool_max_attempts),
    LIMIT("toolTimeoutMs", tool_timeout_ms),
    LIMIT("maxStateBytes", max_state_bytes),
    LIMIT("maxMessageBytes", max_message_bytes),
#undef LIMIT
};
#define NLIMITS (sizeof LIMITS / sizeof LIMITS[0])

static bool set_limits(napi_env env, napi_value limits, dexa_agent_def *def) {
  const char *names[NLIMITS + 1];
  for (size_t i = 0; i < NLIMITS; i++) names[i] = LIMITS[i].key;
  names[NLIMITS] = NULL;
  if (!check_keys(env, limits, names, "Agent limits")) return false;
  for (size_t i = 0; limits && i < NLIMITS; i++) {
    char *p = (char *)def + LIMITS[i].offset;
    int64_t v = prop_i64(env, limits, LIMITS[i].key, INT64_MIN);
    if (v == INT64_MIN) continue;
    if (LIMITS[i].size == sizeof(int64_t)) {
      memcpy(p, &v, sizeof v);
    } else {
      int32_t w = (int32_t)v;
      memcpy(p, &w, sizeof w);
    }
  }
  return true;
}

typedef struct mcp_box {
  dexa_mcp_config *config;
  dexa_tool_source **sources;
  size_t count;
} mcp_box;

/* Collects the models (externals) and MCP sources of the options. */
static int collect_handles(napi_env env, napi_value o, dexa_model ***models, uint32_t *nmodels,
                           dexa_tool_source ***mcp, size_t *nmcp, char *err, size_t n) {
  napi_value arr = prop(env, o, "models");
  bool is_arr = false;
  if (!arr || napi_is_array(env, arr, &is_arr) != napi_ok || !is_arr) {
    snprintf(err, n, "models must be an array");
    return DEXA_E_INVALID_ARG;
  }
  napi_get_array_length(env, arr, nmodels);
  *models = calloc(*nmodels ? *nmodels : 1, sizeof **models);
  if (!*models) return DEXA_E_NOMEM;
  for (uint32_t i = 0; i < *nmodels; i++) {
    napi_value m;
    napi_get_element(env, arr, i, &m);
    if (!((*models)[i] = get_external(env, m))) {
      snprintf(err, n, "models[%u] is not a Model", i);
      return DEXA_E_INVALID_ARG;
    }
  }
  *nmcp = 0;
  arr = prop(env, o, "toolSources");
  uint32_t ns = 0;
  if (arr && napi_is_array(env, arr, &is_arr) == napi_ok && is_arr) napi_get_array_length(env, arr, &ns);
  size_t total = 0;
  for (uint32_t i = 0; i < ns; i++) {
    napi_value v;
    napi_get_element(env, arr, i, &v);
    mcp_box *mb = get_external(env, v);
    if (!mb) {
      snprintf(err, n, "toolSources[%u] is not an McpToolSource", i);
      return DEXA_E_INVALID_ARG;
    }
    total += mb->count;
  }
  *mcp = calloc(total + 1, sizeof **mcp);
  if (!*mcp) return DEXA_E_NOMEM;
  for (uint32_t i = 0; i < ns; i++) {
    napi_value v;
    napi_get_element(env, arr, i, &v);
    mcp_box *mb = get_external(env, v);
    for (size_t k = 0; k < mb->count; k++) (*mcp)[(*nmcp)++] = mb->sources[k];
  }
  return DEXA_OK;
}

/* The function tool source of the options' tools, calling JavaScript
 * through a new threadsafe function of box. */
static int js_tools_source(napi_env env, napi_value o, agent_box *box, dexa_tool_source **out,
                           char *err, size_t n) {
  napi_value tools = prop(env, o, "tools"), dispatcher = prop(env, o, "dispatcher"), name;
  uint32_t ntools = 0;
  bool is_arr = false;
  *out = NULL;
  if (tools && napi_is_array(env, tools, &is_arr) == napi_ok && is_arr)
    napi_get_array_length(env, tools, &ntools);
  if (!ntools) return DEXA_OK;
  box->slots = calloc(ntools, sizeof *box->slots);
  if (!box->slots) return DEXA_E_NOMEM;
  box->slot_count = ntools;
  napi_create_string_utf8(env, "dexagents.tool", NAPI_AUTO_LENGTH, &name);
  if (!dispatcher || napi_create_threadsafe_function(env, dispatcher, NULL, name, 0, 1, box,
                                                     tsfn_finalize, NULL, tool_msg_js,
                                                     &box->tsfn) != napi_ok) {
    snprintf(err, n, "dispatcher must be a function");
    return DEXA_E_INVALID_ARG;
  }
  box->refs++;
  napi_unref_threadsafe_function(env, box->tsfn); /* tools alone keep no process alive */
  char *src_name = prop_str(env, o, "toolSourceName");
  int rc = lib.dexa_function_tools_new(out, src_name ? src_name : "js");
  free(src_name);
  for (uint32_t i = 0; rc == DEXA_OK && i < ntools; i++) {
    napi_value t;
    napi_get_element(env, tools, i, &t);
    char *tname = prop_str(env, t, "name");
    char *desc = prop_str(env, t, "description");
    char *params = prop_str(env, t, "parameters");
    box->slots[i].box = box;
    box->slots[i].index = (int32_t)i;
    rc = lib.dexa_function_tools_add(*out, tname ? tname : "", desc ? desc : "", params,
                                     (int)prop_i64(env, t, "effect", 1),
                                     (int)prop_i64(env, t, "approval", 0), tool_trampoline,
                                     &box->slots[i]);
    if (rc != DEXA_OK)
      snprintf(err, n, "tool %s: %s", tname ? tname : "?", lib.dexa_strerror(rc));
    free(tname);
    free(desc);
    free(params);
  }
  return rc;
}

/* agentNew({instructions, flowType, models:[Model], tools:[{name, description,
 *   parameters (JSON text), effect, approval}], toolSources:[McpToolSource],
 *   dispatcher, builtinTools, planMode, toolSourceName, limits:{...}}) */
napi_value js_agent_new(napi_env env, napi_callback_info info) {
  static const char *const keys[] = {"instructions", "flowType", "models", "tools",
                                     "toolSources", "dispatcher", "builtinTools", "planMode",
                                     "toolSourceName", "limits", NULL};
  size_t argc = 1;
  napi_value argv[1], ext = NULL;
  if (!require_lib(env)) return NULL;
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 1) return throw_dexa(env, DEXA_E_INVALID_ARG, "agent options missing");
  napi_value o = argv[0];
  if (!check_keys(env, o, keys, "agentNew")) return NULL;
  agent_box *box = calloc(1, sizeof *box);
  if (!box) return throw_dexa(env, DEXA_E_NOMEM, NULL);
  box->refs = 1;
  box->st = state_of(env);
  dexa_agent_def def;
  lib.dexa_agent_def_init(&def, sizeof def);
  if (!set_limits(env, prop(env, o, "limits"), &def)) {
    free(box);
    return NULL;
  }
  char err[512] = "";
  dexa_model **models = NULL;
  dexa_tool_source **sources = NULL, *js_src = NULL;
  uint32_t nmodels = 0;
  size_t nsources = 0;
  char *instructions = prop_str(env, o, "instructions");
  char *flow_type = prop_str(env, o, "flowType");
  int rc = collect_handles(env, o, &models, &nmodels, &sources, &nsources, err, sizeof err);
  if (rc == DEXA_OK) rc = js_tools_source(env, o, box, &js_src, err, sizeof err);
  if (rc == DEXA_OK && js_src) {
    memmove(sources + 1, sources, nsources * sizeof *sources);
    sources[0] = js_src;
    nsources++;
  }
  box->tool_timeout_ms = def.tool_timeout_ms;
  def.instructions = instructions ? instructions : "";
  if (flow_type) def.flow_type = flow_type;
  def.models = models;
  def.model_count = nmodels;
  def.tool_sources = sources;
  def.tool_source_count = nsources;
  def.builtin_tools = (uint32_t)prop_i64(env, o, "builtinTools", 0);
  def.plan_mode_enabled = (int32_t)prop_i64(env, o, "planMode", 0);
  if (rc == DEXA_OK) rc = lib.dexa_agent_new(&box->agent, &def, err, sizeof err);
  lib.dexa_tool_source_free(js_src); /* the agent holds its own reference */
  free(instructions);
  free(flow_type);
  free(models);
  free(sources);
  if (rc == DEXA_OK && napi_create_external(env, box, agent_finalize, NULL, &ext) != napi_ok)
    rc = DEXA_E_NOMEM;
  if (rc != DEXA_OK) {
    agent_finalize(env, box, NULL);
    return throw_dexa(env, rc, err);
  }
  return ext;
}

static agent_box *get_agent(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) return NULL;
  agent_box *box = argc ? get_external(env, argv[0]) : NULL;
  if (!box || !box->agent) throw_dexa(env, DEXA_E_INVALID_ARG, "not an agent");
  return box && box->agent ? box : NULL;
}

napi_value js_agent_describe(napi_env env, napi_callback_info info) {
  agent_box *box = get_agent(env, info);
  if (!box) return NULL;
  char *out = NULL;
  size_t len = 0;
  int rc = lib.dexa_flow_describe(&out, &len, box->agent);
  if (rc != DEXA_OK) return throw_dexa(env, rc, NULL);
  napi_value v = str_val(env, out, len);
  lib.dexa_free(out);
  return v;
}

napi_value js_agent_flow_type(napi_env env, napi_callback_info info) {
  agent_box *box = get_agent(env, info);
  return box ? str_val(env, lib.dexa_agent_flow_type(box->agent), NAPI_AUTO_LENGTH) : NULL;
}

/* ---- MCP tool sources ---------------------------------------------------------- */

static void mcp_finalize(napi_env env, void *data, void *hint) {
  mcp_box *mb = data;
  lib.dexa_mcp_tool_sources_free(mb->sources, mb->count);
  lib.dexa_mcp_config_free(mb->config);
  free(mb);
}

/* mcpNew(json|null, path|null): the configuration and one source per server. */
napi_value js_mcp_new(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2], ext;
  if (!require_lib(env)) return NULL;
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  size_t jl = 0;
  char *json = argc > 0 ? get_str(env, argv[0], &jl) : NULL;
  char *path = argc > 1 ? get_str(env, argv[1], NULL) : NULL;
  char err[512] = "";
  mcp_box *mb = calloc(1, sizeof *mb);
  int rc = mb ? lib.dexa_mcp_config_load(&mb->config, path, json, jl, err, sizeof err)
              : DEXA_E_NOMEM;
  if (rc == DEXA_OK) rc = lib.dexa_mcp_tool_sources_new(&mb->sources, &mb->count, mb->config);
  free(json);
  free(path);
  if (rc == DEXA_OK && napi_create_external(env, mb, mcp_finalize, NULL, &ext) != napi_ok)
    rc = DEXA_E_NOMEM;
  if (rc != DEXA_OK) {
    if (mb) mcp_finalize(env, mb, NULL);
    return throw_dexa(env, rc, err);
  }
  return ext;
}

napi_value js_mcp_redacted(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  mcp_box *mb = argc ? get_external(env, argv[0]) : NULL;
  if (!mb) return throw_dexa(env, DEXA_E_INVALID_ARG, "not an McpToolSource");
  char *out = NULL;
  size_t len = 0;
  int rc = lib.dexa_mcp_config_redacted_json(mb->config, &out, &len);
  if (rc != DEXA_OK) return throw_dexa(env, rc, NULL);
  napi_value v = str_val(env, out, len);
  lib.dexa_free(out);
  return v;
}

/* Listing starts or connects to each server: a job of its own thread. */
typedef struct list_job {
  job base;
  mcp_box *mb;
  size_t count;
  napi_ref keep; /* the external, alive until settled */
  int rc;
  char source[128];
  char **lists;
  size_t *lens;
} list_job;

static void list_exec(job *j) {
  list_job *l = (list_job *)j;
  for (size_t i = 0; i < l->mb->count && l->rc == DEXA_OK; i++) {
    l->rc = lib.dexa_tool_source_list_json(&l->lists[i], &l->lens[i], l->mb->sources[i]);
    if (l->rc != DEXA_OK)
      snprintf(l->source, sizeof l->source, "%s", lib.dexa_tool_source_name(l->mb->sources[i]));
  }
}

static napi_value list_settle(napi_env env, job *j) {
  list_job *l = (list_job *)j;
  napi_delete_reference(env, l->keep);
  l->keep = NULL;
  if (l->rc != DEXA_OK) {
    char msg[256];
    snprintf(msg, sizeof msg, "listing %s: %s", l->source, lib.dexa_strerror(l->rc));
    throw_dexa(env, l->rc, msg);
    return NULL;
  }
  napi_value arr;
  napi_create_array_with_length(env, l->mb->count, &arr);
  for (size_t i = 0; i < l->mb->count; i++)
    napi_set_element(env, arr, (uint32_t)i, str_val(env, l->lists[i], l->lens[i]));
  return arr;
}

static void list_destroy(job *j) {
  list_job *l = (list_job *)j;
  for (size_t i = 0; l->lists && i < l->count; i++) lib.dexa_free(l->lists[i]);
  free(l->lists);
  free(l->lens);
  free(l);
}

/* mcpListTools(ext) -> Promise<[JSON text per server]> */
napi_value js_mcp_list_tools(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], promise;
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  mcp_box *mb = argc ? get_external(env, argv[0]) : NULL;
  if (!mb) return throw_dexa(env, DEXA_E_INVALID_ARG, "not an McpToolSource");
  list_job *l = calloc(1, sizeof *l);
  if (l) {
    l->lists = calloc(mb->count + 1, sizeof *l->lists);
    l->lens = calloc(mb->count + 1, sizeof *l->lens);
  }
  if (!l || !l->lists || !l->lens) {
    if (l) list_destroy(&l->base);
    return throw_dexa(env, DEXA_E_NOMEM, NULL);
  }
  l->mb = mb;
  l->count = mb->count;
  l->base.exec = list_exec;
  l->base.settle = list_settle;
  l->base.destroy = list_destroy;
  napi_create_reference(env, argv[0], 1, &l->keep);
  if (job_start(env, &l->base, &promise) != 0) return NULL;
  return promise;
}
