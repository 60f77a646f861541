/* The worker's MCP configuration: the common "mcpServers" JSON shape plus
 * our keys. Every key is checked: an unknown one is refused with its path,
 * so a misspelt setting never silently does nothing. env and header values
 * are secrets: the only printable form is dexa_mcp_config_redacted_json. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"
#include "util/json_num.h"
#include "tools/mcp_internal.h"

#define MAX_CONFIG_BYTES (1024 * 1024)
#define MAX_SERVERS 64
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

/* Server names become tool-name prefixes "<server>__": 1..32 of
 * [A-Za-z0-9_-], no "__", not starting or ending with '_', so the first
 * "__" of a tool name always ends the server part. */
static int valid_server_name(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 32 || s[0] == '_' || s[n - 1] == '_' || strstr(s, "__")) return 0;
  for (size_t i = 0; i < n; i++) {
    char ch = s[i];
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
          ch == '_' || ch == '-'))
      return 0;
  }
  return 1;
}

static int dup_keys(const cJSON *obj, const char **dup) {
  for (const cJSON *a = obj->child; a; a = a->next)
    for (const cJSON *b = a->next; b; b = b->next)
      if (strcmp(a->string, b->string) == 0) {
        *dup = a->string;
        return 1;
      }
  return 0;
}

static int parse_kv(parse_ctx *p, const char *path, const cJSON *obj, int is_env,
                    dexa__mcp_kv **out, size_t *count) {
  const char *dup;
  if (!cJSON_IsObject(obj))
    return fail(p, DEXA_E_INVALID_ARG, "%s: must be an object of strings", path);
  if (dup_keys(obj, &dup)) return fail(p, DEXA_E_INVALID_ARG, "%s.%s: listed twice", path, dup);
  size_t n = (size_t)cJSON_GetArraySize(obj);
  dexa__mcp_kv *kv = calloc(n ? n : 1, sizeof *kv);
  if (!kv) return DEXA_E_NOMEM;
  *out = kv;
  size_t i = 0;
  for (const cJSON *e = obj->child; e; e = e->next, i++) {
    if (!cJSON_IsString(e))
      return fail(p, DEXA_E_INVALID_ARG, "%s.%s: must be a string", path, e->string);
    /* env names: no '='; header names: an HTTP token. */
    if (!*e->string || strpbrk(e->string, is_env ? "=" : "()<>@,;:\\\"/[]?={} \t\r\n"))
      return fail(p, DEXA_E_INVALID_ARG, "%s: bad name \"%.64s\"", path, e->string);
    if (strpbrk(e->valuestring, "\r\n"))
      return fail(p, DEXA_E_INVALID_ARG, "%s.%s: value may not hold a line break", path,
                  e->string);
    kv[i].key = strdup(e->string);
    kv[i].value = strdup(e->valuestring);
    *count = i + 1;
    if (!kv[i].key || !kv[i].value) return DEXA_E_NOMEM;
  }
  return DEXA_OK;
}

static int get_string(parse_ctx *p, const char *path, const cJSON *v, char **out) {
  if (!cJSON_IsString(v) || !*v->valuestring)
    return fail(p, DEXA_E_INVALID_ARG, "%s: must be a non-empty string", path);
  *out = strdup(v->valuestring);
  return *out ? DEXA_OK : DEXA_E_NOMEM;
}

static int parse_type(parse_ctx *p, const char *path, const cJSON *v, int *transport) {
  const char *t = cJSON_GetStringValue(v);
  if (t && strcmp(t, "stdio") == 0) *transport = DEXA__MCP_STDIO;
  else if (t && (strcmp(t, "http") == 0 || strcmp(t, "streamable-http") == 0 ||
                 strcmp(t, "streamableHttp") == 0))
    *transport = DEXA__MCP_HTTP;
  else
    return fail(p, DEXA_E_INVALID_ARG,
                "%s: must be \"stdio\" or \"http\" (\"streamable-http\"); the deprecated "
                "\"sse\" transport is not supported",
                path);
  return DEXA_OK;
}

static int is_one_of(const char *v, const char *const *list) {
  for (size_t i = 0; v && list[i]; i++)
    if (strcmp(v, list[i]) == 0) return 1;
  return 0;
}

