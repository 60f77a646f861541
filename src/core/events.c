/* AgentEvents: durable events go into the result; live ones to the sink. */
#include "core/core.h"

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
