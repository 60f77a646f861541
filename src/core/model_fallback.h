/* Running a model call with the model's fallbacks (dexa_model_set_fallbacks):
 * from RunModel's second attempt on, a retryable failure of the session's
 * model moves on to each fallback in order, within the same attempt; each
 * switch is a durable model_fallback event. */
#ifndef DEXA_CORE_MODEL_FALLBACK_H
#define DEXA_CORE_MODEL_FALLBACK_H

#include "core/core.h"

/* Calls *model's generate; on a retryable failure (attempt >= 2) tries the
 * fallbacks, leaving in *model the one whose reply (or last failure) is in
 * reply. Returns the generate's code. */
int dexa__model_generate(dexa__ctx *c, int64_t turn, int64_t round, const dexa_model **model,
                         const dexa_model_request *req, dexa_model_reply *reply);

/* The agent's model named name, or NULL. */
const dexa_model *dexa__agent_model(const dexa_agent *a, const char *name);

#endif