static int parse_roots(parse_ctx *p, dexa__mcp_server_cfg *s, const char *path, const cJSON *e) {
  if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) > 64)
    return fail(p, DEXA_E_INVALID_ARG, "%s: must be an array of at most 64 roots", path);
  s->roots = calloc((size_t)cJSON_GetArraySize(e) + 1, sizeof *s->roots);
  if (!s->roots) return DEXA_E_NOMEM;
  for (const cJSON *r = e->child; r; r = r->next) {
    const char *uri = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "uri"));
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(r, "name");
    int members = cJSON_IsObject(r) ? cJSON_GetArraySize(r) : -1;
    if (!uri || strncmp(uri, "file://", 7) != 0 || (name && !cJSON_IsString(name)) ||
        members != 1 + (name != NULL))
      return fail(p, DEXA_E_INVALID_ARG, "%s[%zu]: a root is {\"uri\":\"file://...\",\"name\"?:\"...\"}",
                  path, s->rootc);
    dexa__mcp_root *root = &s->roots[s->rootc++];
    root->uri = strdup(uri);
    root->name = name ? strdup(name->valuestring) : NULL;
    if (!root->uri || (name && !root->name)) return DEXA_E_NOMEM;
  }
  return DEXA_OK;
}

static const char *const auth_strings[] = {
    "clientId", "clientSecret", "clientMetadataUrl", "clientName", "redirectUri", "scopes",
    "tokenEndpointAuthMethod", "privateKey", "privateKeyFile", "signingAlgorithm", NULL};

static char **auth_slot(dexa__mcp_auth_cfg *a, const char *k) {
  char **slots[] = {&a->client_id,    &a->client_secret, &a->client_metadata_url, &a->client_name,
                    &a->redirect_uri, &a->scopes,        &a->auth_method,         &a->private_key,
                    &a->private_key_file, &a->signing_alg};
  for (size_t i = 0; auth_strings[i]; i++)
    if (strcmp(k, auth_strings[i]) == 0) return slots[i];
  return NULL;
}

static int parse_idp(parse_ctx *p, dexa__mcp_auth_cfg *a, const char *path, const cJSON *e) {
  if (!cJSON_IsObject(e)) return fail(p, DEXA_E_INVALID_ARG, "%s: must be an object", path);
  static const char *const keys[] = {"tokenEndpoint", "clientId", "clientSecret", "idToken", "idTokenFile", NULL};
  char **slots[] = {&a->idp_token_endpoint, &a->idp_client_id, &a->idp_client_secret, &a->idp_id_token,
                    &a->idp_id_token_file};
  for (const cJSON *m = e->child; m; m = m->next) {
    size_t i = 0;
    while (keys[i] && strcmp(keys[i], m->string)) i++;
    if (!keys[i])
      return fail(p, DEXA_E_UNKNOWN_KEY, "%s.%.64s: unknown key (known: tokenEndpoint, clientId, "
                  "clientSecret, idToken, idTokenFile)", path, m->string);
    char kpath[400];
    snprintf(kpath, sizeof kpath, "%.300s.%s", path, keys[i]);
    if (*slots[i]) return fail(p, DEXA_E_INVALID_ARG, "%s: listed twice", kpath);
    int rc = get_string(p, kpath, m, slots[i]);
    if (rc != DEXA_OK) return rc;
  }
  if (!a->idp_token_endpoint || !a->idp_client_id || (!a->idp_id_token == !a->idp_id_token_file))
    return fail(p, DEXA_E_INVALID_ARG, "%s: needs tokenEndpoint, clientId and one of idToken, idTokenFile", path);
  return DEXA_OK;
}

