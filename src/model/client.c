/* The provider clients of dexa_model_client_new, chosen by name prefix, and the
 * one call path they share: URL, body, credentials, streaming POST, stream
 * decoding, error classification and cost. The options are in options.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dexagents/errors.h"
#include "iface/model.h"
#include "model/client_new.h"
#include "model/http.h"
#include "model/provider.h"
#include "model/retry.h"
#include "model/token_command.h"

static const dexa__provider *const providers[] = {
    &dexa__openai_responses_provider, &dexa__openai_chat_provider, &dexa__anthropic_provider,
    &dexa__gemini_provider,           &dexa__vertex_provider,      &dexa__bedrock_provider,
    &dexa__azure_provider};

static void destroy(void *user_data) { dexa__client_cfg_free(user_data); }

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

static void free_names(char **names, size_t n) {
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
}

static int make_client(dexa_model **out, dexa__client_cfg *c, char **fallbacks, size_t nfb,
                       char *errmsg, size_t errmsg_size) {
  dexa_model_vtable vt;
  dexa_model_vtable_init(&vt, sizeof vt);
  vt.generate = generate;
  vt.destroy = destroy;
  int rc = dexa_model_new(out, c->name, &vt, c);
  if (rc != DEXA_OK) {
    dexa__client_cfg_free(c);
    return say(errmsg, errmsg_size, rc, "out of memory");
  }
  rc = dexa_model_set_fallbacks(*out, (const char *const *)fallbacks, nfb);
  if (rc != DEXA_OK) {
    dexa_model_free(*out); /* frees c */
    *out = NULL;
    return say(errmsg, errmsg_size, rc, "model options: bad value for \"fallbacks\": expected "
                                        "other models' names, each once");
  }
  return DEXA_OK;
}

int dexa__model_provider_new(dexa_model **out, const char *name, const char *options_json,
                              size_t options_len, char *errmsg, size_t errmsg_size) {
  const dexa__provider *p = NULL;
  for (size_t i = 0; i < sizeof providers / sizeof *providers; i++)
    if (!strncmp(name, providers[i]->prefix, strlen(providers[i]->prefix))) p = providers[i];
  if (!p)
    return say(errmsg, errmsg_size, DEXA_E_INVALID_ARG,
               "unknown model provider in \"%.80s\" (openai/, openai-chat/, anthropic/, gemini/, "
               "vertex/, bedrock/, azure/, mock/)",
               name);
  if (!name[strlen(p->prefix)])
    return say(errmsg, errmsg_size, DEXA_E_INVALID_ARG, "no model id after %s", p->prefix);
  int rc = dexa__model_http_global_init();
  if (rc != DEXA_OK) return say(errmsg, errmsg_size, rc, "libcurl global init failed");
  dexa__client_cfg *c = calloc(1, sizeof *c);
  if (c && !(c->name = strdup(name))) {
    free(c);
    c = NULL;
  }
  if (c && pthread_mutex_init(&c->token.mu, NULL) != 0) {
    free(c->name);
    free(c);
    c = NULL;
  }
  if (!c) return say(errmsg, errmsg_size, DEXA_E_NOMEM, "out of memory");
  c->provider = c->wire = p;
  c->model = c->name + strlen(p->prefix);
  c->timeout_ms = 900000;
  c->connect_timeout_ms = 30000;
  c->parallel_tool_calls = 1;
  c->token_ttl_s = 300;
  char **fallbacks = NULL;
  size_t nfb = 0;
  rc = dexa__client_options(c, options_json, options_len, &fallbacks, &nfb, errmsg, errmsg_size);
  if (rc == DEXA_OK) rc = make_client(out, c, fallbacks, nfb, errmsg, errmsg_size);
  else dexa__client_cfg_free(c);
  free_names(fallbacks, nfb);
  return rc;
}

/* ---- one call ------------------------------------------------------------ */

int dexa__call_header(dexa__call *call, const char *name, const char *value) {
  if (call->header_count == DEXA__MAX_HEADERS) return DEXA_E_INTERNAL;
  if (strpbrk(value, "\r\n")) { /* a credential read from the environment, say */
    snprintf(call->err, sizeof call->err, "the value of header %.60s has a line break", name);
    return DEXA_E_AUTH;
  }
  dexa__buf h;
  dexa__buf_init(&h);
  dexa__buf_printf(&h, "%s: %s", name, value);
  char *s = dexa__buf_steal(&h, NULL);
  if (!s) return DEXA_E_NOMEM;
  call->headers[call->header_count++] = s;
  return DEXA_OK;
}

