/* dexa_model_client_new's two halves: the checks and the demo models
 * (client_new.c, in every build) and the provider clients (client.c with
 * libcurl, or providers_absent.c in a build without WITH_CURL=1). */
#ifndef DEXA_MODEL_CLIENT_NEW_H
#define DEXA_MODEL_CLIENT_NEW_H

#include <stddef.h>

#include "dexagents/model.h"

/* The client of a provider model name (its prefix is one of
 * openai/, openai-chat/, anthropic/, gemini/, vertex/, bedrock/, azure/):
 * the contract of dexa_model_client_new, name and out already checked. */
int dexa__model_provider_new(dexa_model **out, const char *name, const char *options_json,
                             size_t options_len, char *errmsg, size_t errmsg_size);

#endif
