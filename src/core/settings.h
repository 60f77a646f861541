/* Session settings beyond the model (StartAgentSession's input, kept in
 * AgentSession): "on_truncation" ("continue", the default, or "fail") and
 * "output_schema" ({"name"?, "schema", "strict"?}: structured output for
 * every final answer of the session). */
#ifndef DEXA_CORE_SETTINGS_H
#define DEXA_CORE_SETTINGS_H

#include "core/core.h"

/* Checks the settings; fails the result with the reason
 * (DEXA_E_INVALID_ARG) and returns its code, else DEXA_OK. */
int dexa__settings_check(dexa__ctx *c, const cJSON *settings);

/* Appends the kept settings to the AgentSession object being written, each
 * as ,"key":value. */
void dexa__settings_put(dexa__buf *b, const cJSON *settings);

/* 1 when the session's turns fail on a truncated answer; *rc gets a read
 * error. */
int dexa__settings_fail_on_truncation(dexa__ctx *c, int *rc);

#endif
