/* The OAuth client of one HTTP MCP server (see mcp_oauth.h).
 *
 * Tokens: the store's record "mcp:<server>:<url>" holds the access token,
 * the refresh token, the granted scope and what a refresh needs (token
 * endpoint, client id, secret, auth method, resource). The client keeps
 * the access token in memory while it works and reads the record again on
 * every refusal, so a sign-in completed by another process (the host's
 * redirect route) is picked up at once.
 *
 * A refusal (401, or 403 insufficient_scope) is mended in this order: a
 * token stored meanwhile; a refresh (401); the headless grants of the
 * configuration (client credentials, with a secret or a JWT assertion; the
 * enterprise grant: an IdP ID token exchanged for an ID-JAG, then the JWT
 * bearer grant); else a person must sign in: the source asks the person to
 * open the URL of dexa__mcp_oauth_begin (authorization code with PKCE S256,
 * the RFC 8707 resource, state; the client is pre-registered, a client ID
 * metadata document URL, or registered dynamically, RFC 7591), and
 * dexa_mcp_authorization_complete exchanges the code. Scopes: the
 * configuration's, else the challenge's (a step-up adds them to those
 * granted), else the protected resource's scopes_supported, else none.
 * At most DEXA__OAUTH_MAX_SIGNINS sign-ins for one refused method without a
 * success in between: a server that keeps refusing gets an error instead of
 * an endless loop. */
#include "tools/mcp_oauth.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dexagents/errors.h"
#include "util/json_num.h"

#define SIGNIN_TTL_MS (60LL * 60 * 1000) /* a sign-in not completed within an hour expires */
#define MAX_HEADLESS 2                    /* headless grants for one refusal */

struct dexa__mcp_oauth {
  pthread_mutex_t mu;
  char *token; /* the access token in use, or NULL */
  int loaded;
  dexa__oauth_challenge last;
  long last_status;
  char refused[32]; /* the method refused last */
  int signins;      /* sign-ins begun since it last went through */
  int headless;     /* headless grants since it last went through */
  int want_signin;
};

int dexa__mcp_oauth_new(dexa__mcp_oauth **out) {
  dexa__mcp_oauth *o = calloc(1, sizeof *o);
  if (!o) return DEXA_E_NOMEM;
  pthread_mutex_init(&o->mu, NULL);
  *out = o;
  return DEXA_OK;
}

static void wipe_free(char *s) {
  if (s) memset(s, 0, strlen(s));
  free(s);
}

void dexa__mcp_oauth_free(dexa__mcp_oauth *o) {
  if (!o) return;
  wipe_free(o->token);
  pthread_mutex_destroy(&o->mu);
  free(o);
}

