/* Model requests built from durable state. */
#ifndef DEXA_CORE_MODEL_REQUEST_H
#define DEXA_CORE_MODEL_REQUEST_H

#include "core/core.h"

/* Fills req (initialized) with the request document for one model call. */
int dexa__model_request_build(dexa__ctx *c, const dexa_model *model, const dexa__turn *turn,
                              int64_t round, const dexa_tool_list *tools, dexa_model_request *req);

/* The parts of a request document, for requests that pick their messages
 * (a harness's segment): the members before the messages, up to and with
 * ,"messages":[ ; one message spliced in as stored; and the end: ] then
 * members (raw JSON members with their leading comma, or NULL), then the
 * tools (each with its "approval" when with_approval), then }. */
int dexa__model_request_head(dexa__ctx *c, const dexa_model *model, const dexa__turn *turn,
                             int64_t round, dexa_model_request *req);
int dexa__model_request_splice(dexa_model_request *req, const char *json, size_t len);
int dexa__model_request_tail(dexa_model_request *req, const dexa_tool_list *tools,
                             const char *members, int with_approval);

#endif