static int parse_auth(parse_ctx *p, dexa__mcp_auth_cfg *a, const char *path, const cJSON *e) {
  static const char *const grants[] = {"authorization_code", "client_credentials", "enterprise", NULL};
  static const char *const methods[] = {"client_secret_basic", "client_secret_post", "none", "private_key_jwt", NULL};
  static const char *const algs[] = {"ES256", "RS256", NULL};
  if (!cJSON_IsObject(e)) return fail(p, DEXA_E_INVALID_ARG, "%s: must be an object", path);
  const char *dup;
  if (dup_keys(e, &dup)) return fail(p, DEXA_E_INVALID_ARG, "%s.%s: listed twice", path, dup);
  a->enabled = 1;
  for (const cJSON *m = e->child; m; m = m->next) {
    char kpath[400];
    snprintf(kpath, sizeof kpath, "%.300s.%.64s", path, m->string);
    char **slot = auth_slot(a, m->string);
    int rc = DEXA_OK;
    if (slot) rc = get_string(p, kpath, m, slot);
    else if (strcmp(m->string, "grant") == 0) {
      const char *g = cJSON_GetStringValue(m);
      if (!is_one_of(g, grants))
        return fail(p, DEXA_E_INVALID_ARG, "%s: must be \"authorization_code\", \"client_credentials\" or \"enterprise\"", kpath);
      a->grant = !strcmp(g, "client_credentials") ? DEXA__MCP_GRANT_CLIENT_CREDENTIALS
                 : !strcmp(g, "enterprise")       ? DEXA__MCP_GRANT_ENTERPRISE
                                                  : DEXA__MCP_GRANT_CODE;
    } else if (strcmp(m->string, "idp") == 0) {
      rc = parse_idp(p, a, kpath, m);
    } else {
      return fail(p, DEXA_E_UNKNOWN_KEY,
                  "%s: unknown key (known: grant, clientId, clientSecret, clientMetadataUrl, "
                  "clientName, redirectUri, scopes, tokenEndpointAuthMethod, privateKey, "
                  "privateKeyFile, signingAlgorithm, idp)", kpath);
    }
    if (rc != DEXA_OK) return rc;
  }
  if (a->auth_method && !is_one_of(a->auth_method, methods))
    return fail(p, DEXA_E_INVALID_ARG, "%s.tokenEndpointAuthMethod: must be client_secret_basic, "
                "client_secret_post, none or private_key_jwt", path);
  if (a->signing_alg && !is_one_of(a->signing_alg, algs))
    return fail(p, DEXA_E_INVALID_ARG, "%s.signingAlgorithm: must be ES256 or RS256", path);
  if (a->private_key && a->private_key_file)
    return fail(p, DEXA_E_INVALID_ARG, "%s: privateKey and privateKeyFile exclude each other", path);
  const char *urls[] = {a->client_metadata_url, a->redirect_uri, a->idp_token_endpoint};
  for (size_t i = 0; i < 3; i++)
    if (urls[i] && strncmp(urls[i], "http://", 7) && strncmp(urls[i], "https://", 8))
      return fail(p, DEXA_E_INVALID_ARG, "%s: clientMetadataUrl, redirectUri and idp.tokenEndpoint "
                  "are http:// or https:// URLs", path);
  if (a->grant == DEXA__MCP_GRANT_CLIENT_CREDENTIALS && (!a->client_id || (!a->client_secret && !a->private_key && !a->private_key_file)))
    return fail(p, DEXA_E_INVALID_ARG, "%s: client_credentials needs clientId and clientSecret or a private key", path);
  if (a->grant == DEXA__MCP_GRANT_ENTERPRISE && (!a->client_id || !a->idp_token_endpoint))
    return fail(p, DEXA_E_INVALID_ARG, "%s: enterprise needs clientId and idp", path);
  if (a->grant != DEXA__MCP_GRANT_ENTERPRISE && a->idp_token_endpoint)
    return fail(p, DEXA_E_INVALID_ARG, "%s.idp: only for the enterprise grant", path);
  return DEXA_OK;
}

