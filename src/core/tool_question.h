/* Questions a tool asks mid-call (dexa_tool_output_ask): the call's run
 * ends, the question waits in AwaitQuestionAnswer like ask_user's (the same
 * PendingToolCalls entry of kind "question", the same answer_question RPC),
 * and the answer runs the call's Step again with every answer so far. The
 * core knows nothing of why a tool asks (an MCP elicitation, a sign-in, an
 * approval of a sampling request): the question says what to show. */
#ifndef DEXA_CORE_TOOL_QUESTION_H
#define DEXA_CORE_TOOL_QUESTION_H

#include "core/tool_call.h"

#define DEXA__MAX_TOOL_QUESTIONS 16 /* per call: a tool that keeps asking fails */

/* Records the question q (JSON text of n bytes, from the tool) of call t,
 * whose Step resume runs again once it is answered: the pending entry, the
 * question_asked event and the AwaitQuestionAnswer Step; a question the
 * session cannot show (or one too many) is the call's error result. */
int dexa__tool_question_ask(dexa__ctx *c, const dexa__tool_call *t, const char *q, size_t n,
                            const char *resume);

/* 1 when the pending question entry was asked by a tool (not ask_user). */
int dexa__tool_question_is_tool(const cJSON *pending);

/* Checks an answer_question input against a tool's pending question and
 * builds the decision ({"decision":"answer","action",..}) into *decision.
 * Fails the result (DEXA_E_INVALID_ARG, DEXA_E_INVALID_JSON,
 * DEXA_E_TOO_LARGE) when the answer does not fit the question. */
int dexa__tool_question_decision(dexa__ctx *c, const cJSON *pending, cJSON **decision);

/* AwaitQuestionAnswer of a tool's question: the answer runs the call's Step
 * again with the answers so far; a steer or stop records a cancellation. */
int dexa__tool_question_answered(dexa__ctx *c, const dexa__tool_call *t, const cJSON *d);

#endif
