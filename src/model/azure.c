/* "azure/<deployment>": Azure OpenAI. The request and the stream are
 * OpenAI's (Chat Completions, or the Responses API with the api option);
 * the key goes in an api-key header (AZURE_OPENAI_API_KEY) and the
 * endpoint is the resource's (AZURE_OPENAI_ENDPOINT, e.g.
 * https://my-resource.openai.azure.com). Without api_version the client
 * uses the v1 surface ({endpoint}/openai/v1/chat/completions or
 * /responses, the deployment as the model); with one, the deployment URLs
 * ({endpoint}/openai/deployments/<deployment>/chat/completions, or
 * {endpoint}/openai/responses) with ?api-version=. prompt_cache_key is
 * opt-in (prompt_caching): older API versions refuse the field. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"
#include "model/provider.h"

static int responses(const dexa__client_cfg *cfg) {
  return cfg->api && strcmp(cfg->api, "responses") == 0;
}

static int url(dexa__call *call, const char *base) {
  const dexa__client_cfg *cfg = call->cfg;
  if (!base) {
    snprintf(call->err, sizeof call->err, "no endpoint (set AZURE_OPENAI_ENDPOINT or the base_url option)");
    return DEXA_E_AUTH;
  }
  const char *version = cfg->api_version ? cfg->api_version : secure_getenv("AZURE_OPENAI_API_VERSION");
  dexa__buf *u = &call->url;
  dexa__buf_puts(u, base);
  /* An endpoint given with its /openai or /openai/v1 suffix is taken as is. */
  size_t n = strlen(base);
  int has_openai = n >= 7 && !strcmp(base + n - 7, "/openai");
  int has_v1 = n >= 10 && !strcmp(base + n - 10, "/openai/v1");
  if (!version || !*version) {
    if (!has_v1) dexa__buf_puts(u, has_openai ? "/v1" : "/openai/v1");
    dexa__buf_puts(u, responses(cfg) ? "/responses" : "/chat/completions");
    return DEXA_OK;
  }
  if (has_v1) u->len -= 3, u->data[u->len] = '\0';
  else if (!has_openai) dexa__buf_puts(u, "/openai");
  if (responses(cfg)) {
    dexa__buf_puts(u, "/responses");
  } else {
    dexa__buf_puts(u, "/deployments/");
    dexa__url_escape(u, cfg->model);
    dexa__buf_puts(u, "/chat/completions");
  }
  dexa__buf_puts(u, "?api-version=");
  dexa__url_escape(u, version);
  return DEXA_OK;
}

static int build_body(const dexa__client_cfg *cfg, const dexa_model_request *req, dexa__buf *b) {
  return responses(cfg) ? dexa__openai_responses_body(cfg, req, b) : dexa__openai_chat_body(cfg, req, b);
}

static int auth(dexa__call *call) { return dexa__auth_key_header(call, "api-key", ""); }

/* The stream is the one of the wire format the options chose (cfg->wire). */
const dexa__provider dexa__azure_provider = {
    "azure/", NULL, "AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_KEY", 1,
    DEXA__OPT_API_KEY | DEXA__OPT_REASONING_EFFORT | DEXA__OPT_REASONING_SUMMARY |
        DEXA__OPT_SEED | DEXA__OPT_STOP | DEXA__OPT_STRICT_TOOLS | DEXA__OPT_PROMPT_CACHING |
        DEXA__OPT_AZURE | DEXA__OPT_PARALLEL_TOOLS,
    4, 0, url, build_body, auth, &dexa__openai_chat_stream};
