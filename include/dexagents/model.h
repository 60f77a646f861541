/* libdexagents: model clients.
 *
 * A model client turns one model request (the session's instructions,
 * retained messages and offered tools, as JSON) into a reply: output items
 * stored verbatim, their display text, the tool calls to run, why the model
 * stopped and the tokens it used. Built-in clients: OpenAI Responses, Chat
 * Completions, Anthropic Messages, Gemini, Vertex AI, Bedrock and Azure
 * OpenAI (dexa_model_client_new) and the demo models ("mock/dex",
 * "mock/dex-mini").
 * A host implements its own through dexa_model_vtable. Model handles are
 * reference counted: dexa_agent_new takes its own reference, so the caller
 * may free its handle right after. */
#ifndef DEXAGENTS_MODEL_H
#define DEXAGENTS_MODEL_H

#include "common.h"

DEXA_BEGIN_DECLS

typedef struct dexa_model_request dexa_model_request;
typedef struct dexa_model_reply dexa_model_reply;

/* Kinds of live delta a model client may emit while it runs. */
typedef enum dexa_delta_kind {
  DEXA_DELTA_TEXT = 1,
  DEXA_DELTA_REASONING = 2
} dexa_delta_kind;

typedef struct dexa_model_vtable {
  uint32_t struct_size;
  /* Runs one model call. Fill reply with dexa_model_reply_* and return
   * DEXA_OK, or return an error code (a transient one such as
   * DEXA_E_TRANSIENT or DEXA_E_RATE_LIMITED is retried by RunModel; see
   * dexa_model_reply_set_error for the message and Retry-After). Called on
   * a worker thread; several calls may run at once. */
  int (*generate)(void *user_data, const dexa_model_request *request, dexa_model_reply *reply);
  /* Called once when the last reference is released. Optional. */
  void (*destroy)(void *user_data);
} dexa_model_vtable;

DEXA_EXTERN int dexa_model_vtable_init(dexa_model_vtable *vtable, size_t struct_size);

/* Creates a model client named name (as sessions select it) from a vtable
 * (copied). Returns DEXA_OK, DEXA_E_INVALID_ARG, DEXA_E_STRUCT_SIZE or
 * DEXA_E_NOMEM. */
DEXA_EXTERN int dexa_model_new(dexa_model **out, const char *name,
                               const dexa_model_vtable *vtable, void *user_data);

/* Creates the demo model client: no credential, deterministic replies that
 * exercise every session feature through slash commands (see
 * dexa_model_demo_new(3)). name is "mock/dex" or "mock/dex-mini"; any other
 * name starting with "mock/" is accepted too. */
DEXA_EXTERN int dexa_model_demo_new(dexa_model **out, const char *name);

/* Creates a model client from its name, as a worker's allow-list names it:
 *   "openai/<model>"       OpenAI Responses API
 *   "openai-chat/<model>"  Chat Completions: OpenAI, Ollama, vLLM, llama.cpp, ...
 *   "anthropic/<model>"    Anthropic Messages API
 *   "gemini/<model>"       Gemini API (streamGenerateContent)
 *   "vertex/<model>"       Gemini on Vertex AI (bearer token from a variable or a command)
 *   "bedrock/<model id>"   Amazon Bedrock ConverseStream (SigV4 from the AWS variables)
 *   "azure/<deployment>"   Azure OpenAI (api-key; v1 surface or deployment URLs)
 *   "mock/<name>"          the demo model (no options)
 * options_json (may be NULL or "{}") is an object with any of "base_url",
 * "api_key", "api_key_env", "timeout_ms", "connect_timeout_ms",
 * "max_output_tokens", "temperature", "top_p", "seed", "stop", "headers",
 * "query", "reasoning_effort", "reasoning_summary", "encrypted_reasoning",
 * "thinking_budget_tokens", "anthropic_version", "tool_choice",
 * "parallel_tool_calls", "strict_tools", "prompt_caching", "cache_ttl",
 * "price", "fallbacks", "project", "location", "access_token_env",
 * "token_command", "token_ttl_s", "region", "api_version", "api" (see
 * dexa_model_client_new(3) for which provider takes which). Credentials
 * are read from the environment (OPENAI_API_KEY, ANTHROPIC_API_KEY,
 * GEMINI_API_KEY, GOOGLE_CLOUD_ACCESS_TOKEN, AWS_ACCESS_KEY_ID, ...,
 * AZURE_OPENAI_API_KEY) at each call unless "api_key" gives one; they are
 * never logged or stored in session state. On error *out is NULL and errmsg
 * (if not NULL) receives a message. Returns DEXA_OK, DEXA_E_INVALID_ARG
 * (unknown provider prefix, empty model, a bad option value),
 * DEXA_E_UNKNOWN_KEY (an option that is not known or not taken by the
 * provider), DEXA_E_INVALID_JSON or DEXA_E_NOMEM. */
DEXA_EXTERN int dexa_model_client_new(dexa_model **out, const char *name, const char *options_json,
                                      size_t options_len, char *errmsg, size_t errmsg_size);

/* Names the models RunModel tries, in order, when this one keeps failing
 * with retryable errors (from a session's second attempt at a model call
 * on; see dexa_model_set_fallbacks(3)). Each name must be another model of
 * the agent (dexa_agent_new checks). Replaces the previous list; count 0
 * clears it. Call it before the model is given to dexa_agent_new. Returns
 * DEXA_OK, DEXA_E_INVALID_ARG (an empty, repeated or own name) or
 * DEXA_E_NOMEM. Added in 1.1. */
