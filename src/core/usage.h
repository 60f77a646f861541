/* Token usage: the full usage of each model call, stored with its reply,
 * and its sums for the newest turn and the whole session in AgentUsage
 * (shown by the snapshot and the turn_finished event). */
#ifndef DEXA_CORE_USAGE_H
#define DEXA_CORE_USAGE_H

#include "core/core.h"

/* Appends the reply's usage as a JSON object: input_tokens, output_tokens,
 * cached_input_tokens, cache_write_tokens, reasoning_tokens, cost_usd when
 * known. */
void dexa__usage_put(dexa__buf *b, const dexa_model_reply *r);

/* Adds one call's usage to AgentUsage: the session's sums and those of
 * turn (restarted when turn is newer than the one summed). A reply without
 * usage still counts as a call. */
int dexa__usage_add(dexa__ctx *c, int64_t turn, const dexa_model_reply *r);

/* Appends ,"usage":{...} with turn's sums when AgentUsage has them. */
int dexa__usage_put_turn(dexa__ctx *c, int64_t turn, dexa__buf *b);

#endif
