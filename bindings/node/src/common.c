/* Value helpers, errors, the environment's state and jobs (see common.h). */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- values -------------------------------------------------------------- */

char *get_str(napi_env env, napi_value v, size_t *len_out) {
  napi_valuetype t;
  if (!v || napi_typeof(env, v, &t) != napi_ok || t != napi_string) return NULL;
  size_t len = 0;
  if (napi_get_value_string_utf8(env, v, NULL, 0, &len) != napi_ok) return NULL;
  char *s = malloc(len + 1);
  if (!s) return NULL;
  napi_get_value_string_utf8(env, v, s, len + 1, &len);
  if (len_out) *len_out = len;
  return s;
}

napi_value prop(napi_env env, napi_value obj, const char *key) {
  napi_value v;
  bool has = false;
  napi_valuetype t;
  if (!obj || napi_typeof(env, obj, &t) != napi_ok || t != napi_object) return NULL;
  if (napi_has_named_property(env, obj, key, &has) != napi_ok || !has) return NULL;
  if (napi_get_named_property(env, obj, key, &v) != napi_ok) return NULL;
  if (napi_typeof(env, v, &t) != napi_ok || t == napi_undefined) return NULL;
  return v;
}

char *prop_str(napi_env env, napi_value obj, const char *key) {
  return get_str(env, prop(env, obj, key), NULL);
}

int64_t prop_i64(napi_env env, napi_value obj, const char *key, int64_t dflt) {
  napi_value v = prop(env, obj, key);
  napi_valuetype t;
  if (!v || napi_typeof(env, v, &t) != napi_ok) return dflt;
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

napi_value str_val(napi_env env, const char *s, size_t len) {
  napi_value v;
  if (!s) {
    napi_get_null(env, &v);
    return v;
  }
  napi_create_string_utf8(env, s, len, &v);
  return v;
}

napi_value int_val(napi_env env, int64_t n) {
  napi_value v;
  napi_create_int64(env, n, &v);
  return v;
}

napi_value bool_val(napi_env env, bool b) {
  napi_value v;
  napi_get_boolean(env, b, &v);
  return v;
}

void *get_external(napi_env env, napi_value v) {
  void *p = NULL;
  napi_valuetype t;
  if (!v || napi_typeof(env, v, &t) != napi_ok || t != napi_external) return NULL;
  if (napi_get_value_external(env, v, &p) != napi_ok) return NULL;
  return p;
}

char *dup_n(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (!d) return NULL;
  if (n) memcpy(d, s, n);
  d[n] = 0;
  return d;
}

char *dup_s(const char *s) { return dup_n(s ? s : "", s ? strlen(s) : 0); }

static const char *code_name(int rc) {
  return lib.dexa_error_name ? lib.dexa_error_name(rc) : "DEXA_E_INTERNAL";
}

napi_value throw_dexa(napi_env env, int rc, const char *msg) {
  napi_value code, text, err;
  const char *m = msg && *msg ? msg : (lib.dexa_strerror ? lib.dexa_strerror(rc) : "error");
  napi_create_string_utf8(env, code_name(rc), NAPI_AUTO_LENGTH, &code);
  napi_create_string_utf8(env, m, NAPI_AUTO_LENGTH, &text);
  napi_create_error(env, code, text, &err);
  napi_set_named_property(env, err, "errno", int_val(env, rc));
  napi_throw(env, err);
  return NULL;
}

bool check_keys(napi_env env, napi_value obj, const char *const *allowed, const char *what) {
  napi_value names;
  uint32_t n = 0;
  napi_valuetype t;
  if (!obj || napi_typeof(env, obj, &t) != napi_ok || t != napi_object) return true;
  if (napi_get_property_names(env, obj, &names) != napi_ok) return true;
  napi_get_array_length(env, names, &n);
  for (uint32_t i = 0; i < n; i++) {
    napi_value k;
    napi_get_element(env, names, i, &k);
    char *key = get_str(env, k, NULL);
    bool ok = false;
    for (const char *const *a = allowed; key && *a && !ok; a++) ok = strcmp(*a, key) == 0;
    if (!ok) {
      char msg[256];
      snprintf(msg, sizeof msg, "%s: unknown key '%s'", what, key ? key : "?");
      free(key);
      throw_dexa(env, DEXA_E_UNKNOWN_KEY, msg);
      return false;
    }
    free(key);
  }
  return true;
}

bool require_lib(napi_env env) {
  if (lib.dexa_version) return true;
  throw_dexa(env, DEXA_E_INVALID_ARG, "libdexagents is not loaded");
  return false;
}

int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- library information ---------------------------------------------------- */

/* load(path) -> path loaded; throws with the loader's message. */
napi_value js_load(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  char *path = argc ? get_str(env, argv[0], NULL) : NULL;
  if (!path) return throw_dexa(env, DEXA_E_INVALID_ARG, "load(path): path must be a string");
  char err[1024] = "";
  int rc = api_load(path, err, sizeof err);
  free(path);
  if (rc != 0) {
    napi_value e, text;
    napi_create_string_utf8(env, err, NAPI_AUTO_LENGTH, &text);
    napi_create_error(env, NULL, text, &e);
    napi_throw(env, e);
    return NULL;
  }
  return str_val(env, api_loaded_path(), NAPI_AUTO_LENGTH);
}

napi_value js_version(napi_env env, napi_callback_info info) {
  if (!require_lib(env)) return NULL;
  return str_val(env, lib.dexa_version(), NAPI_AUTO_LENGTH);
}

/* buildInfo() -> the JSON text of dexa_build_info (index.js parses it). */
napi_value js_build_info(napi_env env, napi_callback_info info) {
  if (!require_lib(env)) return NULL;
  return str_val(env, lib.dexa_build_info(), NAPI_AUTO_LENGTH);
}

napi_value js_error_info(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], obj;
  int32_t code = 0;
  if (!require_lib(env)) return NULL;
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 1 || napi_get_value_int32(env, argv[0], &code) != napi_ok)
    return throw_dexa(env, DEXA_E_INVALID_ARG, "errorInfo(code): code must be a number");
  napi_create_object(env, &obj);
  napi_set_named_property(env, obj, "name", str_val(env, lib.dexa_error_name(code), NAPI_AUTO_LENGTH));
  napi_set_named_property(env, obj, "message", str_val(env, lib.dexa_strerror(code), NAPI_AUTO_LENGTH));
  napi_set_named_property(env, obj, "errorClass", int_val(env, lib.dexa_error_class(code)));
  return obj;
}

