/* AwaitTimer: durable_wait waits here on a durable timer (the host keeps it:
 * no worker or model call holds the wait, and it fires after a restart).
 * A steer or stop interrupts it through its ToolDecisions channel; a queued
 * user message does not. */
#include <stdio.h>
#include <string.h>

#include "core/tool_decisions.h"

static int fired_or_cancelled(dexa__ctx *c, const dexa__tool_call *t, const cJSON *d, int fired) {
  if (!fired) return dexa__decision_cancelled(c, t, d);
  int64_t seconds = 0;
  dexa__input_i64(c, "seconds", &seconds);
  dexa__buf e;
  dexa__event_begin(c, &e, "timer_fired");
  dexa__buf_printf(&e, ",\"turn\":%lld,\"call_id\":", (long long)t->turn);
  dexa__buf_json_cstr(&e, t->call_id);
  int rc = dexa__event_end(c, &e);
  char text[96];
  snprintf(text, sizeof text, "Waited %lld seconds.", (long long)seconds);
  if (rc == DEXA_OK) rc = dexa__tool_call_finish(c, t, "ok", text, strlen(text), NULL, 0);
  return rc;
}

int dexa__step_await_timer(dexa__ctx *c) { return dexa__waiting_step(c, 1, fired_or_cancelled); }
