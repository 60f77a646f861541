/* AgentEvents: durable events go into the result; live ones to the sink. */
#include <string.h>

#include "core/attachments.h"
#include "core/core.h"
#include "util/json_span.h"

void dexa__event_begin(dexa__ctx *c, dexa__buf *b, const char *type) {
  dexa__buf_init(b);
  dexa__buf_puts(b, "{\"type\":");
  dexa__buf_json_cstr(b, type);
  dexa__buf_printf(b, ",\"at\":%lld", (long long)c->call->now_ms);
}

int dexa__event_end(dexa__ctx *c, dexa__buf *b) {
  dexa__buf_putc(b, '}');
  int rc = b->oom ? DEXA_E_NOMEM : dexa__result_add_event(c->result, b->data, b->len);
  dexa__buf_free(b);
  return rc;
}

void dexa__event_live(dexa__ctx *c, const char *json, size_t len) {
  if (c->call->event_sink) c->call->event_sink(c->call->sink_user_data, json, len);
}

/* The members of a stored message that a message_appended event carries:
 * enough to show it; the full message (verbatim items, tool output) stays in
 * AgentMessages, read through the snapshot. Only messages with text (user
 * messages, answers, reasoning) get the event. */
static const char *const message_view[] = {"seq", "turn", "round", "role", "id", "model",
                                           "text", "call_id", "name", "status", "finish_reason"};

int dexa__event_message(dexa__ctx *c, const char *m, size_t n) {
  const char *v;
  size_t vl;
  /* A call-only model item is told by tool_call_proposed; a tool result by
   * tool_call_finished: no second event for them. */
  if (dexa__json_get(m, n, "text", &v, &vl) != 0 && dexa__json_get(m, n, "reasoning", &v, &vl) != 0)
    return DEXA_OK;
  dexa__buf e;
  dexa__event_begin(c, &e, "message_appended");
  dexa__buf_puts(&e, ",\"message\":{");
  int first = 1;
  for (size_t i = 0; i < sizeof message_view / sizeof message_view[0]; i++) {
    const char *member;
    size_t member_len;
    if (dexa__json_get(m, n, message_view[i], &member, &member_len) != 0) continue;
    dexa__buf_printf(&e, "%s\"%s\":", first ? "" : ",", message_view[i]);
    dexa__buf_append(&e, member, member_len);
    first = 0;
  }
  if (dexa__json_get(m, n, "tool_calls", &v, &vl) == 0) dexa__buf_puts(&e, ",\"has_tool_calls\":true");
  if (dexa__json_get(m, n, "attachments", &v, &vl) == 0) {
    dexa__buf_puts(&e, ",\"attachments\":");
    dexa__attachments_view(&e, v, vl);
  }
  dexa__buf_putc(&e, '}');
  return dexa__event_end(c, &e);
}