DEXA_EXTERN int dexa_model_set_fallbacks(dexa_model *model, const char *const *names,
                                         size_t count);

/* Releases the caller's reference. NULL is a no-op. */
DEXA_EXTERN void dexa_model_free(dexa_model *model);

/* The client's name, borrowed until the model is freed. */
DEXA_EXTERN const char *dexa_model_name(const dexa_model *model);

/* The request as JSON, borrowed for the duration of generate:
 * {"model":"mock/dex","session_id":..,"turn":1,"instructions":..,
 *  "round":1,"attempt":1,"plan_mode":false,"messages":[<stored messages, oldest first>],
 *  "tools":[{"name":..,"description":..,"parameters":{..},"effect":"read"}]}
 * Stored messages are described in dexagents-flow(7). */
DEXA_EXTERN int dexa_model_request_json(const dexa_model_request *request,
                                        const char **json, size_t *len);

/* The number of stored messages in the request, and message index (0 is
 * the oldest) as JSON text, borrowed for the duration of generate. Lets a
 * client translate messages one at a time without parsing the request. */
DEXA_EXTERN size_t dexa_model_request_message_count(const dexa_model_request *request);
DEXA_EXTERN int dexa_model_request_message_at(const dexa_model_request *request, size_t index,
                                              const char **json, size_t *len);

/* Sends a live delta (text or reasoning summary) to the session's event
 * readers. Best effort; returns DEXA_OK or DEXA_E_INVALID_ARG. */
DEXA_EXTERN int dexa_model_request_emit_delta(const dexa_model_request *request, int kind,
                                              const char *text, size_t len);

/* 1 when the call's turn was stopped (cancel_turn) while the call runs, so
 * a long call may end early; else 0, and always 0 when the host gives no
 * cancellation callback (dexa_call.cancelled). Whatever the client returns
 * after a stop, the turn ends as a Stop, never as a failure. Cheap: poll it
 * on the thread running the call. */
DEXA_EXTERN int dexa_model_request_cancelled(const dexa_model_request *request);

/* Adds one output item exactly as the provider returned it (JSON text,
 * stored and replayed byte for byte). Returns DEXA_E_INVALID_JSON when the
 * text is not one JSON value. */
DEXA_EXTERN int dexa_model_reply_add_item(dexa_model_reply *reply, const char *item_json, size_t len);

/* Appends display text (answer text) to the last added item. */
DEXA_EXTERN int dexa_model_reply_add_text(dexa_model_reply *reply, const char *text, size_t len);

/* Appends a reasoning summary to the last added item. */
DEXA_EXTERN int dexa_model_reply_add_reasoning(dexa_model_reply *reply, const char *text, size_t len);

/* Records a tool call carried by the last added item. arguments_json must
 * be a JSON object; call_id must be unique within the reply. */
DEXA_EXTERN int dexa_model_reply_add_tool_call(dexa_model_reply *reply, const char *call_id,
                                               const char *name, const char *arguments_json,
                                               size_t arguments_len);

/* Records the provider's token usage for this call. */
DEXA_EXTERN int dexa_model_reply_set_usage(dexa_model_reply *reply, int64_t input_tokens,
                                           int64_t output_tokens);

/* Why the model stopped, for the stored reply (dexagents-flow(7)). reason
 * is one of "stop" (a complete answer), "tool_calls" (it calls tools),
 * "length" (cut at the output token limit: the answer is truncated),
 * "content_filter", "refusal" or "other"; provider_reason (may be NULL) is
 * the provider's own word ("max_tokens", "MAX_TOKENS", "end_turn"...),
 * printable ASCII of at most 47 bytes. Returns DEXA_OK or
 * DEXA_E_INVALID_ARG. Added in 1.1. */
DEXA_EXTERN int dexa_model_reply_set_finish_reason(dexa_model_reply *reply, const char *reason,
                                                   const char *provider_reason);

/* The full token usage of one model call. input_tokens counts every input
 * token, the cached ones and the cache writes included; output_tokens every
 * output token, reasoning included. cost_usd < 0 means unknown. Set it up
 * with dexa_model_usage_init; the struct only grows at the end. Added in
 * 1.1. */
typedef struct dexa_model_usage {
  uint32_t struct_size;
  int64_t input_tokens;
  int64_t output_tokens;
  int64_t cached_input_tokens; /* read from the provider's prompt cache */
  int64_t cache_write_tokens;  /* written to the prompt cache */
  int64_t reasoning_tokens;    /* spent on reasoning */
  double cost_usd;
} dexa_model_usage;

/* Zeroes usage (struct_size bytes), sets struct_size and cost_usd = -1.
 * Returns DEXA_OK, DEXA_E_INVALID_ARG or DEXA_E_STRUCT_SIZE. */
DEXA_EXTERN int dexa_model_usage_init(dexa_model_usage *usage, size_t struct_size);

/* Records the call's full usage (replaces dexa_model_reply_set_usage's).
 * Returns DEXA_OK, DEXA_E_STRUCT_SIZE, or DEXA_E_INVALID_ARG for a negative
 * count, cached plus cache-write tokens over input_tokens, or reasoning
 * tokens over output_tokens. */
DEXA_EXTERN int dexa_model_reply_set_token_usage(dexa_model_reply *reply,
                                                 const dexa_model_usage *usage);

/* Records why the call failed (kept for the turn-failure record) and how
 * long to wait before retrying (0: the Step's backoff). Return the error
 * code from generate as well. */
DEXA_EXTERN int dexa_model_reply_set_error(dexa_model_reply *reply, const char *message,
                                           int64_t retry_after_ms);

DEXA_END_DECLS

#endif
