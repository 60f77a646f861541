/* Models and harnesses written in JavaScript (dexagents-harness(7)). */
#ifndef DEXAGENTS_NODE_MODEL_H
#define DEXAGENTS_NODE_MODEL_H

#include "common.h"

/* Ends every model call of st that waits for JavaScript (the environment
 * is going away): the worker gets a transient error, so the Step is retried
 * as after a crash. */
void models_env_closing(addon_state *st);

/* Gives up every model call of st that waits for JavaScript (a runtime
 * closed with a timeout): the worker stops waiting and the request's
 * AbortSignal aborts with reason. */
void models_abandon(addon_state *st, const char *reason);

napi_value js_model_new_js(napi_env env, napi_callback_info info);
napi_value js_model_call_emit(napi_env env, napi_callback_info info);
napi_value js_model_call_tool(napi_env env, napi_callback_info info);
napi_value js_model_call_done(napi_env env, napi_callback_info info);

#endif
