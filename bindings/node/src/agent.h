/* Models, agents, JavaScript tools and MCP tool sources. */
#ifndef DEXAGENTS_NODE_AGENT_H
#define DEXAGENTS_NODE_AGENT_H

#include "common.h"

typedef struct tool_slot tool_slot;

/* An agent handle: the library agent, the threadsafe function that calls
 * JavaScript tools, and one slot per tool. */
typedef struct agent_box {
  dexa_agent *agent;
  addon_state *st;
  napi_threadsafe_function tsfn; /* NULL once finalized; guarded by tools_mu */
  tool_slot *slots;
  size_t slot_count;
  int64_t tool_timeout_ms;
  uint64_t next_call_id;         /* guarded by tools_mu */
  int refs; /* the external and the threadsafe function: both finalize (JS thread) */
} agent_box;

/* Ends every JavaScript tool call of st that is still waiting (the
 * environment is going away): a call JavaScript already started is given up
 * (its Step is left as after a crash), one it never saw gets a result saying
 * it did not run. */
void tools_env_closing(addon_state *st);

/* Gives up every running call of box: the worker stops waiting (the Step
 * is left as after a crash) and the call's AbortSignal aborts. */
void tools_abandon(agent_box *box, const char *reason);

napi_value js_model_new(napi_env env, napi_callback_info info);
napi_value js_model_name(napi_env env, napi_callback_info info);
napi_value js_agent_new(napi_env env, napi_callback_info info);
napi_value js_agent_describe(napi_env env, napi_callback_info info);
napi_value js_agent_flow_type(napi_env env, napi_callback_info info);
napi_value js_mcp_new(napi_env env, napi_callback_info info);
napi_value js_mcp_redacted(napi_env env, napi_callback_info info);
napi_value js_mcp_list_tools(napi_env env, napi_callback_info info);

#endif
