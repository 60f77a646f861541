/* Starting a turn from queued messages, and ending one on a steer or stop. */
#ifndef DEXA_CORE_TURNS_H
#define DEXA_CORE_TURNS_H

#include "core/queue.h"

/* Takes the messages out of the queue, appends them to AgentMessages as user
 * messages, marks the next turn running (planning, executing or chat, by the
 * messages' flags) and decides RunModel. */
int dexa__turn_start(dexa__ctx *c, dexa__queued *const *items, size_t n);

/* Publishes a cancellation to every call of turn that waits for a person or
 * a timer, and removes them from PendingToolCalls. reason: steer or cancel. */
int dexa__cancel_pending_calls(dexa__ctx *c, int64_t turn, const char *reason);

/* Records a steer or stop (action "steer" or "cancel") for the running turn:
 * AgentTurnControl, the cancellation of its waiting calls, and the
 * turn_control event. The turn ends at its next safe Step boundary
 * (ApplyTurnControl). */
int dexa__turn_control(dexa__ctx *c, int64_t turn, const char *action);

#endif
