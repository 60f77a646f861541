/* Internals shared by the agent session flow: the agent, the context of one
 * dispatch, attribute access with read-your-writes, and state records. The
 * core does no I/O: state comes through the host's attribute reader, time
 * through the call, models and tools through their vtables. */
#ifndef DEXA_CORE_CORE_H
#define DEXA_CORE_CORE_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "core/names.h"
#include "dexagents/agent.h"
#include "dexagents/errors.h"
#include "dexagents/flow.h"
#include "flow/call.h"
#include "flow/result.h"
#include "iface/model.h"
#include "iface/tool_source.h"
#include "util/buf.h"

struct dexa_agent {
  char *flow_type;
  char *instructions;
  dexa_model **models;
  size_t model_count;
  dexa_tool_source **sources;
  size_t source_count;
  dexa_agent_def def; /* numbers only; pointers above are the owned copies */
};

/* One dispatch: what the Step or RPC reads and where it writes. */
typedef struct dexa__ctx {
  const dexa_agent *agent;
  const dexa_call *call;
  dexa_result *result;
  cJSON *input; /* parsed call input; never NULL (null input is a JSON null) */
} dexa__ctx;

/* ---- attributes (attrs.c) ---- */

/* DEXA_OK with the value, DEXA_E_NOT_FOUND, or DEXA_E_CALLBACK_FAILED. Sees
 * the writes staged in this result first. The value is borrowed until the
 * next attribute call. */
int dexa__attr_get(dexa__ctx *c, const char *key, const char **val, size_t *len);
/* Parses an attribute; *out NULL when absent. DEXA_E_CORRUPT when stored
 * text is not JSON. */
int dexa__attr_get_json(dexa__ctx *c, const char *key, cJSON **out);
int dexa__attr_put_json(dexa__ctx *c, const char *key, const cJSON *value);
int dexa__attr_put_raw(dexa__ctx *c, const char *key, const char *json, size_t len);
int dexa__attr_delete(dexa__ctx *c, const char *key);
/* Scans the host's attributes by prefix (staged writes are not merged). */
int dexa__attr_scan(dexa__ctx *c, const char *prefix, dexa_attr_visit_fn visit, void *ctx);

/* ---- state records (state.c) ---- */

typedef struct dexa__transcript {
  int64_t next_seq;  /* sequence of the next message */
  int64_t first_seq; /* oldest message still in AgentMessages */
  int64_t turn;      /* number of the newest turn */
  int64_t bytes;     /* bytes of retained messages (the active state) */
} dexa__transcript;

int dexa__transcript_load(dexa__ctx *c, dexa__transcript *t);
int dexa__transcript_store(dexa__ctx *c, const dexa__transcript *t);
/* Writes "AgentMessages/<20-digit seq>" into key (at least 40 bytes). */
void dexa__message_key(char *key, size_t n, int64_t seq);
/* The number after prefix in a key the host passed with its length (never
 * read past key_len): 0 and *out, or -1 for a key of another shape. */
int dexa__key_number(const char *key, size_t key_len, const char *prefix, int64_t *out);
/* Stores message text (JSON) at seq and counts its bytes. */
int dexa__message_put(dexa__ctx *c, dexa__transcript *t, int64_t seq, const char *json,
                      size_t len);

/* The session's model client: the settings' name if allowed, else the default. */
int dexa__session_model(dexa__ctx *c, const dexa_model **out);

/* AgentTurn: the newest turn, its status (idle, running, failed,
 * cancelled, steered) and mode (chat, planning, executing). */
typedef struct dexa__turn {
  int64_t turn;
  char status[16];
  char mode[16];
} dexa__turn;

int dexa__turn_load(dexa__ctx *c, dexa__turn *t);
int dexa__turn_set(dexa__ctx *c, int64_t turn, const char *status, const char *mode,
                   const char *error_json);
/* 1 when turn is the running turn (its mode copied to t when t is not NULL). */
int dexa__turn_is_running(dexa__ctx *c, int64_t turn, dexa__turn *t, int *rc);

/* DEXA_OK when the session exists, else fails the result with NOT_FOUND. */
int dexa__require_session(dexa__ctx *c);
/* DEXA_OK while the session has not ended (AgentSessionEnd absent), else
 * fails the result with DEXA_E_SESSION_ENDED. */
int dexa__require_not_ended(dexa__ctx *c);

/* dexa__call_cancelled (flow/call.h): 1 when the host says the running
 * Step's turn was stopped (dexa_call.cancelled, appended in 1.1). */

/* The bytes of a harness's own state (AgentHarness), 0 without one: they
 * count as active state against max_state_bytes. */
int dexa__harness_state_bytes(dexa__ctx *c, int64_t *bytes);

/* AgentTurnControl: a steer or stop waiting for the turn's next safe Step
 * boundary. Returns 1 (action copied, 16 bytes) when turn has one. */
int dexa__control_pending(dexa__ctx *c, int64_t turn, char *action, int *rc);

/* ---- events (events.c) ---- */

/* Begins an event object in b: {"type":"<type>","at":<now>. Close it with
 * dexa__event_end, which adds it to the result. */
void dexa__event_begin(dexa__ctx *c, dexa__buf *b, const char *type);
int dexa__event_end(dexa__ctx *c, dexa__buf *b);
/* A message_appended event with a compact view of the stored message m. */
int dexa__event_message(dexa__ctx *c, const char *m, size_t n);
/* Sends a live event to the call's sink (best effort). */
void dexa__event_live(dexa__ctx *c, const char *json, size_t len);

