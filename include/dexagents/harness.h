/* libdexagents: harnesses (agent frameworks that run the model part of a
 * turn).
 *
 * A harness is a kind of model client: dexa_harness_new returns a dexa_model
 * that goes into the agent's allow-list like any model, and sessions pick it
 * by name. Each RunModel Step runs one segment of the framework
 * (run_segment) with the request and reply objects of <dexagents/model.h>;
 * the framework stops before any tool runs and proposes its tool calls on
 * the reply, each of which then runs in its own Step, in parallel; the next
 * segment gets the recorded results as new messages, so no tool runs twice.
 * What a harness adds to a model client:
 *   - its own state (message list, run state, checkpoint) kept in the
 *     session's durable state, so any worker in any process resumes the turn:
 *     read it from the request, set or append to it on the reply;
 *   - the messages that are new for it since its last segment;
 *   - read tools run inside the segment (dexa_model_request_call_tool), each
 *     recorded as a durable event, at least once; tools the framework runs
 *     itself recorded the same way (dexa_model_reply_add_framework_tool_call);
 *   - per-call effect and approval from the framework's own tool metadata.
 * The whole contract, the turn shape and the features by harness are in
 * dexagents-harness(7). */
#ifndef DEXAGENTS_HARNESS_H
#define DEXAGENTS_HARNESS_H

#include "common.h"
#include "model.h"

DEXA_BEGIN_DECLS

/* Flags of a harness, combined with | in dexa_harness_vtable.flags. */
typedef enum dexa_harness_flag {
  /* The framework keeps its own transcript in its state and compacts it
   * itself: Dex compaction is off for it, and each request carries only the
   * messages that are new for it. Its state counts against the session's
   * state limit (max_state_bytes), which ends the session with
   * DEXA_E_STATE_LIMIT when passed. */
  DEXA_HARNESS_OWNS_TRANSCRIPT = 1,
  /* The framework runs read tools inside the segment through
   * dexa_model_request_call_tool (for example a CLI that cannot stop after
   * one model call); without the flag that function refuses. */
  DEXA_HARNESS_RUNS_READS = 2
} dexa_harness_flag;

typedef struct dexa_harness_vtable {
  uint32_t struct_size;
  uint32_t flags; /* dexa_harness_flag values */
  /* Runs one segment of the framework. Read its state and the new messages
   * from request; fill reply like a model client's generate (output items
   * stored verbatim, display text, tool calls, usage), plus its new state.
   * Return DEXA_OK, or an error code: a transient one (DEXA_E_TRANSIENT,
   * DEXA_E_RATE_LIMITED, DEXA_E_TIMEOUT, ...) reruns the whole segment (3
   * attempts by default), any other fails the turn. When the turn was
   * stopped (dexa_model_request_cancelled) any return ends the turn as a
   * Stop. Called on a worker thread; several sessions' segments may run at
   * once. Required. */
  int (*run_segment)(void *user_data, const dexa_model_request *request, dexa_model_reply *reply);
  /* Summarizes older messages for Dex compaction, as a model client's
   * generate does for a request whose "purpose" is "compaction". Optional:
   * without it, or with DEXA_HARNESS_OWNS_TRANSCRIPT, Dex compaction is off
   * for this harness. */
  int (*summarize)(void *user_data, const dexa_model_request *request, dexa_model_reply *reply);
  /* Called once when the last reference is released. Optional. */
  void (*destroy)(void *user_data);
} dexa_harness_vtable;

/* Zeroes vtable and sets its struct_size. Returns DEXA_OK,
 * DEXA_E_INVALID_ARG or DEXA_E_STRUCT_SIZE. */
DEXA_EXTERN int dexa_harness_vtable_init(dexa_harness_vtable *vtable, size_t struct_size);

