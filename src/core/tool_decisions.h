/* The ToolDecisions/<call id> channel: RPCs deliver a person's decision (an
 * approval, a rejection, an answer) or a cancellation there; the Steps that
 * wait for a person or a timer (AwaitToolApproval, AwaitQuestionAnswer,
 * AwaitTimer) wait on it and read what came. PendingToolCalls lists exactly
 * the calls that wait, so a decision is checked against what is pending. */
#ifndef DEXA_CORE_TOOL_DECISIONS_H
#define DEXA_CORE_TOOL_DECISIONS_H

#include "core/tool_call.h"

/* ---- the waiting Steps ---- */

/* The wait of a waiting Step: its call's channel, and with timer the
 * durable timer of the input's fires_at_ms too. */
int dexa__decision_wait(dexa__ctx *c, const dexa__tool_call *t, int timer);

/* What Execute received: the delivered decision ({"decision":..}) or NULL,
 * and 1 in *fired when the timer won. Deletes the call's PendingToolCalls
 * entry. The caller deletes the returned tree. */
int dexa__decision_take(dexa__ctx *c, const dexa__tool_call *t, cJSON **decision, int *fired);

/* The decision's "decision" member ("" when none). */
const char *dexa__decision_kind(const cJSON *d);

/* Records the cancellation result of a call whose turn was steered or
 * stopped before it ran. */
int dexa__decision_cancelled(dexa__ctx *c, const dexa__tool_call *t, const cJSON *d);

/* The handler shared by the three waiting Steps: reads the call, returns the
 * wait (WaitFor) or takes the decision and calls on_decision (Execute). */
typedef int (*dexa__on_decision)(dexa__ctx *c, const dexa__tool_call *t, const cJSON *d,
                                 int fired);
int dexa__waiting_step(dexa__ctx *c, int timer, dexa__on_decision on_decision);

/* ---- the RPCs ---- */

/* Loads the pending call of the input's call_id, which must wait for kind
 * (approval, question); fails the result with DEXA_E_NOT_PENDING otherwise.
 * key (key_size bytes) receives its PendingToolCalls key. */
int dexa__pending_load(dexa__ctx *c, const char *kind, char *key, size_t key_size, cJSON **out);

/* Removes the pending entry key, delivers decision (a JSON object's text)
 * to the call's Step and emits event_type with it. */
int dexa__decision_deliver(dexa__ctx *c, const char *key, const char *call_id,
                           const char *decision, size_t len, const char *event_type);

#endif
