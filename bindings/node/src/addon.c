/* Node-API addon of libdexagents: the native half of bindings/node.
 *
 * Modules: api (the library, opened with dlopen), common (values, errors,
 * jobs on threads of their own), agent (models, agents, JavaScript tools,
 * MCP), model (models and harnesses written in JavaScript), runtime (client operations, waits, tasks, closing), host (dispatch
 * with a JavaScript reader, results), wait (the host's wait helper).
 * index.js is the JavaScript half. */
#include "agent.h"
#include "common.h"
#include "host.h"
#include "model.h"
#include "runtime.h"
#include "wait.h"

/* The environment is going away (process exit, or a worker thread's end)
 * with runtimes still open: no JavaScript runs any more. Tool calls waiting
 * for JavaScript end at once, new ones are refused, every wait ends, and
 * each open runtime is freed (its workers finish their Steps) before the
 * process's exit handlers run. Registered after the job function, so it
 * runs before that function's own teardown. */
static void env_cleanup(void *arg) {
  addon_state *st = arg;
  atomic_store(&st->closing, 1);
  tools_env_closing(st);
  models_env_closing(st);
  runtimes_env_closing(st);
}

#define FN(name, fn) {name, NULL, fn, NULL, NULL, NULL, napi_enumerable, NULL}

static napi_value init(napi_env env, napi_value exports) {
  addon_state *st = state_new(env);
  if (!st) return throw_dexa(env, DEXA_E_INTERNAL, "cannot set up the addon");
  napi_property_descriptor d[] = {
      FN("load", js_load),
      FN("version", js_version),
      FN("buildInfo", js_build_info),
      FN("errorInfo", js_error_info),
      FN("cancelToken", js_cancel_token),
      FN("cancel", js_cancel),
      FN("modelNew", js_model_new),
      FN("claudeCodeNew", js_claude_code_new),
      FN("modelName", js_model_name),
      FN("modelNewJs", js_model_new_js),
      FN("modelCallEmit", js_model_call_emit),
      FN("modelCallTool", js_model_call_tool),
      FN("modelCallDone", js_model_call_done),
      FN("agentNew", js_agent_new),
      FN("agentDescribe", js_agent_describe),
      FN("agentFlowType", js_agent_flow_type),
      FN("mcpNew", js_mcp_new),
      FN("mcpRedacted", js_mcp_redacted),
      FN("mcpListTools", js_mcp_list_tools),
      FN("runtimeOptions", js_runtime_options),
      FN("runtimeNew", js_runtime_new),
      FN("runtimeStart", js_runtime_start),
      FN("runtimeErrmsg", js_runtime_errmsg),
      FN("runtimeOp", js_runtime_op),
      FN("runtimeComplete", js_runtime_complete),
      FN("runtimeClose", js_runtime_close),
      FN("runtimeAbandonTools", js_runtime_abandon_tools),
      FN("runtimeHold", js_runtime_hold),
      FN("taskInfo", js_task_info),
      FN("taskAbandon", js_task_abandon),
      FN("taskDispatch", js_task_dispatch),
      FN("dispatch", js_dispatch),
      FN("resultRead", js_result_read),
      FN("waitEvaluate", js_wait_evaluate),
  };
  napi_define_properties(env, exports, sizeof d / sizeof d[0], d);
  napi_add_env_cleanup_hook(env, env_cleanup, st);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
