/* AwaitToolApproval: a call whose policy asks for approval waits here, on
 * its ToolDecisions channel, holding no worker. Approve runs it (CallTool,
 * or CallSingleAttemptTool for a write); reject records a rejection result
 * with the person's note; a steer or stop records a cancellation. */
#include <string.h>

#include "core/tool_decisions.h"

static int rejected(dexa__ctx *c, const dexa__tool_call *t, const cJSON *d) {
  const char *note = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "note"));
  dexa__buf out, content;
  dexa__buf_init(&out);
  dexa__buf_init(&content);
  dexa__buf_puts(&out, "The user rejected this call; it did not run.");
  if (note && *note) {
    dexa__buf_puts(&out, " Note: ");
    dexa__buf_puts(&out, note);
  }
  dexa__buf_puts(&content, "{\"rejected\":true,\"note\":");
  dexa__buf_json_cstr(&content, note && *note ? note : NULL);
  dexa__buf_putc(&content, '}');
  int rc = out.oom || content.oom ? DEXA_E_NOMEM
                                  : dexa__tool_call_finish(c, t, "rejected", out.data, out.len,
                                                           content.data, content.len);
  dexa__buf_free(&out);
  dexa__buf_free(&content);
  return rc;
}

static int decided(dexa__ctx *c, const dexa__tool_call *t, const cJSON *d, int fired) {
  const char *what = dexa__decision_kind(d);
  if (!strcmp(what, "approve")) {
    const char *step = strcmp(t->effect, "write") == 0 ? STEP_CALL_SINGLE_ATTEMPT_TOOL : STEP_CALL_TOOL;
    return dexa__decide_next(c, step, c->call->input);
  }
  if (!strcmp(what, "reject")) return rejected(c, t, d);
  return dexa__decision_cancelled(c, t, d);
}

int dexa__step_await_tool_approval(dexa__ctx *c) { return dexa__waiting_step(c, 0, decided); }
