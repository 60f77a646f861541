/* Host-driven mode: dispatch with a JavaScript attribute reader, results,
 * and the dispatch of a runtime's task. */
#ifndef DEXAGENTS_NODE_HOST_H
#define DEXAGENTS_NODE_HOST_H

#include "agent.h"
#include "common.h"

napi_value js_dispatch(napi_env env, napi_callback_info info);
napi_value js_task_dispatch(napi_env env, napi_callback_info info);
napi_value js_result_read(napi_env env, napi_callback_info info);

#endif