static int64_t wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *jstr(const cJSON *o, const char *k) {
  return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

/* ---- the token record ---- */

static void tokens_key(const dexa__mcp_server_cfg *cfg, char *out, size_t n) {
  snprintf(out, n, "mcp:%s:%s", cfg->name, cfg->url);
}

static cJSON *load_tokens(dexa__mcp_host *host, const dexa__mcp_server_cfg *cfg) {
  char key[1200];
  tokens_key(cfg, key, sizeof key);
  char *text = NULL;
  if (dexa__mcp_store_get(host, key, &text) != DEXA_OK || !text) return NULL;
  cJSON *rec = cJSON_Parse(text);
  wipe_free(text);
  if (!cJSON_IsObject(rec) || !jstr(rec, "access_token")) {
    cJSON_Delete(rec);
    return NULL;
  }
  return rec;
}

static int store_json(dexa__mcp_host *host, const char *key, cJSON *rec) {
  char *text = rec ? cJSON_PrintUnformatted(rec) : NULL;
  int rc = rec && !text ? DEXA_E_NOMEM : dexa__mcp_store_put(host, key, text);
  wipe_free(text);
  return rc;
}

/* The client and its authentication at the token endpoint, as kept in
 * token and sign-in records. */
typedef struct client_auth {
  const char *id;
  const char *secret;
  const char *method; /* client_secret_basic, client_secret_post, none, private_key_jwt */
  const char *pem;    /* private_key_jwt */
  const char *alg;
  const char *audience; /* the issuer, a client assertion's aud */
} client_auth;

/* Adds the client's authentication to a token request: a Basic header, a
 * secret or an assertion in the form, or the bare client_id. */
static int authenticate(const client_auth *ca, dexa__buf *form, char **authorization, char *err,
                        size_t err_size) {
  *authorization = NULL;
  const char *m = ca->method ? ca->method : ca->secret ? "client_secret_basic" : "none";
  if (!strcmp(m, "client_secret_basic") && ca->secret) {
    dexa__buf raw, h;
    dexa__buf_init(&raw);
    dexa__buf_init(&h);
    dexa__url_encode(&raw, ca->id); /* RFC 6749 2.3.1: form-encoded, then base64 */
    dexa__buf_putc(&raw, ':');
    dexa__url_encode(&raw, ca->secret);
    dexa__buf_puts(&h, "Basic ");
    dexa__base64(&h, (const unsigned char *)raw.data, raw.len);
    dexa__buf_cstr(&h);
    if (raw.data) memset(raw.data, 0, raw.len);
    dexa__buf_free(&raw);
    *authorization = h.oom ? NULL : dexa__buf_steal(&h, NULL);
    dexa__buf_free(&h);
    return *authorization ? DEXA_OK : DEXA_E_NOMEM;
  }
  dexa__form_add(form, "client_id", ca->id);
  if (!strcmp(m, "client_secret_post") && ca->secret) {
    dexa__form_add(form, "client_secret", ca->secret);
  } else if (!strcmp(m, "private_key_jwt")) {
    char *jwt = NULL;
    if (!ca->pem) {
      snprintf(err, err_size, "private_key_jwt needs a private key (auth.privateKey)");
      return DEXA_E_AUTH;
    }
    int rc = dexa__oauth_client_assertion(ca->pem, ca->alg, ca->id, ca->audience, &jwt, err, err_size);
    if (rc != DEXA_OK) return rc;
    dexa__form_add(form, "client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer");
    dexa__form_add(form, "client_assertion", jwt);
    wipe_free(jwt);
  }
  return form->oom ? DEXA_E_NOMEM : DEXA_OK;
}

/* POSTs a token request; *tokens gets the response object on 2xx with an
 * access_token. The endpoint's error (never its body) goes into err. */
static int token_request(const char *endpoint, dexa__buf *form, const client_auth *ca,
                         cJSON **tokens, char *err, size_t err_size) {
  *tokens = NULL;
  char *authorization = NULL;
  int rc = ca ? authenticate(ca, form, &authorization, err, err_size) : DEXA_OK;
  dexa__buf_cstr(form);
  if (rc == DEXA_OK && form->oom) rc = DEXA_E_NOMEM;
  dexa__oauth_response r;
  memset(&r, 0, sizeof r);
  if (rc == DEXA_OK)
    rc = dexa__oauth_post(endpoint, "application/x-www-form-urlencoded", form->data, authorization,
                          &r, err, err_size);
  wipe_free(authorization);
  if (form->data) memset(form->data, 0, form->len);
  if (rc == DEXA_OK) {
    cJSON *doc = dexa__oauth_json(&r);
    if (doc && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(doc, "access_token"))) {
      *tokens = doc;
    } else {
      cJSON *e = r.body.len ? cJSON_ParseWithLength(r.body.data, r.body.len) : NULL;
      const char *code = jstr(e, "error"), *desc = jstr(e, "error_description");
      snprintf(err, err_size, "the token endpoint refused (HTTP %ld%s%.60s%s%.200s)", r.status,
               code ? ": " : "", code ? code : "", desc ? ": " : "", desc ? desc : "");
      cJSON_Delete(e);
      cJSON_Delete(doc);
      rc = DEXA_E_AUTH;
    }
  }
  if (r.body.data) memset(r.body.data, 0, r.body.len);
  dexa__oauth_response_free(&r);
  return rc;
}

/* The token record of a token response (tokens consumed): the tokens, and
 * what a later refresh needs. old: the record it replaces (its refresh
 * token is kept when the response has none), or NULL. */
static cJSON *tokens_record(cJSON *tokens, const char *endpoint, const client_auth *ca,
                            const char *resource, const char *issuer, const cJSON *old) {
  cJSON *rec = cJSON_CreateObject();
  int ok = rec != NULL;
  const char *names[] = {"access_token", "refresh_token", "scope", "token_type"};
  for (size_t i = 0; ok && i < 4; i++) {
    const char *v = jstr(tokens, names[i]);
    if (!v && i == 1) v = jstr(old, "refresh_token");
    if (!v && i == 2) v = jstr(old, "scope");
    if (v) ok = cJSON_AddStringToObject(rec, names[i], v) != NULL;
  }
  int64_t expires_in = 0;
  if (ok && dexa__json_exact_int(cJSON_GetObjectItemCaseSensitive(tokens, "expires_in"), &expires_in) &&
      expires_in > 0)
    ok = cJSON_AddNumberToObject(rec, "expires_at_ms", (double)(wall_ms() + expires_in * 1000)) != NULL;
  const char *keep[][2] = {{"token_endpoint", endpoint}, {"client_id", ca->id},
                           {"client_secret", ca->secret}, {"auth_method", ca->method},
                           {"resource", resource}, {"issuer", issuer}};
  for (size_t i = 0; ok && i < sizeof keep / sizeof keep[0]; i++)
    if (keep[i][1]) ok = cJSON_AddStringToObject(rec, keep[i][0], keep[i][1]) != NULL;
  cJSON_Delete(tokens);
  if (!ok) cJSON_Delete(rec);
  return ok ? rec : NULL;
}

/* Makes token the one in use (copied). */
static void use_token(dexa__mcp_oauth *o, const char *token) {
  char *t = token ? strdup(token) : NULL;
  pthread_mutex_lock(&o->mu);
  wipe_free(o->token);
  o->token = t;
  o->loaded = 1;
  pthread_mutex_unlock(&o->mu);
}

