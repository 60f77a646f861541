"""The C declarations of libdexagents 1.1, written by hand from the public
headers (include/dexagents/*.h) for cffi's ABI mode: no compiler and no header
is needed at install or import time. Only what the bindings use, plus the
plain helpers; every struct here starts with struct_size and is initialised by
its exported dexa_*_init function, so its size comes from this declaration and
the library accepts it as long as it is at least the 1.0 size.
test/python/test_bindings.py checks every struct's layout against the headers."""

CDEF = r"""
typedef struct dexa_agent dexa_agent;
typedef struct dexa_model dexa_model;
typedef struct dexa_tool_source dexa_tool_source;
typedef struct dexa_result dexa_result;
typedef struct dexa_runtime dexa_runtime;
typedef struct dexa_task dexa_task;
typedef struct dexa_tool_list dexa_tool_list;
typedef struct dexa_tool_invocation dexa_tool_invocation;
typedef struct dexa_tool_output dexa_tool_output;
typedef struct dexa_model_request dexa_model_request;
typedef struct dexa_model_reply dexa_model_reply;
typedef struct dexa_mcp_config dexa_mcp_config;

void dexa_free(void *ptr);
const char *dexa_version(void);
uint32_t dexa_version_num(void);
const char *dexa_build_info(void);
int dexa_build_has(const char *feature);
const char *dexa_strerror(int code);
const char *dexa_error_name(int code);
int dexa_error_class(int code);

/* model.h */
typedef struct dexa_model_vtable {
  uint32_t struct_size;
  int (*generate)(void *user_data, const dexa_model_request *request, dexa_model_reply *reply);
  void (*destroy)(void *user_data);
} dexa_model_vtable;
int dexa_model_vtable_init(dexa_model_vtable *vtable, size_t struct_size);
int dexa_model_new(dexa_model **out, const char *name, const dexa_model_vtable *vtable,
                   void *user_data);
int dexa_model_demo_new(dexa_model **out, const char *name);
int dexa_model_client_new(dexa_model **out, const char *name, const char *options_json,
                          size_t options_len, char *errmsg, size_t errmsg_size);
int dexa_harness_claude_code_new(dexa_model **out, const char *name, const char *options_json,
                                 size_t options_len, char *errmsg, size_t errmsg_size);
void dexa_model_free(dexa_model *model);
const char *dexa_model_name(const dexa_model *model);
int dexa_model_request_json(const dexa_model_request *request, const char **json, size_t *len);
int dexa_model_request_emit_delta(const dexa_model_request *request, int kind,
                                  const char *text, size_t len);
int dexa_model_reply_add_item(dexa_model_reply *reply, const char *item_json, size_t len);
int dexa_model_reply_add_text(dexa_model_reply *reply, const char *text, size_t len);
int dexa_model_reply_add_tool_call(dexa_model_reply *reply, const char *call_id,
                                   const char *name, const char *arguments_json,
                                   size_t arguments_len);
int dexa_model_reply_set_usage(dexa_model_reply *reply, int64_t input_tokens,
                               int64_t output_tokens);
int dexa_model_reply_set_error(dexa_model_reply *reply, const char *message,
                               int64_t retry_after_ms);
size_t dexa_model_request_message_count(const dexa_model_request *request);
int dexa_model_request_cancelled(const dexa_model_request *request);
int dexa_model_reply_add_reasoning(dexa_model_reply *reply, const char *text, size_t len);
int dexa_model_reply_set_finish_reason(dexa_model_reply *reply, const char *reason,
                                       const char *provider_reason);
typedef struct dexa_model_usage {
  uint32_t struct_size;
  int64_t input_tokens;
  int64_t output_tokens;
  int64_t cached_input_tokens;
  int64_t cache_write_tokens;
  int64_t reasoning_tokens;
  double cost_usd;
} dexa_model_usage;
int dexa_model_usage_init(dexa_model_usage *usage, size_t struct_size);
int dexa_model_reply_set_token_usage(dexa_model_reply *reply, const dexa_model_usage *usage);

/* harness.h */
typedef struct dexa_harness_vtable {
  uint32_t struct_size;
  uint32_t flags;
  int (*run_segment)(void *user_data, const dexa_model_request *request, dexa_model_reply *reply);
  int (*summarize)(void *user_data, const dexa_model_request *request, dexa_model_reply *reply);
  void (*destroy)(void *user_data);
} dexa_harness_vtable;
int dexa_harness_vtable_init(dexa_harness_vtable *vtable, size_t struct_size);
int dexa_harness_new(dexa_model **out, const char *name, const dexa_harness_vtable *vtable,
                     void *user_data);
int dexa_model_request_harness_state(const dexa_model_request *request, const char **json,
                                     size_t *len);
size_t dexa_model_request_harness_entry_count(const dexa_model_request *request);
int dexa_model_request_harness_entry_at(const dexa_model_request *request, size_t index,
                                        const char **json, size_t *len);
size_t dexa_model_request_first_new_message(const dexa_model_request *request);
int dexa_model_request_call_tool(const dexa_model_request *request, const char *call_id,
                                 const char *name, const char *arguments_json,
                                 size_t arguments_len, char **out, size_t *out_len);
int dexa_model_reply_set_harness_state(dexa_model_reply *reply, const char *json, size_t len);
int dexa_model_reply_add_harness_entry(dexa_model_reply *reply, const char *json, size_t len);
int dexa_model_reply_add_framework_tool_call(dexa_model_reply *reply, const char *json, size_t len);
int dexa_model_reply_set_tool_policy(dexa_model_reply *reply, const char *call_id, int effect,
                                     int approval);

/* tools.h */
typedef struct dexa_tool_source_vtable {
  uint32_t struct_size;
  int (*list_tools)(void *user_data, dexa_tool_list *list);
  int (*call_tool)(void *user_data, const dexa_tool_invocation *invocation, dexa_tool_output *out);
  void (*destroy)(void *user_data);
} dexa_tool_source_vtable;
int dexa_tool_source_vtable_init(dexa_tool_source_vtable *vtable, size_t struct_size);
int dexa_tool_source_new(dexa_tool_source **out, const char *name,
                         const dexa_tool_source_vtable *vtable, void *user_data);
void dexa_tool_source_free(dexa_tool_source *source);
const char *dexa_tool_source_name(const dexa_tool_source *source);
int dexa_tool_source_list_json(char **out, size_t *out_len, dexa_tool_source *source);
int dexa_tool_list_add(dexa_tool_list *list, const char *name, const char *description,
                       const char *parameters_json, size_t parameters_len, int effect,
                       int approval);
const char *dexa_tool_invocation_name(const dexa_tool_invocation *invocation);
const char *dexa_tool_invocation_call_id(const dexa_tool_invocation *invocation);
const char *dexa_tool_invocation_session_id(const dexa_tool_invocation *invocation);
const char *dexa_tool_invocation_idempotency_key(const dexa_tool_invocation *invocation);
int dexa_tool_invocation_arguments(const dexa_tool_invocation *invocation,
                                   const char **json, size_t *len);
int32_t dexa_tool_invocation_attempt(const dexa_tool_invocation *invocation);
int dexa_tool_output_set_text(dexa_tool_output *out, const char *text, size_t len, int is_error);
int dexa_tool_output_set_content(dexa_tool_output *out, const char *json, size_t len);
typedef int (*dexa_tool_fn)(void *user_data, const dexa_tool_invocation *invocation,
                            dexa_tool_output *out);
int dexa_function_tools_new(dexa_tool_source **out, const char *name);
int dexa_function_tools_add(dexa_tool_source *source, const char *name,
                            const char *description, const char *parameters_json,
                            int effect, int approval, dexa_tool_fn fn, void *user_data);

/* mcp.h */
int dexa_mcp_config_load(dexa_mcp_config **out, const char *path, const char *json,
                         size_t json_len, char *errmsg, size_t errmsg_size);
int dexa_mcp_config_redacted_json(const dexa_mcp_config *config, char **out, size_t *out_len);
void dexa_mcp_config_free(dexa_mcp_config *config);
int dexa_mcp_tool_sources_new(dexa_tool_source ***out, size_t *count,
                              const dexa_mcp_config *config);
void dexa_mcp_tool_sources_free(dexa_tool_source **sources, size_t count);

/* agent.h */
typedef struct dexa_agent_def {
  uint32_t struct_size;
  int32_t reserved0;
  const char *flow_type;
  const char *instructions;
  dexa_model *const *models;
  size_t model_count;
  dexa_tool_source *const *tool_sources;
  size_t tool_source_count;
  uint32_t builtin_tools;
  int32_t plan_mode_enabled;
  int64_t context_window_tokens;
  int32_t compaction_threshold_pct;
  int32_t compaction_keep_pct;
  int64_t retention_messages;
  int32_t keep_full_transcript;
  int32_t run_model_max_attempts;
  int64_t run_model_timeout_ms;
  int32_t tool_max_attempts;
  int32_t reserved1;
  int64_t tool_timeout_ms;
  int64_t max_state_bytes;
  int64_t max_message_bytes;
} dexa_agent_def;
int dexa_agent_def_init(dexa_agent_def *def, size_t struct_size);
int dexa_agent_new(dexa_agent **out, const dexa_agent_def *def, char *errmsg, size_t errmsg_size);
void dexa_agent_free(dexa_agent *agent);
const char *dexa_agent_flow_type(const dexa_agent *agent);
int dexa_flow_describe(char **out, size_t *out_len, const dexa_agent *agent);

/* flow.h */
typedef int (*dexa_attr_get_fn)(void *user_data, const char *key, size_t key_len,
                                const char **value, size_t *value_len);
typedef int (*dexa_attr_visit_fn)(void *visit_ctx, const char *key, size_t key_len,
                                  const char *value, size_t value_len);
typedef int (*dexa_attr_scan_fn)(void *user_data, const char *prefix, size_t prefix_len,
                                 dexa_attr_visit_fn visit, void *visit_ctx);
typedef void (*dexa_event_sink_fn)(void *user_data, const char *event_json, size_t len);
typedef struct dexa_call {
  uint32_t struct_size;
  int32_t kind;
  const char *session_id;
  const char *name;
  const char *step_execution_id;
  int32_t attempt;
  int32_t reserved0;
  const char *input;
  size_t input_len;
  const char *conditions;
  size_t conditions_len;
  const char *recovery_error;
  size_t recovery_error_len;
  int64_t now_ms;
  void *attr_user_data;
  dexa_attr_get_fn attr_get;
  dexa_attr_scan_fn attr_scan;
  void *sink_user_data;
  dexa_event_sink_fn event_sink;
  int (*cancelled)(void *cancel_user_data);
  void *cancel_user_data;
} dexa_call;
int dexa_call_init(dexa_call *call, size_t struct_size);
int dexa_dispatch(dexa_result **out, const dexa_agent *agent, const dexa_call *call);
void dexa_result_free(dexa_result *result);
int dexa_result_status(const dexa_result *result);
const char *dexa_result_errmsg(const dexa_result *result);
int64_t dexa_result_retry_after_ms(const dexa_result *result);
size_t dexa_result_write_count(const dexa_result *result);
int dexa_result_write_at(const dexa_result *result, size_t index, const char **key,
                         size_t *key_len, const char **value, size_t *value_len);
size_t dexa_result_publish_count(const dexa_result *result);
int dexa_result_publish_at(const dexa_result *result, size_t index, const char **channel,
                           size_t *channel_len, const char **value, size_t *value_len);
size_t dexa_result_event_count(const dexa_result *result);
int dexa_result_event_at(const dexa_result *result, size_t index, const char **json, size_t *len);
int dexa_result_wait(const dexa_result *result, const char **json, size_t *len);
int dexa_result_decision(const dexa_result *result, const char **json, size_t *len);
int dexa_result_response(const dexa_result *result, const char **json, size_t *len);
int dexa_result_json(char **out, size_t *out_len, const dexa_result *result);
typedef int (*dexa_channel_count_fn)(void *user_data, const char *channel, size_t channel_len,
                                     int64_t *count);
typedef struct dexa_wait_state {
  uint32_t struct_size;
  int32_t reserved0;
  int64_t now_ms;
  int64_t started_ms;
  const char *fired;
  size_t fired_len;
  const char *channel_counts;
  size_t channel_counts_len;
  void *channel_user_data;
  dexa_channel_count_fn channel_count;
} dexa_wait_state;
int dexa_wait_state_init(dexa_wait_state *state, size_t struct_size);
int dexa_wait_evaluate(char **out, size_t *out_len, const char *wait_json, size_t wait_len,
                       const dexa_wait_state *state);

/* runtime.h */
typedef int64_t (*dexa_clock_fn)(void *user_data);
typedef void (*dexa_log_fn)(void *user_data, int32_t level, const char *message);
typedef struct dexa_runtime_options {
  uint32_t struct_size;
  int32_t reserved0;
  const char *store;
  const char *sqlite_synchronous;
  int64_t lease_ms;
  const char *worker_id;
  dexa_clock_fn clock;
  void *clock_user_data;
  int64_t events_retained;
  int64_t session_cache_bytes;
  dexa_log_fn log;
  void *log_user_data;
  void *on_span_start; /* dexa_span_fn: not used from Python */
  void *on_span_end;
  void *trace_user_data;
  int32_t otlp_exporter_off;
  int32_t reserved1;
  int64_t session_idle_timeout_ms;
  int64_t session_retention_ms;
  int64_t sweep_interval_ms;
} dexa_runtime_options;
int dexa_runtime_options_init(dexa_runtime_options *options, size_t struct_size);
int dexa_runtime_new(dexa_runtime **out, const dexa_agent *agent,
                     const dexa_runtime_options *options, char *errmsg, size_t errmsg_size);
void dexa_runtime_free(dexa_runtime *runtime);
const char *dexa_runtime_errmsg(const dexa_runtime *runtime);
int dexa_runtime_start_session(dexa_runtime *runtime, const char *session_id,
                               const char *settings_json, size_t settings_len,
                               char **out, size_t *out_len);
int dexa_runtime_call(dexa_runtime *runtime, const char *session_id, const char *rpc,
                      const char *input_json, size_t input_len, char **out, size_t *out_len);
int dexa_runtime_list_sessions(dexa_runtime *runtime, const char *after, int32_t limit,
                               char **out, size_t *out_len);
int dexa_runtime_read_events(dexa_runtime *runtime, const char *session_id,
                             const char *resume_token, int32_t max_events,
                             int64_t timeout_ms, char **out, size_t *out_len);
int dexa_runtime_poll(dexa_runtime *runtime, dexa_task **out, int64_t timeout_ms);
const dexa_call *dexa_task_call(const dexa_task *task);
int dexa_runtime_complete(dexa_runtime *runtime, dexa_task *task, const dexa_result *result);
void dexa_task_abandon(dexa_runtime *runtime, dexa_task *task);
int dexa_runtime_run_ready(dexa_runtime *runtime, int32_t *ran);
int dexa_runtime_start(dexa_runtime *runtime, int32_t threads);
int dexa_runtime_stop(dexa_runtime *runtime);
int dexa_runtime_wait_idle(dexa_runtime *runtime, const char *session_id, int64_t timeout_ms);

/* http.h: the helpers that need no libmicrohttpd */
int dexa_http_token_sign(const void *key, size_t key_len, const char *session_id,
                         char *out, size_t out_size);
int dexa_http_token_verify(const void *key, size_t key_len, const char *session_id,
                           const char *token);
"""
