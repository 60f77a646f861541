/* The OTLP exporter's sender in a build without WITH_CURL=1: the OTEL_*
 * variables are still read and checked, but no exporter starts; the
 * runtime says why (dexa_runtime_trace_stats: "exporter"). The tracing
 * hook of the runtime options works in every build. */
#include "dexagents/errors.h"
#include "trace/otlp.h"

int dexa__otlp_http_sender_new(dexa__otlp_sender *out, const dexa__otlp_config *cfg) {
  (void)out;
  (void)cfg;
  return DEXA_E_UNSUPPORTED;
}