char *dexa__mcp_oauth_bearer(dexa__mcp_client *c) {
  dexa__mcp_oauth *o = c->oauth;
  pthread_mutex_lock(&o->mu);
  int loaded = o->loaded;
  pthread_mutex_unlock(&o->mu);
  if (!loaded) { /* the store's token, once: later ones come with a refusal */
    cJSON *rec = load_tokens(c->host, &c->cfg);
    use_token(o, jstr(rec, "access_token"));
    cJSON_Delete(rec);
  }
  char *out = NULL;
  pthread_mutex_lock(&o->mu);
  if (o->token) {
    size_t n = strlen(o->token) + 8;
    out = malloc(n);
    if (out) snprintf(out, n, "Bearer %s", o->token);
  }
  pthread_mutex_unlock(&o->mu);
  return out;
}

int dexa__mcp_oauth_has_token(dexa__mcp_client *c) {
  cJSON *rec = load_tokens(c->host, &c->cfg);
  const char *t = jstr(rec, "access_token");
  if (t) use_token(c->oauth, t);
  cJSON_Delete(rec);
  return t != NULL;
}

/* ---- the grants ---- */

static client_auth config_auth(const dexa__mcp_server_cfg *cfg, const char *audience, char **pem) {
  *pem = NULL;
  const dexa__mcp_auth_cfg *a = &cfg->auth;
  if (a->private_key) *pem = strdup(a->private_key);
  else if (a->private_key_file) {
    FILE *f = fopen(a->private_key_file, "rb");
    if (f) {
      dexa__buf b;
      dexa__buf_init(&b);
      char chunk[4096];
      size_t n;
      while ((n = fread(chunk, 1, sizeof chunk, f)) > 0 && b.len < 65536) dexa__buf_append(&b, chunk, n);
      fclose(f);
      dexa__buf_cstr(&b);
      *pem = b.oom ? NULL : dexa__buf_steal(&b, NULL);
      dexa__buf_free(&b);
    }
  }
  client_auth ca = {a->client_id, a->client_secret, a->auth_method, *pem, a->signing_alg, audience};
  return ca;
}

/* The method of a client with (or without) a secret, from what the
 * authorization server supports (RFC 8414: client_secret_basic when it
 * does not say). */
static const char *pick_method(const cJSON *supported, int has_secret, int has_key) {
  int basic = !supported, post = 0, none = 0, jwt = 0;
  const cJSON *m;
  cJSON_ArrayForEach(m, supported) {
    const char *s = cJSON_GetStringValue(m);
    if (!s) continue;
    basic |= !strcmp(s, "client_secret_basic");
    post |= !strcmp(s, "client_secret_post");
    none |= !strcmp(s, "none");
    jwt |= !strcmp(s, "private_key_jwt");
  }
  if (has_key && jwt) return "private_key_jwt";
  if (has_secret && basic) return "client_secret_basic";
  if (has_secret && post) return "client_secret_post";
  if (!has_secret && none) return "none";
  return has_secret ? "client_secret_basic" : "none";
}

/* Scopes to ask for: the configuration's, else the challenge's (with those
 * granted before, for a step-up), else the resource's, else none. */
static char *scopes_for(const dexa__mcp_server_cfg *cfg, const dexa__oauth_challenge *ch,
                        const dexa__oauth_server *srv, const cJSON *old) {
  if (cfg->auth.scopes) return strdup(cfg->auth.scopes);
  if (!ch->scope[0]) return srv->scopes_supported ? strdup(srv->scopes_supported) : NULL;
  dexa__buf b;
  dexa__buf_init(&b);
  const char *granted = !strcmp(ch->error, "insufficient_scope") ? jstr(old, "scope") : NULL;
  if (granted) dexa__buf_puts(&b, granted);
  const char *p = ch->scope;
  while (*p) { /* each challenge scope once */
    size_t n = strcspn(p, " ");
    int have = 0;
    for (const char *q = granted; q && *q && !have;) {
      size_t m = strcspn(q, " ");
      have = m == n && !strncmp(q, p, n);
      q += m + (q[m] == ' ');
    }
    if (n && !have) {
      if (b.len) dexa__buf_putc(&b, ' ');
      dexa__buf_append(&b, p, n);
    }
    p += n + (p[n] == ' ');
  }
  dexa__buf_cstr(&b);
  return b.oom ? NULL : dexa__buf_steal(&b, NULL);
}

static char *read_id_token(const dexa__mcp_auth_cfg *a) {
  if (a->idp_id_token) return strdup(a->idp_id_token);
  FILE *f = fopen(a->idp_id_token_file, "rb");
  if (!f) return NULL;
  char buf[16384];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  while (n && isspace((unsigned char)buf[n - 1])) n--;
  buf[n] = '\0';
  char *out = n ? strdup(buf) : NULL;
  memset(buf, 0, sizeof buf);
  return out;
}

/* Enterprise (SEP-990): the IdP exchanges its ID token for an ID-JAG
 * (RFC 8693) addressed to the authorization server, which grants the
 * access token for it (RFC 7523 JWT bearer). */
