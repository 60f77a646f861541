/* libdexagents: the flow model at the ABI.
 *
 * A session is one Flow. A Flow has Steps; a Step has an optional WaitFor
 * (returns the conditions to wait for) and an Execute (returns a decision:
 * next Steps or completion). Steps and RPCs read Attributes through host
 * callbacks and return attribute writes, channel publishes and durable
 * events. dexa_dispatch runs one Step method or RPC and returns all of it in
 * a dexa_result; nothing is applied by the library: the host applies the
 * whole result atomically (the embedded runtime is one such host).
 *
 * JSON documents that cross this interface (see dexagents-flow(7)):
 *
 * Wait (WaitFor result), absent when Execute may run at once:
 *   {"mode":"any"|"all","conditions":[
 *      {"id":"answer","channel":"ToolDecisions/c1","min":1,"max":1},
 *      {"id":"timer","timer_ms":60000}]}
 *   A channel condition is ready when the channel holds at least "min"
 *   messages and consumes up to "max" of them (oldest first); "max" absent
 *   consumes every message queued. With "any", the first ready condition in
 *   the order timers first, then channels, wins; only it consumes.
 *
 * Condition results (dexa_call.conditions for Execute):
 *   {"fired":["timer"],"channels":{"answer":[<message>, ...]}}
 *
 * Decision (Execute result; also RPCs that move the flow):
 *   {"next":[{"step":"RunModel","input":{...},"options":{...}}],
 *    "complete":false,"cancel":["AwaitTimer"]}
 *   "options" overrides the Step's defaults from dexa_flow_describe for this
 *   execution only. "cancel" cancels every queued or waiting execution of
 *   those Step types (a running one finishes; its result is then dropped).
 *
 * Step options (in the flow description and in decisions):
 *   {"max_attempts":3,"initial_backoff_ms":1000,"backoff_coefficient":2.0,
 *    "max_backoff_ms":60000,"timeout_ms":900000,"recovery":"RecordTurnFailure",
 *    "has_wait_for":false,"locked":false}
 *   After the last failed (or lost) attempt the recovery Step runs with the
 *   same input and the error in dexa_call.recovery_error; without a recovery
 *   Step the flow fails. "has_wait_for" false: the host skips WaitFor and
 *   runs Execute at once. "locked" true: the method reads and writes under
 *   the session's lock, like an RPC (its read-modify-write is atomic against
 *   RPCs); such methods do no I/O and return quickly.
 *
 * Flow description (dexa_flow_describe):
 *   {"flow_type":"AgentSession","start_step":"StartAgentSession",
 *    "steps":[{"name":"RunModel","options":{..every option..}}],
 *    "rpcs":[{"name":"send_message","read_only":false,"interrupts":false}],
 *    "attributes":[..],"channels":[..],"streams":["AgentEvents"]}
 *   "attributes" and "channels" name everything a Step or RPC writes or
 *   publishes; a name ending in '/' is a map ("PendingToolCalls/" holds
 *   "PendingToolCalls/<call id>").
 *   The start Step's input is {"settings":{..}} (settings as given to
 *   start_session, or {}). An RPC with "interrupts" true (cancel_turn)
 *   asks, once it has committed, the session's Step methods running at that
 *   moment to end early: the host then makes their dexa_call.cancelled
 *   return non-zero. What the flow records does not change: a started
 *   call's result is still recorded.
 *
 * Attribute keys are UTF-8 text; a map instance is "Name/instance". Values
 * are JSON text; a write with a NULL value deletes the key. */
#ifndef DEXAGENTS_FLOW_H
#define DEXAGENTS_FLOW_H

#include "common.h"

DEXA_BEGIN_DECLS

typedef enum dexa_call_kind {
  DEXA_CALL_WAIT_FOR = 1,
  DEXA_CALL_EXECUTE = 2,
  DEXA_CALL_RPC = 3
} dexa_call_kind;

/* Reads one attribute. Sets *value and *value_len to the JSON text and returns
 * DEXA_OK, or returns DEXA_E_NOT_FOUND when the key is absent. The text is
 * borrowed until the next reader callback of the same call. Any other return
 * aborts the dispatch with DEXA_E_CALLBACK_FAILED. */
typedef int (*dexa_attr_get_fn)(void *user_data, const char *key, size_t key_len,
                                const char **value, size_t *value_len);

/* Called once per attribute by a scan, in ascending key order (bytewise).
 * Return 0 to go on, 1 to stop the scan early; a negative value aborts. */
typedef int (*dexa_attr_visit_fn)(void *visit_ctx, const char *key, size_t key_len,
                                  const char *value, size_t value_len);

/* Visits every attribute whose key starts with prefix, in ascending key
 * order, then returns DEXA_OK (also when visit stopped early). A negative
 * return of visit is returned as is. */
typedef int (*dexa_attr_scan_fn)(void *user_data, const char *prefix, size_t prefix_len,
                                 dexa_attr_visit_fn visit, void *visit_ctx);