const char *dexa__client_key(const dexa__client_cfg *cfg) {
  if (cfg->api_key) return cfg->api_key;
  const char *env = cfg->api_key_env ? cfg->api_key_env : cfg->provider->key_env;
  const char *k = env ? secure_getenv(env) : NULL;
  return k && *k ? k : NULL;
}

int dexa__auth_key_header(dexa__call *call, const char *header, const char *prefix) {
  const dexa__client_cfg *cfg = call->cfg;
  const char *key = dexa__client_key(cfg);
  if (!key) {
    if (!cfg->provider->key_required) return DEXA_OK; /* local servers need none */
    snprintf(call->err, sizeof call->err, "no API key (set %s)",
             cfg->api_key_env ? cfg->api_key_env : cfg->provider->key_env);
    return DEXA_E_AUTH;
  }
  dexa__buf v;
  dexa__buf_init(&v);
  dexa__buf_printf(&v, "%s%s", prefix, key);
  int rc = v.oom ? DEXA_E_NOMEM : dexa__call_header(call, header, v.data);
  if (v.data) memset(v.data, 0, v.len);
  dexa__buf_free(&v);
  return rc;
}

int dexa__auth_bearer(dexa__call *call) {
  return dexa__auth_key_header(call, "Authorization", "Bearer ");
}

int dexa__body_refuse(dexa__buf *body, const char *reason) {
  dexa__buf_reset(body);
  dexa__buf_puts(body, reason);
  return body->oom ? DEXA_E_NOMEM : DEXA_E_MODEL;
}

double dexa__client_cost(const dexa__client_cfg *cfg, const dexa_model_usage *u) {
  const dexa__price *p = &cfg->price;
  if (!p->set) return -1;
  int64_t plain = u->input_tokens - u->cached_input_tokens - u->cache_write_tokens;
  double cost = (double)(plain > 0 ? plain : 0) * p->input +
                (double)u->cached_input_tokens * p->cached_input +
                (double)u->cache_write_tokens * p->cache_write + (double)u->output_tokens * p->output;
  return cost / 1e6;
}

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
static int outcome(dexa__client_cfg *cfg, dexa__model_http_response *resp, dexa__stream *st,
                   dexa_model_reply *reply, int token_from_command) {
  dexa__decoder *d = st->d;
  if (resp->status >= 400 || (resp->status && resp->status < 200)) {
    char msg[1200], code[64];
    char prefix[64];
    snprintf(prefix, sizeof prefix, "HTTP %ld", resp->status);
    dexa__retry_error_message(resp->error_body.data, resp->error_body.len, prefix, msg, sizeof msg,
                              code, sizeof code);
    int rc = dexa__retry_status_code(resp->status, resp->should_retry, code);
    if (resp->status == 401 && token_from_command) dexa__token_forget(cfg);
    int64_t after = dexa__retry_after_ms(resp->retry_after, resp->retry_after_ms, (int64_t)time(NULL));
    return fail(reply, rc, after, "%s: %s", cfg->name, msg);
  }
  if (d->rc != DEXA_OK) return fail(reply, d->rc, 0, "%s: %s", cfg->name, d->err);
  if (resp->curl_code != 0) {
    int rc = dexa__retry_curl_code(resp->curl_code);
    return fail(reply, rc, 0, "%s: %s", cfg->name,
                resp->curl_error[0] ? resp->curl_error : "transfer failed");
  }
  const char *want = cfg->wire->stream->content_type;
  if (!strstr(resp->content_type, want))
    return fail(reply, DEXA_E_MODEL, 0, "%s: expected %s, got \"%.60s\"", cfg->name, want,
                resp->content_type);
  int rc = dexa__stream_end(st);
  if (rc != DEXA_OK) return fail(reply, rc, 0, "%s: %s", cfg->name, d->err);
  return DEXA_OK;
}

void dexa__url_escape(dexa__buf *b, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
        strchr("-._~", *p))
      dexa__buf_putc(b, (char)*p);
    else
      dexa__buf_printf(b, "%%%02X", *p);
  }
}

/* Appends the query option's parameters, percent-encoded. */
static void put_query(dexa__buf *url, const dexa__client_cfg *cfg) {
  for (size_t i = 0; i < cfg->query_count; i++) {
    dexa__buf_putc(url, memchr(url->data, '?', url->len) ? '&' : '?');
    dexa__buf_puts(url, cfg->query[i].name);
    dexa__buf_putc(url, '=');
    dexa__url_escape(url, cfg->query[i].value);
  }
}

