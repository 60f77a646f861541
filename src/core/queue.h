/* QueuedUserMessages: messages that wait for their turn, oldest first. */
#ifndef DEXA_CORE_QUEUE_H
#define DEXA_CORE_QUEUE_H

#include "core/core.h"

/* The oldest queued message: 1 with its key and JSON copied into key/value,
 * 0 when the queue is empty, or a negative error. */
int dexa__queue_oldest(dexa__ctx *c, dexa__buf *key, dexa__buf *value);

/* AgentQueueState: the next message number and the queued bytes. */
typedef struct dexa__queue_state {
  int64_t next_id;
  int64_t bytes;
} dexa__queue_state;

int dexa__queue_state_load(dexa__ctx *c, dexa__queue_state *q);
int dexa__queue_state_store(dexa__ctx *c, const dexa__queue_state *q);

#endif