/* Receives a live (not durable, best effort) event as JSON text, for example
 * a text delta of a model call in progress. Called on the dispatching thread,
 * synchronously, zero or more times during dexa_dispatch. */
typedef void (*dexa_event_sink_fn)(void *user_data, const char *event_json, size_t len);

/* One Step method or RPC invocation. Initialize with dexa_call_init, then
 * set the fields. All pointers are borrowed for the duration of
 * dexa_dispatch; strings are NUL-terminated unless a length is given. */
typedef struct dexa_call {
  uint32_t struct_size;
  int32_t kind;                 /* dexa_call_kind */
  const char *session_id;       /* the Flow id */
  const char *name;             /* Step type or RPC name */
  const char *step_execution_id; /* "RunModel-7": unique in the session; NULL for RPCs */
  int32_t attempt;              /* 1-based attempt of this method */
  int32_t reserved0;
  const char *input;            /* JSON; NULL means null */
  size_t input_len;
  const char *conditions;       /* Execute: condition results JSON, or NULL */
  size_t conditions_len;
  const char *recovery_error;   /* recovery Step: {"code":..,"message":..}, or NULL */
  size_t recovery_error_len;
  int64_t now_ms;               /* wall clock, ms since the Unix epoch */
  void *attr_user_data;
  dexa_attr_get_fn attr_get;    /* required */
  dexa_attr_scan_fn attr_scan;  /* required */
  void *sink_user_data;
  dexa_event_sink_fn event_sink; /* optional */
  /* Appended in 1.1 (a struct_size without them reads as NULL): returns
   * nonzero once the turn of a running Step was stopped (an RPC the flow
   * description marks "interrupts", cancel_turn, committed while it ran),
   * so a long model call, harness segment or tool call may end early
   * (dexa_model_request_cancelled, dexa_tool_invocation_cancelled); what it
   * then returns is still recorded. Optional (NULL: never); cheap; may be
   * called on the dispatching thread any number of times. */
  int (*cancelled)(void *cancel_user_data);
  void *cancel_user_data;
} dexa_call;

/* Zeroes call and sets struct_size. size must be at least the 1.0 size
 * (the structure up to event_sink); members a smaller size leaves out are
 * treated as zero.
 * Returns DEXA_OK or DEXA_E_INVALID_ARG / DEXA_E_STRUCT_SIZE. */
DEXA_EXTERN int dexa_call_init(dexa_call *call, size_t struct_size);

/* Runs one Step method or RPC of the agent's session flow.
 *
 * On return *out holds a new result (also on most errors, so that
 * dexa_result_errmsg can say what went wrong); free it with
 * dexa_result_free. Returns DEXA_OK, or the result's status:
 * DEXA_E_INVALID_ARG, DEXA_E_STRUCT_SIZE, DEXA_E_INVALID_JSON,
 * DEXA_E_UNKNOWN_STEP, DEXA_E_UNKNOWN_RPC, DEXA_E_NOT_FOUND,
 * DEXA_E_EMPTY_MESSAGE, DEXA_E_BAD_STATE, DEXA_E_TOO_LARGE,
 * DEXA_E_STATE_LIMIT, DEXA_E_CALLBACK_FAILED, DEXA_E_NOMEM for bad calls;
 * a Step whose work failed returns its error (DEXA_E_TRANSIENT, DEXA_E_MODEL,
 * ...): the host retries it per the Step's options. A failed result has no
 * writes, publishes or decision.
 *
 * Thread-safe: many threads may dispatch on one agent at once; the library
 * keeps no per-session state between calls. Callbacks run on the calling
 * thread, inside this call. */
DEXA_EXTERN int dexa_dispatch(dexa_result **out, const dexa_agent *agent, const dexa_call *call);

/* Writes to *out a new NUL-terminated JSON description of the agent's flow:
 * flow type, start Step, every Step type with its default options, the
 * attributes, channels, streams and RPCs. Free it with dexa_free. */
DEXA_EXTERN int dexa_flow_describe(char **out, size_t *out_len, const dexa_agent *agent);

/* Releases a result and everything it holds. NULL is a no-op. */
DEXA_EXTERN void dexa_result_free(dexa_result *result);

/* DEXA_OK, or the error the dispatch returned. */
DEXA_EXTERN int dexa_result_status(const dexa_result *result);

/* A message saying what went wrong ("" when status is DEXA_OK). Borrowed:
 * valid until the result is freed. */
DEXA_EXTERN const char *dexa_result_errmsg(const dexa_result *result);

/* For a failed Step: how long the host should wait before the next attempt
 * (for example a provider's Retry-After), or 0 to use the Step's backoff. */
DEXA_EXTERN int64_t dexa_result_retry_after_ms(const dexa_result *result);

/* Attribute writes, in the order to apply them. *value is NULL for a
 * delete. Pointers are borrowed until the result is freed. Returns DEXA_OK
 * or DEXA_E_INVALID_ARG for an index out of range. */
