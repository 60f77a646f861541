/* The options of dexa_model_client_new (see dexa_model_client_new(3)):
 * each is checked for its type and range, and refused by name for a
 * provider that does not take it, so a typo or a misplaced option never
 * passes silently. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dexagents/errors.h"
#include "model/provider.h"
#include "util/errmsg.h"

#define MAX_KV 32
#define MAX_FALLBACKS 8

/* One option's parse: DEXA_OK, or DEXA_E_INVALID_ARG with why (static text
 * naming what is expected) set. */
typedef struct parse {
  dexa__client_cfg *c;
  const char *why;
  char ***fallbacks;
  size_t *fallback_count;
} parse;

static int invalid(parse *p, const char *why) {
  p->why = why;
  return DEXA_E_INVALID_ARG;
}

static int opt_str(parse *p, const cJSON *v, char **slot, const char *const *allowed,
                   const char *why) {
  if (!cJSON_IsString(v) || !*v->valuestring) return invalid(p, why);
  if (allowed) {
    int ok = 0;
    for (size_t i = 0; allowed[i]; i++) ok |= strcmp(v->valuestring, allowed[i]) == 0;
    if (!ok) return invalid(p, why);
  }
  free(*slot);
  *slot = strdup(v->valuestring);
  return *slot ? DEXA_OK : DEXA_E_NOMEM;
}

static int opt_i64(parse *p, const cJSON *v, int64_t *slot, int64_t min, int64_t max,
                   const char *why) {
  if (!cJSON_IsNumber(v) || !(v->valuedouble >= (double)min && v->valuedouble <= (double)max) ||
      v->valuedouble != (double)(int64_t)v->valuedouble)
    return invalid(p, why);
  *slot = (int64_t)v->valuedouble;
  return DEXA_OK;
}

static int opt_num(parse *p, const cJSON *v, double *slot, int *has, double min, double max,
                   const char *why) {
  if (!cJSON_IsNumber(v) || !(v->valuedouble >= min && v->valuedouble <= max)) return invalid(p, why);
  *slot = v->valuedouble;
  if (has) *has = 1;
  return DEXA_OK;
}

static int opt_bool(parse *p, const cJSON *v, int *slot, const char *why) {
  if (!cJSON_IsBool(v)) return invalid(p, why);
  *slot = cJSON_IsTrue(v);
  return DEXA_OK;
}

static int opt_url(parse *p, const cJSON *v, char **slot) {
  int rc = opt_str(p, v, slot, NULL, "an http:// or https:// URL");
  if (rc != DEXA_OK) return rc;
  if (strncmp(*slot, "http://", 7) && strncmp(*slot, "https://", 8))
    return invalid(p, "an http:// or https:// URL");
  for (const char *s = *slot; *s; s++)
    if ((unsigned char)*s <= 0x20 || *s == 0x7f) return invalid(p, "a URL without spaces");
  size_t n = strlen(*slot);
  while (n && (*slot)[n - 1] == '/') (*slot)[--n] = '\0';
  return DEXA_OK;
}

/* An HTTP header name (RFC 9110 token) that a client does not own: not the
 * framing ones, and not the credential headers (a second Authorization
 * would be sent beside the client's; credentials go in api_key). */
static int header_name_ok(const char *s) {
  static const char *const owned[] = {"content-type", "content-length", "host", "accept",
                                      "transfer-encoding", "expect", "connection",
                                      "authorization", "x-api-key", "api-key", "x-goog-api-key",
                                      "anthropic-version", NULL};
  if (!*s || strlen(s) > 100) return 0;
  for (const char *q = s; *q; q++)
    if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') ||
          strchr("!#$%&'*+-.^_`|~", *q)))
      return 0;
  for (size_t i = 0; owned[i]; i++)
    if (strcasecmp(s, owned[i]) == 0) return 0;
  return strncasecmp(s, "x-amz-", 6) != 0; /* Bedrock signs those */
}

/* Printable text without CR/LF (a header value, a query value). */
static int value_ok(const char *s, size_t max) {
  if (strlen(s) > max) return 0;
  for (const char *q = s; *q; q++)
    if ((unsigned char)*q < 0x20 || *q == 0x7f) return 0;
  return 1;
}

static int query_name_ok(const char *s) {
  if (!*s || strlen(s) > 100) return 0;
  for (const char *q = s; *q; q++)
    if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') ||
          strchr("-._~", *q)))
      return 0;
  return 1;
}

static void kv_free(dexa__kv *kv, size_t n);

