/* The model clients of the provider APIs share one configuration and one
 * call path (client.c); a provider contributes its endpoint, credentials,
 * request body and stream decoder. */
#ifndef DEXA_MODEL_PROVIDER_H
#define DEXA_MODEL_PROVIDER_H

#include <pthread.h>
#include <stdint.h>

#include "dexagents/model.h"
#include "model/stream.h"
#include "util/buf.h"

typedef struct dexa__provider dexa__provider;

/* A name and value (custom headers, query parameters). */
typedef struct dexa__kv {
  char *name;
  char *value;
} dexa__kv;

/* USD per million tokens (the "price" option); set is 0 without one. */
typedef struct dexa__price {
  double input, output, cached_input, cache_write;
  int set;
} dexa__price;

/* A bearer token read from a command, kept for token_ttl_s (vertex/). */
typedef struct dexa__token_cache {
  pthread_mutex_t mu;
  char *token;
  int64_t expires_s;
} dexa__token_cache;

/* A client's configuration, from dexa_model_client_new's options. Owned by
 * the client; read-only once created (calls run concurrently), but for the
 * token cache, which has its own lock. */
typedef struct dexa__client_cfg {
  const dexa__provider *provider;
  const dexa__provider *wire; /* the body and stream it speaks (azure/: openai's) */
  char *name;               /* "openai/gpt-5-mini" */
  const char *model;        /* the provider's model id: name past the prefix */
  char *base_url;           /* NULL: base_url_env or the provider default */
  char *api_key;            /* NULL: read api_key_env at each call */
  char *api_key_env;
  int64_t timeout_ms;       /* default 900000 */
  int64_t connect_timeout_ms; /* default 30000 */
  int64_t max_output_tokens;  /* 0: provider default (Anthropic, Bedrock: 8192) */
  char *reasoning_effort;     /* OpenAI: "minimal".."high"; NULL: not sent */
  char *reasoning_summary;    /* Responses: default "auto" with an effort */
  int64_t thinking_budget_tokens; /* Anthropic, Gemini, Bedrock thinking; 0: off */
  char *anthropic_version;    /* default DEXA__ANTHROPIC_VERSION */
  char *tool_choice;          /* "auto" (default), "required", "none" */
  int parallel_tool_calls;    /* 1 (default) or 0 */
  /* sampling and stopping */
  double temperature, top_p;
  int has_temperature, has_top_p;
  int64_t seed;
  int has_seed;
  char **stop;
  size_t stop_count;
  /* HTTP extras */
  dexa__kv *headers;
  size_t header_count;
  dexa__kv *query;
  size_t query_count;
  int strict_tools;           /* tools sent with strict:true (OpenAI, Anthropic) */
  int prompt_caching;         /* 1 on, 0 off (defaults by provider, set at creation) */
  char *cache_ttl;            /* Anthropic: "5m" (default) or "1h" */
  int encrypted_reasoning;    /* Responses: include and replay encrypted reasoning */
  dexa__price price;
  /* vertex/ */
  char *project, *location;
  char *access_token_env;     /* default GOOGLE_CLOUD_ACCESS_TOKEN */
  char *token_command;        /* run by /bin/sh -c when the variable is unset */
  int64_t token_ttl_s;        /* default 300 */
  dexa__token_cache token;
  /* bedrock/ */
  char *region;
  /* azure/ */
  char *api_version;          /* deployment URLs with ?api-version=; NULL: the v1 surface */
  char *api;                  /* "chat" (default) or "responses" */
} dexa__client_cfg;

#define DEXA__ANTHROPIC_VERSION "2023-06-01"
#define DEXA__MAX_HEADERS 48

/* One call on the wire: what the provider builds before the POST. */
typedef struct dexa__call {
  const dexa__client_cfg *cfg;
  const dexa_model_request *req;
  dexa__buf url;
  dexa__buf body;
  char *headers[DEXA__MAX_HEADERS]; /* "Name: value", malloc'd; wiped when freed */
  size_t header_count;
  int64_t now_s;                    /* the time the call is signed at */
  int token_from_command;           /* vertex/: a 401 drops the cached token */
  char err[256];                    /* why credentials or the URL failed */
} dexa__call;

void dexa__call_init(dexa__call *call, const dexa__client_cfg *cfg, const dexa_model_request *req,
                     int64_t now_s);
void dexa__call_free(dexa__call *call);

/* Builds the call's URL (with the query option), body and headers
 * (content type, credentials, the headers option). DEXA_OK, or the error
 * with its text in call->err (DEXA_E_MODEL: the provider cannot send what
 * the request asks). */
int dexa__call_prepare(dexa__call *call);

/* Adds "Name: value" to the call's headers. Returns DEXA_OK, DEXA_E_NOMEM,
 * DEXA_E_AUTH (a value with a line break, say in call->err) or
 * DEXA_E_INTERNAL when the list is full. */
int dexa__call_header(dexa__call *call, const char *name, const char *value);

