/* Discovery: which authorization server guards an MCP server, and its
 * endpoints. In the order of the MCP authorization spec (2025-11-25):
 *   1. Protected resource metadata (RFC 9728): the URL the 401's
 *      WWW-Authenticate names in resource_metadata, else the path-based
 *      well-known URL (/.well-known/oauth-protected-resource/<path>), then
 *      the root one. It names the authorization server and the scopes.
 *   2. Authorization server metadata for that issuer: for an issuer with a
 *      path, /.well-known/oauth-authorization-server/<path>,
 *      /.well-known/openid-configuration/<path>, then
 *      <path>/.well-known/openid-configuration; without one, the RFC 8414
 *      then the OpenID URL at the root.
 *   3. The 2025-03-26 fallbacks: no protected resource metadata means the
 *      MCP server's origin is the issuer; no metadata at all means the
 *      endpoints /authorize, /token and /register at that origin. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dexagents/errors.h"
#include "tools/mcp_oauth.h"

/* ---- WWW-Authenticate ---- */

static const char *skip_ws(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == ',') p++;
  return p;
}

/* Reads one auth-param name=value at p into name/value; returns the end, or
 * NULL when p does not start a parameter (a new scheme, or the end). */
static const char *read_param(const char *p, char *name, size_t ns, char *value, size_t vs) {
  const char *n = p;
  while (*p && (isalnum((unsigned char)*p) || *p == '_' || *p == '-')) p++;
  size_t nl = (size_t)(p - n);
  const char *q = p;
  while (*q == ' ' || *q == '\t') q++;
  if (!nl || *q != '=') return NULL;
  snprintf(name, ns, "%.*s", (int)nl, n);
  q++;
  while (*q == ' ' || *q == '\t') q++;
  size_t k = 0;
  if (*q == '"') {
    for (q++; *q && *q != '"'; q++) {
      if (*q == '\\' && q[1]) q++;
      if (k + 1 < vs) value[k++] = *q;
    }
    if (*q == '"') q++;
  } else {
    for (; *q && *q != ',' && *q != ' ' && *q != '\t'; q++)
      if (k + 1 < vs) value[k++] = *q;
  }
  value[k] = '\0';
  return q;
}

void dexa__oauth_parse_challenge(const char *header, dexa__oauth_challenge *ch) {
  memset(ch, 0, sizeof *ch);
  if (!header) return;
  for (const char *p = header; (p = strcasestr(p, "bearer")) != NULL; p += 6) {
    if (p != header && !(p[-1] == ' ' || p[-1] == ',')) continue;
    if (p[6] != ' ' && p[6] != '\t' && p[6] != '\0') continue;
    const char *q = skip_ws(p + 6);
    char name[64], value[1024];
    while (*q && (q = read_param(q, name, sizeof name, value, sizeof value)) != NULL) {
      if (!strcasecmp(name, "error")) snprintf(ch->error, sizeof ch->error, "%.63s", value);
      else if (!strcasecmp(name, "scope")) snprintf(ch->scope, sizeof ch->scope, "%s", value);
      else if (!strcasecmp(name, "resource_metadata"))
        snprintf(ch->resource_metadata, sizeof ch->resource_metadata, "%s", value);
      q = skip_ws(q);
    }
    return;
  }
}

/* ---- metadata documents ---- */

void dexa__oauth_server_free(dexa__oauth_server *s) {
  free(s->resource);
  free(s->scopes_supported);
  free(s->issuer);
  free(s->authorization_endpoint);
  free(s->token_endpoint);
  free(s->registration_endpoint);
  cJSON_Delete(s->auth_methods);
  memset(s, 0, sizeof *s);
}

/* GETs url and returns its JSON object when the status is 2xx and it has
 * member need, else NULL. */
