/* The libdexagents functions the addon calls, opened at run time with
 * dlopen (api.c) rather than linked: the addon then builds without the
 * library, carries no RUNPATH, honours $DEXAGENTS_LIBRARY like the Python
 * package, and a missing library is a JavaScript error that says how to fix
 * it instead of a loader failure at require(). */
#ifndef DEXAGENTS_NODE_API_H
#define DEXAGENTS_NODE_API_H

#include <stddef.h>

#include <dexagents/dexagents.h>

#define DEXA_API_FUNCS(X)                                                              \
  X(dexa_free) X(dexa_version) X(dexa_version_num) X(dexa_strerror) X(dexa_error_name)   \
  X(dexa_build_info) X(dexa_build_has)                                                  \
  X(dexa_error_class) X(dexa_model_demo_new) X(dexa_model_client_new) X(dexa_model_free) \
  X(dexa_harness_claude_code_new)                                                       \
  X(dexa_model_name) X(dexa_tool_source_free) X(dexa_tool_source_name)                   \
  X(dexa_tool_source_list_json) X(dexa_tool_invocation_name)                             \
  X(dexa_tool_invocation_call_id) X(dexa_tool_invocation_session_id)                     \
  X(dexa_tool_invocation_idempotency_key) X(dexa_tool_invocation_arguments)              \
  X(dexa_tool_invocation_attempt) X(dexa_tool_output_set_text)                           \
  X(dexa_tool_output_set_content) X(dexa_function_tools_new) X(dexa_function_tools_add)  \
  X(dexa_mcp_config_load) X(dexa_mcp_config_redacted_json) X(dexa_mcp_config_free)       \
  X(dexa_mcp_tool_sources_new) X(dexa_mcp_tool_sources_free) X(dexa_agent_def_init)      \
  X(dexa_agent_new) X(dexa_agent_free) X(dexa_agent_flow_type) X(dexa_flow_describe)     \
  X(dexa_call_init) X(dexa_dispatch) X(dexa_result_free) X(dexa_result_status)           \
  X(dexa_result_errmsg) X(dexa_result_retry_after_ms) X(dexa_result_write_count)         \
  X(dexa_result_write_at) X(dexa_result_publish_count) X(dexa_result_publish_at)         \
  X(dexa_result_event_count) X(dexa_result_event_at) X(dexa_result_wait)                 \
  X(dexa_result_decision) X(dexa_result_response) X(dexa_wait_state_init)               \
  X(dexa_wait_evaluate) X(dexa_runtime_options_init)                                     \
  X(dexa_runtime_new) X(dexa_runtime_free) X(dexa_runtime_errmsg)                        \
  X(dexa_runtime_start_session) X(dexa_runtime_call) X(dexa_runtime_list_sessions)       \
  X(dexa_runtime_read_events) X(dexa_runtime_poll) X(dexa_task_call)                     \
  X(dexa_runtime_complete) X(dexa_task_abandon) X(dexa_runtime_run_ready)                \
  X(dexa_runtime_start) X(dexa_runtime_stop) X(dexa_runtime_wait_idle)                  \
  X(dexa_model_vtable_init) X(dexa_model_new) X(dexa_harness_vtable_init)                \
  X(dexa_harness_new) X(dexa_model_request_json) X(dexa_model_request_emit_delta)        \
  X(dexa_model_request_cancelled) X(dexa_model_request_harness_state)                    \
  X(dexa_model_request_harness_entry_count) X(dexa_model_request_harness_entry_at)       \
  X(dexa_model_request_first_new_message) X(dexa_model_request_call_tool)                \
  X(dexa_model_reply_add_item) X(dexa_model_reply_add_text)                              \
  X(dexa_model_reply_add_reasoning) X(dexa_model_reply_add_tool_call)                    \
  X(dexa_model_reply_set_tool_policy) X(dexa_model_usage_init)                           \
  X(dexa_model_reply_set_token_usage) X(dexa_model_reply_set_finish_reason)              \
  X(dexa_model_reply_set_harness_state) X(dexa_model_reply_add_harness_entry)            \
  X(dexa_model_reply_add_framework_tool_call) X(dexa_model_reply_set_error)

/* One typed pointer per function, named like it. */
typedef struct dexa_api {
#define DEXA_API_FIELD(f) __typeof__(f) *f;
  DEXA_API_FUNCS(DEXA_API_FIELD)
#undef DEXA_API_FIELD
} dexa_api;

/* The loaded library (all NULL before api_load succeeded). Process-wide:
 * written once, under a lock, before any other use; read-only after. */
extern dexa_api lib;

/* Opens the library at path (a file or a bare SONAME for the system loader)
 * and resolves every function. Returns 0, or -1 with a message in err.
 * Once a library is loaded, later calls return 0 at once. */
int api_load(const char *path, char *err, size_t err_size);

/* The path api_load succeeded with ("" before). */
const char *api_loaded_path(void);

#endif