DEXA_EXTERN size_t dexa_result_write_count(const dexa_result *result);
DEXA_EXTERN int dexa_result_write_at(const dexa_result *result, size_t index,
                                     const char **key, size_t *key_len,
                                     const char **value, size_t *value_len);

/* Channel publishes, in order. */
DEXA_EXTERN size_t dexa_result_publish_count(const dexa_result *result);
DEXA_EXTERN int dexa_result_publish_at(const dexa_result *result, size_t index,
                                       const char **channel, size_t *channel_len,
                                       const char **value, size_t *value_len);

/* Durable events to append to the session's AgentEvents stream, in order
 * (see dexagents-events(7)). */
DEXA_EXTERN size_t dexa_result_event_count(const dexa_result *result);
DEXA_EXTERN int dexa_result_event_at(const dexa_result *result, size_t index,
                                     const char **json, size_t *len);

/* The wait (WaitFor), the decision (Execute, RPC) and the response (RPC) as
 * JSON. Each sets *json to NULL and *len to 0 when the result has none.
 * Borrowed until the result is freed. */
DEXA_EXTERN int dexa_result_wait(const dexa_result *result, const char **json, size_t *len);
DEXA_EXTERN int dexa_result_decision(const dexa_result *result, const char **json, size_t *len);
DEXA_EXTERN int dexa_result_response(const dexa_result *result, const char **json, size_t *len);

/* The whole result as one JSON document, for hosts that prefer one parse:
 * {"status":0,"error":"","retry_after_ms":0,"writes":[{"key":..,"value":..}],
 *  "publishes":[{"channel":..,"value":..}],"events":[..],"wait":..,
 *  "decision":..,"response":..}. Free with dexa_free. */
DEXA_EXTERN int dexa_result_json(char **out, size_t *out_len, const dexa_result *result);

/* ---- 1.1: the host's wait helper ------------------------------------------
 * A host that drives dexa_dispatch itself stores each WaitFor's wait and
 * must tell when it is satisfied and what Execute then consumes.
 * dexa_wait_evaluate does that from the host's state, so no host
 * re-implements the rules above (see dexa_wait_evaluate(3)). */

/* Sets *count to the number of messages queued on channel and returns
 * DEXA_OK; any other return fails the evaluation (DEXA_E_CALLBACK_FAILED). */
typedef int (*dexa_channel_count_fn)(void *user_data, const char *channel, size_t channel_len,
                                     int64_t *count);

/* The host's state for one waiting Step. Initialize with
 * dexa_wait_state_init, then set the fields. */
typedef struct dexa_wait_state {
  uint32_t struct_size;
  int32_t reserved0;
  int64_t now_ms;              /* the host's clock, ms since the Unix epoch */
  int64_t started_ms;          /* when the wait was stored: timer_ms counts from it */
  const char *fired;           /* JSON array of the timer ids the host's own timers
                                  fired, or NULL: then timers fire by now_ms */
  size_t fired_len;
  const char *channel_counts;  /* JSON object {"<channel>":<queued>,...} (absent: 0), */
  size_t channel_counts_len;   /*   used when channel_count is NULL */
  void *channel_user_data;
  dexa_channel_count_fn channel_count; /* optional; preferred over channel_counts */
} dexa_wait_state;

/* Zeroes state and sets struct_size. Returns DEXA_OK, DEXA_E_INVALID_ARG or
 * DEXA_E_STRUCT_SIZE. */
DEXA_EXTERN int dexa_wait_state_init(dexa_wait_state *state, size_t struct_size);

/* Evaluates wait_json (a WaitFor result; NULL or null: no wait) against
 * state and writes to *out a new JSON document (free with dexa_free):
 *   {"ready":true|false,
 *    "fired":["timer"],
 *    "consume":[{"id":"answer","channel":"ToolDecisions/c1","count":1}],
 *    "channels":["ToolDecisions/c1"],
 *    "timers":[{"id":"timer","timer_ms":60000,"due_ms":1700000060000}],
 *    "next_due_ms":1700000060000|null}
 * When ready, the host takes, in "consume" order, the count oldest messages
 * of each channel, atomically with running Execute with the conditions
 * {"fired":<fired>,"channels":{"<id>":[<messages taken>],...}}. Otherwise it
 * evaluates again when a message arrives on one of "channels" or at
 * "next_due_ms" (the earliest timer not fired). Returns DEXA_OK,
 * DEXA_E_INVALID_ARG, DEXA_E_STRUCT_SIZE, DEXA_E_INVALID_JSON (the wait,
 * fired or channel_counts), DEXA_E_CALLBACK_FAILED or DEXA_E_NOMEM; on error
 * *out is NULL. Thread-safe; no I/O. */
DEXA_EXTERN int dexa_wait_evaluate(char **out, size_t *out_len, const char *wait_json,
                                   size_t wait_len, const dexa_wait_state *state);

DEXA_END_DECLS

#endif