static int enterprise_assertion(const dexa__mcp_auth_cfg *a, const dexa__oauth_server *srv,
                                const char *scope, char **jag, char *err, size_t err_size) {
  char *id_token = read_id_token(a);
  if (!id_token) {
    snprintf(err, err_size, "auth.idp: the ID token cannot be read");
    return DEXA_E_AUTH;
  }
  dexa__buf form;
  dexa__buf_init(&form);
  dexa__form_add(&form, "grant_type", "urn:ietf:params:oauth:grant-type:token-exchange");
  dexa__form_add(&form, "requested_token_type", "urn:ietf:params:oauth:token-type:id-jag");
  dexa__form_add(&form, "audience", srv->issuer);
  dexa__form_add(&form, "resource", srv->resource);
  dexa__form_add(&form, "scope", scope);
  dexa__form_add(&form, "subject_token", id_token);
  dexa__form_add(&form, "subject_token_type", "urn:ietf:params:oauth:token-type:id_token");
  wipe_free(id_token);
  client_auth idp = {a->idp_client_id, a->idp_client_secret,
                     a->idp_client_secret ? "client_secret_post" : "none", NULL, NULL, NULL};
  cJSON *res = NULL;
  int rc = token_request(a->idp_token_endpoint, &form, &idp, &res, err, err_size);
  dexa__buf_free(&form);
  if (rc == DEXA_OK) {
    *jag = strdup(jstr(res, "access_token"));
    if (!*jag) rc = DEXA_E_NOMEM;
  }
  cJSON_Delete(res);
  return rc;
}

/* The headless grants: client credentials, enterprise. Stores the tokens. */
static int headless_grant(dexa__mcp_client *c, const dexa__oauth_challenge *ch, const cJSON *old,
                          char *err, size_t err_size) {
  const dexa__mcp_auth_cfg *a = &c->cfg.auth;
  dexa__oauth_server srv;
  int rc = dexa__oauth_discover(c->cfg.url, ch, &srv, err, err_size);
  if (rc != DEXA_OK) return rc;
  char *pem = NULL, *jag = NULL;
  client_auth ca = config_auth(&c->cfg, srv.issuer, &pem);
  if (!ca.method) ca.method = pick_method(srv.auth_methods, ca.secret != NULL, pem != NULL);
  char *scope = scopes_for(&c->cfg, ch, &srv, old);
  dexa__buf form;
  dexa__buf_init(&form);
  if (a->grant == DEXA__MCP_GRANT_ENTERPRISE) {
    rc = enterprise_assertion(a, &srv, scope, &jag, err, err_size);
    dexa__form_add(&form, "grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer");
    dexa__form_add(&form, "assertion", jag);
  } else {
    dexa__form_add(&form, "grant_type", "client_credentials");
  }
  dexa__form_add(&form, "scope", scope);
  dexa__form_add(&form, "resource", srv.resource);
  cJSON *tokens = NULL;
  if (rc == DEXA_OK) rc = token_request(srv.token_endpoint, &form, &ca, &tokens, err, err_size);
  if (rc == DEXA_OK) {
    cJSON *rec = tokens_record(tokens, srv.token_endpoint, &ca, srv.resource, srv.issuer, old);
    char key[1200];
    tokens_key(&c->cfg, key, sizeof key);
    rc = rec ? store_json(c->host, key, rec) : DEXA_E_NOMEM;
    if (rc == DEXA_OK) use_token(c->oauth, jstr(rec, "access_token"));
    cJSON_Delete(rec);
  }
  dexa__buf_free(&form);
  wipe_free(jag);
  wipe_free(pem);
  free(scope);
  dexa__oauth_server_free(&srv);
  return rc;
}

static int refresh(dexa__mcp_client *c, const cJSON *old, char *err, size_t err_size) {
  const char *endpoint = jstr(old, "token_endpoint");
  if (!jstr(old, "refresh_token") || !endpoint) return DEXA_E_AUTH;
  char *pem = NULL;
  client_auth cfg_ca = config_auth(&c->cfg, jstr(old, "issuer"), &pem);
  client_auth ca = {jstr(old, "client_id"), jstr(old, "client_secret"), jstr(old, "auth_method"),
                    pem, cfg_ca.alg, jstr(old, "issuer")};
  dexa__buf form;
  dexa__buf_init(&form);
  dexa__form_add(&form, "grant_type", "refresh_token");
  dexa__form_add(&form, "refresh_token", jstr(old, "refresh_token"));
  dexa__form_add(&form, "resource", jstr(old, "resource"));
  cJSON *tokens = NULL;
  int rc = token_request(endpoint, &form, &ca, &tokens, err, err_size);
  if (rc == DEXA_OK) {
    cJSON *rec = tokens_record(tokens, endpoint, &ca, jstr(old, "resource"), jstr(old, "issuer"), old);
    char key[1200];
    tokens_key(&c->cfg, key, sizeof key);
    rc = rec ? store_json(c->host, key, rec) : DEXA_E_NOMEM;
    if (rc == DEXA_OK) use_token(c->oauth, jstr(rec, "access_token"));
    cJSON_Delete(rec);
  }
  dexa__buf_free(&form);
  wipe_free(pem);
  return rc;
}

