/* Runtimes: client operations, waits, host-driven tasks, closing. */
#ifndef DEXAGENTS_NODE_RUNTIME_H
#define DEXAGENTS_NODE_RUNTIME_H

#include "agent.h"
#include "common.h"

typedef struct task_box task_box;
typedef struct log_sink log_sink;

typedef struct runtime_box {
  dexa_runtime *rt;
  agent_box *agent;
  napi_ref agent_ref; /* keeps the agent (and its tools) alive */
  addon_state *st;
  pthread_mutex_t mu;
  pthread_cond_t cv;  /* busy dropped */
  int busy;           /* operations running on job threads (under mu) */
  atomic_int closing; /* close() began: no new operation, waits end */
  int freed;          /* the C runtime is gone (under mu) */
  task_box *tasks;    /* claimed and not completed (under mu) */
  int refs;           /* the external and each task box (JS thread) */
  bool holding;       /* keeps the event loop alive (JS thread) */
  struct runtime_box *prev, *next; /* the environment's runtimes (JS thread) */
  log_sink *log;      /* onLog's, released once the C runtime is freed (under mu) */
} runtime_box;

/* A task claimed by poll: the runtime keeps it until it is completed or
 * abandoned (close abandons what is left). */
struct task_box {
  dexa_task *task; /* NULL once completed or abandoned (under rb->mu) */
  runtime_box *rb;
  int dispatching; /* a dispatch reads its call (under rb->mu) */
  task_box *next;
};

/* Marks an operation of rb as running on a job thread; false (and throws)
 * when the runtime is closing. Pair with runtime_release on that thread. */
bool runtime_acquire(napi_env env, runtime_box *rb);
void runtime_release(runtime_box *rb);

/* The runtime of a JS handle, or NULL after throwing. */
runtime_box *get_runtime(napi_env env, napi_value v);

/* Takes the task out of its box for completion (NULL when it is gone or
 * being dispatched). */
dexa_task *task_take(task_box *t);
/* Marks the task as being dispatched and returns its call (NULL when it is
 * gone or already being dispatched); task_dispatch_end ends that. While it
 * is marked, task_call_of returns the call without a lock. */
const dexa_call *task_dispatch_begin(task_box *t);
const dexa_call *task_call_of(task_box *t);
void task_dispatch_end(task_box *t);
task_box *get_task(napi_env env, napi_value v);

/* Environment teardown: ends every wait, then frees every open runtime. */
void runtimes_env_closing(addon_state *st);

napi_value js_runtime_options(napi_env env, napi_callback_info info);
napi_value js_runtime_new(napi_env env, napi_callback_info info);
napi_value js_runtime_start(napi_env env, napi_callback_info info);
napi_value js_runtime_errmsg(napi_env env, napi_callback_info info);
napi_value js_runtime_op(napi_env env, napi_callback_info info);
napi_value js_runtime_complete(napi_env env, napi_callback_info info);
napi_value js_runtime_close(napi_env env, napi_callback_info info);
napi_value js_runtime_hold(napi_env env, napi_callback_info info);
napi_value js_runtime_abandon_tools(napi_env env, napi_callback_info info);
napi_value js_task_info(napi_env env, napi_callback_info info);
napi_value js_task_abandon(napi_env env, napi_callback_info info);

#endif