static int opt_kv(parse *p, const cJSON *v, dexa__kv **slot, size_t *count, int headers) {
  const char *why = headers ? "an object of header names (not Content-Type, Host, Accept, x-amz-* or "
                              "a credential header: credentials go in api_key) to printable string values"
                            : "an object of parameter names ([A-Za-z0-9._~-]) to printable strings";
  if (!cJSON_IsObject(v) || cJSON_GetArraySize(v) > MAX_KV) return invalid(p, why);
  size_t n = (size_t)cJSON_GetArraySize(v);
  dexa__kv *kv = n ? calloc(n, sizeof *kv) : NULL;
  if (n && !kv) return DEXA_E_NOMEM;
  size_t i = 0;
  int rc = DEXA_OK;
  const cJSON *e;
  cJSON_ArrayForEach(e, v) {
    if (!cJSON_IsString(e) || !(headers ? header_name_ok(e->string) : query_name_ok(e->string)) ||
        !value_ok(e->valuestring, 4096)) {
      rc = invalid(p, why);
      break;
    }
    kv[i].name = strdup(e->string);
    kv[i].value = strdup(e->valuestring);
    i++;
    if (!kv[i - 1].name || !kv[i - 1].value) {
      rc = DEXA_E_NOMEM;
      break;
    }
  }
  if (rc != DEXA_OK) {
    for (size_t k = 0; k < i; k++) free(kv[k].name), free(kv[k].value);
    free(kv);
    return rc;
  }
  kv_free(*slot, *count); /* a key given twice: the last one holds */
  *slot = kv;
  *count = n;
  return DEXA_OK;
}

static int opt_stop(parse *p, const cJSON *v) {
  dexa__client_cfg *c = p->c;
  int max = c->provider->max_stop;
  if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) < 1 || cJSON_GetArraySize(v) > max)
    return invalid(p, max >= 5 ? "an array of 1 to 5 non-empty strings"
                               : "an array of 1 to 4 non-empty strings");
  size_t n = (size_t)cJSON_GetArraySize(v);
  for (size_t i = 0; i < c->stop_count; i++) free(c->stop[i]);
  free(c->stop);
  c->stop_count = 0;
  c->stop = calloc(n, sizeof *c->stop);
  if (!c->stop) return DEXA_E_NOMEM;
  const cJSON *e;
  cJSON_ArrayForEach(e, v) {
    if (!cJSON_IsString(e) || !*e->valuestring || strlen(e->valuestring) > 256)
      return invalid(p, "an array of non-empty strings of at most 256 bytes");
    if (!(c->stop[c->stop_count++] = strdup(e->valuestring))) return DEXA_E_NOMEM;
  }
  return DEXA_OK;
}

static int opt_price(parse *p, const cJSON *v) {
  static const char *const keys[] = {"input", "output", "cached_input", "cache_write"};
  const char *why = "{\"input\", \"output\", \"cached_input\"?, \"cache_write\"?}: USD per million "
                    "tokens, numbers >= 0";
  dexa__price *pr = &p->c->price;
  if (!cJSON_IsObject(v)) return invalid(p, why);
  double *slots[] = {&pr->input, &pr->output, &pr->cached_input, &pr->cache_write};
  int seen[4] = {0};
  const cJSON *e;
  cJSON_ArrayForEach(e, v) {
    int k = -1;
    for (int i = 0; i < 4; i++)
      if (strcmp(e->string, keys[i]) == 0) k = i;
    if (k < 0 || opt_num(p, e, slots[k], &seen[k], 0, 1e6, why) != DEXA_OK) return invalid(p, why);
  }
  if (!seen[0] || !seen[1]) return invalid(p, why);
  if (!seen[2]) pr->cached_input = pr->input; /* no cache discount named: none */
  if (!seen[3]) pr->cache_write = pr->input;
  pr->set = 1;
  return DEXA_OK;
}

static int opt_fallbacks(parse *p, const cJSON *v) {
  const char *why = "an array of up to 8 model names of the same agent";
  if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) > MAX_FALLBACKS) return invalid(p, why);
  size_t n = (size_t)cJSON_GetArraySize(v);
  char **names = calloc(n ? n : 1, sizeof *names);
  if (!names) return DEXA_E_NOMEM;
  size_t i = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, v) {
    if (!cJSON_IsString(e) || !*e->valuestring || !(names[i++] = strdup(e->valuestring))) {
      for (size_t k = 0; k < i; k++) free(names[k]);
      free(names);
      return cJSON_IsString(e) && *e->valuestring ? DEXA_E_NOMEM : invalid(p, why);
    }
  }
  for (size_t k = 0; k < *p->fallback_count; k++) free((*p->fallbacks)[k]);
  free(*p->fallbacks);
  *p->fallbacks = names;
  *p->fallback_count = n;
  return DEXA_OK;
}

