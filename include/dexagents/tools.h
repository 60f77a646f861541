/* libdexagents: tool sources.
 *
 * A tool source lists tools (name, description, JSON Schema of the
 * arguments, effect, approval policy) and runs calls. Each call runs in its
 * own Step: READ and IDEMPOTENT_WRITE in CallTool (retried with backoff),
 * WRITE in CallSingleAttemptTool (one attempt; a crash during it is recorded
 * as an unknown outcome and never repeated). Every call carries an
 * idempotency key derived from the session id and the call id. Tool sources
 * are reference counted like models. */
#ifndef DEXAGENTS_TOOLS_H
#define DEXAGENTS_TOOLS_H

#include "common.h"

DEXA_BEGIN_DECLS

typedef struct dexa_tool_list dexa_tool_list;
typedef struct dexa_tool_invocation dexa_tool_invocation;
typedef struct dexa_tool_output dexa_tool_output;

typedef enum dexa_tool_effect {
  DEXA_TOOL_READ = 1,             /* no effect outside; retried */
  DEXA_TOOL_IDEMPOTENT_WRITE = 2, /* an effect that repeats safely; retried */
  DEXA_TOOL_WRITE = 3             /* any other write; runs at most once */
} dexa_tool_effect;

typedef enum dexa_tool_approval {
  DEXA_APPROVAL_NONE = 0,         /* runs at once */
  DEXA_APPROVAL_REQUIRED = 1      /* waits in AwaitToolApproval first */
} dexa_tool_approval;

typedef struct dexa_tool_source_vtable {
  uint32_t struct_size;
  /* Adds the source's tools to list with dexa_tool_list_add. An error
   * leaves this source out of the current model call only. */
  int (*list_tools)(void *user_data, dexa_tool_list *list);
  /* Runs one call; fills out with dexa_tool_output_*. Return DEXA_OK (also
   * for a tool-level error reported with is_error), or an error code: a
   * transient one is retried for READ and IDEMPOTENT_WRITE tools. */
  int (*call_tool)(void *user_data, const dexa_tool_invocation *invocation, dexa_tool_output *out);
  void (*destroy)(void *user_data); /* optional */
} dexa_tool_source_vtable;

DEXA_EXTERN int dexa_tool_source_vtable_init(dexa_tool_source_vtable *vtable, size_t struct_size);

/* Creates a tool source named name (unique among an agent's sources). */
DEXA_EXTERN int dexa_tool_source_new(dexa_tool_source **out, const char *name,
                                     const dexa_tool_source_vtable *vtable, void *user_data);

/* Releases the caller's reference. NULL is a no-op. */
DEXA_EXTERN void dexa_tool_source_free(dexa_tool_source *source);

DEXA_EXTERN const char *dexa_tool_source_name(const dexa_tool_source *source);

/* Lists the source's tools now (calling its list_tools) and writes to *out a
 * new NUL-terminated JSON array: [{"name","description","parameters",
 * "effect":"read"|"idempotent_write"|"write","approval":true|false}]; free
 * it with dexa_free. For settings pages and diagnostics; sessions list tools
 * per model call. Returns DEXA_OK, DEXA_E_INVALID_ARG, DEXA_E_NOMEM, or the
 * error list_tools returned (an MCP server that cannot be reached). */
DEXA_EXTERN int dexa_tool_source_list_json(char **out, size_t *out_len, dexa_tool_source *source);

/* Adds a tool while listing. parameters_json is a JSON Schema object (NULL
 * means {"type":"object"}). Returns DEXA_E_INVALID_ARG for a bad name or
 * effect, DEXA_E_INVALID_JSON for bad parameters, DEXA_E_ALREADY_EXISTS
 * for a name listed twice. */
DEXA_EXTERN int dexa_tool_list_add(dexa_tool_list *list, const char *name, const char *description,
                                   const char *parameters_json, size_t parameters_len,
                                   int effect, int approval);

/* Accessors of a call, borrowed for the duration of call_tool. */
DEXA_EXTERN const char *dexa_tool_invocation_name(const dexa_tool_invocation *invocation);
DEXA_EXTERN const char *dexa_tool_invocation_call_id(const dexa_tool_invocation *invocation);
DEXA_EXTERN const char *dexa_tool_invocation_session_id(const dexa_tool_invocation *invocation);
/* "<session id>:<call id>": stable across retries and workers. */
DEXA_EXTERN const char *dexa_tool_invocation_idempotency_key(const dexa_tool_invocation *invocation);
DEXA_EXTERN int dexa_tool_invocation_arguments(const dexa_tool_invocation *invocation,
                                               const char **json, size_t *len);
