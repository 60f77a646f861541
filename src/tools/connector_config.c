/* The connector configuration (connectors.h): every key checked, the
 * token kept out of every message and printed form. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"
#include "iface/tool_source.h"
#include "tools/connector_internal.h"
#include "util/buf.h"
#include "util/json_num.h"

#define MAX_CONFIG_BYTES (1024 * 1024)
#define REDACTED "<redacted>"

typedef struct parse_ctx {
  char *err;
  size_t err_size;
} parse_ctx;

static int fail(parse_ctx *p, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(parse_ctx *p, int rc, const char *fmt, ...) {
  if (p->err && p->err_size) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err, p->err_size, fmt, ap);
    va_end(ap);
  }
  return rc;
}

/* A connection name is also its tool source's name: 1..64 of
 * [A-Za-z0-9_.-]. */
static int valid_name(const char *s) {
  size_t n = strlen(s);
  return n >= 1 && n <= 64 &&
         strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == n;
}

/* A token goes into an HTTP header: printable ASCII, no spaces. */
static int valid_token(const char *s) {
  if (!*s || strlen(s) > 4096) return 0;
  for (; *s; s++)
    if (*s <= ' ' || *s > '~') return 0;
  return 1;
}

static int get_string(parse_ctx *p, const char *path, const cJSON *v, char **out) {
  if (!cJSON_IsString(v) || !*v->valuestring)
    return fail(p, DEXA_E_INVALID_ARG, "%s: must be a non-empty string", path);
  free(*out);
  *out = strdup(v->valuestring);
  return *out ? DEXA_OK : DEXA_E_NOMEM;
}

static int get_ms(parse_ctx *p, const char *path, const cJSON *v, int64_t lo, int64_t hi,
                  int64_t *out) {
  if (!dexa__json_exact_int(v, out) || *out < lo || *out > hi)
    return fail(p, DEXA_E_INVALID_ARG, "%s: must be an integer from %lld to %lld", path,
                (long long)lo, (long long)hi);
  return DEXA_OK;
}

static int parse_member(parse_ctx *p, dexa__connection *c, const char *path, const cJSON *e) {
  const char *k = e->string;
  if (strcmp(k, "type") == 0) {
    int rc = get_string(p, path, e, &c->type);
    if (rc == DEXA_OK && strcmp(c->type, "slack") != 0)
      return fail(p, DEXA_E_INVALID_ARG, "%s: unknown connector \"%.64s\" (known: slack)", path,
                  c->type);
    return rc;
  }
  if (strcmp(k, "token") == 0) {
    /* Never echo the value: it is the secret. */
    if (!cJSON_IsString(e) || !valid_token(e->valuestring))
      return fail(p, DEXA_E_INVALID_ARG, "%s: must be a token (printable, no spaces)", path);
    return get_string(p, path, e, &c->token);
  }
  if (strcmp(k, "tokenEnv") == 0) return get_string(p, path, e, &c->token_env);
  if (strcmp(k, "baseUrl") == 0) {
    int rc = get_string(p, path, e, &c->base_url);
    if (rc == DEXA_OK && strncmp(c->base_url, "http://", 7) != 0 &&
        strncmp(c->base_url, "https://", 8) != 0)
      return fail(p, DEXA_E_INVALID_ARG, "%s: must be an http:// or https:// URL", path);
    if (rc == DEXA_OK && strpbrk(c->base_url, " \t\r\n"))
      return fail(p, DEXA_E_INVALID_ARG, "%s: may not hold blanks", path);
    size_t n = rc == DEXA_OK ? strlen(c->base_url) : 0;
    while (n > 8 && c->base_url[n - 1] == '/') c->base_url[--n] = '\0';
    return rc;
  }
  if (strcmp(k, "timeoutMs") == 0) return get_ms(p, path, e, 100, 600000, &c->timeout_ms);
  if (strcmp(k, "rateLimitWaitMs") == 0) return get_ms(p, path, e, 0, 600000, &c->rate_wait_ms);
  return fail(p, DEXA_E_UNKNOWN_KEY,
              "%s: unknown key (known: type, token, tokenEnv, baseUrl, timeoutMs, "
              "rateLimitWaitMs)",
              path);
}

/* The token of tokenEnv, read now: a variable that is not set is an
 * incomplete configuration, found at start rather than at the first call. */