static int parse_member(parse_ctx *p, dexa__mcp_server_cfg *s, const char *path, const cJSON *e,
                        int *type) {
  const char *k = e->string;
  if (strcmp(k, "elicitation") == 0) {
    if (!cJSON_IsBool(e)) return fail(p, DEXA_E_INVALID_ARG, "%s: must be true or false", path);
    s->elicitation = cJSON_IsTrue(e);
    return DEXA_OK;
  }
  if (strcmp(k, "sampling") == 0) {
    static const char *const modes[] = {"off", "ask", "auto", NULL};
    const char *v = cJSON_GetStringValue(e);
    if (!is_one_of(v, modes)) return fail(p, DEXA_E_INVALID_ARG, "%s: must be \"off\", \"ask\" or \"auto\"", path);
    s->sampling = !strcmp(v, "ask") ? DEXA__MCP_SAMPLING_ASK : !strcmp(v, "auto") ? DEXA__MCP_SAMPLING_AUTO : DEXA__MCP_SAMPLING_OFF;
    return DEXA_OK;
  }
  if (strcmp(k, "roots") == 0) return parse_roots(p, s, path, e);
  if (strcmp(k, "logLevel") == 0) {
    static const char *const levels[] = {"debug", "info", "notice", "warning", "error",
                                         "critical", "alert", "emergency", NULL};
    if (!is_one_of(cJSON_GetStringValue(e), levels))
      return fail(p, DEXA_E_INVALID_ARG, "%s: must be an MCP log level (debug, info, notice, warning, "
                  "error, critical, alert, emergency)", path);
    return get_string(p, path, e, &s->log_level);
  }
  if (strcmp(k, "questionTimeoutMs") == 0) {
    int64_t ms;
    if (!dexa__json_exact_int(e, &ms) || ms < 1000 || ms > 86400000)
      return fail(p, DEXA_E_INVALID_ARG, "%s: must be an integer from 1000 to 86400000", path);
    s->question_timeout_ms = ms;
    return DEXA_OK;
  }
  if (strcmp(k, "auth") == 0) return parse_auth(p, &s->auth, path, e);
  if (strcmp(k, "type") == 0 || strcmp(k, "transport") == 0) return parse_type(p, path, e, type);
  if (strcmp(k, "command") == 0) return get_string(p, path, e, &s->command);
  if (strcmp(k, "cwd") == 0) return get_string(p, path, e, &s->cwd);
  if (strcmp(k, "url") == 0) {
    int rc = get_string(p, path, e, &s->url);
    if (rc == DEXA_OK && strncmp(s->url, "http://", 7) != 0 && strncmp(s->url, "https://", 8) != 0)
      return fail(p, DEXA_E_INVALID_ARG, "%s: must be an http:// or https:// URL", path);
    return rc;
  }
  if (strcmp(k, "env") == 0) return parse_kv(p, path, e, 1, &s->env, &s->envc);
  if (strcmp(k, "headers") == 0) return parse_kv(p, path, e, 0, &s->headers, &s->headerc);
  if (strcmp(k, "args") == 0) {
    if (!cJSON_IsArray(e)) return fail(p, DEXA_E_INVALID_ARG, "%s: must be an array of strings", path);
    size_t n = (size_t)cJSON_GetArraySize(e);
    s->args = calloc(n + 1, sizeof *s->args);
    if (!s->args) return DEXA_E_NOMEM;
    for (const cJSON *a = e->child; a; a = a->next) {
      if (!cJSON_IsString(a))
        return fail(p, DEXA_E_INVALID_ARG, "%s[%zu]: must be a string", path, s->argc);
      if (!(s->args[s->argc] = strdup(a->valuestring))) return DEXA_E_NOMEM;
      s->argc++;
    }
    return DEXA_OK;
  }
  if (strcmp(k, "trustAnnotations") == 0 || strcmp(k, "resourceAndPromptTools") == 0) {
    if (!cJSON_IsBool(e)) return fail(p, DEXA_E_INVALID_ARG, "%s: must be true or false", path);
    *(strcmp(k, "trustAnnotations") == 0 ? &s->trust_annotations : &s->resource_and_prompt_tools) =
        cJSON_IsTrue(e);
    return DEXA_OK;
  }
  if (strcmp(k, "timeoutMs") == 0) {
    int64_t ms;
    if (!dexa__json_exact_int(e, &ms) || ms < 100 || ms > 86400000)
      return fail(p, DEXA_E_INVALID_ARG, "%s: must be an integer from 100 to 86400000", path);
    s->timeout_ms = ms;
    return DEXA_OK;
  }
  if (strcmp(k, "protocolVersion") == 0) {
    const char *v = cJSON_GetStringValue(e);
    if (!v || (strcmp(v, "auto") && strcmp(v, "2025-06-18") && strcmp(v, "2025-11-25") &&
               strcmp(v, "2026-07-28")))
      return fail(p, DEXA_E_INVALID_ARG,
                  "%s: must be \"auto\", \"2025-06-18\", \"2025-11-25\" or \"2026-07-28\"", path);
    if (strcmp(v, "auto") == 0) return DEXA_OK;
    s->protocol_version = strdup(v);
    return s->protocol_version ? DEXA_OK : DEXA_E_NOMEM;
  }
  return fail(p, DEXA_E_UNKNOWN_KEY,
              "%s: unknown key (known: type, command, args, env, cwd, url, headers, "
              "trustAnnotations, timeoutMs, protocolVersion, resourceAndPromptTools, "
              "elicitation, sampling, roots, logLevel, questionTimeoutMs, auth)",
              path);
}

