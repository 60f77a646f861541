/* dexa_model_client_new: provider clients chosen by name prefix, their
 * options, and the one call path they share: key, body, streaming POST,
 * stream decoding and error classification. */
#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dexagents/errors.h"
#include "model/http.h"
#include "iface/model.h"
#include "model/provider.h"
#include "model/retry.h"

static const dexa__provider *const providers[] = {
    &dexa__openai_responses_provider, &dexa__openai_chat_provider, &dexa__anthropic_provider};

static void cfg_free(dexa__client_cfg *c) {
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
  free(c);
}

static void destroy(void *user_data) { cfg_free(user_data); }

static int generate(void *user_data, const dexa_model_request *req, dexa_model_reply *reply) {
  return dexa__client_generate(user_data, req, reply);
}

static int say(char *errmsg, size_t n, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int say(char *errmsg, size_t n, int rc, const char *fmt, ...) {
  if (errmsg && n) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errmsg, n, fmt, ap);
    va_end(ap);
  }
  return rc;
}

/* ---- options ------------------------------------------------------------- */

static int opt_str(const cJSON *v, char **slot, const char *const *allowed) {
  if (!cJSON_IsString(v) || !*v->valuestring) return DEXA_E_INVALID_ARG;
  if (allowed) {
    int ok = 0;
    for (size_t i = 0; allowed[i]; i++) ok |= strcmp(v->valuestring, allowed[i]) == 0;
    if (!ok) return DEXA_E_INVALID_ARG;
  }
  free(*slot);
  *slot = strdup(v->valuestring);
  return *slot ? DEXA_OK : DEXA_E_NOMEM;
}

static int opt_i64(const cJSON *v, int64_t *slot, int64_t min, int64_t max) {
  if (!cJSON_IsNumber(v) || !(v->valuedouble >= (double)min && v->valuedouble <= (double)max) ||
      v->valuedouble != (double)(int64_t)v->valuedouble)
    return DEXA_E_INVALID_ARG;
  *slot = (int64_t)v->valuedouble;
  return DEXA_OK;
}

static int set_option(dexa__client_cfg *c, const cJSON *v) {
  static const char *const choices[] = {"auto", "required", "none", NULL};
  static const char *const efforts[] = {"none", "minimal", "low", "medium", "high", "xhigh", NULL};
  static const char *const summaries[] = {"auto", "concise", "detailed", NULL};
  const char *k = v->string;
  if (!strcmp(k, "base_url")) {
    int rc = opt_str(v, &c->base_url, NULL);
    if (rc == DEXA_OK && strncmp(c->base_url, "http://", 7) && strncmp(c->base_url, "https://", 8))
      return DEXA_E_INVALID_ARG;
    size_t n = rc == DEXA_OK ? strlen(c->base_url) : 0;
    while (n && c->base_url[n - 1] == '/') c->base_url[--n] = '\0';
    return rc;
  }
  if (!strcmp(k, "api_key")) return opt_str(v, &c->api_key, NULL);
  if (!strcmp(k, "api_key_env")) return opt_str(v, &c->api_key_env, NULL);
  if (!strcmp(k, "timeout_ms")) return opt_i64(v, &c->timeout_ms, 1, 86400000);
  if (!strcmp(k, "connect_timeout_ms")) return opt_i64(v, &c->connect_timeout_ms, 1, 600000);
  if (!strcmp(k, "max_output_tokens")) return opt_i64(v, &c->max_output_tokens, 1, 100000000);
  if (!strcmp(k, "reasoning_effort")) return opt_str(v, &c->reasoning_effort, efforts);
  if (!strcmp(k, "reasoning_summary")) return opt_str(v, &c->reasoning_summary, summaries);
  if (!strcmp(k, "thinking_budget_tokens"))
    return opt_i64(v, &c->thinking_budget_tokens, 1024, 100000000);
  if (!strcmp(k, "anthropic_version")) return opt_str(v, &c->anthropic_version, NULL);
  if (!strcmp(k, "tool_choice")) return opt_str(v, &c->tool_choice, choices);
  if (!strcmp(k, "parallel_tool_calls")) {
    if (!cJSON_IsBool(v)) return DEXA_E_INVALID_ARG;
    c->parallel_tool_calls = cJSON_IsTrue(v);
    return DEXA_OK;
  }
  return DEXA_E_UNKNOWN_KEY;
}

/* Options a provider does not use are refused, so a typo never passes. */
static int option_applies(const dexa__provider *p, const char *k) {
  int anthropic = p == &dexa__anthropic_provider;
  if (!strcmp(k, "thinking_budget_tokens") || !strcmp(k, "anthropic_version")) return anthropic;
  if (!strcmp(k, "reasoning_effort")) return !anthropic;
  if (!strcmp(k, "reasoning_summary")) return p == &dexa__openai_responses_provider;
  return 1;
}