/* Which options a provider takes (bits of dexa__provider.options). */
enum {
  DEXA__OPT_REASONING_EFFORT = 1u << 0,
  DEXA__OPT_REASONING_SUMMARY = 1u << 1,
  DEXA__OPT_THINKING = 1u << 2,
  DEXA__OPT_ANTHROPIC_VERSION = 1u << 3,
  DEXA__OPT_SEED = 1u << 4,
  DEXA__OPT_STOP = 1u << 5,
  DEXA__OPT_STRICT_TOOLS = 1u << 6,
  DEXA__OPT_CACHE_TTL = 1u << 7,
  DEXA__OPT_GOOGLE_CLOUD = 1u << 8, /* project, location, access token */
  DEXA__OPT_REGION = 1u << 9,
  DEXA__OPT_AZURE = 1u << 10,       /* api_version, api */
  DEXA__OPT_API_KEY = 1u << 11,
  DEXA__OPT_PROMPT_CACHING = 1u << 12,
  DEXA__OPT_PARALLEL_TOOLS = 1u << 13
};

struct dexa__provider {
  const char *prefix;          /* "openai/" */
  const char *default_base_url; /* NULL: the url hook makes it */
  const char *base_url_env;    /* e.g. OPENAI_BASE_URL */
  const char *key_env;         /* e.g. OPENAI_API_KEY; NULL: no API key */
  int key_required;            /* openai-chat: servers such as Ollama need none */
  unsigned options;            /* DEXA__OPT_* */
  int max_stop;                /* stop sequences the API takes */
  int default_caching;         /* prompt_caching when the option is absent */
  /* Appends the endpoint's URL to call->url; base is the configured base
   * URL without a trailing '/', or NULL. DEXA_OK, or an error with
   * call->err. */
  int (*url)(dexa__call *call, const char *base);
  /* The JSON request body. Returns DEXA_OK, DEXA_E_NOMEM, DEXA_E_MODEL
   * (something the provider cannot take, with the reason in body as text:
   * see dexa__body_refuse) or the error of a stored message that cannot be
   * read (DEXA_E_CORRUPT). */
  int (*build_body)(const dexa__client_cfg *cfg, const dexa_model_request *req, dexa__buf *body);
  /* Adds the credential headers; called with the final URL and body.
   * DEXA_OK, or DEXA_E_AUTH / DEXA_E_NOMEM with call->err. */
  int (*auth)(dexa__call *call);
  const dexa__stream_ops *stream;
};

extern const dexa__provider dexa__openai_responses_provider;
extern const dexa__provider dexa__openai_chat_provider;
extern const dexa__provider dexa__anthropic_provider;
extern const dexa__provider dexa__gemini_provider;
extern const dexa__provider dexa__vertex_provider;
extern const dexa__provider dexa__bedrock_provider;
extern const dexa__provider dexa__azure_provider;

/* Body builders of the OpenAI wire formats (azure/ reuses them). */
int dexa__openai_responses_body(const dexa__client_cfg *cfg, const dexa_model_request *req,
                                dexa__buf *body);
int dexa__openai_chat_body(const dexa__client_cfg *cfg, const dexa_model_request *req,
                           dexa__buf *body);

/* A provider cannot send what the request asks (an image by URL to
 * Bedrock, structured output to a provider without it): replaces the body
 * with the reason and returns DEXA_E_MODEL, so the call fails for good
 * with that message. */
int dexa__body_refuse(dexa__buf *body, const char *reason);

/* Appends s percent-encoded but for RFC 3986 unreserved characters (a
 * model id as one path segment, a query value). */
void dexa__url_escape(dexa__buf *b, const char *s);

/* Credential helpers for the auth hooks. */
/* The API key: the api_key option, else the variable at call time; NULL. */
const char *dexa__client_key(const dexa__client_cfg *cfg);
/* Adds "header: <prefix><key>"; without a key, DEXA_E_AUTH when the
 * provider needs one, else nothing. */
int dexa__auth_key_header(dexa__call *call, const char *header, const char *prefix);
int dexa__auth_bearer(dexa__call *call); /* Authorization: Bearer <key> */

/* Parses options_json into cfg (see dexa_model_client_new(3)); fallbacks
 * get the "fallbacks" names (malloc'd array of strdup'd names). Returns
 * DEXA_OK or the error with errmsg. */
int dexa__client_options(dexa__client_cfg *cfg, const char *json, size_t len, char ***fallbacks,
                         size_t *fallback_count, char *errmsg, size_t errmsg_size);
void dexa__client_cfg_free(dexa__client_cfg *cfg);

/* Runs one model call for cfg (the generate of every provider client). */
int dexa__client_generate(dexa__client_cfg *cfg, const dexa_model_request *req,
                          dexa_model_reply *reply);

/* The cost of usage at cfg's price (USD), or -1 without a price. */
double dexa__client_cost(const dexa__client_cfg *cfg, const dexa_model_usage *u);

#endif