static int parse_server(parse_ctx *p, dexa__mcp_server_cfg *s, const cJSON *obj) {
  char path[160];
  snprintf(path, sizeof path, "mcpServers.%.64s", obj->string);
  if (!valid_server_name(obj->string))
    return fail(p, DEXA_E_INVALID_ARG,
                "%s: a server name is 1 to 32 of [A-Za-z0-9_-], without \"__\" and not "
                "starting or ending with '_'",
                path);
  if (!cJSON_IsObject(obj)) return fail(p, DEXA_E_INVALID_ARG, "%s: must be an object", path);
  const char *dup;
  if (dup_keys(obj, &dup)) return fail(p, DEXA_E_INVALID_ARG, "%s.%s: listed twice", path, dup);
  if (!(s->name = strdup(obj->string))) return DEXA_E_NOMEM;
  s->timeout_ms = DEXA__MCP_DEFAULT_TIMEOUT_MS;
  s->question_timeout_ms = DEXA__MCP_QUESTION_TIMEOUT_MS;
  int type = 0;
  for (const cJSON *e = obj->child; e; e = e->next) {
    char kpath[256];
    snprintf(kpath, sizeof kpath, "%s.%.64s", path, e->string);
    int rc = parse_member(p, s, kpath, e, &type);
    if (rc != DEXA_OK) return rc;
  }
  int transport = s->command ? DEXA__MCP_STDIO : s->url ? DEXA__MCP_HTTP : 0;
  if (s->command && s->url)
    return fail(p, DEXA_E_INVALID_ARG, "%s: has both command (stdio) and url (http)", path);
  if (!transport)
    return fail(p, DEXA_E_INVALID_ARG, "%s: needs command (stdio) or url (http)", path);
  if (type && type != transport)
    return fail(p, DEXA_E_INVALID_ARG, "%s.type: does not match %s", path,
                transport == DEXA__MCP_STDIO ? "command" : "url");
  if (transport == DEXA__MCP_STDIO && s->headers)
    return fail(p, DEXA_E_INVALID_ARG, "%s.headers: only for http servers", path);
  if (transport == DEXA__MCP_HTTP && (s->args || s->env || s->cwd))
    return fail(p, DEXA_E_INVALID_ARG, "%s: args, env and cwd are only for stdio servers", path);
  if (transport == DEXA__MCP_STDIO && s->auth.enabled)
    return fail(p, DEXA_E_INVALID_ARG, "%s.auth: only for http servers (stdio servers take "
                "credentials from env)", path);
  s->transport = transport;
  return DEXA_OK;
}

static int parse_config(parse_ctx *p, dexa_mcp_config *cfg, const cJSON *root) {
  if (!cJSON_IsObject(root)) return fail(p, DEXA_E_INVALID_JSON, "the configuration must be an object");
  const cJSON *servers = NULL;
  for (const cJSON *e = root->child; e; e = e->next) {
    if (strcmp(e->string, "mcpServers") != 0)
      return fail(p, DEXA_E_UNKNOWN_KEY, "%.64s: unknown key (known: mcpServers)", e->string);
    if (servers) return fail(p, DEXA_E_INVALID_ARG, "mcpServers: listed twice");
    servers = e;
  }
  if (!servers) return fail(p, DEXA_E_INVALID_ARG, "mcpServers: missing");
  if (!cJSON_IsObject(servers)) return fail(p, DEXA_E_INVALID_ARG, "mcpServers: must be an object");
  const char *dup;
  if (dup_keys(servers, &dup)) return fail(p, DEXA_E_INVALID_ARG, "mcpServers.%.64s: listed twice", dup);
  size_t n = (size_t)cJSON_GetArraySize(servers);
  if (n > MAX_SERVERS) return fail(p, DEXA_E_INVALID_ARG, "mcpServers: more than %d servers", MAX_SERVERS);
  cfg->servers = calloc(n ? n : 1, sizeof *cfg->servers);
  if (!cfg->servers) return DEXA_E_NOMEM;
  for (const cJSON *e = servers->child; e; e = e->next) {
    int rc = parse_server(p, &cfg->servers[cfg->count++], e);
    if (rc != DEXA_OK) return rc;
  }
  return DEXA_OK;
}