static int parse_options(dexa__client_cfg *c, const char *json, size_t len, char *errmsg,
                         size_t n) {
  if (!json || !len) return DEXA_OK;
  cJSON *o = cJSON_ParseWithLength(json, len);
  if (!cJSON_IsObject(o)) {
    cJSON_Delete(o);
    return say(errmsg, n, DEXA_E_INVALID_JSON, "model options: not a JSON object");
  }
  int rc = DEXA_OK;
  const cJSON *v;
  cJSON_ArrayForEach(v, o) {
    rc = option_applies(c->provider, v->string) ? set_option(c, v) : DEXA_E_UNKNOWN_KEY;
    if (rc == DEXA_E_UNKNOWN_KEY)
      say(errmsg, n, rc, "model options: unknown key \"%.64s\" for %s", v->string, c->name);
    else if (rc == DEXA_E_INVALID_ARG)
      say(errmsg, n, rc, "model options: bad value for \"%s\"", v->string);
    if (rc != DEXA_OK) break;
  }
  cJSON_Delete(o);
  if (rc == DEXA_OK && c->thinking_budget_tokens > 0 && c->tool_choice &&
      !strcmp(c->tool_choice, "required"))
    return say(errmsg, n, DEXA_E_INVALID_ARG,
               "model options: Anthropic does not allow a forced tool_choice with thinking");
  return rc;
}

DEXA_EXTERN int dexa_model_client_new(dexa_model **out, const char *name, const char *options_json,
                                      size_t options_len, char *errmsg, size_t errmsg_size) {
  if (errmsg && errmsg_size) errmsg[0] = '\0';
  if (!out) return say(errmsg, errmsg_size, DEXA_E_INVALID_ARG, "out is NULL");
  *out = NULL;
  if (!name || (!options_json && options_len))
    return say(errmsg, errmsg_size, DEXA_E_INVALID_ARG, "name is NULL");
  if (strncmp(name, "mock/", 5) == 0) {
    const char *o = options_json;
    size_t n = options_len;
    while (n && (*o == ' ' || *o == '\n' || *o == '\t' || *o == '\r')) o++, n--;
    while (n && (o[n - 1] == ' ' || o[n - 1] == '\n' || o[n - 1] == '\t' || o[n - 1] == '\r')) n--;
    if (n && !(n == 2 && o[0] == '{' && o[1] == '}'))
      return say(errmsg, errmsg_size, DEXA_E_UNKNOWN_KEY, "the demo model takes no options");
    int rc = dexa_model_demo_new(out, name);
    return rc == DEXA_OK ? rc : say(errmsg, errmsg_size, rc, "demo model %s: %s", name, dexa_strerror(rc));
  }
  const dexa__provider *p = NULL;
  for (size_t i = 0; i < sizeof providers / sizeof *providers; i++)
    if (!strncmp(name, providers[i]->prefix, strlen(providers[i]->prefix))) p = providers[i];
  if (!p)
    return say(errmsg, errmsg_size, DEXA_E_INVALID_ARG,
               "unknown model provider in \"%.80s\" (openai/, openai-chat/, anthropic/, mock/)", name);
  if (!name[strlen(p->prefix)])
    return say(errmsg, errmsg_size, DEXA_E_INVALID_ARG, "no model id after %s", p->prefix);
  int rc = dexa__model_http_global_init();
  if (rc != DEXA_OK) return say(errmsg, errmsg_size, rc, "libcurl global init failed");
  dexa__client_cfg *c = calloc(1, sizeof *c);
  if (!c || !(c->name = strdup(name))) {
    cfg_free(c);
    return say(errmsg, errmsg_size, DEXA_E_NOMEM, "out of memory");
  }
  c->provider = p;
  c->model = c->name + strlen(p->prefix);
  c->timeout_ms = 900000;
  c->connect_timeout_ms = 30000;
  c->parallel_tool_calls = 1;
  rc = parse_options(c, options_json, options_len, errmsg, errmsg_size);
  if (rc == DEXA_OK) {
    dexa_model_vtable vt;
    dexa_model_vtable_init(&vt, sizeof vt);
    vt.generate = generate;
    vt.destroy = destroy;
    rc = dexa_model_new(out, name, &vt, c);
    if (rc != DEXA_OK) say(errmsg, errmsg_size, rc, "out of memory");
  }
  if (rc != DEXA_OK) cfg_free(c);
  return rc;
}

/* ---- one call ------------------------------------------------------------ */

static int feed(void *ctx, const char *bytes, size_t n) {
  return dexa__stream_feed(ctx, bytes, n) == DEXA_OK ? 0 : 1;
}