static int token_from_env(parse_ctx *p, dexa__connection *c, const char *path) {
  if (c->token && c->token_env)
    return fail(p, DEXA_E_INVALID_ARG, "%s: has both token and tokenEnv", path);
  if (!c->token && !c->token_env)
    return fail(p, DEXA_E_INVALID_ARG, "%s: needs token or tokenEnv", path);
  if (c->token) return DEXA_OK;
  const char *v = getenv(c->token_env);
  if (!v || !*v)
    return fail(p, DEXA_E_INVALID_ARG, "%s.tokenEnv: the variable %.64s is not set", path,
                c->token_env);
  if (!valid_token(v))
    return fail(p, DEXA_E_INVALID_ARG, "%s.tokenEnv: %.64s does not hold a token", path,
                c->token_env);
  c->token = strdup(v);
  return c->token ? DEXA_OK : DEXA_E_NOMEM;
}

static int parse_connection(parse_ctx *p, dexa__connection *c, const cJSON *obj) {
  char path[128];
  snprintf(path, sizeof path, "connections.%.64s", obj->string);
  if (!valid_name(obj->string))
    return fail(p, DEXA_E_INVALID_ARG, "%s: a connection name is 1 to 64 of [A-Za-z0-9_.-]", path);
  if (!cJSON_IsObject(obj)) return fail(p, DEXA_E_INVALID_ARG, "%s: must be an object", path);
  if (!(c->name = strdup(obj->string))) return DEXA_E_NOMEM;
  c->timeout_ms = DEXA__CONNECTOR_TIMEOUT_MS;
  c->rate_wait_ms = DEXA__CONNECTOR_RATE_WAIT_MS;
  for (const cJSON *e = obj->child; e; e = e->next) {
    char kpath[200];
    snprintf(kpath, sizeof kpath, "%s.%.64s", path, e->string);
    for (const cJSON *f = e->next; f; f = f->next)
      if (strcmp(e->string, f->string) == 0)
        return fail(p, DEXA_E_INVALID_ARG, "%s: listed twice", kpath);
    int rc = parse_member(p, c, kpath, e);
    if (rc != DEXA_OK) return rc;
  }
  if (!c->type) return fail(p, DEXA_E_INVALID_ARG, "%s: needs type (\"slack\")", path);
  if (!c->base_url && !(c->base_url = strdup(DEXA__SLACK_BASE_URL))) return DEXA_E_NOMEM;
  return token_from_env(p, c, path);
}

static int parse_config(parse_ctx *p, dexa_connector_config *cfg, const cJSON *root) {
  if (!cJSON_IsObject(root)) return fail(p, DEXA_E_INVALID_ARG, "the configuration must be an object");
  const cJSON *conns = NULL;
  for (const cJSON *e = root->child; e; e = e->next) {
    if (strcmp(e->string, "connections") != 0)
      return fail(p, DEXA_E_UNKNOWN_KEY, "%.64s: unknown key (known: connections)", e->string);
    conns = e;
  }
  if (!cJSON_IsObject(conns))
    return fail(p, DEXA_E_INVALID_ARG, "connections: must be an object of connections");
  size_t n = (size_t)cJSON_GetArraySize(conns);
  cfg->items = calloc(n ? n : 1, sizeof *cfg->items);
  if (!cfg->items) return DEXA_E_NOMEM;
  for (const cJSON *c = conns->child; c; c = c->next) {
    for (size_t i = 0; i < cfg->count; i++)
      if (strcmp(cfg->items[i].name, c->string) == 0)
        return fail(p, DEXA_E_INVALID_ARG, "connections.%.64s: listed twice", c->string);
    int rc = parse_connection(p, &cfg->items[cfg->count++], c);
    if (rc != DEXA_OK) return rc;
  }
  return DEXA_OK;
}

