/* Model requests built from durable state. */
#ifndef DEXA_CORE_MODEL_REQUEST_H
#define DEXA_CORE_MODEL_REQUEST_H

#include "core/core.h"

/* Fills req (initialized) with the request document for one model call. */
int dexa__model_request_build(dexa__ctx *c, const dexa_model *model, const dexa__turn *turn,
                              int64_t round, const dexa_tool_list *tools, dexa_model_request *req);

#endif
