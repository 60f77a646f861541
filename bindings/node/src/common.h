/* Shared by the addon's modules: value helpers, errors, the per-environment
 * state, and jobs (blocking library calls on threads of their own). */
#ifndef DEXAGENTS_NODE_COMMON_H
#define DEXAGENTS_NODE_COMMON_H

#define NAPI_VERSION 8
#include <node_api.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "api.h"

/* ---- values ------------------------------------------------------------ */

/* A new malloc'd UTF-8 copy of a JS string (NULL for anything else). */
char *get_str(napi_env env, napi_value v, size_t *len_out);
/* obj[key] as a new string, NULL when absent or not a string. */
char *prop_str(napi_env env, napi_value obj, const char *key);
/* obj[key] as an integer (booleans count as 0/1), dflt when absent. */
int64_t prop_i64(napi_env env, napi_value obj, const char *key, int64_t dflt);
/* obj[key] or NULL when absent or undefined. */
napi_value prop(napi_env env, napi_value obj, const char *key);
napi_value str_val(napi_env env, const char *s, size_t len);
napi_value int_val(napi_env env, int64_t n);
napi_value bool_val(napi_env env, bool b);
void *get_external(napi_env env, napi_value v);
char *dup_s(const char *s);
char *dup_n(const char *s, size_t n);

/* Throws an Error whose code is the DEXA_E_* name and errno the number
 * (index.js turns it into the DexaError subclass); returns NULL. */
napi_value throw_dexa(napi_env env, int rc, const char *msg);

#define CHECK_NAPI(env, call)                                                      \
  do {                                                                             \
    if ((call) != napi_ok) return throw_dexa((env), DEXA_E_INTERNAL, "N-API call failed: " #call); \
  } while (0)

/* Throws DEXA_E_UNKNOWN_KEY naming the first own property of obj that is
 * not in allowed (NULL-terminated); returns false then. */
bool check_keys(napi_env env, napi_value obj, const char *const *allowed, const char *what);

/* Throws unless the library is loaded (native.load ran). */
bool require_lib(napi_env env);

/* ---- per-environment state and jobs ---------------------------------------
 *
 * A job runs one blocking library call on a new detached thread, never on
 * libuv's pool (which fs, dns and crypto share), so any number of waiting
 * event readers starve nothing. The thread hands the finished job to the JS
 * thread through the environment's threadsafe function, where its Promise
 * settles. Jobs in flight keep the event loop alive (the function is ref'd
 * while any is pending). */

typedef struct addon_state {
  pthread_mutex_t mu;
  pthread_cond_t cv;            /* a job thread ended */
  napi_threadsafe_function done; /* NULL once finalized (environment teardown) */
  int threads;                  /* job threads still running */
  int inflight;                 /* jobs not yet settled (JS thread only) */
  int holds;                    /* runtimes that keep the loop alive (JS thread only) */
  bool ref_state;               /* the job function is ref'd (JS thread only) */
  atomic_int closing;           /* the environment is going away */
  void *runtimes;               /* open runtimes (runtime.c; JS thread only) */
} addon_state;

typedef struct job job;
struct job {
  addon_state *st;
  /* On the job's thread. */
  void (*exec)(job *j);
  /* On the JS thread: the value to resolve with, or NULL with a pending
   * exception to reject with. */
  napi_value (*settle)(napi_env env, job *j);
  /* Frees the job (either thread; must not call N-API). */
  void (*destroy)(job *j);
  napi_deferred deferred;
};

addon_state *state_of(napi_env env);
/* Makes the environment's state (module init). */
addon_state *state_new(napi_env env);

/* Starts j on its own thread; *promise settles when it is done. On failure
 * j never ran: it is destroyed, an error is thrown and -1 returned. */
int job_start(napi_env env, job *j, napi_value *promise);

/* Adds delta to the runtimes that keep the event loop alive (JS thread):
 * the loop stays alive while a job is in flight or a hold is taken. */
void state_hold(napi_env env, addon_state *st, int delta);

/* Waits until no job thread runs (environment teardown). */
void jobs_wait(addon_state *st);

/* ---- cancellation ---------------------------------------------------------
 * A cancel cell is shared by a waiting job and the JavaScript side (an
 * external made by cancelToken()); AbortSignal listeners set it. */
typedef struct cancel_cell {
  atomic_int cancelled;
  atomic_int refs;
} cancel_cell;

cancel_cell *cancel_ref(cancel_cell *c);
void cancel_unref(cancel_cell *c);
bool cancel_is_set(const cancel_cell *c);

/* Milliseconds of CLOCK_MONOTONIC. */
int64_t mono_ms(void);

/* Module functions of each part (registered by addon.c). */
napi_value js_version(napi_env env, napi_callback_info info);
napi_value js_build_info(napi_env env, napi_callback_info info);
napi_value js_error_info(napi_env env, napi_callback_info info);
napi_value js_load(napi_env env, napi_callback_info info);
napi_value js_cancel_token(napi_env env, napi_callback_info info);
napi_value js_cancel(napi_env env, napi_callback_info info);

#endif