/* ---- refusals ---- */

int dexa__mcp_oauth_recover(dexa__mcp_client *c, const char *method,
                            const dexa__mcp_http_auth *refusal, char *err, size_t err_size) {
  dexa__mcp_oauth *o = c->oauth;
  dexa__oauth_challenge ch;
  dexa__oauth_parse_challenge(refusal->challenge, &ch);
  pthread_mutex_lock(&o->mu);
  o->last = ch;
  o->last_status = refusal->status;
  if (strcmp(o->refused, method ? method : "")) {
    snprintf(o->refused, sizeof o->refused, "%s", method ? method : "");
    o->headless = 0;
  }
  char *used = o->token ? strdup(o->token) : NULL;
  pthread_mutex_unlock(&o->mu);
  int rc = DEXA_E_AUTH;
  cJSON *rec = load_tokens(c->host, &c->cfg);
  const char *stored = jstr(rec, "access_token");
  const char *how = NULL;
  int again = 0;
  if (stored && (!used || strcmp(stored, used))) { /* a sign-in completed meanwhile */
    use_token(o, stored);
    rc = DEXA_OK;
    how = "the stored token";
  } else if (refusal->status == 401 && jstr(rec, "refresh_token") &&
             (rc = refresh(c, rec, err, err_size)) == DEXA_OK) {
    how = "a refreshed token";
  } else if (c->cfg.auth.grant != DEXA__MCP_GRANT_CODE) {
    pthread_mutex_lock(&o->mu);
    int tries = ++o->headless;
    pthread_mutex_unlock(&o->mu);
    how = "a new token of the configured grant";
    if (tries <= MAX_HEADLESS) rc = headless_grant(c, &ch, rec, err, err_size);
    else snprintf(err, err_size, "the server keeps refusing the %s grant's token (HTTP %ld)",
                  c->cfg.auth.grant == DEXA__MCP_GRANT_ENTERPRISE ? "enterprise" : "client credentials",
                  refusal->status);
    if (rc != DEXA_OK && rc != DEXA_E_NOMEM) rc = DEXA_E_AUTH;
  } else {
    rc = DEXA_E_AUTH;
    if (refusal->status == 401 && used) use_token(o, NULL); /* refused: no use sending it */
    pthread_mutex_lock(&o->mu);
    again = o->want_signin; /* said before: only the first time is news */
    o->want_signin = 1;
    pthread_mutex_unlock(&o->mu);
    if (refusal->status == 403)
      snprintf(err, err_size, "the server needs more scope (%.200s): a person must sign in again",
               ch.scope[0] ? ch.scope : "insufficient_scope");
    else
      snprintf(err, err_size, "the server needs a sign-in (OAuth)");
  }
  dexa__mcp_log(c->host, rc == DEXA_OK ? 3 : again ? 4 : 2, "mcp:%s: HTTP %ld on %s: %s%s", c->cfg.name,
                refusal->status, method ? method : "a message",
                rc == DEXA_OK ? "sending it again with " : "", rc == DEXA_OK ? how : err);
  wipe_free(used);
  cJSON_Delete(rec);
  return rc;
}

void dexa__mcp_oauth_succeeded(dexa__mcp_client *c, const char *method) {
  dexa__mcp_oauth *o = c->oauth;
  pthread_mutex_lock(&o->mu);
  if (o->refused[0] && !strcmp(o->refused, method)) {
    o->refused[0] = '\0';
    o->signins = 0;
    o->headless = 0;
    o->want_signin = 0;
  }
  pthread_mutex_unlock(&o->mu);
}

int dexa__mcp_oauth_can_sign_in(dexa__mcp_client *c) {
  dexa__mcp_oauth *o = c->oauth;
  if (!o || c->cfg.auth.grant != DEXA__MCP_GRANT_CODE) return 0;
  pthread_mutex_lock(&o->mu);
  int can = o->want_signin && o->signins < DEXA__OAUTH_MAX_SIGNINS;
  pthread_mutex_unlock(&o->mu);
  return can && (c->cfg.auth.redirect_uri || dexa__mcp_host_redirect(c->host));
}

/* ---- the interactive sign-in ---- */

/* The client at the authorization server: pre-registered, a client ID
 * metadata document, or registered (once per server, issuer and redirect;
 * kept in the store). */