static int fail(dexa_model_reply *reply, int rc, int64_t retry_after_ms, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(dexa_model_reply *reply, int rc, int64_t retry_after_ms, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  dexa_model_reply_set_error(reply, msg, retry_after_ms);
  return rc;
}

/* The call's outcome once the transfer is over. */
static int outcome(const dexa__client_cfg *cfg, dexa__model_http_response *resp, dexa__stream *st,
                   dexa_model_reply *reply) {
  dexa__decoder *d = st->d;
  if (resp->status >= 400 || (resp->status && resp->status < 200)) {
    char msg[1200], code[64];
    char prefix[64];
    snprintf(prefix, sizeof prefix, "HTTP %ld", resp->status);
    dexa__retry_error_message(resp->error_body.data, resp->error_body.len, prefix, msg, sizeof msg,
                              code, sizeof code);
    int rc = dexa__retry_status_code(resp->status, resp->should_retry, code);
    int64_t after = dexa__retry_after_ms(resp->retry_after, resp->retry_after_ms, (int64_t)time(NULL));
    return fail(reply, rc, after, "%s: %s", cfg->name, msg);
  }
  if (d->rc != DEXA_OK) return fail(reply, d->rc, 0, "%s: %s", cfg->name, d->err);
  if (resp->curl_code != 0) {
    int rc = dexa__retry_curl_code(resp->curl_code);
    return fail(reply, rc, 0, "%s: %s", cfg->name,
                resp->curl_error[0] ? resp->curl_error : "transfer failed");
  }
  if (!strstr(resp->content_type, "text/event-stream"))
    return fail(reply, DEXA_E_MODEL, 0, "%s: expected an event stream, got \"%.60s\"", cfg->name,
                resp->content_type);
  int rc = dexa__stream_end(st);
  if (rc != DEXA_OK) return fail(reply, rc, 0, "%s: %s", cfg->name, d->err);
  return DEXA_OK;
}

/* The key: the api_key option, else the environment at call time. */
static const char *find_key(const dexa__client_cfg *cfg) {
  if (cfg->api_key) return cfg->api_key;
  const char *k = secure_getenv(cfg->api_key_env ? cfg->api_key_env : cfg->provider->key_env);
  return k && *k ? k : NULL;
}

int dexa__client_generate(const dexa__client_cfg *cfg, const dexa_model_request *req,
                          dexa_model_reply *reply) {
  const dexa__provider *p = cfg->provider;
  const char *key = find_key(cfg);
  if (!key && p->key_required)
    return fail(reply, DEXA_E_AUTH, 0, "%s: no API key (set %s)", cfg->name,
                cfg->api_key_env ? cfg->api_key_env : p->key_env);
  const char *base = cfg->base_url;
  if (!base) base = secure_getenv(p->base_url_env);
  if (!base || !*base) base = p->default_base_url;
  dexa__buf url, body;
  dexa__buf_init(&url);
  dexa__buf_init(&body);
  size_t bl = strlen(base);
  while (bl && base[bl - 1] == '/') bl--;
  dexa__buf_append(&url, base, bl);
  dexa__buf_puts(&url, p->path);
  char *auth[4] = {NULL};
  size_t nauth = 0;
  int rc = p->build_body(cfg, req, &body);
  if (rc == DEXA_OK) rc = p->auth_headers(cfg, key, auth, &nauth);
  if (rc == DEXA_OK && (url.oom || body.oom)) rc = DEXA_E_NOMEM;
  if (rc != DEXA_OK) {
    rc = fail(reply, rc, 0, "%s: building the request: %s", cfg->name, dexa_strerror(rc));
  } else {
    const char *headers[8] = {"Content-Type: application/json", "Accept: text/event-stream"};
    for (size_t i = 0; i < nauth; i++) headers[2 + i] = auth[i];
    dexa__model_http_request rq = {dexa__buf_cstr(&url), headers, body.data, body.len, cfg->timeout_ms,
                             cfg->connect_timeout_ms};
    dexa__decoder d;
    dexa__decoder_init(&d, cfg->name, req, reply);
    dexa__stream st;
    dexa__model_http_response resp;
    dexa__model_http_response_init(&resp);
    rc = dexa__stream_init(&st, p->stream, &d);
    if (rc == DEXA_OK) rc = dexa__model_http_post(&rq, &resp, feed, &st);
    if (rc == DEXA_OK) rc = outcome(cfg, &resp, &st, reply);
    else rc = fail(reply, rc, 0, "%s: %s", cfg->name, dexa_strerror(rc));
    dexa__stream_free(&st);
    dexa__model_http_response_free(&resp);
  }
  for (size_t i = 0; i < nauth; i++) {
    if (auth[i]) memset(auth[i], 0, strlen(auth[i])); /* no key left in freed memory */
    free(auth[i]);
  }
  dexa__buf_free(&url);
  dexa__buf_free(&body);
  return rc;
}
