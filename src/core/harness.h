/* A harness's segment inside RunModel (dexagents-harness(7)): its request
 * (the framework's state, the messages new for it, read tools run inside),
 * and what its reply adds (the new state, per-call tool policies), kept in
 * AgentHarness, AgentHarnessState and AgentHarnessStateEntries/. */
#ifndef DEXA_CORE_HARNESS_H
#define DEXA_CORE_HARNESS_H

#include "core/run_model.h"
#include "iface/harness.h"

/* AgentHarness: which harness the state belongs to and where it stands. */
typedef struct dexa__harness_meta {
  int64_t segments;    /* committed segments */
  int64_t through_seq; /* the newest message the harness has seen or written */
  int64_t first_entry; /* AgentHarnessStateEntries/ in [first_entry, next_entry) */
  int64_t next_entry;
  int64_t bytes; /* AgentHarnessState plus the entries: counted as active state */
  int foreign;   /* stored by another harness: this one starts afresh */
} dexa__harness_meta;

typedef struct dexa__segment {
  const dexa_harness_vtable *vt;
  dexa__harness_meta meta;
  dexa__harness_request hreq;
  dexa__harness_reply hreply;
  dexa__buf state; /* AgentHarnessState as loaded */
  int has_state;
  dexa__buf entries; /* the entries as loaded, back to back */
  dexa__span *spans;
  size_t entry_count;
  size_t entry_cap;
  int over_limit; /* the active state passed max_state_bytes: the turn fails */
  char why[320];
} dexa__segment;

void dexa__segment_init(dexa__segment *s, const dexa_harness_vtable *vt);
void dexa__segment_free(dexa__segment *s);

/* harness_segment.c */

/* Builds the segment's request into r->req (the model request document
 * plus "harness", and the harness part). Sets over_limit instead when the
 * session is already past its state limit. */
int dexa__segment_request(dexa__run *r);
/* 1 when Dex compaction may run for this harness. */
int dexa__segment_compacts(const dexa__run *r);
/* Runs the framework's segment. */
int dexa__segment_run(dexa__run *r);
/* After the reply's items are stored in t: writes the new state and
 * AgentHarness, and sets over_limit when the session passed its limit. */
int dexa__segment_record(dexa__run *r, const dexa__transcript *t);
/* Adds the reply's per-call policies to the calls about to be routed
 * ("effect", "approval" members read by tool_routing.c). */
int dexa__segment_policies(dexa__run *r, cJSON *calls);

/* harness_state.c */

/* Loads AgentHarness for the harness named name (foreign when another
 * harness wrote it). */
int dexa__harness_meta_load(dexa__ctx *c, const char *name, dexa__harness_meta *m);
/* Loads AgentHarnessState and the entries into s (none when foreign). */
int dexa__harness_state_load(dexa__ctx *c, dexa__segment *s);
/* Applies the reply's state changes and writes AgentHarness with
 * through_seq; updates s->meta. */
int dexa__harness_state_store(dexa__ctx *c, const char *name, dexa__segment *s,
                              int64_t through_seq);

/* harness_tools.c: the core's dexa_model_request_call_tool (ctx is the run). */
int dexa__segment_call_tool(void *ctx, const char *call_id, const char *name, const char *arguments,
                            size_t arguments_len, char **out, size_t *out_len);

#endif
