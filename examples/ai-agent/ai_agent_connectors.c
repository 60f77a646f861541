/* The Slack connection of the AI Agent: support-slack, from the file that
 * DEX_CONNECTOR_CONFIG_FILE names (see dexa_connector_config_load(3)). It
 * is opened once, at start: no variable or no file means no Slack tools
 * (said once); a file that is incomplete or invalid, or without
 * support-slack, stops the start. The agent then offers
 * slack_post_thread_reply, which waits for Approve and runs once. */
#include <stdio.h>
#include <stdlib.h>

#include "ai_agent.h"

int ai_agent_slack_new(dexa_tool_source **out) {
  *out = NULL;
  const char *path = getenv("DEX_CONNECTOR_CONFIG_FILE");
  if (!path || !*path) {
    printf("ai-agent: no Slack tools: DEX_CONNECTOR_CONFIG_FILE is not set\n");
    return 0;
  }
  dexa_connector_config *cfg = NULL;
  char err[300] = "";
  int rc = dexa_connector_config_load(&cfg, path, NULL, 0, err, sizeof err);
  if (rc == DEXA_E_NOT_FOUND) {
    printf("ai-agent: no Slack tools: %s does not exist\n", path);
    return 0;
  }
  if (rc == DEXA_OK) rc = dexa_connector_tool_source_new(out, cfg, "support-slack", err, sizeof err);
  dexa_connector_config_free(cfg);
  if (rc != DEXA_OK) {
    fprintf(stderr, "ai-agent: DEX_CONNECTOR_CONFIG_FILE %s: %s\n", path, err);
    return -1;
  }
  printf("ai-agent: Slack connection support-slack: tool slack_post_thread_reply\n");
  return 0;
}