static cJSON *fetch(const char *url, const char *need) {
  dexa__oauth_response r;
  char err[256];
  cJSON *doc = NULL;
  if (dexa__oauth_get(url, &r, err, sizeof err) == DEXA_OK) doc = dexa__oauth_json(&r);
  dexa__oauth_response_free(&r);
  if (doc && !cJSON_GetObjectItemCaseSensitive(doc, need)) {
    cJSON_Delete(doc);
    doc = NULL;
  }
  return doc;
}

/* "<origin><infix><path>" (path "/" left out). */
static char *join(const char *origin, const char *infix, const char *path) {
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_printf(&b, "%s%s%s", origin, infix, strcmp(path, "/") ? path : "");
  dexa__buf_cstr(&b);
  return dexa__buf_steal(&b, NULL);
}

static char *strdup_or_null(const char *s) { return s ? strdup(s) : NULL; }

/* The server URL as a resource indicator: no fragment, scheme and host in
 * lower case (RFC 8707, RFC 3986 normalisation). */
static char *canonical(const char *url) {
  size_t n = strcspn(url, "#");
  char *out = strndup(url, n);
  if (!out) return NULL;
  char *host = strstr(out, "://");
  size_t end = host ? (size_t)(host - out) + 3 + strcspn(host + 3, "/?") : 0;
  for (size_t i = 0; i < end; i++) out[i] = (char)tolower((unsigned char)out[i]);
  return out;
}

/* RFC 9728 3.3: the metadata's resource must be the server it was fetched
 * for: the same origin, and a path that is the server's or a parent. */
static int resource_matches(const char *resource, const char *server_url) {
  char ro[512], so[512], rp[1024], sp[1024];
  if (dexa__url_origin(resource, ro, sizeof ro) || dexa__url_origin(server_url, so, sizeof so))
    return 0;
  if (strcasecmp(ro, so)) return 0;
  dexa__url_path(resource, rp, sizeof rp);
  dexa__url_path(server_url, sp, sizeof sp);
  size_t rl = strlen(rp);
  while (rl > 1 && rp[rl - 1] == '/') rp[--rl] = '\0';
  return !strcmp(rp, "/") || (!strncmp(sp, rp, rl) && (sp[rl] == '\0' || sp[rl] == '/'));
}

static cJSON *protected_resource(const char *server_url, const dexa__oauth_challenge *ch) {
  if (ch->resource_metadata[0]) return fetch(ch->resource_metadata, "authorization_servers");
  char origin[512], path[1024];
  if (dexa__url_origin(server_url, origin, sizeof origin)) return NULL;
  dexa__url_path(server_url, path, sizeof path);
  cJSON *doc = NULL;
  if (strcmp(path, "/")) {
    char *url = join(origin, "/.well-known/oauth-protected-resource", path);
    doc = url ? fetch(url, "authorization_servers") : NULL;
    free(url);
  }
  if (!doc) {
    char *url = join(origin, "/.well-known/oauth-protected-resource", "/");
    doc = url ? fetch(url, "authorization_servers") : NULL;
    free(url);
  }
  return doc;
}

static cJSON *server_metadata(const char *issuer) {
  char origin[512], path[1024];
  if (dexa__url_origin(issuer, origin, sizeof origin)) return NULL;
  dexa__url_path(issuer, path, sizeof path);
  size_t pl = strlen(path);
  while (pl > 1 && path[pl - 1] == '/') path[--pl] = '\0';
  char *urls[3] = {NULL, NULL, NULL};
  if (strcmp(path, "/")) {
    urls[0] = join(origin, "/.well-known/oauth-authorization-server", path);
    urls[1] = join(origin, "/.well-known/openid-configuration", path);
    dexa__buf b;
    dexa__buf_init(&b);
    dexa__buf_printf(&b, "%s%s/.well-known/openid-configuration", origin, path);
    dexa__buf_cstr(&b);
    urls[2] = dexa__buf_steal(&b, NULL);
  } else {
    urls[0] = join(origin, "/.well-known/oauth-authorization-server", "/");
    urls[1] = join(origin, "/.well-known/openid-configuration", "/");
  }
  cJSON *doc = NULL;
  for (int i = 0; i < 3 && !doc; i++)
    if (urls[i]) doc = fetch(urls[i], "token_endpoint");
  for (int i = 0; i < 3; i++) free(urls[i]);
  return doc;
}

