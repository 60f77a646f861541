/* Elicitation and sampling requests as questions, answers as results
 * (mcp_ask.c). */
#ifndef DEXA_TOOLS_MCP_ASK_H
#define DEXA_TOOLS_MCP_ASK_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* "el:<16 hex>" or "sa:<16 hex>": the method and params (without _meta)
 * of the server's request msg, hashed (FNV-1a 64). */
void dexa__mcp_request_key(const cJSON *msg, char *out, size_t size);

/* The first answer of answers with key not yet used (used: a bitmap of the
 * first 32 answers, updated), or NULL. */
const cJSON *dexa__mcp_find_answer(const cJSON *answers, const char *key, unsigned *used);

/* An elicitation's params as a question (JSON text, malloc'd), or NULL with
 * *why when it cannot be shown. */
char *dexa__mcp_elicitation_question(const cJSON *params, const char *key, const char **why);
/* The elicitation result for a recorded answer. */
cJSON *dexa__mcp_elicitation_result(const cJSON *params, const cJSON *answer);

/* sampling/createMessage params as the request of
 * dexa_tool_invocation_sample (malloc'd), or NULL when malformed. */
char *dexa__mcp_sampling_request(const cJSON *params);
/* The question that asks the person to allow a sampling request. */
char *dexa__mcp_sampling_question(const char *server, const cJSON *params, const char *key);
/* The CreateMessageResult for the sampler's reply. */
cJSON *dexa__mcp_sampling_result(const char *reply_json);

#endif
