/* Harnesses: a harness is a model handle whose harness vtable is set (see
 * <dexagents/harness.h>). A segment's request and reply carry the parts
 * below; the core (RunModel) fills the request's and reads the reply's. */
#ifndef DEXA_IFACE_HARNESS_H
#define DEXA_IFACE_HARNESS_H

#include "iface/model.h"

/* What a segment's request adds to a model request. Every pointer is the
 * core's, borrowed by the harness for the duration of run_segment. */
typedef struct dexa__harness_request {
  uint32_t flags;    /* the harness's dexa_harness_flag values */
  const char *state; /* the state's JSON text, or NULL */
  size_t state_len;
  const char *entries;     /* the appended entries' text, back to back */
  const dexa__span *spans; /* one per entry, into entries */
  size_t entry_count;
  size_t first_new; /* index of the first new message */
  /* Runs a read tool inside the segment: the core's implementation of
   * dexa_model_request_call_tool (arguments already checked). */
  int (*call_tool)(void *ctx, const char *call_id, const char *name, const char *arguments,
                   size_t arguments_len, char **out, size_t *out_len);
  void *call_ctx;
} dexa__harness_request;

/* A per-call effect and approval from the framework's tool metadata. */
typedef struct dexa__tool_policy {
  char *call_id;
  int effect;   /* dexa_tool_effect, or DEXA_TOOL_EFFECT_DEFAULT */
  int approval; /* dexa_tool_approval, or DEXA_APPROVAL_DEFAULT */
} dexa__tool_policy;

/* What a segment's reply adds to a model reply. */
typedef struct dexa__harness_reply {
  int state_set; /* 1: the state is replaced (entries dropped) */
  int has_state; /* with state_set: 1 new state in state, 0 none */
  dexa__buf state;
  dexa__buf entries; /* appended entries, back to back */
  dexa__span *spans;
  size_t entry_count;
  size_t entry_cap;
  dexa__tool_policy *policies;
  size_t policy_count;
  size_t policy_cap;
  /* dexa_model_reply_add_framework_tool_call: the members of each call's
   * segment_tool_call event (from ,"call_id":), back to back */
  dexa__buf ran;
  dexa__span *ran_spans;
  size_t ran_count;
  size_t ran_cap;
} dexa__harness_reply;

void dexa__harness_reply_init(dexa__harness_reply *r);
void dexa__harness_reply_free(dexa__harness_reply *r);
/* The policy the reply set for call_id (call_len bytes), or NULL. */
const dexa__tool_policy *dexa__harness_reply_policy(const dexa__harness_reply *r,
                                                    const char *call_id, size_t call_len);

#endif
