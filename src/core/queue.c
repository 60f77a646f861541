/* QueuedUserMessages and AgentQueueState. */
#include "core/queue.h"

#include <stdio.h>

typedef struct first_entry {
  dexa__buf *key;
  dexa__buf *value;
  int found;
} first_entry;

static int take_first(void *ctx, const char *key, size_t key_len, const char *value,
                      size_t value_len) {
  first_entry *f = ctx;
  dexa__buf_append(f->key, key, key_len);
  dexa__buf_append(f->value, value, value_len);
  f->found = 1;
  return 1; /* stop: keys sort oldest first */
}

int dexa__queue_oldest(dexa__ctx *c, dexa__buf *key, dexa__buf *value) {
  first_entry f = {key, value, 0};
  int rc = dexa__attr_scan(c, ATTR_QUEUED_MESSAGES, take_first, &f);
  if (rc != DEXA_OK) return rc;
  if (key->oom || value->oom) return DEXA_E_NOMEM;
  return f.found;
}

int dexa__queue_state_load(dexa__ctx *c, dexa__queue_state *q) {
  cJSON *o;
  int rc = dexa__attr_get_json(c, ATTR_QUEUE_STATE, &o);
  if (rc != DEXA_OK) return rc;
  if (!o) return DEXA_E_NOT_FOUND;
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "next_id");
  const cJSON *bytes = cJSON_GetObjectItemCaseSensitive(o, "bytes");
  q->next_id = cJSON_IsNumber(id) ? (int64_t)id->valuedouble : 1;
  q->bytes = cJSON_IsNumber(bytes) ? (int64_t)bytes->valuedouble : 0;
  cJSON_Delete(o);
  return DEXA_OK;
}

int dexa__queue_state_store(dexa__ctx *c, const dexa__queue_state *q) {
  char text[96];
  int n = snprintf(text, sizeof text, "{\"next_id\":%lld,\"bytes\":%lld}", (long long)q->next_id,
                   (long long)(q->bytes < 0 ? 0 : q->bytes));
  return dexa__attr_put_raw(c, ATTR_QUEUE_STATE, text, (size_t)n);
}