static int client_for(dexa__mcp_client *c, const dexa__oauth_server *srv, const char *redirect,
                      cJSON **client, char *err, size_t err_size) {
  const dexa__mcp_auth_cfg *a = &c->cfg.auth;
  *client = cJSON_CreateObject();
  if (!*client) return DEXA_E_NOMEM;
  if (a->client_id) {
    cJSON_AddStringToObject(*client, "client_id", a->client_id);
    if (a->client_secret) cJSON_AddStringToObject(*client, "client_secret", a->client_secret);
    cJSON_AddStringToObject(*client, "auth_method",
                            a->auth_method ? a->auth_method : pick_method(srv->auth_methods, a->client_secret != NULL, 0));
    return DEXA_OK;
  }
  if (srv->cimd && a->client_metadata_url) {
    cJSON_AddStringToObject(*client, "client_id", a->client_metadata_url);
    cJSON_AddStringToObject(*client, "auth_method", "none");
    return DEXA_OK;
  }
  cJSON_Delete(*client);
  *client = NULL;
  dexa__buf key;
  dexa__buf_init(&key);
  dexa__buf_printf(&key, "mcp:client:%s:%s", srv->issuer, redirect);
  char *text = NULL;
  int rc = key.oom ? DEXA_E_NOMEM : dexa__mcp_store_get(c->host, key.data, &text);
  if (rc == DEXA_OK && text) {
    *client = cJSON_Parse(text);
    wipe_free(text);
    if (*client && jstr(*client, "client_id")) {
      dexa__buf_free(&key);
      return DEXA_OK;
    }
    cJSON_Delete(*client);
    *client = NULL;
  }
  if (rc == DEXA_OK && !srv->registration_endpoint) {
    snprintf(err, err_size, "the authorization server %.200s offers no registration: set auth.clientId",
             srv->issuer);
    rc = DEXA_E_AUTH;
  }
  cJSON *req = rc == DEXA_OK ? cJSON_CreateObject() : NULL;
  const char *want = pick_method(srv->auth_methods, 1, 0);
  if (req) {
    cJSON_AddStringToObject(req, "client_name", a->client_name ? a->client_name : dexa__mcp_host_client_name(c->host));
    cJSON *uris = cJSON_AddArrayToObject(req, "redirect_uris");
    if (uris) cJSON_AddItemToArray(uris, cJSON_CreateString(redirect));
    cJSON *grants = cJSON_AddArrayToObject(req, "grant_types");
    if (grants) cJSON_AddItemToArray(grants, cJSON_CreateString("authorization_code"));
    if (grants) cJSON_AddItemToArray(grants, cJSON_CreateString("refresh_token"));
    cJSON *types = cJSON_AddArrayToObject(req, "response_types");
    if (types) cJSON_AddItemToArray(types, cJSON_CreateString("code"));
    cJSON_AddStringToObject(req, "token_endpoint_auth_method", want);
  }
  char *body = req ? cJSON_PrintUnformatted(req) : NULL;
  if (rc == DEXA_OK && !body) rc = DEXA_E_NOMEM;
  dexa__oauth_response r;
  memset(&r, 0, sizeof r);
  if (rc == DEXA_OK) rc = dexa__oauth_post(srv->registration_endpoint, "application/json", body, NULL, &r, err, err_size);
  cJSON *reg = rc == DEXA_OK ? dexa__oauth_json(&r) : NULL;
  if (rc == DEXA_OK && !jstr(reg, "client_id")) {
    snprintf(err, err_size, "dynamic client registration at %.200s failed (HTTP %ld)",
             srv->registration_endpoint, r.status);
    rc = DEXA_E_AUTH;
  }
  if (rc == DEXA_OK) {
    *client = cJSON_CreateObject();
    const char *secret = jstr(reg, "client_secret");
    const char *method = jstr(reg, "token_endpoint_auth_method");
    if (*client) {
      cJSON_AddStringToObject(*client, "client_id", jstr(reg, "client_id"));
      if (secret) cJSON_AddStringToObject(*client, "client_secret", secret);
      cJSON_AddStringToObject(*client, "auth_method", method ? method : secret ? want : "none");
    }
    rc = *client ? store_json(c->host, key.data, *client) : DEXA_E_NOMEM;
  }
  if (r.body.data) memset(r.body.data, 0, r.body.len);
  dexa__oauth_response_free(&r);
  cJSON_Delete(reg);
  cJSON_Delete(req);
  cJSON_free(body);
  dexa__buf_free(&key);
  return rc;
}

