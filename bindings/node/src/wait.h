/* The host's wait helper (dexa_wait_evaluate) for a JavaScript host. */
#ifndef DEXAGENTS_NODE_WAIT_H
#define DEXAGENTS_NODE_WAIT_H

#include "common.h"

napi_value js_wait_evaluate(napi_env env, napi_callback_info info);

#endif