static int read_file(parse_ctx *p, const char *path, char **out, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return fail(p, DEXA_E_IO, "%s: %s", path, strerror(errno));
  dexa__buf b;
  dexa__buf_init(&b);
  char chunk[8192];
  size_t n;
  int rc = DEXA_OK;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    dexa__buf_append(&b, chunk, n);
    if (b.len > MAX_CONFIG_BYTES) {
      rc = fail(p, DEXA_E_TOO_LARGE, "%s: over %d bytes", path, MAX_CONFIG_BYTES);
      break;
    }
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

DEXA_EXTERN int dexa_mcp_config_load(dexa_mcp_config **out, const char *path, const char *json,
                                     size_t json_len, char *errmsg, size_t errmsg_size) {
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
  free(text);
  if (!root) return fail(&p, DEXA_E_INVALID_JSON, "%s: not valid JSON", path ? path : "configuration");
  dexa_mcp_config *cfg = calloc(1, sizeof *cfg);
  if (cfg && !(cfg->host = dexa__mcp_host_new())) {
    free(cfg);
    cfg = NULL;
  }
  rc = cfg ? parse_config(&p, cfg, root) : DEXA_E_NOMEM;
  cJSON_Delete(root);
  if (rc == DEXA_E_NOMEM) fail(&p, rc, "out of memory");
  if (rc != DEXA_OK) {
    dexa_mcp_config_free(cfg);
    return rc;
  }
  *out = cfg;
  return DEXA_OK;
}

static void free_kv(dexa__mcp_kv *kv, size_t n) {
  for (size_t i = 0; kv && i < n; i++) {
    free(kv[i].key);
    free(kv[i].value);
  }
  free(kv);
}

void dexa__mcp_server_cfg_free(dexa__mcp_server_cfg *s) {
  if (!s) return;
  free(s->name);
  free(s->command);
  for (size_t i = 0; s->args && i < s->argc; i++) free(s->args[i]);
  free(s->args);
  free_kv(s->env, s->envc);
  free(s->cwd);
  free(s->url);
  free_kv(s->headers, s->headerc);
  free(s->protocol_version);
  for (size_t i = 0; s->roots && i < s->rootc; i++) {
    free(s->roots[i].uri);
    free(s->roots[i].name);
  }
  free(s->roots);
  free(s->log_level);
  dexa__mcp_auth_cfg *a = &s->auth;
  char *strs[] = {a->client_id, a->client_secret, a->client_metadata_url, a->client_name,
                  a->redirect_uri, a->scopes, a->auth_method, a->private_key, a->private_key_file,
                  a->signing_alg, a->idp_token_endpoint, a->idp_client_id, a->idp_client_secret,
                  a->idp_id_token, a->idp_id_token_file};
  for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) free(strs[i]);
  memset(s, 0, sizeof *s);
}

static char *dup_or_null(const char *s, int *oom) {
  if (!s) return NULL;
  char *d = strdup(s);
  if (!d) *oom = 1;
  return d;
}

static dexa__mcp_kv *copy_kv(const dexa__mcp_kv *kv, size_t n, int *oom) {
  if (!kv) return NULL;
  dexa__mcp_kv *d = calloc(n ? n : 1, sizeof *d);
  if (!d) {
    *oom = 1;
    return NULL;
  }
  for (size_t i = 0; i < n; i++) {
    d[i].key = dup_or_null(kv[i].key, oom);
    d[i].value = dup_or_null(kv[i].value, oom);
  }
  return d;
}