/* ---- cancellation ------------------------------------------------------------- */

cancel_cell *cancel_ref(cancel_cell *c) {
  if (c) atomic_fetch_add(&c->refs, 1);
  return c;
}

void cancel_unref(cancel_cell *c) {
  if (c && atomic_fetch_sub(&c->refs, 1) == 1) free(c);
}

bool cancel_is_set(const cancel_cell *c) { return c && atomic_load(&c->cancelled); }

static void cancel_finalize(napi_env env, void *data, void *hint) { cancel_unref(data); }

napi_value js_cancel_token(napi_env env, napi_callback_info info) {
  cancel_cell *c = calloc(1, sizeof *c);
  napi_value ext;
  if (!c) return throw_dexa(env, DEXA_E_NOMEM, NULL);
  atomic_init(&c->refs, 1);
  if (napi_create_external(env, c, cancel_finalize, NULL, &ext) != napi_ok) {
    free(c);
    return throw_dexa(env, DEXA_E_NOMEM, NULL);
  }
  return ext;
}

napi_value js_cancel(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  cancel_cell *c = argc ? get_external(env, argv[0]) : NULL;
  if (c) atomic_store(&c->cancelled, 1);
  return NULL;
}

/* ---- jobs ----------------------------------------------------------------------- */

/* Settles a finished job on the JS thread (env NULL: the environment is
 * going away and only memory is released). */