/* Creates a harness named name (as sessions select it, like a model) from a
 * vtable (copied). *out is a model handle: put it in dexa_agent_def.models
 * and release it with dexa_model_free. Returns DEXA_OK, DEXA_E_INVALID_ARG
 * (NULL or empty name, no run_segment, unknown flag), DEXA_E_STRUCT_SIZE or
 * DEXA_E_NOMEM. */
DEXA_EXTERN int dexa_harness_new(dexa_model **out, const char *name,
                                 const dexa_harness_vtable *vtable, void *user_data);

/* ---- the request of a segment ---- */

/* The harness's state as its last committed segment set it (JSON text,
 * borrowed for the duration of run_segment); *json is NULL and *len 0 when
 * it has none (a new session, or state set by another harness). Returns
 * DEXA_OK or DEXA_E_INVALID_ARG. */
DEXA_EXTERN int dexa_model_request_harness_state(const dexa_model_request *request,
                                                 const char **json, size_t *len);

/* The entries appended to the state since it was last set, oldest first
 * (see dexa_model_reply_add_harness_entry); entry index as JSON text,
 * borrowed for the duration of run_segment. Returns DEXA_OK or
 * DEXA_E_INVALID_ARG (index out of range). */
DEXA_EXTERN size_t dexa_model_request_harness_entry_count(const dexa_model_request *request);
DEXA_EXTERN int dexa_model_request_harness_entry_at(const dexa_model_request *request, size_t index,
                                                    const char **json, size_t *len);

/* The index of the first of the request's messages that is new for the
 * harness: every message from it to dexa_model_request_message_count - 1
 * was stored after its last committed segment (user messages, steered
 * messages, recorded tool results with status ok, error, unknown_outcome,
 * rejected or cancelled). With DEXA_HARNESS_OWNS_TRANSCRIPT the request
 * carries only new messages and this is 0. */
DEXA_EXTERN size_t dexa_model_request_first_new_message(const dexa_model_request *request);

/* Runs one of the agent's read tools now, inside the segment, and writes to
 * *out a new NUL-terminated JSON document (free with dexa_free):
 *   {"status":"ok"|"error"|"cancelled","output":"<text>","content":{..}?,
 *    "code":<error code>?}
 * The call is recorded as a segment_tool_call event when the segment
 * commits; it runs at least once: when the segment reruns (a retry, a
 * worker lost), it runs again. Only a tool whose own effect is read and
 * that needs no approval runs here; any other call must leave the segment
 * as a tool call on the reply. Call it on the thread running run_segment.
 * Returns DEXA_OK (also for a tool-level error: see "status"),
 * DEXA_E_INVALID_ARG (NULL argument, empty call_id, not a harness segment),
 * DEXA_E_INVALID_JSON (arguments not a JSON object), DEXA_E_NOT_FOUND (no
 * such tool is offered to the session), DEXA_E_BAD_STATE (the tool must
 * leave the segment, or the harness lacks DEXA_HARNESS_RUNS_READS) or
 * DEXA_E_NOMEM. */
DEXA_EXTERN int dexa_model_request_call_tool(const dexa_model_request *request, const char *call_id,
                                             const char *name, const char *arguments_json,
                                             size_t arguments_len, char **out, size_t *out_len);

/* ---- the reply of a segment ---- */

/* Replaces the harness's state with json (any JSON value; NULL with len 0
 * drops it) and drops every appended entry. Returns DEXA_OK,
 * DEXA_E_INVALID_ARG (also for the reply of a model client that is not a
 * harness), DEXA_E_INVALID_JSON or DEXA_E_NOMEM. */
DEXA_EXTERN int dexa_model_reply_set_harness_state(dexa_model_reply *reply, const char *json,
                                                   size_t len);

/* Appends one entry (any JSON value) to the harness's state, after a state
 * set in the same reply if any: a transcript that grows by a few messages
 * per segment is written once, not rewritten every segment. Returns
 * DEXA_OK, DEXA_E_INVALID_ARG, DEXA_E_INVALID_JSON or DEXA_E_NOMEM. */
