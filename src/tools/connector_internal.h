/* Connectors as tools (connector_config.c, connector_slack.c): the parsed
 * configuration and the connector kinds' tool sources. */
#ifndef DEXA_TOOLS_CONNECTOR_INTERNAL_H
#define DEXA_TOOLS_CONNECTOR_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "dexagents/connectors.h"
#include "dexagents/tools.h"

#define DEXA__SLACK_BASE_URL "https://slack.com/api"
#define DEXA__CONNECTOR_TIMEOUT_MS 30000
#define DEXA__CONNECTOR_RATE_WAIT_MS 30000

/* One connection. token is the secret itself (from "token", or read from
 * the variable "tokenEnv" names when the file was loaded). */
typedef struct dexa__connection {
  char *name;
  char *type; /* "slack" */
  char *token;
  char *token_env; /* the variable's name, or NULL */
  char *base_url;  /* without a trailing '/' */
  int64_t timeout_ms;
  int64_t rate_wait_ms;
} dexa__connection;

struct dexa_connector_config {
  dexa__connection *items;
  size_t count;
};

/* Copies c into a new Slack tool source named after the connection. */
int dexa__slack_source_new(dexa_tool_source **out, const dexa__connection *c);

#endif
