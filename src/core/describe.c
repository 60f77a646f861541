/* dexa_flow_describe: the flow's Steps, options, state and RPCs as JSON, so
 * a host can register the flow with its engine. */
#include <stdlib.h>

#include "core/flow_table.h"
#include "core/flow_transitions.h"

static void put_options(dexa__buf *b, const dexa__step_options *o) {
  dexa__buf_printf(b,
                   "{\"max_attempts\":%d,\"initial_backoff_ms\":%lld,"
                   "\"backoff_coefficient\":%.3g,\"max_backoff_ms\":%lld,\"timeout_ms\":%lld,"
                   "\"has_wait_for\":%s,\"locked\":%s,\"recovery\":",
                   o->max_attempts, (long long)o->initial_backoff_ms, o->backoff_coefficient,
                   (long long)o->max_backoff_ms, (long long)o->timeout_ms,
                   o->has_wait_for ? "true" : "false", o->locked ? "true" : "false");
  dexa__buf_json_cstr(b, o->recovery);
  dexa__buf_putc(b, '}');
}

static void put_steps(dexa__buf *b, const dexa_agent *a) {
  size_t n;
  const dexa__step_def *s = dexa__flow_steps(&n);
  dexa__buf_puts(b, ",\"steps\":[");
  for (size_t i = 0; i < n; i++) {
    dexa__step_options o;
    dexa__flow_step_options(a, s[i].name, &o);
    if (i) dexa__buf_putc(b, ',');
    dexa__buf_puts(b, "{\"name\":");
    dexa__buf_json_cstr(b, s[i].name);
    dexa__buf_puts(b, ",\"options\":");
    put_options(b, &o);
    dexa__buf_putc(b, '}');
  }
  dexa__buf_putc(b, ']');
}

static void put_rpcs(dexa__buf *b) {
  size_t n;
  const dexa__rpc_def *r = dexa__flow_rpcs(&n);
  dexa__buf_puts(b, ",\"rpcs\":[");
  for (size_t i = 0; i < n; i++) {
    if (i) dexa__buf_putc(b, ',');
    dexa__buf_puts(b, "{\"name\":");
    dexa__buf_json_cstr(b, r[i].name);
    dexa__buf_printf(b, ",\"read_only\":%s,\"interrupts\":%s}", r[i].read_only ? "true" : "false",
                     r[i].interrupts ? "true" : "false");
  }
  dexa__buf_putc(b, ']');
}

DEXA_EXTERN int dexa_flow_describe(char **out, size_t *out_len, const dexa_agent *agent) {
  if (!out || !agent) return DEXA_E_INVALID_ARG;
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_puts(&b, "{\"flow_type\":");
  dexa__buf_json_cstr(&b, agent->flow_type);
  dexa__buf_puts(&b, ",\"start_step\":\"" STEP_START_AGENT_SESSION "\"");
  put_steps(&b, agent);
  put_rpcs(&b);
  dexa__buf_puts(&b,
                 ",\"attributes\":[\"" ATTR_SESSION "\",\"" ATTR_TRANSCRIPT "\",\"" ATTR_TURN
                 "\",\"" ATTR_QUEUE_STATE "\",\"" ATTR_MESSAGES "\",\"" ATTR_MESSAGE_CHUNKS
                 "\",\"" ATTR_QUEUED_MESSAGES "\",\"" ATTR_PLAN "\",\"" ATTR_TURN_CONTROL
                 "\",\"" ATTR_PENDING_CALLS "\",\"" ATTR_CONTEXT_SUMMARY "\",\"" ATTR_USAGE
                 "\",\"" ATTR_HARNESS "\",\"" ATTR_HARNESS_STATE "\",\"" ATTR_HARNESS_ENTRIES
                 "\",\"" ATTR_SESSION_END "\"]"
                 ",\"channels\":[\"" CHAN_USER_MESSAGE_SIGNALS "\",\"" CHAN_TOOL_RESULTS
                 "\",\"" CHAN_TOOL_DECISIONS "\"]"
                 ",\"streams\":[\"" STREAM_EVENTS "\"],\"transitions\":");
  dexa__flow_transitions_json(&b);
  dexa__buf_putc(&b, '}');
  *out = dexa__buf_steal(&b, out_len);
  return *out ? DEXA_OK : DEXA_E_NOMEM;
}
