/* CallSingleAttemptTool: runs a WRITE call (any write that is not
 * idempotent) at most once. The host gives it one attempt, and its claim is
 * durable before the tool runs; a tool error is recorded as the result, a
 * transient one included (the write may have happened). An attempt cut off
 * by a crash or a timeout is never repeated: RecordToolOutcome records an
 * unknown outcome for the model instead. */
#include <stdio.h>

#include "core/tool_call.h"

/* A host that dispatches a later attempt (a retry policy it did not take
 * from the description, or a claim it did not make durable) means an
 * earlier attempt may have run: record that, never run the write again. */
static int later_attempt(dexa__ctx *c) {
  dexa__tool_call t;
  int rc = dexa__tool_call_read(c, &t);
  char why[120];
  snprintf(why, sizeof why, "attempt %d was dispatched, so an earlier attempt may have run",
           (int)c->call->attempt);
  if (rc == DEXA_OK) rc = dexa__tool_call_unknown_outcome(c, &t, why);
  dexa__tool_call_free(&t);
  return rc;
}

int dexa__step_call_single_attempt_tool(dexa__ctx *c) {
  if (c->call->attempt > 1) return later_attempt(c);
  return dexa__run_tool_call(c, 0);
}