int dexa__call_prepare(dexa__call *call) {
  const dexa__client_cfg *cfg = call->cfg;
  const dexa__provider *p = cfg->provider;
  const char *base = cfg->base_url;
  if (!base && p->base_url_env) base = secure_getenv(p->base_url_env);
  if (!base || !*base) base = p->default_base_url;
  char *trimmed = base ? strdup(base) : NULL;
  if (base && !trimmed) return DEXA_E_NOMEM;
  size_t bl = trimmed ? strlen(trimmed) : 0;
  while (bl && trimmed[bl - 1] == '/') trimmed[--bl] = '\0';
  int rc = p->url(call, trimmed);
  free(trimmed);
  if (rc != DEXA_OK) return rc;
  put_query(&call->url, cfg);
  rc = p->build_body(cfg, call->req, &call->body);
  if (rc == DEXA_E_MODEL) snprintf(call->err, sizeof call->err, "%s", dexa__buf_cstr(&call->body));
  else if (rc != DEXA_OK) snprintf(call->err, sizeof call->err, "building the request: %s", dexa_strerror(rc));
  if (rc == DEXA_OK && (call->url.oom || call->body.oom)) rc = DEXA_E_NOMEM;
  if (rc == DEXA_OK) rc = dexa__call_header(call, "Content-Type", "application/json");
  if (rc == DEXA_OK) rc = dexa__call_header(call, "Accept", cfg->wire->stream->content_type);
  if (rc == DEXA_OK) rc = p->auth(call);
  for (size_t i = 0; rc == DEXA_OK && i < cfg->header_count; i++)
    rc = dexa__call_header(call, cfg->headers[i].name, cfg->headers[i].value);
  if (rc != DEXA_OK && !call->err[0]) snprintf(call->err, sizeof call->err, "%s", dexa_strerror(rc));
  return rc;
}

void dexa__call_init(dexa__call *call, const dexa__client_cfg *cfg, const dexa_model_request *req,
                     int64_t now_s) {
  memset(call, 0, sizeof *call);
  call->cfg = cfg;
  call->req = req;
  call->now_s = now_s;
  dexa__buf_init(&call->url);
  dexa__buf_init(&call->body);
}

void dexa__call_free(dexa__call *call) {
  for (size_t i = 0; i < call->header_count; i++) {
    memset(call->headers[i], 0, strlen(call->headers[i])); /* no key left in freed memory */
    free(call->headers[i]);
  }
  dexa__buf_free(&call->url);
  dexa__buf_free(&call->body);
}

/* The cost of the reply's usage at the configured price. */
static void add_cost(const dexa__client_cfg *cfg, dexa_model_reply *reply) {
  if (!cfg->price.set || !reply->has_usage) return;
  dexa_model_usage u;
  dexa_model_usage_init(&u, sizeof u);
  u.input_tokens = reply->input_tokens;
  u.output_tokens = reply->output_tokens;
  u.cached_input_tokens = reply->cached_input_tokens;
  u.cache_write_tokens = reply->cache_write_tokens;
  u.reasoning_tokens = reply->reasoning_tokens;
  u.cost_usd = dexa__client_cost(cfg, &u);
  dexa_model_reply_set_token_usage(reply, &u);
}

static int run(dexa__call *call, dexa_model_reply *reply) {
  dexa__client_cfg *cfg = (dexa__client_cfg *)call->cfg;
  const char *headers[DEXA__MAX_HEADERS + 1];
  for (size_t i = 0; i < call->header_count; i++) headers[i] = call->headers[i];
  headers[call->header_count] = NULL;
  dexa__model_http_request rq = {dexa__buf_cstr(&call->url), headers, call->body.data,
                                 call->body.len, cfg->timeout_ms, cfg->connect_timeout_ms};
  dexa__decoder d;
  dexa__decoder_init(&d, cfg->name, call->req, reply);
  dexa__stream st;
  dexa__model_http_response resp;
  dexa__model_http_response_init(&resp);
  int rc = dexa__stream_init(&st, cfg->wire->stream, &d);
  if (rc == DEXA_OK) rc = dexa__model_http_post(&rq, &resp, feed, &st);
  if (rc == DEXA_OK) rc = outcome(cfg, &resp, &st, reply, call->token_from_command);
  else rc = fail(reply, rc, 0, "%s: %s", cfg->name, dexa_strerror(rc));
  if (rc == DEXA_OK) add_cost(cfg, reply);
  dexa__stream_free(&st);
  dexa__model_http_response_free(&resp);
  return rc;
}

int dexa__client_generate(dexa__client_cfg *cfg, const dexa_model_request *req,
                          dexa_model_reply *reply) {
  dexa__call call;
  dexa__call_init(&call, cfg, req, (int64_t)time(NULL));
  int rc = dexa__call_prepare(&call);
  if (rc != DEXA_OK) rc = fail(reply, rc, 0, "%s: %s", cfg->name, call.err);
  else rc = run(&call, reply);
  dexa__call_free(&call);
  return rc;
}