static int read_file(parse_ctx *p, const char *path, char **out, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return fail(p, errno == ENOENT ? DEXA_E_NOT_FOUND : DEXA_E_IO, "%s: %s", path, strerror(errno));
  dexa__buf b;
  dexa__buf_init(&b);
  char chunk[8192];
  size_t n;
  int rc = DEXA_OK;
  while (rc == DEXA_OK && (n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    dexa__buf_append(&b, chunk, n);
    if (b.len > MAX_CONFIG_BYTES) rc = fail(p, DEXA_E_TOO_LARGE, "%s: over %d bytes", path, MAX_CONFIG_BYTES);
  }
  if (rc == DEXA_OK && ferror(f)) rc = fail(p, DEXA_E_IO, "%s: read error", path);
  fclose(f);
  if (rc == DEXA_OK && b.oom) rc = DEXA_E_NOMEM;
  if (rc != DEXA_OK) {
    dexa__buf_free(&b);
    return rc;
  }
  dexa__buf_cstr(&b);
  *out = dexa__buf_steal(&b, len);
  return *out ? DEXA_OK : DEXA_E_NOMEM;
}

DEXA_EXTERN int dexa_connector_config_load(dexa_connector_config **out, const char *path,
                                           const char *json, size_t json_len, char *errmsg,
                                           size_t errmsg_size) {
  parse_ctx p = {errmsg, errmsg_size};
  if (errmsg && errmsg_size) errmsg[0] = '\0';
  if (!out) return fail(&p, DEXA_E_INVALID_ARG, "out is NULL");
  *out = NULL;
  if (!path && !json) return fail(&p, DEXA_E_INVALID_ARG, "neither a path nor JSON text");
  char *text = NULL;
  size_t len = json_len;
  int rc = DEXA_OK;
  if (path) rc = read_file(&p, path, &text, &len);
  else if (json_len > MAX_CONFIG_BYTES)
    rc = fail(&p, DEXA_E_TOO_LARGE, "the configuration is over %d bytes", MAX_CONFIG_BYTES);
  if (rc != DEXA_OK) return rc;
  cJSON *root = cJSON_ParseWithLength(path ? text : json, len);
  if (text) memset(text, 0, len); /* it held the token */
  free(text);
  if (!root) return fail(&p, DEXA_E_INVALID_JSON, "%s: not valid JSON", path ? path : "configuration");
  dexa_connector_config *cfg = calloc(1, sizeof *cfg);
  rc = cfg ? parse_config(&p, cfg, root) : DEXA_E_NOMEM;
  cJSON_Delete(root);
  if (rc == DEXA_E_NOMEM) fail(&p, rc, "out of memory");
  if (rc != DEXA_OK) {
    dexa_connector_config_free(cfg);
    return rc;
  }
  *out = cfg;
  return DEXA_OK;
}

static void connection_free(dexa__connection *c) {
  free(c->name);
  free(c->type);
  if (c->token) memset(c->token, 0, strlen(c->token));
  free(c->token);
  free(c->token_env);
  free(c->base_url);
}

DEXA_EXTERN void dexa_connector_config_free(dexa_connector_config *cfg) {
  if (!cfg) return;
  for (size_t i = 0; i < cfg->count; i++) connection_free(&cfg->items[i]);
  free(cfg->items);
  free(cfg);
}

DEXA_EXTERN int dexa_connector_config_redacted_json(const dexa_connector_config *cfg, char **out,
                                                    size_t *out_len) {
  if (out) *out = NULL;
  if (out_len) *out_len = 0;
  if (!cfg || !out) return DEXA_E_INVALID_ARG;
  cJSON *root = cJSON_CreateObject(), *conns = cJSON_AddObjectToObject(root, "connections");
  for (size_t i = 0; conns && i < cfg->count; i++) {
    const dexa__connection *c = &cfg->items[i];
    cJSON *o = cJSON_AddObjectToObject(conns, c->name);
    cJSON_AddStringToObject(o, "type", c->type);
    if (c->token_env) cJSON_AddStringToObject(o, "tokenEnv", c->token_env);
    else cJSON_AddStringToObject(o, "token", REDACTED);
    cJSON_AddStringToObject(o, "baseUrl", c->base_url);
    cJSON_AddNumberToObject(o, "timeoutMs", (double)c->timeout_ms);
    cJSON_AddNumberToObject(o, "rateLimitWaitMs", (double)c->rate_wait_ms);
  }
  char *text = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  if (!text) return DEXA_E_NOMEM;
  size_t n = strlen(text);
  *out = malloc(n + 1);
  if (*out) memcpy(*out, text, n + 1);
  cJSON_free(text);
  if (!*out) return DEXA_E_NOMEM;
  if (out_len) *out_len = n;
  return DEXA_OK;
}

DEXA_EXTERN int dexa_connector_tool_source_new(dexa_tool_source **out,
                                               const dexa_connector_config *cfg,
                                               const char *connection, char *errmsg,
                                               size_t errmsg_size) {
  parse_ctx p = {errmsg, errmsg_size};
  if (errmsg && errmsg_size) errmsg[0] = '\0';
  if (out) *out = NULL;
  if (!out || !cfg || !connection) return fail(&p, DEXA_E_INVALID_ARG, "out, config and connection are required");
  for (size_t i = 0; i < cfg->count; i++) {
    if (strcmp(cfg->items[i].name, connection) != 0) continue;
    int rc = dexa__slack_source_new(out, &cfg->items[i]); /* the only type so far */
    if (rc == DEXA_E_UNSUPPORTED) /* connector_slack_absent.c */
      fail(&p, rc, "connection %.64s: connectors: built without WITH_CURL=1", connection);
    else if (rc != DEXA_OK) fail(&p, rc, "connection %.64s: %s", connection, dexa_strerror(rc));
    else (*out)->connector = 1; /* its tools leave a harness's segment, even reads */
    return rc;
  }
  return fail(&p, DEXA_E_NOT_FOUND, "no connection \"%.64s\" in the connector configuration",
              connection);
}