int dexa__mcp_server_cfg_copy(dexa__mcp_server_cfg *dst, const dexa__mcp_server_cfg *src) {
  int oom = 0;
  *dst = *src;
  dst->name = dup_or_null(src->name, &oom);
  dst->command = dup_or_null(src->command, &oom);
  dst->cwd = dup_or_null(src->cwd, &oom);
  dst->url = dup_or_null(src->url, &oom);
  dst->protocol_version = dup_or_null(src->protocol_version, &oom);
  dst->env = copy_kv(src->env, src->envc, &oom);
  dst->headers = copy_kv(src->headers, src->headerc, &oom);
  dst->log_level = dup_or_null(src->log_level, &oom);
  dst->roots = NULL;
  if (src->roots) {
    dst->roots = calloc(src->rootc + 1, sizeof *dst->roots);
    if (!dst->roots) oom = 1;
    for (size_t i = 0; dst->roots && i < src->rootc; i++) {
      dst->roots[i].uri = dup_or_null(src->roots[i].uri, &oom);
      dst->roots[i].name = dup_or_null(src->roots[i].name, &oom);
    }
  }
  dexa__mcp_auth_cfg *da = &dst->auth;
  const dexa__mcp_auth_cfg *sa = &src->auth;
  da->client_id = dup_or_null(sa->client_id, &oom);
  da->client_secret = dup_or_null(sa->client_secret, &oom);
  da->client_metadata_url = dup_or_null(sa->client_metadata_url, &oom);
  da->client_name = dup_or_null(sa->client_name, &oom);
  da->redirect_uri = dup_or_null(sa->redirect_uri, &oom);
  da->scopes = dup_or_null(sa->scopes, &oom);
  da->auth_method = dup_or_null(sa->auth_method, &oom);
  da->private_key = dup_or_null(sa->private_key, &oom);
  da->private_key_file = dup_or_null(sa->private_key_file, &oom);
  da->signing_alg = dup_or_null(sa->signing_alg, &oom);
  da->idp_token_endpoint = dup_or_null(sa->idp_token_endpoint, &oom);
  da->idp_client_id = dup_or_null(sa->idp_client_id, &oom);
  da->idp_client_secret = dup_or_null(sa->idp_client_secret, &oom);
  da->idp_id_token = dup_or_null(sa->idp_id_token, &oom);
  da->idp_id_token_file = dup_or_null(sa->idp_id_token_file, &oom);
  dst->args = NULL;
  if (src->args) {
    dst->args = calloc(src->argc + 1, sizeof *dst->args);
    if (!dst->args) oom = 1;
    for (size_t i = 0; dst->args && i < src->argc; i++) dst->args[i] = dup_or_null(src->args[i], &oom);
  }
  if (oom) {
    dexa__mcp_server_cfg_free(dst);
    return DEXA_E_NOMEM;
  }
  return DEXA_OK;
}

DEXA_EXTERN void dexa_mcp_config_free(dexa_mcp_config *config) {
  if (!config) return;
  for (size_t i = 0; i < config->count; i++) dexa__mcp_server_cfg_free(&config->servers[i]);
  free(config->servers);
  dexa__mcp_host_unref(config->host);
  free(config);
}

static void put_redacted(dexa__buf *b, const char *key, const dexa__mcp_kv *kv, size_t n) {
  dexa__buf_printf(b, ",\"%s\":{", key);
  for (size_t i = 0; i < n; i++) {
    if (i) dexa__buf_putc(b, ',');
    dexa__buf_json_cstr(b, kv[i].key);
    dexa__buf_puts(b, ":\"" REDACTED "\"");
  }
  dexa__buf_putc(b, '}');
}

static void put_opt(dexa__buf *b, const char *key, const char *v, int secret) {
  if (!v) return;
  dexa__buf_printf(b, ",\"%s\":", key);
  if (secret) dexa__buf_puts(b, "\"" REDACTED "\"");
  else dexa__buf_json_cstr(b, v);
}

