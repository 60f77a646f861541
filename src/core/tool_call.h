/* The input of every tool Step (CallTool, CallSingleAttemptTool,
 * AwaitToolApproval, AwaitQuestionAnswer, AwaitTimer, RecordToolOutcome):
 * one call of one reply, with the seq reserved for its result. */
#ifndef DEXA_CORE_TOOL_CALL_H
#define DEXA_CORE_TOOL_CALL_H

#include "core/core.h"

typedef struct dexa__tool_call {
  int64_t turn, round, seq;
  const char *call_id;
  const char *name;
  const char *source;
  const char *effect;
  char *arguments; /* JSON object text; free with cJSON_free */
  char *answers;   /* the answers to the call's questions (JSON array) or NULL */
} dexa__tool_call;

/* Reads the call from the Step's input; fails the result when malformed. */
int dexa__tool_call_read(dexa__ctx *c, dexa__tool_call *t);
void dexa__tool_call_free(dexa__tool_call *t);

/* Records the call's result (content may be NULL) and ends the Step's branch. */
int dexa__tool_call_finish(dexa__ctx *c, const dexa__tool_call *t, const char *status,
                           const char *output, size_t output_len, const char *content,
                           size_t content_len);

/* Records an unknown outcome for a write that may have run: why says what
 * cut it off. */
int dexa__tool_call_unknown_outcome(dexa__ctx *c, const dexa__tool_call *t, const char *why);

/* Runs the Step's tool call (CallTool with retry, CallSingleAttemptTool
 * without): a transient tool failure fails the attempt only with retry. */
int dexa__run_tool_call(dexa__ctx *c, int retry);

/* Runs one model call for a tool through the session's model (MCP
 * sampling): the invocation's sampler (tool_sampling.c). ctx is a
 * dexa__sampling. */
typedef struct dexa__sampling {
  dexa__ctx *c;
  const dexa__tool_call *t;
} dexa__sampling;
int dexa__tool_sample(void *ctx, const char *request, size_t len, dexa__buf *reply);

/* Deletes the call's PendingToolCalls entry. */
int dexa__tool_call_unpend(dexa__ctx *c, const dexa__tool_call *t);

#endif