/* ---- decisions (decision.c) ---- */

/* A decision under construction: {"next":[...]} */
typedef struct dexa__decision {
  dexa__buf b;
  size_t next_count;
} dexa__decision;

void dexa__decision_init(dexa__decision *d);
/* Appends a next Step; input_json is raw JSON ("{}" when NULL). */
void dexa__decision_next(dexa__decision *d, const char *step, const char *input_json,
                         size_t input_len);
/* Finishes the decision into the result and frees d. */
int dexa__decision_commit(dexa__ctx *c, dexa__decision *d);
/* A decision with one next Step. */
int dexa__decide_next(dexa__ctx *c, const char *step, const char *input_json);

/* ---- input helpers (input.c) ---- */

/* The integer value of a JSON number within +-2^53 (exactly representable),
 * else dflt: out-of-range doubles are never cast. */
int64_t dexa__json_int(const cJSON *v, int64_t dflt);

/* Integer member of the input; DEXA_E_INVALID_JSON when absent, not a
 * number or out of range. */
int dexa__input_i64(dexa__ctx *c, const char *name, int64_t *out);
/* Parses JSON text. NULL when it fails, with *rc DEXA_E_NOMEM when the
 * text is valid JSON (cJSON says NULL for no memory too), else bad
 * (DEXA_E_INVALID_JSON for a caller's input, DEXA_E_CORRUPT for state). */
cJSON *dexa__json_parse(const char *s, size_t n, int bad, int *rc);
/* Sets obj's member key to item (replacing it in place, or adding it),
 * which obj then owns. DEXA_E_NOMEM when item is NULL (its creation
 * failed) or the member could not be set. */
int dexa__json_set(cJSON *obj, const char *key, cJSON *item);
/* String member of the input, or NULL. */
const char *dexa__input_str(dexa__ctx *c, const char *name);
/* Python's str.isspace() definition of a blank message. */
int dexa__is_blank(const char *s, size_t n);

/* ---- Steps and RPCs, one per file ---- */

int dexa__step_start_agent_session(dexa__ctx *c);
int dexa__step_await_user_message(dexa__ctx *c);
int dexa__step_run_model(dexa__ctx *c);
int dexa__step_call_tool(dexa__ctx *c);
int dexa__step_call_single_attempt_tool(dexa__ctx *c);
int dexa__step_record_tool_outcome(dexa__ctx *c);
int dexa__step_resume_turn(dexa__ctx *c);
int dexa__step_record_turn_failure(dexa__ctx *c);
int dexa__step_compact_context(dexa__ctx *c);
int dexa__step_await_tool_approval(dexa__ctx *c);
int dexa__step_await_question_answer(dexa__ctx *c);
int dexa__step_await_timer(dexa__ctx *c);
int dexa__step_apply_turn_control(dexa__ctx *c);
int dexa__rpc_send_message(dexa__ctx *c);
int dexa__rpc_snapshot(dexa__ctx *c);
int dexa__rpc_delete_message(dexa__ctx *c);
int dexa__rpc_steer(dexa__ctx *c);
int dexa__rpc_cancel_turn(dexa__ctx *c);
int dexa__rpc_resolve_approval(dexa__ctx *c);
int dexa__rpc_answer_question(dexa__ctx *c);
int dexa__rpc_execute_plan(dexa__ctx *c);
int dexa__rpc_list_agent_messages(dexa__ctx *c);
int dexa__rpc_end_session(dexa__ctx *c);

/* Tool results (tool_results.c): stores the result message of a call at its
 * reserved seq, publishes it to the turn's join channel and emits events. */
typedef struct dexa__tool_result {
  const char *call_id;
  const char *name;
  const char *status; /* ok, error, unknown_outcome, rejected, cancelled */
  const char *output;
  size_t output_len;
  const char *content; /* JSON or NULL */
  size_t content_len;
  int unjoined; /* 1: no ResumeTurn waits for it (the reply's turn was steered or stopped) */
} dexa__tool_result;
int dexa__tool_result_record(dexa__ctx *c, int64_t turn, int64_t round, int64_t seq,
                             const dexa__tool_result *r);
void dexa__tool_results_channel(char *out, size_t n, int64_t turn, int64_t round);

/* Routes a reply's tool calls (tool_routing.c): reserves each result's seq
 * in t, and adds one Step per call to d plus the ResumeTurn join; a call of
 * an unknown tool gets an error result at once. With cancel every call gets
 * a cancellation result and nothing is scheduled (the turn was steered or
 * stopped). */
int dexa__route_tool_calls(dexa__ctx *c, const dexa_tool_list *tools, const cJSON *calls,
                           const dexa__turn *turn, int64_t round, dexa__transcript *t,
                           dexa__decision *d, int cancel);

/* The agent's tools for a model call (tool_catalog.c): built-in tools first,
 * then each source's; a source that fails to list is left out. A planning
 * turn gets write_todos alone. Built-in tools carry DEXA__BUILTIN_SOURCE. */
#define DEXA__BUILTIN_SOURCE SIZE_MAX
int dexa__tool_catalog(dexa__ctx *c, dexa_tool_list *list, int planning);

#endif