int dexa__mcp_oauth_begin(dexa__mcp_client *c, const char *session_id, const char *call_id,
                          char **url, char *err, size_t err_size) {
  *url = NULL;
  dexa__mcp_oauth *o = c->oauth;
  const char *redirect = c->cfg.auth.redirect_uri ? c->cfg.auth.redirect_uri : dexa__mcp_host_redirect(c->host);
  if (!o || !redirect) {
    snprintf(err, err_size, "the server needs a sign-in, and no redirect URI is configured "
                            "(dexa_mcp_config_set_auth or auth.redirectUri)");
    return DEXA_E_AUTH;
  }
  pthread_mutex_lock(&o->mu);
  dexa__oauth_challenge ch = o->last;
  int n = ++o->signins;
  pthread_mutex_unlock(&o->mu);
  if (n > DEXA__OAUTH_MAX_SIGNINS) {
    snprintf(err, err_size, "the server still refuses after %d sign-ins", DEXA__OAUTH_MAX_SIGNINS);
    return DEXA_E_AUTH;
  }
  dexa__oauth_server srv;
  int rc = dexa__oauth_discover(c->cfg.url, &ch, &srv, err, err_size);
  if (rc != DEXA_OK) return rc;
  cJSON *old = load_tokens(c->host, &c->cfg), *client = NULL;
  char *scope = scopes_for(&c->cfg, &ch, &srv, old);
  rc = srv.authorization_endpoint ? client_for(c, &srv, redirect, &client, err, err_size) : DEXA_E_AUTH;
  if (!srv.authorization_endpoint) snprintf(err, err_size, "the authorization server has no authorization endpoint");
  dexa__buf verifier, challenge, state, u;
  dexa__buf_init(&verifier);
  dexa__buf_init(&challenge);
  dexa__buf_init(&state);
  dexa__buf_init(&u);
  if (rc == DEXA_OK) rc = dexa__oauth_random(&verifier, 32); /* 43 characters */
  if (rc == DEXA_OK) rc = dexa__oauth_random(&state, 24);
  if (rc == DEXA_OK) rc = dexa__oauth_pkce_challenge(dexa__buf_cstr(&verifier), &challenge);
  if (rc == DEXA_OK) {
    dexa__buf q;
    dexa__buf_init(&q);
    dexa__form_add(&q, "response_type", "code");
    dexa__form_add(&q, "client_id", jstr(client, "client_id"));
    dexa__form_add(&q, "redirect_uri", redirect);
    dexa__form_add(&q, "code_challenge", dexa__buf_cstr(&challenge));
    dexa__form_add(&q, "code_challenge_method", "S256");
    dexa__form_add(&q, "state", dexa__buf_cstr(&state));
    dexa__form_add(&q, "resource", srv.resource);
    dexa__form_add(&q, "scope", scope);
    dexa__buf_printf(&u, "%s%c%s", srv.authorization_endpoint,
                     strchr(srv.authorization_endpoint, '?') ? '&' : '?', q.data ? q.data : "");
    dexa__buf_free(&q);
    if (u.oom) rc = DEXA_E_NOMEM;
  }
  if (rc == DEXA_OK) { /* the sign-in, for the completion (maybe in another process) */
    cJSON *p = cJSON_CreateObject();
    const char *kv[][2] = {{"server", c->cfg.name}, {"server_url", c->cfg.url},
                           {"client_id", jstr(client, "client_id")},
                           {"client_secret", jstr(client, "client_secret")},
                           {"auth_method", jstr(client, "auth_method")},
                           {"token_endpoint", srv.token_endpoint}, {"redirect_uri", redirect},
                           {"code_verifier", dexa__buf_cstr(&verifier)}, {"resource", srv.resource},
                           {"scope", scope}, {"issuer", srv.issuer}, {"session_id", session_id},
                           {"call_id", call_id}};
    for (size_t i = 0; p && i < sizeof kv / sizeof kv[0]; i++)
      if (kv[i][1]) cJSON_AddStringToObject(p, kv[i][0], kv[i][1]);
    if (p) cJSON_AddNumberToObject(p, "created_ms", (double)wall_ms());
    char key[200];
    snprintf(key, sizeof key, "mcp:signin:%s", dexa__buf_cstr(&state));
    rc = p ? store_json(c->host, key, p) : DEXA_E_NOMEM;
    cJSON_Delete(p);
    if (rc == DEXA_E_UNSUPPORTED) snprintf(err, err_size, "no token store: set one with dexa_mcp_config_set_auth");
  }
  if (rc == DEXA_OK) {
    dexa__buf_cstr(&u);
    *url = dexa__buf_steal(&u, NULL);
    if (!*url) rc = DEXA_E_NOMEM;
    dexa__mcp_log(c->host, 3, "mcp:%s: sign-in %d started at %.200s", c->cfg.name, n, srv.issuer);
  }
  if (verifier.data) memset(verifier.data, 0, verifier.len);
  dexa__buf_free(&verifier);
  dexa__buf_free(&challenge);
  dexa__buf_free(&state);
  dexa__buf_free(&u);
  free(scope);
  cJSON_Delete(client);
  cJSON_Delete(old);
  dexa__oauth_server_free(&srv);
  return rc;
}

/* ---- the completion (dexa_mcp_authorization_complete) ---- */

static cJSON *take_signin(dexa__mcp_host *host, const char *state, int *rc) {
  char key[200];
  snprintf(key, sizeof key, "mcp:signin:%.150s", state);
  char *text = NULL;
  *rc = dexa__mcp_store_get(host, key, &text);
  cJSON *p = text ? cJSON_Parse(text) : NULL;
  wipe_free(text);
  if (*rc == DEXA_OK && p) *rc = dexa__mcp_store_put(host, key, NULL); /* a state is used once */
  if (*rc == DEXA_OK && !p) *rc = DEXA_E_NOT_FOUND;
  int64_t created = 0;
  if (*rc == DEXA_OK && (!dexa__json_exact_int(cJSON_GetObjectItemCaseSensitive(p, "created_ms"), &created) ||
                         wall_ms() - created > SIGNIN_TTL_MS))
    *rc = DEXA_E_NOT_FOUND;
  if (*rc != DEXA_OK) {
    cJSON_Delete(p);
    return NULL;
  }
  return p;
}