static const char *const efforts[] = {"none", "minimal", "low", "medium", "high", "xhigh", NULL};
static const char *const summaries[] = {"auto", "concise", "detailed", NULL};
static const char *const choices[] = {"auto", "required", "none", NULL};

/* Options every client takes, then those of some providers (bit). */
static int set_common(parse *p, const cJSON *v, const char *k) {
  dexa__client_cfg *c = p->c;
  if (!strcmp(k, "base_url")) return opt_url(p, v, &c->base_url);
  if (!strcmp(k, "timeout_ms")) return opt_i64(p, v, &c->timeout_ms, 1, 86400000, "1 to 86400000");
  if (!strcmp(k, "connect_timeout_ms"))
    return opt_i64(p, v, &c->connect_timeout_ms, 1, 600000, "1 to 600000");
  if (!strcmp(k, "max_output_tokens"))
    return opt_i64(p, v, &c->max_output_tokens, 1, 100000000, "a positive integer");
  if (!strcmp(k, "tool_choice"))
    return opt_str(p, v, &c->tool_choice, choices, "\"auto\", \"required\" or \"none\"");
  if (!strcmp(k, "temperature"))
    return opt_num(p, v, &c->temperature, &c->has_temperature, 0, 2, "a number from 0 to 2");
  if (!strcmp(k, "top_p")) return opt_num(p, v, &c->top_p, &c->has_top_p, 0, 1, "a number from 0 to 1");
  if (!strcmp(k, "headers")) return opt_kv(p, v, &c->headers, &c->header_count, 1);
  if (!strcmp(k, "query")) return opt_kv(p, v, &c->query, &c->query_count, 0);
  if (!strcmp(k, "price")) return opt_price(p, v);
  if (!strcmp(k, "fallbacks")) return opt_fallbacks(p, v);
  return DEXA_E_UNKNOWN_KEY;
}

typedef struct gated {
  const char *key;
  unsigned bit;
} gated;

static const gated gates[] = {
    {"api_key", DEXA__OPT_API_KEY},
    {"api_key_env", DEXA__OPT_API_KEY},
    {"reasoning_effort", DEXA__OPT_REASONING_EFFORT},
    {"reasoning_summary", DEXA__OPT_REASONING_SUMMARY},
    {"encrypted_reasoning", DEXA__OPT_REASONING_SUMMARY},
    {"thinking_budget_tokens", DEXA__OPT_THINKING},
    {"anthropic_version", DEXA__OPT_ANTHROPIC_VERSION},
    {"seed", DEXA__OPT_SEED},
    {"stop", DEXA__OPT_STOP},
    {"strict_tools", DEXA__OPT_STRICT_TOOLS},
    {"cache_ttl", DEXA__OPT_CACHE_TTL},
    {"prompt_caching", DEXA__OPT_PROMPT_CACHING},
    {"parallel_tool_calls", DEXA__OPT_PARALLEL_TOOLS},
    {"project", DEXA__OPT_GOOGLE_CLOUD},
    {"location", DEXA__OPT_GOOGLE_CLOUD},
    {"access_token_env", DEXA__OPT_GOOGLE_CLOUD},
    {"token_command", DEXA__OPT_GOOGLE_CLOUD},
    {"token_ttl_s", DEXA__OPT_GOOGLE_CLOUD},
    {"region", DEXA__OPT_REGION},
    {"api_version", DEXA__OPT_AZURE},
    {"api", DEXA__OPT_AZURE},
};

/* A name a path or host can carry as is (project, location, region). */
static int opt_name(parse *p, const cJSON *v, char **slot) {
  int rc = opt_str(p, v, slot, NULL, "letters, digits, '-', '_' or '.'");
  for (const char *s = rc == DEXA_OK ? *slot : ""; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
          strchr("-_.", *s)))
      return invalid(p, "letters, digits, '-', '_' or '.'");
  return rc;
}

