/* The Slack connector in a build without WITH_CURL=1 (it calls Slack's
 * Web API through libcurl): DEXA_E_UNSUPPORTED, which
 * dexa_connector_tool_source_new reports naming the option. */
#include "dexagents/errors.h"
#include "tools/connector_internal.h"

int dexa__slack_source_new(dexa_tool_source **out, const dexa__connection *c) {
  *out = NULL;
  return DEXA_E_UNSUPPORTED;
}