static int answer_json(const cJSON *p, int signed_in, char **out_json, size_t *out_len) {
  if (!out_json) return DEXA_OK;
  cJSON *o = cJSON_CreateObject();
  int ok = o && cJSON_AddStringToObject(o, "server", jstr(p, "server")) &&
           cJSON_AddItemToObject(o, "session_id", jstr(p, "session_id") ? cJSON_CreateString(jstr(p, "session_id")) : cJSON_CreateNull()) &&
           cJSON_AddItemToObject(o, "call_id", jstr(p, "call_id") ? cJSON_CreateString(jstr(p, "call_id")) : cJSON_CreateNull()) &&
           cJSON_AddBoolToObject(o, "signed_in", signed_in);
  char *text = ok ? cJSON_PrintUnformatted(o) : NULL;
  cJSON_Delete(o);
  if (!text) return DEXA_E_NOMEM;
  *out_json = strdup(text);
  cJSON_free(text);
  if (!*out_json) return DEXA_E_NOMEM;
  if (out_len) *out_len = strlen(*out_json);
  return DEXA_OK;
}

int dexa__mcp_oauth_complete(dexa__mcp_host *host, const dexa__mcp_server_cfg *servers,
                             size_t count, const char *redirect_url, char **out_json,
                             size_t *out_len, char *err, size_t err_size) {
  char *state = dexa__query_get(redirect_url, "state");
  char *code = dexa__query_get(redirect_url, "code");
  char *error = dexa__query_get(redirect_url, "error");
  int rc = state ? DEXA_OK : DEXA_E_INVALID_ARG;
  if (!state) snprintf(err, err_size, "the redirect has no state");
  cJSON *p = rc == DEXA_OK ? take_signin(host, state, &rc) : NULL;
  if (!p && rc == DEXA_E_NOT_FOUND) snprintf(err, err_size, "no sign-in waits for that state (or it expired)");
  const dexa__mcp_server_cfg *cfg = NULL;
  for (size_t i = 0; p && i < count; i++)
    if (!strcmp(servers[i].name, jstr(p, "server"))) cfg = &servers[i];
  if (rc == DEXA_OK && !cfg) {
    snprintf(err, err_size, "the sign-in is for a server this configuration does not have");
    rc = DEXA_E_NOT_FOUND;
  }
  if (rc == DEXA_OK && (error || !code)) { /* refused at the authorization server */
    snprintf(err, err_size, "the authorization server said %.100s", error ? error : "nothing (no code)");
    rc = answer_json(p, 0, out_json, out_len);
  } else if (rc == DEXA_OK) {
    char *pem = NULL;
    client_auth cfg_ca = config_auth(cfg, jstr(p, "issuer"), &pem);
    client_auth ca = {jstr(p, "client_id"), jstr(p, "client_secret"), jstr(p, "auth_method"), pem,
                      cfg_ca.alg, jstr(p, "issuer")};
    dexa__buf form;
    dexa__buf_init(&form);
    dexa__form_add(&form, "grant_type", "authorization_code");
    dexa__form_add(&form, "code", code);
    dexa__form_add(&form, "redirect_uri", jstr(p, "redirect_uri"));
    dexa__form_add(&form, "code_verifier", jstr(p, "code_verifier"));
    dexa__form_add(&form, "resource", jstr(p, "resource"));
    cJSON *tokens = NULL;
    rc = token_request(jstr(p, "token_endpoint"), &form, &ca, &tokens, err, err_size);
    if (rc == DEXA_OK) {
      cJSON *old = load_tokens(host, cfg);
      cJSON *rec = tokens_record(tokens, jstr(p, "token_endpoint"), &ca, jstr(p, "resource"),
                                 jstr(p, "issuer"), old);
      if (rec && !cJSON_GetObjectItemCaseSensitive(rec, "scope") && jstr(p, "scope"))
        cJSON_AddStringToObject(rec, "scope", jstr(p, "scope")); /* RFC 6749 5.1: as requested */
      char key[1200];
      tokens_key(cfg, key, sizeof key);
      rc = rec ? store_json(host, key, rec) : DEXA_E_NOMEM;
      cJSON_Delete(rec);
      cJSON_Delete(old);
    }
    if (rc == DEXA_OK) rc = answer_json(p, 1, out_json, out_len);
    dexa__buf_free(&form);
    wipe_free(pem);
  }
  cJSON_Delete(p);
  free(state);
  wipe_free(code);
  free(error);
  return rc;
}

DEXA_EXTERN int dexa_mcp_authorization_complete(const dexa_mcp_config *config,
                                                const char *redirect_url, char **out_json,
                                                size_t *out_len, char *errmsg,
                                                size_t errmsg_size) {
  char scratch[8];
  char *err = errmsg && errmsg_size ? errmsg : scratch;
  size_t err_size = errmsg && errmsg_size ? errmsg_size : sizeof scratch;
  err[0] = '\0';
  if (out_json) *out_json = NULL;
  if (out_len) *out_len = 0;
  if (!config || !redirect_url) {
    snprintf(err, err_size, "config and redirect_url are required");
    return DEXA_E_INVALID_ARG;
  }
  return dexa__mcp_oauth_complete(config->host, config->servers, config->count, redirect_url,
                                  out_json, out_len, err, err_size);
}
