/* Tool sources: handles (reference counted), the list a source fills for a
 * model call, and the invocation and output objects of one call. */
#ifndef DEXA_IFACE_TOOL_SOURCE_H
#define DEXA_IFACE_TOOL_SOURCE_H

#include <stdatomic.h>

#include "dexagents/flow.h"
#include "dexagents/tools.h"
#include "util/buf.h"

struct dexa_tool_source {
  atomic_int refs;
  atomic_int in_use; /* set once an agent holds it: function tools are then read-only */
  char *name;
  dexa_tool_source_vtable vt;
  void *user_data;
  int connector; /* a connector's tools (dexa_connector_tool_source_new): never run inside a segment */
};

typedef struct dexa__tool_def {
  char *name;
  char *description;
  char *parameters; /* JSON Schema text */
  int effect;
  int approval;
  size_t source; /* index of the source in the agent */
  int connector; /* offered by a connector's source */
} dexa__tool_def;

struct dexa_tool_list {
  dexa__tool_def *defs;
  size_t count;
  size_t cap;
  size_t current_source;
  int current_connector; /* the source being listed is a connector's */
};

struct dexa_tool_invocation {
  const char *name;
  const char *call_id;
  const char *session_id;
  const char *idempotency_key;
  const char *arguments;
  size_t arguments_len;
  int32_t attempt;
  const dexa_call *call; /* the Step's call (its cancelled callback), or NULL */
  /* 1.1: what the call's earlier questions were answered (a JSON array, or
   * NULL: none), the call's effect, and the session's model for sampling
   * (NULL outside a session). */
  const char *answers;
  size_t answers_len;
  int effect;
  int (*sample)(void *ctx, const char *request, size_t len, dexa__buf *reply);
  void *sample_ctx;
};

struct dexa_tool_output {
  dexa__buf text;
  dexa__buf content;
  int has_text;
  int is_error;
  dexa__buf question; /* dexa_tool_output_ask: the call waits for the person */
  int asks;
};

dexa_tool_source *dexa__tool_source_ref(dexa_tool_source *s);
void dexa__tool_source_unref(dexa_tool_source *s);

void dexa__tool_list_init(dexa_tool_list *l);
void dexa__tool_list_free(dexa_tool_list *l);
/* Drops the defs added after the first mark entries (a failed listing). */
void dexa__tool_list_truncate(dexa_tool_list *l, size_t mark);
const dexa__tool_def *dexa__tool_list_find(const dexa_tool_list *l, const char *name,
                                           size_t name_len);

void dexa__tool_output_init(dexa_tool_output *o);
void dexa__tool_output_free(dexa_tool_output *o);

/* Names of effects as stored in flow state ("read", "idempotent_write",
 * "write"); dexa__tool_effect_parse returns 0 for an unknown name. */
const char *dexa__tool_effect_name(int effect);
int dexa__tool_effect_parse(const char *s, size_t n);

#endif
