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

static int parse_member(parse_ctx *p, dexa__mcp_server_cfg *s, const char *path, const cJSON *e,
                        int *type) {
  const char *k = e->string;
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
              "trustAnnotations, timeoutMs, protocolVersion, resourceAndPromptTools)",
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
    dexa__buf_printf(&b, ",\"resourceAndPromptTools\":%s}",
                     s->resource_and_prompt_tools ? "true" : "false");
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
