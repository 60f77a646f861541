/* The dispatch result: what one Step method or RPC wants the host to apply.
 * The core fills it through this internal builder; hosts read it through
 * the public dexa_result_* accessors. Every string is copied in. */
#ifndef DEXA_FLOW_RESULT_H
#define DEXA_FLOW_RESULT_H

#include <stddef.h>
#include <stdint.h>

#include "dexagents/flow.h"

typedef struct dexa__entry {
  char *key;      /* attribute key or channel name; NUL-terminated */
  size_t key_len;
  char *value;    /* JSON text, NUL-terminated; NULL for a delete */
  size_t value_len;
} dexa__entry;

typedef struct dexa__entries {
  dexa__entry *items;
  size_t count;
  size_t cap;
} dexa__entries;

struct dexa_result {
  int status;
  char *errmsg;
  int64_t retry_after_ms;
  dexa__entries writes;
  dexa__entries publishes;
  dexa__entries events; /* key unused */
  char *wait;
  size_t wait_len;
  char *decision;
  size_t decision_len;
  char *response;
  size_t response_len;
};

/* Returns a new empty result (status DEXA_OK), or NULL when out of memory. */
dexa_result *dexa__result_new(void);

/* Each returns DEXA_OK or DEXA_E_NOMEM. value NULL in a write is a delete. */
int dexa__result_add_write(dexa_result *r, const char *key, size_t key_len, const char *value,
                           size_t value_len);
int dexa__result_add_publish(dexa_result *r, const char *channel, size_t channel_len,
                             const char *value, size_t value_len);
int dexa__result_add_event(dexa_result *r, const char *json, size_t len);
int dexa__result_set_wait(dexa_result *r, const char *json, size_t len);
int dexa__result_set_decision(dexa_result *r, const char *json, size_t len);
int dexa__result_set_response(dexa_result *r, const char *json, size_t len);

/* Marks the result failed: drops every write, publish, event, wait, decision
 * and response, keeps code and a copy of message. Returns code. */
int dexa__result_fail(dexa_result *r, int code, const char *message);
/* Like dexa__result_fail with a printf-style message. */
int dexa__result_failf(dexa_result *r, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The newest staged write of key: 1 and the value (NULL = deleted), or 0
 * when the result does not write key. For read-your-writes in the core. */
int dexa__result_find_write(const dexa_result *r, const char *key, size_t key_len,
                            const char **value, size_t *value_len);

#endif