DEXA_EXTERN int dexa_model_reply_add_harness_entry(dexa_model_reply *reply, const char *json,
                                                   size_t len);

/* Records a tool that the framework ran itself inside the segment (a
 * provider's hosted tool, an MCP tool its SDK calls, a sub-agent or
 * workflow run as a tool, a tool whose function runs inside the
 * framework's own loop): json is an object
 *   {"call_id":"<id>","name":"<tool>","arguments":<any JSON>?,
 *    "status":"ok"|"error"|"cancelled"?,"output":"<text>"?}
 * ("status" "ok" by default). It becomes a segment_tool_call event with
 * "ran_by":"framework" when the segment commits (none when it fails): such
 * a tool is at least once, it runs again when the segment reruns, and Dex
 * never runs it in a Step of its own. Returns DEXA_OK, DEXA_E_INVALID_ARG
 * (NULL, not a harness's reply, a missing or empty call_id or name, a bad
 * status or output), DEXA_E_INVALID_JSON or DEXA_E_NOMEM. */
DEXA_EXTERN int dexa_model_reply_add_framework_tool_call(dexa_model_reply *reply,
                                                         const char *json, size_t len);

/* For dexa_model_reply_set_tool_policy: keep the tool's own effect or
 * approval policy. */
typedef enum dexa_tool_policy_default {
  DEXA_TOOL_EFFECT_DEFAULT = 0,
  DEXA_APPROVAL_DEFAULT = -1
} dexa_tool_policy_default;

/* Sets the effect (dexa_tool_effect, or DEXA_TOOL_EFFECT_DEFAULT) and the
 * approval (dexa_tool_approval, or DEXA_APPROVAL_DEFAULT) of the reply's
 * tool call call_id from the framework's own tool metadata, overriding the
 * tool's own policy for this call only. Built-in tools (ask_user,
 * durable_wait, write_todos) keep theirs. Returns DEXA_OK,
 * DEXA_E_INVALID_ARG (a bad effect or approval, or not a harness's reply),
 * DEXA_E_NOT_FOUND (no tool call call_id on the reply yet) or
 * DEXA_E_NOMEM. */
DEXA_EXTERN int dexa_model_reply_set_tool_policy(dexa_model_reply *reply, const char *call_id,
                                                 int effect, int approval);

/* ---- the Claude Code harness ---- */

/* Creates the Claude Code harness named name (for example
 * "claude-code/sonnet"): each RunModel Step runs the Claude Code CLI (a
 * child process in its own process group) for one segment of a turn. Model
 * calls and read tools run inside the segment; a call that writes (or
 * needs approval, or is one of Dex's built-in tools) ends it and runs in
 * its own Step; the next segment resumes the same Claude session, whose
 * transcript is kept in the session's state (see dexagents-claude-code(7)).
 * options_json (may be NULL or "{}") is an object with any of "cli_path"
 * (default "claude", found on PATH), "model", "allowed_tools" (the CLI's own
 * tools it may run, e.g. ["Read","Bash"]; none by default), "cwd", "env"
 * (an object of variables set for the CLI) and "timeout_ms" (a segment's
 * limit, 900000 by default). The API key is never an option: the CLI reads
 * ANTHROPIC_API_KEY from the worker's environment. On error *out is NULL
 * and errmsg (if not NULL) receives a message. Returns DEXA_OK,
 * DEXA_E_INVALID_ARG (NULL out, empty name, a bad option value, a key in
 * "env"), DEXA_E_UNKNOWN_KEY (an option that is not known),
 * DEXA_E_INVALID_JSON or DEXA_E_NOMEM. */
DEXA_EXTERN int dexa_harness_claude_code_new(dexa_model **out, const char *name,
                                             const char *options_json, size_t options_len,
                                             char *errmsg, size_t errmsg_size);

DEXA_END_DECLS

#endif