static char *joined_scopes(const cJSON *list) {
  if (!cJSON_IsArray(list) || !cJSON_GetArraySize(list)) return NULL;
  dexa__buf b;
  dexa__buf_init(&b);
  const cJSON *s;
  cJSON_ArrayForEach(s, list) {
    if (!cJSON_IsString(s)) continue;
    if (b.len) dexa__buf_putc(&b, ' ');
    dexa__buf_puts(&b, s->valuestring);
  }
  dexa__buf_cstr(&b);
  return dexa__buf_steal(&b, NULL);
}

static const char *str(const cJSON *o, const char *k) {
  return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

int dexa__oauth_discover(const char *server_url, const dexa__oauth_challenge *ch,
                         dexa__oauth_server *out, char *err, size_t err_size) {
  memset(out, 0, sizeof *out);
  cJSON *prm = protected_resource(server_url, ch);
  const char *as = prm ? cJSON_GetStringValue(cJSON_GetArrayItem(
                             cJSON_GetObjectItemCaseSensitive(prm, "authorization_servers"), 0))
                       : NULL;
  const char *resource = str(prm, "resource");
  int rc = DEXA_OK;
  if (prm && !as) {
    snprintf(err, err_size, "the protected resource metadata names no authorization server");
    rc = DEXA_E_AUTH;
  } else if (resource && !resource_matches(resource, server_url)) {
    snprintf(err, err_size, "the protected resource metadata is for another resource (%.200s)", resource);
    rc = DEXA_E_AUTH;
  }
  char origin[512];
  if (rc == DEXA_OK && dexa__url_origin(server_url, origin, sizeof origin)) {
    snprintf(err, err_size, "the server URL has no origin");
    rc = DEXA_E_INVALID_ARG;
  }
  if (rc == DEXA_OK) {
    out->resource = resource ? strdup(resource) : canonical(server_url);
    out->scopes_supported = joined_scopes(cJSON_GetObjectItemCaseSensitive(prm, "scopes_supported"));
    out->issuer = strdup(as ? as : origin); /* 2025-03-26: the server's origin */
    cJSON *meta = out->issuer ? server_metadata(out->issuer) : NULL;
    if (meta) {
      const char *iss = str(meta, "issuer");
      if (iss) {
        free(out->issuer);
        out->issuer = strdup(iss);
      }
      out->authorization_endpoint = strdup_or_null(str(meta, "authorization_endpoint"));
      out->token_endpoint = strdup_or_null(str(meta, "token_endpoint"));
      out->registration_endpoint = strdup_or_null(str(meta, "registration_endpoint"));
      out->auth_methods = cJSON_DetachItemFromObjectCaseSensitive(meta, "token_endpoint_auth_methods_supported");
      out->cimd = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(meta, "client_id_metadata_document_supported"));
      cJSON_Delete(meta);
    } else if (out->issuer) { /* 2025-03-26: the default endpoints */
      char io[512];
      if (dexa__url_origin(out->issuer, io, sizeof io) == 0) {
        out->authorization_endpoint = join(io, "/authorize", "/");
        out->token_endpoint = join(io, "/token", "/");
        out->registration_endpoint = join(io, "/register", "/");
      }
    }
    if (!out->resource || !out->issuer) rc = DEXA_E_NOMEM;
    else if (!out->token_endpoint) {
      snprintf(err, err_size, "the authorization server %.200s has no token endpoint", out->issuer);
      rc = DEXA_E_AUTH;
    }
  }
  cJSON_Delete(prm);
  if (rc != DEXA_OK) dexa__oauth_server_free(out);
  return rc;
}
