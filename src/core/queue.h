/* QueuedUserMessages: messages that wait for their turn, oldest first, each
 * with its id ("m<N>"), text, flags and whether it was steered. */
#ifndef DEXA_CORE_QUEUE_H
#define DEXA_CORE_QUEUE_H

#include "core/core.h"

/* AgentQueueState: the next message number and the queued bytes. */
typedef struct dexa__queue_state {
  int64_t next_id;
  int64_t bytes;
} dexa__queue_state;

int dexa__queue_state_load(dexa__ctx *c, dexa__queue_state *q);
int dexa__queue_state_store(dexa__ctx *c, const dexa__queue_state *q);

/* One queued message, copied out of the store. */
typedef struct dexa__queued {
  char key[64];
  cJSON *entry;
  size_t len; /* bytes of the stored JSON */
} dexa__queued;

typedef struct dexa__queue {
  dexa__queued *items;
  size_t count;
} dexa__queue;

/* Loads every queued message, oldest first. */
int dexa__queue_load(dexa__ctx *c, dexa__queue *q);
void dexa__queue_free(dexa__queue *q);

/* The key of message id "m<N>" in key (64 bytes); 0 when id is malformed. */
int dexa__queue_key(const char *id, char *key);

/* Queues a message and signals AwaitUserMessage. attachments is the
 * checked JSON array of its attachments, or NULL. execute_revision > 0 marks
 * the message that starts the execution of that plan revision. id gets the
 * new id (32 bytes). Fails with DEXA_E_STATE_LIMIT past the state limit. */
int dexa__queue_add(dexa__ctx *c, const char *text, const char *attachments, int plan_mode,
                    int64_t execute_revision, char *id);

/* Removes messages from the queue (their bytes too), with a queue_changed
 * event per message naming action ("deleted"), or none when action is NULL. */
int dexa__queue_take(dexa__ctx *c, dexa__queued *const *items, size_t n, const char *action);

/* Loads the queued message named by the input's message_id: its key (64
 * bytes) and parsed entry (the caller deletes it) and stored length. Fails
 * the result with DEXA_E_INVALID_JSON for a malformed id and
 * DEXA_E_NOT_FOUND when it is not queued. */
int dexa__queue_load_named(dexa__ctx *c, char *key, cJSON **out, size_t *len);

#endif