static void job_settle(napi_env env, napi_value unused, void *context, void *data) {
  job *j = data;
  addon_state *st = context;
  if (env) {
    napi_value v = j->settle(env, j);
    if (v) {
      napi_resolve_deferred(env, j->deferred, v);
    } else {
      napi_value ex;
      bool pending = false;
      napi_is_exception_pending(env, &pending);
      if (pending && napi_get_and_clear_last_exception(env, &ex) == napi_ok) {
        napi_reject_deferred(env, j->deferred, ex);
      } else {
        napi_get_undefined(env, &ex);
        napi_resolve_deferred(env, j->deferred, ex);
      }
    }
    st->inflight--;
    state_hold(env, st, 0);
  }
  j->destroy(j);
}

/* Whether the loop is held, as last set (JS thread only). */
static bool held(const addon_state *st) { return st->inflight + st->holds > 0; }

void state_hold(napi_env env, addon_state *st, int delta) {
  bool before = st->ref_state;
  st->holds += delta;
  bool after = held(st);
  if (before == after || !st->done) return;
  st->ref_state = after;
  if (after) napi_ref_threadsafe_function(env, st->done);
  else napi_unref_threadsafe_function(env, st->done);
}

static void *job_main(void *arg) {
  job *j = arg;
  addon_state *st = j->st;
  j->exec(j);
  pthread_mutex_lock(&st->mu);
  napi_status s = napi_closing;
  if (st->done) s = napi_call_threadsafe_function(st->done, j, napi_tsfn_nonblocking);
  st->threads--;
  pthread_cond_broadcast(&st->cv);
  pthread_mutex_unlock(&st->mu);
  if (s != napi_ok) j->destroy(j); /* no JavaScript will see it */
  return NULL;
}

int job_start(napi_env env, job *j, napi_value *promise) {
  addon_state *st = state_of(env);
  j->st = st;
  if (!st || napi_create_promise(env, &j->deferred, promise) != napi_ok) {
    j->destroy(j);
    throw_dexa(env, DEXA_E_INTERNAL, "cannot create a Promise");
    return -1;
  }
  pthread_attr_t attr;
  pthread_t tid;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_mutex_lock(&st->mu);
  st->threads++;
  int rc = pthread_create(&tid, &attr, job_main, j);
  if (rc != 0) st->threads--;
  pthread_mutex_unlock(&st->mu);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    j->destroy(j);
    throw_dexa(env, DEXA_E_NOMEM, "cannot start a thread");
    return -1;
  }
  st->inflight++;
  state_hold(env, st, 0);
  return 0;
}

void jobs_wait(addon_state *st) {
  pthread_mutex_lock(&st->mu);
  while (st->threads > 0) pthread_cond_wait(&st->cv, &st->mu);
  pthread_mutex_unlock(&st->mu);
}

static void done_finalize(napi_env env, void *data, void *hint) {
  addon_state *st = data;
  pthread_mutex_lock(&st->mu);
  st->done = NULL;
  pthread_mutex_unlock(&st->mu);
}

addon_state *state_of(napi_env env) {
  void *p = NULL;
  if (napi_get_instance_data(env, &p) != napi_ok) return NULL;
  return p;
}

/* Made once per environment by addon.c. The state is never freed: a job
 * thread may still be unlocking its mutex when the environment ends. */
addon_state *state_new(napi_env env) {
  addon_state *st = calloc(1, sizeof *st);
  napi_value name;
  if (!st) return NULL;
  pthread_mutex_init(&st->mu, NULL);
  pthread_cond_init(&st->cv, NULL);
  napi_create_string_utf8(env, "dexagents.job", NAPI_AUTO_LENGTH, &name);
  if (napi_create_threadsafe_function(env, NULL, NULL, name, 0, 1, st, done_finalize, st,
                                      job_settle, &st->done) != napi_ok)
    return NULL;
  napi_unref_threadsafe_function(env, st->done);
  napi_set_instance_data(env, st, NULL, NULL);
  return st;
}