static int set_gated(parse *p, const cJSON *v, const char *k) {
  static const char *const ttls[] = {"5m", "1h", NULL};
  static const char *const apis[] = {"chat", "responses", NULL};
  dexa__client_cfg *c = p->c;
  if (!strcmp(k, "api_key")) return opt_str(p, v, &c->api_key, NULL, "a non-empty string");
  if (!strcmp(k, "api_key_env")) return opt_str(p, v, &c->api_key_env, NULL, "a variable name");
  if (!strcmp(k, "reasoning_effort"))
    return opt_str(p, v, &c->reasoning_effort, efforts,
                   "\"none\", \"minimal\", \"low\", \"medium\", \"high\" or \"xhigh\"");
  if (!strcmp(k, "reasoning_summary"))
    return opt_str(p, v, &c->reasoning_summary, summaries, "\"auto\", \"concise\" or \"detailed\"");
  if (!strcmp(k, "encrypted_reasoning")) return opt_bool(p, v, &c->encrypted_reasoning, "true or false");
  if (!strcmp(k, "thinking_budget_tokens"))
    return opt_i64(p, v, &c->thinking_budget_tokens, c->provider == &dexa__gemini_provider ||
                                                             c->provider == &dexa__vertex_provider
                                                         ? 1
                                                         : 1024,
                   100000000, "an integer of at least 1024 (Gemini: 1)");
  if (!strcmp(k, "anthropic_version")) return opt_str(p, v, &c->anthropic_version, NULL, "a date");
  if (!strcmp(k, "seed")) {
    c->has_seed = 1;
    return opt_i64(p, v, &c->seed, -2147483648LL, 2147483647LL, "a 32-bit integer");
  }
  if (!strcmp(k, "stop")) return opt_stop(p, v);
  if (!strcmp(k, "strict_tools")) return opt_bool(p, v, &c->strict_tools, "true or false");
  if (!strcmp(k, "cache_ttl")) return opt_str(p, v, &c->cache_ttl, ttls, "\"5m\" or \"1h\"");
  if (!strcmp(k, "prompt_caching")) return opt_bool(p, v, &c->prompt_caching, "true or false");
  if (!strcmp(k, "parallel_tool_calls")) return opt_bool(p, v, &c->parallel_tool_calls, "true or false");
  if (!strcmp(k, "project") ) return opt_name(p, v, &c->project);
  if (!strcmp(k, "location")) return opt_name(p, v, &c->location);
  if (!strcmp(k, "access_token_env")) return opt_str(p, v, &c->access_token_env, NULL, "a variable name");
  if (!strcmp(k, "token_command")) return opt_str(p, v, &c->token_command, NULL, "a shell command");
  if (!strcmp(k, "token_ttl_s")) return opt_i64(p, v, &c->token_ttl_s, 1, 3600, "1 to 3600");
  if (!strcmp(k, "region")) return opt_name(p, v, &c->region);
  if (!strcmp(k, "api_version")) return opt_name(p, v, &c->api_version);
  if (!strcmp(k, "api")) return opt_str(p, v, &c->api, apis, "\"chat\" or \"responses\"");
  return DEXA_E_UNKNOWN_KEY;
}

static int set_option(parse *p, const cJSON *v) {
  const char *k = v->string;
  int rc = set_common(p, v, k);
  if (rc != DEXA_E_UNKNOWN_KEY) return rc;
  for (size_t i = 0; i < sizeof gates / sizeof *gates; i++)
    if (!strcmp(k, gates[i].key))
      return (p->c->provider->options & gates[i].bit) ? set_gated(p, v, k) : DEXA_E_UNKNOWN_KEY;
  return DEXA_E_UNKNOWN_KEY;
}

