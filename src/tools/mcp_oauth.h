/* OAuth 2.1 for Streamable HTTP MCP servers (the MCP authorization spec,
 * 2025-11-25, with the fallbacks of 2025-03-26):
 *
 *   mcp_oauth_http.c      HTTP for OAuth (libcurl), URLs, forms, base64url
 *   mcp_oauth_discovery.c WWW-Authenticate, protected resource metadata
 *                         (RFC 9728), authorization server metadata (RFC 8414
 *                         and OpenID discovery), the 2025-03-26 fallbacks
 *   mcp_oauth_jwt.c       JWT client assertions (private_key_jwt, ES256/RS256)
 *   mcp_oauth.c           tokens: the store's, refresh, the headless grants
 *                         (client credentials, enterprise), step-up, and the
 *                         interactive sign-in (registration, PKCE, completion)
 *
 * Tokens and secrets live in the host's token store and in memory only
 * while a request is built; they never reach an error message, a log line
 * or session state. */
#ifndef DEXA_TOOLS_MCP_OAUTH_H
#define DEXA_TOOLS_MCP_OAUTH_H

#include "tools/mcp_internal.h"

#define DEXA__OAUTH_MAX_SIGNINS 3 /* sign-ins for one refusal without a success in between */

int dexa__mcp_oauth_new(dexa__mcp_oauth **out);
void dexa__mcp_oauth_free(dexa__mcp_oauth *o);

/* "Bearer <token>" for the next request (malloc'd; wipe and free it), or
 * NULL while there is no token. */
char *dexa__mcp_oauth_bearer(dexa__mcp_client *c);

/* The server refused a message of method (refusal: its status and
 * challenge). Tries what needs no person: a token stored meanwhile (a
 * sign-in completed elsewhere), a refresh, the headless grants, a headless
 * step-up. DEXA_OK: send it again. DEXA_E_AUTH: a person must sign in (see
 * dexa__mcp_oauth_begin) or the refusals go on; err says why. */
int dexa__mcp_oauth_recover(dexa__mcp_client *c, const char *method,
                            const dexa__mcp_http_auth *refusal, char *err, size_t err_size);

/* A message of method went through: the refusals of that method are over. */
void dexa__mcp_oauth_succeeded(dexa__mcp_client *c, const char *method);

/* 1 when the last DEXA_E_AUTH wants a person to sign in (interactive grant,
 * a redirect URI known, and fewer than DEXA__OAUTH_MAX_SIGNINS tries). */
int dexa__mcp_oauth_can_sign_in(dexa__mcp_client *c);

/* Starts a sign-in for the call (session_id, call_id): discovery,
 * registration, PKCE, a pending record in the store; *url (malloc'd) is the
 * page the person opens. */
int dexa__mcp_oauth_begin(dexa__mcp_client *c, const char *session_id, const char *call_id,
                          char **url, char *err, size_t err_size);

/* 1 when the store holds an access token for the server now. */
int dexa__mcp_oauth_has_token(dexa__mcp_client *c);

/* dexa_mcp_authorization_complete: servers are the configuration's. */
int dexa__mcp_oauth_complete(dexa__mcp_host *host, const dexa__mcp_server_cfg *servers,
                             size_t count, const char *redirect_url, char **out_json,
                             size_t *out_len, char *err, size_t err_size);

/* ---- HTTP and text helpers (mcp_oauth_http.c) ---- */

typedef struct dexa__oauth_response {
  long status;
  dexa__buf body;
  char content_type[128];
} dexa__oauth_response;

void dexa__oauth_response_free(dexa__oauth_response *r);
/* GET url (Accept: application/json). DEXA_OK when the exchange happened
 * (any status), DEXA_E_IO / DEXA_E_TIMEOUT when it did not. */
int dexa__oauth_get(const char *url, dexa__oauth_response *r, char *err, size_t err_size);
/* POST body (content_type) with an optional Authorization header value. */
int dexa__oauth_post(const char *url, const char *content_type, const char *body,
                     const char *authorization, dexa__oauth_response *r, char *err,
                     size_t err_size);
/* The JSON object of a 2xx response, or NULL. */
cJSON *dexa__oauth_json(const dexa__oauth_response *r);

/* application/x-www-form-urlencoded: appends "&name=value" (the first
 * without '&'), value percent-encoded. */
void dexa__form_add(dexa__buf *b, const char *name, const char *value);
void dexa__url_encode(dexa__buf *b, const char *value);
/* The decoded value of name in a query string (after '?', or the whole text
 * when it holds none), malloc'd, or NULL. */
char *dexa__query_get(const char *url, const char *name);
/* base64url without padding of n bytes. */
void dexa__base64url(dexa__buf *b, const unsigned char *data, size_t n);
void dexa__base64(dexa__buf *b, const unsigned char *data, size_t n);
/* PKCE S256 (RFC 7636): BASE64URL(SHA256(verifier)) appended to out. */
int dexa__oauth_pkce_challenge(const char *verifier, dexa__buf *out);
/* n random bytes as base64url (PKCE verifiers, state, JWT ids). */
int dexa__oauth_random(dexa__buf *b, size_t n);
/* "scheme://host[:port]" of url into out (size bytes); -1 when not a URL. */
int dexa__url_origin(const char *url, char *out, size_t size);
/* The path of url ("/" when empty), without query or fragment. */
void dexa__url_path(const char *url, char *out, size_t size);

/* ---- discovery (mcp_oauth_discovery.c) ---- */

/* The parameters of the Bearer challenge of a WWW-Authenticate value. */
typedef struct dexa__oauth_challenge {
  char error[64];
  char scope[1024];
  char resource_metadata[1024];
} dexa__oauth_challenge;

void dexa__oauth_parse_challenge(const char *header, dexa__oauth_challenge *ch);

/* What discovery found for one server: the resource, its authorization
 * server's endpoints and abilities. */
typedef struct dexa__oauth_server {
  char *resource;          /* RFC 8707 resource indicator */
  char *scopes_supported;  /* the PRM's, space-separated, or NULL */
  char *issuer;
  char *authorization_endpoint;
  char *token_endpoint;
  char *registration_endpoint;
  cJSON *auth_methods;     /* token_endpoint_auth_methods_supported, or NULL */
  int cimd;                /* client_id_metadata_document_supported */
} dexa__oauth_server;

void dexa__oauth_server_free(dexa__oauth_server *s);
/* Discovers from the server URL and its challenge: PRM (the challenge's
 * resource_metadata, else the path-based then the root well-known URL),
 * then the authorization server's metadata (RFC 8414 and OpenID paths in
 * the spec's order), else the 2025-03-26 fallbacks (the MCP server's origin
 * as issuer; /authorize, /token, /register). */
int dexa__oauth_discover(const char *server_url, const dexa__oauth_challenge *ch,
                         dexa__oauth_server *out, char *err, size_t err_size);

/* ---- client assertions (mcp_oauth_jwt.c) ---- */

/* A signed JWT {iss,sub: client_id, aud, iat, exp, jti} with the PEM private
 * key (ES256 or RS256), malloc'd into *out. */
int dexa__oauth_client_assertion(const char *pem, const char *alg, const char *client_id,
                                 const char *audience, char **out, char *err, size_t err_size);

#endif