/* Elicitation, sampling, roots, logging and auth (secrets redacted). */
static void put_features(dexa__buf *b, const dexa__mcp_server_cfg *s) {
  static const char *const sampling[] = {"off", "ask", "auto"};
  static const char *const grants[] = {"authorization_code", "client_credentials", "enterprise"};
  dexa__buf_printf(b, ",\"elicitation\":%s,\"sampling\":\"%s\",\"questionTimeoutMs\":%lld",
                   s->elicitation ? "true" : "false", sampling[s->sampling],
                   (long long)s->question_timeout_ms);
  put_opt(b, "logLevel", s->log_level, 0);
  if (s->roots) {
    dexa__buf_puts(b, ",\"roots\":[");
    for (size_t i = 0; i < s->rootc; i++) {
      dexa__buf_puts(b, i ? ",{\"uri\":" : "{\"uri\":");
      dexa__buf_json_cstr(b, s->roots[i].uri);
      put_opt(b, "name", s->roots[i].name, 0);
      dexa__buf_putc(b, '}');
    }
    dexa__buf_putc(b, ']');
  }
  const dexa__mcp_auth_cfg *a = &s->auth;
  if (!a->enabled) return;
  dexa__buf_printf(b, ",\"auth\":{\"grant\":\"%s\"", grants[a->grant]);
  put_opt(b, "clientId", a->client_id, 0);
  put_opt(b, "clientSecret", a->client_secret, 1);
  put_opt(b, "clientMetadataUrl", a->client_metadata_url, 0);
  put_opt(b, "clientName", a->client_name, 0);
  put_opt(b, "redirectUri", a->redirect_uri, 0);
  put_opt(b, "scopes", a->scopes, 0);
  put_opt(b, "tokenEndpointAuthMethod", a->auth_method, 0);
  put_opt(b, "privateKey", a->private_key, 1);
  put_opt(b, "privateKeyFile", a->private_key_file, 0);
  put_opt(b, "signingAlgorithm", a->signing_alg, 0);
  if (a->idp_token_endpoint) {
    dexa__buf_puts(b, ",\"idp\":{\"tokenEndpoint\":");
    dexa__buf_json_cstr(b, a->idp_token_endpoint);
    put_opt(b, "clientId", a->idp_client_id, 0);
    put_opt(b, "clientSecret", a->idp_client_secret, 1);
    put_opt(b, "idToken", a->idp_id_token, 1);
    put_opt(b, "idTokenFile", a->idp_id_token_file, 0);
    dexa__buf_putc(b, '}');
  }
  dexa__buf_putc(b, '}');
}

DEXA_EXTERN int dexa_mcp_config_redacted_json(const dexa_mcp_config *config, char **out,
                                              size_t *out_len) {
  if (!config || !out) return DEXA_E_INVALID_ARG;
  *out = NULL;
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_puts(&b, "{\"mcpServers\":{");
  for (size_t i = 0; i < config->count; i++) {
    const dexa__mcp_server_cfg *s = &config->servers[i];
    if (i) dexa__buf_putc(&b, ',');
    dexa__buf_json_cstr(&b, s->name);
    dexa__buf_puts(&b, s->transport == DEXA__MCP_STDIO ? ":{\"type\":\"stdio\"" : ":{\"type\":\"http\"");
    if (s->command) {
      dexa__buf_puts(&b, ",\"command\":");
      dexa__buf_json_cstr(&b, s->command);
      dexa__buf_puts(&b, ",\"args\":[");
      for (size_t a = 0; a < s->argc; a++) {
        if (a) dexa__buf_putc(&b, ',');
        dexa__buf_json_cstr(&b, s->args[a]);
      }
      dexa__buf_putc(&b, ']');
    }
    if (s->env) put_redacted(&b, "env", s->env, s->envc);
    if (s->cwd) {
      dexa__buf_puts(&b, ",\"cwd\":");
      dexa__buf_json_cstr(&b, s->cwd);
    }
    if (s->url) {
      dexa__buf_puts(&b, ",\"url\":");
      dexa__buf_json_cstr(&b, s->url);
    }
    if (s->headers) put_redacted(&b, "headers", s->headers, s->headerc);
    dexa__buf_printf(&b, ",\"trustAnnotations\":%s,\"timeoutMs\":%lld,\"protocolVersion\":\"%s\"",
                     s->trust_annotations ? "true" : "false", (long long)s->timeout_ms,
                     s->protocol_version ? s->protocol_version : "auto");
    dexa__buf_printf(&b, ",\"resourceAndPromptTools\":%s",
                     s->resource_and_prompt_tools ? "true" : "false");
    put_features(&b, s);
    dexa__buf_putc(&b, '}');
  }
  dexa__buf_puts(&b, "}}");
  if (b.oom) {
    dexa__buf_free(&b);
    return DEXA_E_NOMEM;
  }
  size_t n;
  *out = dexa__buf_steal(&b, &n);
  if (out_len) *out_len = n;
  return DEXA_OK;
}