DEXA_EXTERN int32_t dexa_tool_invocation_attempt(const dexa_tool_invocation *invocation);
/* 1.1: 1 once the call should end early (the user stopped the turn: see
 * dexa_call.cancelled), else 0. A long call polls it, on any thread; the
 * result it then returns is still recorded. */
DEXA_EXTERN int dexa_tool_invocation_cancelled(const dexa_tool_invocation *invocation);

/* The answers the person gave to the questions this call asked before
 * (dexa_tool_output_ask), oldest first, as a JSON array borrowed for the
 * duration of call_tool ("[]" on a call's first run):
 *   [{"key":..,"action":"accept"|"decline"|"cancel","answer"?:"..","fields"?:{..}}]
 * key is the question's own "key" (null when it had none). Added in 1.1. */
DEXA_EXTERN int dexa_tool_invocation_answers(const dexa_tool_invocation *invocation,
                                             const char **json, size_t *len);

/* The call's effect as the session routed it (a dexa_tool_effect), 0 when
 * unknown. A tool that asks the person something mid-call uses it to tell
 * whether running again from the start is safe. Added in 1.1. */
DEXA_EXTERN int dexa_tool_invocation_effect(const dexa_tool_invocation *invocation);

/* Runs one model call through the session's model client (MCP sampling):
 * request_json is {"messages":[{"role":"user"|"assistant","text":..}],
 * "system"?:..,"max_tokens"?:N}; *reply_json receives a new
 * {"text":..,"model":..,"stop_reason":..,"usage"?:{..}} freed with
 * dexa_free. The session records a sampling_finished event. Returns
 * DEXA_OK, DEXA_E_INVALID_ARG, DEXA_E_INVALID_JSON (a malformed request),
 * DEXA_E_UNSUPPORTED (no session model here: outside a session, or a
 * harness), DEXA_E_NOMEM, or the model client's error. Added in 1.1. */
DEXA_EXTERN int dexa_tool_invocation_sample(const dexa_tool_invocation *invocation,
                                            const char *request_json, size_t len,
                                            char **reply_json, size_t *reply_len);

/* Sets the text result the model sees; is_error marks a tool-level error. */
DEXA_EXTERN int dexa_tool_output_set_text(dexa_tool_output *out, const char *text, size_t len,
                                          int is_error);
/* Optionally keeps the full structured result (JSON) next to the text. */
DEXA_EXTERN int dexa_tool_output_set_content(dexa_tool_output *out, const char *json, size_t len);

/* Ends this run of the call with a question to the person instead of a
 * result: the session waits in AwaitQuestionAnswer (holding no worker) and,
 * once the person answers, declines or cancels, invokes the same call
 * again with every answer so far (dexa_tool_invocation_answers). What the
 * tool did before asking stays done: a WRITE tool asks before it writes.
 * question_json: {"prompt":..,"choices"?:[2..8 strings],"fields"?:[..],
 * "url"?:"https://..","purpose"?:"..","key"?:".."} (see
 * dexa_tool_output_ask(3) for fields). Return DEXA_OK from call_tool after
 * it. Returns DEXA_OK, DEXA_E_INVALID_ARG (no prompt), DEXA_E_INVALID_JSON
 * or DEXA_E_NOMEM. Added in 1.1. */
DEXA_EXTERN int dexa_tool_output_ask(dexa_tool_output *out, const char *question_json, size_t len);

/* A tool implemented by a host function (C, or a cffi / N-API callback). */
typedef int (*dexa_tool_fn)(void *user_data, const dexa_tool_invocation *invocation,
                            dexa_tool_output *out);

/* Creates an empty source of host function tools. Add every tool before the
 * source is given to an agent; the source is read-only after that. */
DEXA_EXTERN int dexa_function_tools_new(dexa_tool_source **out, const char *name);

/* Adds a function tool. fn runs on a worker thread; several calls may run at
 * once. Returns DEXA_E_BAD_STATE once the source is in use by an agent,
 * DEXA_E_ALREADY_EXISTS for a name added twice. */
DEXA_EXTERN int dexa_function_tools_add(dexa_tool_source *source, const char *name,
                                        const char *description, const char *parameters_json,
                                        int effect, int approval, dexa_tool_fn fn, void *user_data);

DEXA_END_DECLS

#endif
