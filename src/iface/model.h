/* Model client handles and the request/reply objects passed to them. */
#ifndef DEXA_IFACE_MODEL_H
#define DEXA_IFACE_MODEL_H

#include <stdatomic.h>

#include "dexagents/harness.h"
#include "dexagents/model.h"
#include "util/buf.h"

struct dexa_model {
  atomic_int refs;
  char *name;
  dexa_model_vtable vt;
  void *user_data;
  dexa_harness_vtable *harness; /* a harness (iface/harness.h), or NULL */
  char **fallbacks; /* names of the models tried when this one keeps failing */
  size_t fallback_count;
};

typedef struct dexa__span {
  size_t off;
  size_t len;
} dexa__span;

struct dexa_model_request {
  dexa__buf json;          /* the whole request document */
  dexa__span *messages;    /* spans of each message inside json */
  size_t message_count;
  size_t message_cap;
  void (*emit)(void *ctx, int kind, const char *text, size_t len);
  void *emit_ctx;
  int (*cancelled)(void *ctx); /* the host's stop flag, or NULL */
  void *cancel_ctx;
  struct dexa__harness_request *harness; /* a harness's segment, or NULL */
};

/* One output item with what the model client said about it. */
typedef struct dexa__reply_item {
  char *json;
  size_t json_len;
  dexa__buf text;
  dexa__buf reasoning;
  dexa__buf tool_calls; /* comma-separated JSON objects */
  size_t tool_call_count;
} dexa__reply_item;

struct dexa_model_reply {
  dexa__reply_item *items;
  size_t item_count;
  size_t item_cap;
  size_t tool_call_count;
  int64_t input_tokens;
  int64_t output_tokens;
  int has_usage;
  /* dexa_model_reply_set_token_usage: the rest of the usage (0 when not
   * reported), cost_usd < 0 when unknown. */
  int64_t cached_input_tokens;
  int64_t cache_write_tokens;
  int64_t reasoning_tokens;
  double cost_usd;
  char finish_reason[24];          /* "" when the client set none */
  char provider_finish_reason[48]; /* the provider's own word, "" if none */
  char *error;
  int64_t retry_after_ms;
  int oom;
  struct dexa__harness_reply *harness; /* a harness's segment, or NULL */
};

dexa_model *dexa__model_ref(dexa_model *m);
void dexa__model_unref(dexa_model *m);

void dexa__model_request_init(dexa_model_request *r);
void dexa__model_request_free(dexa_model_request *r);
/* Records that the message just appended to r->json spans [off, end). */
int dexa__model_request_add_message(dexa_model_request *r, size_t off);

void dexa__model_reply_init(dexa_model_reply *r);
void dexa__model_reply_free(dexa_model_reply *r);

#endif