/* Rules between options, and what azure/'s api decides. */
static int check_combination(dexa__client_cfg *c, char *errmsg, size_t n) {
  const dexa__provider *p = c->provider;
  int anthropic_like = p == &dexa__anthropic_provider || p == &dexa__bedrock_provider;
  if (c->thinking_budget_tokens > 0 && c->tool_choice && !strcmp(c->tool_choice, "required") &&
      anthropic_like)
    return dexa__say(errmsg, n, DEXA_E_INVALID_ARG,
               "model options: Anthropic does not allow a forced tool_choice with thinking");
  if (c->thinking_budget_tokens > 0 && anthropic_like &&
      ((c->has_temperature && c->temperature != 1.0) || (c->has_top_p && c->top_p < 0.95)))
    return dexa__say(errmsg, n, DEXA_E_INVALID_ARG,
               "model options: with thinking, Anthropic takes temperature 1 only and top_p >= 0.95");
  if (p == &dexa__bedrock_provider && c->tool_choice && !strcmp(c->tool_choice, "none"))
    return dexa__say(errmsg, n, DEXA_E_INVALID_ARG,
               "model options: bedrock/ has no tool_choice \"none\" (leave tools out instead)");
  if (p == &dexa__vertex_provider && c->token_command && c->api_key)
    return dexa__say(errmsg, n, DEXA_E_INVALID_ARG, "model options: give api_key or token_command, not both");
  if (p != &dexa__azure_provider) return DEXA_OK;
  int responses = c->api && !strcmp(c->api, "responses");
  c->wire = responses ? &dexa__openai_responses_provider : &dexa__openai_chat_provider;
  if (responses && (c->has_seed || c->stop_count))
    return dexa__say(errmsg, n, DEXA_E_UNKNOWN_KEY,
               "model options: seed and stop are not taken by the Responses API (api \"chat\" takes them)");
  if (!responses && (c->reasoning_summary || c->encrypted_reasoning == 1))
    return dexa__say(errmsg, n, DEXA_E_UNKNOWN_KEY,
               "model options: reasoning_summary and encrypted_reasoning need api \"responses\"");
  return DEXA_OK;
}

/* Responses API models that reason: their reasoning items must come back
 * encrypted to be replayed statelessly; other models refuse the include. */
static int looks_reasoning(const char *model) {
  static const char *const prefixes[] = {"o1", "o3", "o4", "gpt-5", "codex", "gpt-oss", NULL};
  for (size_t i = 0; prefixes[i]; i++)
    if (!strncmp(model, prefixes[i], strlen(prefixes[i]))) return 1;
  return 0;
}

int dexa__client_options(dexa__client_cfg *c, const char *json, size_t len, char ***fallbacks,
                         size_t *fallback_count, char *errmsg, size_t n) {
  c->prompt_caching = c->provider->default_caching;
  c->encrypted_reasoning = -1;
  cJSON *o = NULL;
  int rc = DEXA_OK;
  if (json && len) {
    o = cJSON_ParseWithLength(json, len);
    if (!cJSON_IsObject(o)) {
      cJSON_Delete(o);
      return dexa__say(errmsg, n, DEXA_E_INVALID_JSON, "model options: not a JSON object");
    }
  }
  parse p = {c, NULL, fallbacks, fallback_count};
  const cJSON *v;
  cJSON_ArrayForEach(v, o) {
    rc = set_option(&p, v);
    if (rc == DEXA_E_UNKNOWN_KEY)
      dexa__say(errmsg, n, rc, "model options: unknown key \"%.64s\" for %s", v->string, c->name);
    else if (rc == DEXA_E_INVALID_ARG)
      dexa__say(errmsg, n, rc, "model options: bad value for \"%s\": expected %s", v->string,
          p.why ? p.why : "another value");
    else if (rc != DEXA_OK)
      dexa__say(errmsg, n, rc, "model options: %s", dexa_strerror(rc));
    if (rc != DEXA_OK) break;
  }
  cJSON_Delete(o);
  if (rc == DEXA_OK) rc = check_combination(c, errmsg, n);
  if (c->encrypted_reasoning < 0)
    c->encrypted_reasoning = c->reasoning_effort || c->reasoning_summary || looks_reasoning(c->model);
  return rc;
}

static void kv_free(dexa__kv *kv, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(kv[i].name);
    if (kv[i].value) memset(kv[i].value, 0, strlen(kv[i].value)); /* may hold a credential */
    free(kv[i].value);
  }
  free(kv);
}

void dexa__client_cfg_free(dexa__client_cfg *c) {
  if (!c) return;
  free(c->name);
  free(c->base_url);
  if (c->api_key) memset(c->api_key, 0, strlen(c->api_key));
  free(c->api_key);
  free(c->api_key_env);
  free(c->reasoning_effort);
  free(c->reasoning_summary);
  free(c->anthropic_version);
  free(c->tool_choice);
  for (size_t i = 0; i < c->stop_count; i++) free(c->stop[i]);
  free(c->stop);
  kv_free(c->headers, c->header_count);
  kv_free(c->query, c->query_count);
  free(c->cache_ttl);
  free(c->project);
  free(c->location);
  free(c->access_token_env);
  free(c->token_command);
  if (c->token.token) memset(c->token.token, 0, strlen(c->token.token));
  free(c->token.token);
  pthread_mutex_destroy(&c->token.mu);
  free(c->region);
  free(c->api_version);
  free(c->api);
  free(c);
}
