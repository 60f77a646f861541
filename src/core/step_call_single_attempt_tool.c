/* CallSingleAttemptTool: runs a WRITE call (any write that is not
 * idempotent) at most once. The host gives it one attempt, and its claim is
 * durable before the tool runs; a tool error is recorded as the result, a
 * transient one included (the write may have happened). An attempt cut off
 * by a crash or a timeout is never repeated: RecordToolOutcome records an
 * unknown outcome for the model instead. */
#include "core/tool_call.h"

int dexa__step_call_single_attempt_tool(dexa__ctx *c) { return dexa__run_tool_call(c, 0); }
