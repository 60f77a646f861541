/* The model clients of the three provider APIs share one configuration and
 * one call path (client.c); a provider contributes its endpoint, headers,
 * request body and stream decoder. */
#ifndef DEXA_MODEL_PROVIDER_H
#define DEXA_MODEL_PROVIDER_H

#include <stdint.h>

#include "dexagents/model.h"
#include "model/stream.h"
#include "util/buf.h"

typedef struct dexa__provider dexa__provider;

/* A client's configuration, from dexa_model_client_new's options. Owned by
 * the client; read-only once created (calls run concurrently). */
typedef struct dexa__client_cfg {
  const dexa__provider *provider;
  char *name;               /* "openai/gpt-5-mini" */
  const char *model;        /* the provider's model id: name past the prefix */
  char *base_url;           /* NULL: base_url_env or the provider default */
  char *api_key;            /* NULL: read api_key_env at each call */
  char *api_key_env;
  int64_t timeout_ms;       /* default 900000 */
  int64_t connect_timeout_ms; /* default 30000 */
  int64_t max_output_tokens;  /* 0: provider default (Anthropic: 8192) */
  char *reasoning_effort;     /* OpenAI: "minimal".."high"; NULL: not sent */
  char *reasoning_summary;    /* Responses: default "auto" with an effort */
  int64_t thinking_budget_tokens; /* Anthropic thinking; 0: off */
  char *anthropic_version;    /* default DEXA__ANTHROPIC_VERSION */
  char *tool_choice;          /* "auto" (default), "required", "none" */
  int parallel_tool_calls;    /* 1 (default) or 0 */
} dexa__client_cfg;

#define DEXA__ANTHROPIC_VERSION "2023-06-01"

struct dexa__provider {
  const char *prefix;          /* "openai/" */
  const char *path;            /* appended to the base URL */
  const char *default_base_url;
  const char *base_url_env;    /* e.g. OPENAI_BASE_URL */
  const char *key_env;         /* e.g. OPENAI_API_KEY */
  int key_required;            /* openai-chat: servers such as Ollama need none */
  /* "Name: value" header lines for the key (and version), at most 4; each
   * string is malloc'd into out. Returns DEXA_OK or DEXA_E_NOMEM. */
  int (*auth_headers)(const dexa__client_cfg *cfg, const char *key, char **out, size_t *n);
  /* The JSON request body. Returns DEXA_OK, DEXA_E_NOMEM or the error of a
   * stored message that cannot be read (DEXA_E_CORRUPT). */
  int (*build_body)(const dexa__client_cfg *cfg, const dexa_model_request *req, dexa__buf *body);
  const dexa__stream_ops *stream;
};

extern const dexa__provider dexa__openai_responses_provider;
extern const dexa__provider dexa__openai_chat_provider;
extern const dexa__provider dexa__anthropic_provider;

/* Runs one model call for cfg (the generate of every provider client). */
int dexa__client_generate(const dexa__client_cfg *cfg, const dexa_model_request *req,
                          dexa_model_reply *reply);

#endif
