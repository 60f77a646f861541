/* The pieces of the MCP OAuth client that need no server: WWW-Authenticate
 * parsing, query and form encoding, base64url, PKCE (RFC 7636's own
 * example), JWT client assertions (verified with the public key), the file
 * token store (modes, records, two processes at once), the "auth" keys of
 * the configuration and their redaction, and the completion's refusals.
 * test-needs: mcp-http */
#include <cjson/cJSON.h>
#include <dexagents/dexagents.h>
#include <mbedtls/asn1write.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/ecdsa.h>
#include <mbedtls/entropy.h>
#include <mbedtls/md.h>
#include <mbedtls/pk.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testing.h"
#include "tools/mcp_oauth.h"

static void test_bearer_challenges_are_parsed(void) {
  dexa__oauth_challenge ch;
  dexa__oauth_parse_challenge(
      "Bearer error=\"insufficient_scope\", scope=\"mcp:basic mcp:write\", "
      "resource_metadata=\"http://h/.well-known/oauth-protected-resource/mcp\"",
      &ch);
  CHECK_STR(ch.error, "insufficient_scope");
  CHECK_STR(ch.scope, "mcp:basic mcp:write");
  CHECK_STR(ch.resource_metadata, "http://h/.well-known/oauth-protected-resource/mcp");
  /* another scheme first, a quoted comma, an escaped quote, a token value */
  dexa__oauth_parse_challenge("DPoP algs=\"ES256\", Bearer realm=\"a, b\\\"c\", error=invalid_token", &ch);
  CHECK_STR(ch.error, "invalid_token");
  CHECK_STR(ch.scope, "");
  dexa__oauth_parse_challenge("Basic realm=\"x\"", &ch);
  CHECK_STR(ch.error, "");
  dexa__oauth_parse_challenge(NULL, &ch);
  CHECK_STR(ch.resource_metadata, "");
}

static void test_queries_forms_and_base64url(void) {
  char *v = dexa__query_get("http://cb/x?state=a%2Bb%3D&code=c+d&x=1#frag", "state");
  CHECK_STR(v, "a+b=");
  free(v);
  v = dexa__query_get("?code=c+d", "code");
  CHECK_STR(v, "c d");
  free(v);
  CHECK(dexa__query_get("?codex=1", "code") == NULL);
  CHECK(dexa__query_get("code=1#x", "state") == NULL);
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__form_add(&b, "a", "x y&z/é");
  dexa__form_add(&b, "skip", NULL);
  dexa__form_add(&b, "b", "~-._");
  CHECK_STR(dexa__buf_cstr(&b), "a=x%20y%26z%2F%C3%A9&b=~-._");
  dexa__buf_reset(&b);
  dexa__base64url(&b, (const unsigned char *)"\xfb\xff\xbf", 3);
  dexa__buf_putc(&b, ' ');
  dexa__base64(&b, (const unsigned char *)"id:se", 5);
  CHECK_STR(dexa__buf_cstr(&b), "-_-_ aWQ6c2U=");
  dexa__buf_reset(&b);
  CHECK_EQ_INT(dexa__oauth_random(&b, 32), DEXA_OK);
  CHECK_EQ_INT((int)b.len, 43); /* a PKCE verifier: 43 characters */
  dexa__buf_free(&b);
  char o[128];
  CHECK_EQ_INT(dexa__url_origin("https://Example.com:8443/a/b?q", o, sizeof o), 0);
  CHECK_STR(o, "https://Example.com:8443");
  dexa__url_path("http://h:1/tenant1/?x", o, sizeof o);
  CHECK_STR(o, "/tenant1/");
  dexa__url_path("http://h:1", o, sizeof o);
  CHECK_STR(o, "/");
  CHECK_EQ_INT(dexa__url_origin("not a url", o, sizeof o), -1);
}

static void test_pkce_matches_rfc_7636(void) {
  dexa__buf b;
  dexa__buf_init(&b);
  CHECK_EQ_INT(dexa__oauth_pkce_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk", &b), DEXA_OK);
  CHECK_STR(dexa__buf_cstr(&b), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
  dexa__buf_free(&b);
}

/* ---- JWT client assertions ---- */

static int b64url_decode(const char *s, size_t n, unsigned char *out) {
  static const char *a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  int k = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; i++) {
    const char *p = strchr(a, s[i]);
    if (!p) return -1;
    acc = acc << 6 | (uint32_t)(p - a);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[k++] = (unsigned char)(acc >> bits);
    }
  }
  return k;
}

static void test_client_assertions_verify_with_the_public_key(void) {
  mbedtls_pk_context pk;
  mbedtls_entropy_context ent;
  mbedtls_ctr_drbg_context drbg;
  mbedtls_pk_init(&pk);
  mbedtls_entropy_init(&ent);
  mbedtls_ctr_drbg_init(&drbg);
  CHECK(mbedtls_ctr_drbg_seed(&drbg, mbedtls_entropy_func, &ent, NULL, 0) == 0);
  CHECK(mbedtls_pk_setup(&pk, mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY)) == 0);
  CHECK(mbedtls_ecp_gen_key(MBEDTLS_ECP_DP_SECP256R1, mbedtls_pk_ec(pk), mbedtls_ctr_drbg_random, &drbg) == 0);
  unsigned char pem[2048];
  CHECK(mbedtls_pk_write_key_pem(&pk, pem, sizeof pem) == 0);
  char *jwt = NULL, err[200];
  CHECK_EQ_INT(dexa__oauth_client_assertion((char *)pem, "ES256", "client-1", "http://as/", &jwt, err, sizeof err),
               DEXA_OK);
  const char *d1 = strchr(jwt, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
  CHECK(d1 && d2);
  unsigned char claims[512], sig[128];
  int cl = b64url_decode(d1 + 1, (size_t)(d2 - d1 - 1), claims);
  CHECK(cl > 0);
  claims[cl] = '\0';
  CHECK_CONTAINS((char *)claims, "\"iss\":\"client-1\",\"sub\":\"client-1\",\"aud\":\"http://as/\"");
  CHECK_CONTAINS((char *)claims, "\"jti\":");
  CHECK_EQ_INT(b64url_decode(d2 + 1, strlen(d2 + 1), sig), 64); /* r||s, not DER */
  unsigned char hash[32];
  mbedtls_md(mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), (const unsigned char *)jwt, (size_t)(d2 - jwt), hash);
  mbedtls_mpi r, s;
  mbedtls_mpi_init(&r);
  mbedtls_mpi_init(&s);
  mbedtls_mpi_read_binary(&r, sig, 32);
  mbedtls_mpi_read_binary(&s, sig + 32, 32);
  mbedtls_ecp_keypair *kp = mbedtls_pk_ec(pk);
  CHECK(mbedtls_ecdsa_verify(&kp->grp, hash, 32, &kp->Q, &r, &s) == 0);
  hash[0] ^= 1;
  CHECK(mbedtls_ecdsa_verify(&kp->grp, hash, 32, &kp->Q, &r, &s) != 0);
  mbedtls_mpi_free(&r);
  mbedtls_mpi_free(&s);
  free(jwt);
  CHECK_EQ_INT(dexa__oauth_client_assertion("not a key", "ES256", "c", "a", &jwt, err, sizeof err),
               DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(dexa__oauth_client_assertion((char *)pem, "RS256", "c", "a", &jwt, err, sizeof err),
               DEXA_E_INVALID_ARG); /* an EC key is no RSA key */
  mbedtls_pk_free(&pk);
  mbedtls_ctr_drbg_free(&drbg);
  mbedtls_entropy_free(&ent);
}

/* ---- the file store ---- */

static void test_the_token_file_is_private_and_shared_between_processes(void) {
  char dir[] = "/tmp/dexa-token-file-XXXXXX", path[128], cmd[200];
  CHECK(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/a/b/tokens.json", dir);
  char *v = (char *)1;
  CHECK_EQ_INT(dexa__token_file_get(path, "k", &v), DEXA_OK); /* no file yet: no record */
  CHECK(v == NULL);
  CHECK_EQ_INT(dexa__token_file_put(path, "k", "{\"access_token\":\"t1\"}"), DEXA_OK);
  struct stat st;
  CHECK(stat(path, &st) == 0);
  CHECK_EQ_INT(st.st_mode & 0777, 0600);
  snprintf(cmd, sizeof cmd, "%s/a", dir);
  CHECK(stat(cmd, &st) == 0);
  CHECK_EQ_INT(st.st_mode & 0777, 0700);
  CHECK_EQ_INT(dexa__token_file_put(path, "k", "not json"), DEXA_E_INVALID_JSON);
  /* two processes write at once: every record lands */
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    char key[32];
    for (int i = 0; i < 40; i++) {
      snprintf(key, sizeof key, "child-%d", i);
      if (dexa__token_file_put(path, key, "{\"x\":1}") != DEXA_OK) _exit(1);
    }
    _exit(0);
  }
  for (int i = 0; i < 40; i++) {
    char key[32];
    snprintf(key, sizeof key, "parent-%d", i);
    CHECK_EQ_INT(dexa__token_file_put(path, key, "{\"x\":2}"), DEXA_OK);
  }
  int status = -1;
  waitpid(pid, &status, 0);
  CHECK_EQ_INT(status, 0);
  for (int i = 0; i < 40; i++) {
    char key[32];
    snprintf(key, sizeof key, "child-%d", i);
    CHECK_EQ_INT(dexa__token_file_get(path, key, &v), DEXA_OK);
    CHECK_STR(v, "{\"x\":1}");
    free(v);
    snprintf(key, sizeof key, "parent-%d", i);
    CHECK_EQ_INT(dexa__token_file_get(path, key, &v), DEXA_OK);
    CHECK(v != NULL);
    free(v);
  }
  CHECK_EQ_INT(dexa__token_file_get(path, "k", &v), DEXA_OK);
  CHECK_STR(v, "{\"access_token\":\"t1\"}");
  free(v);
  CHECK_EQ_INT(dexa__token_file_put(path, "k", NULL), DEXA_OK);
  CHECK_EQ_INT(dexa__token_file_get(path, "k", &v), DEXA_OK);
  CHECK(v == NULL);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CHECK(system(cmd) == 0);
}

/* ---- the configuration ---- */

static int load(const char *json, char *err, size_t n, dexa_mcp_config **out) {
  return dexa_mcp_config_load(out, NULL, json, strlen(json), err, n);
}

static void test_auth_keys_are_checked_and_secrets_redacted(void) {
  dexa_mcp_config *cfg = NULL;
  char err[400];
  const char *good =
      "{\"mcpServers\":{\"w\":{\"url\":\"https://mcp.example/mcp\",\"elicitation\":true,"
      "\"sampling\":\"ask\",\"questionTimeoutMs\":5000,\"logLevel\":\"warning\","
      "\"roots\":[{\"uri\":\"file:///srv\",\"name\":\"srv\"}],"
      "\"auth\":{\"grant\":\"enterprise\",\"clientId\":\"c\",\"clientSecret\":\"s3cret\","
      "\"scopes\":\"a b\",\"idp\":{\"tokenEndpoint\":\"https://idp/token\",\"clientId\":\"i\","
      "\"idToken\":\"eyJ.id.token\"}}}}}";
  CHECK_EQ_INT(load(good, err, sizeof err, &cfg), DEXA_OK);
  char *red = NULL;
  CHECK_EQ_INT(dexa_mcp_config_redacted_json(cfg, &red, NULL), DEXA_OK);
  CHECK(!strstr(red, "s3cret") && !strstr(red, "eyJ.id.token"));
  CHECK_CONTAINS(red, "\"clientSecret\":\"<redacted>\"");
  CHECK_CONTAINS(red, "\"elicitation\":true,\"sampling\":\"ask\",\"questionTimeoutMs\":5000,\"logLevel\":\"warning\"");
  CHECK_CONTAINS(red, "\"roots\":[{\"uri\":\"file:///srv\",\"name\":\"srv\"}]");
  CHECK_CONTAINS(red, "\"auth\":{\"grant\":\"enterprise\",\"clientId\":\"c\"");
  dexa_free(red);
  dexa_mcp_config_free(cfg);
  static const struct {
    const char *json, *why;
    int rc;
  } bad[] = {
      {"{\"mcpServers\":{\"w\":{\"url\":\"http://h\",\"auth\":{\"clientID\":\"x\"}}}}",
       "mcpServers.w.auth.clientID: unknown key", DEXA_E_UNKNOWN_KEY},
      {"{\"mcpServers\":{\"w\":{\"url\":\"http://h\",\"auth\":{\"grant\":\"password\"}}}}",
       "mcpServers.w.auth.grant: must be", DEXA_E_INVALID_ARG},
      {"{\"mcpServers\":{\"w\":{\"url\":\"http://h\",\"auth\":{\"grant\":\"client_credentials\",\"clientId\":\"c\"}}}}",
       "client_credentials needs clientId and clientSecret", DEXA_E_INVALID_ARG},
      {"{\"mcpServers\":{\"w\":{\"url\":\"http://h\",\"auth\":{\"redirectUri\":\"ftp://x\"}}}}",
       "are http:// or https:// URLs", DEXA_E_INVALID_ARG},
      {"{\"mcpServers\":{\"w\":{\"command\":\"x\",\"auth\":{}}}}", "only for http servers", DEXA_E_INVALID_ARG},
      {"{\"mcpServers\":{\"w\":{\"url\":\"http://h\",\"sampling\":true}}}", "\"off\", \"ask\" or \"auto\"",
       DEXA_E_INVALID_ARG},
      {"{\"mcpServers\":{\"w\":{\"url\":\"http://h\",\"roots\":[{\"uri\":\"http://x\"}]}}}", "a root is",
       DEXA_E_INVALID_ARG},
      {"{\"mcpServers\":{\"w\":{\"url\":\"http://h\",\"logLevel\":\"loud\"}}}", "an MCP log level", DEXA_E_INVALID_ARG},
      {"{\"mcpServers\":{\"w\":{\"url\":\"http://h\",\"auth\":{\"grant\":\"enterprise\",\"clientId\":\"c\","
       "\"idp\":{\"tokenEndpoint\":\"https://i\",\"clientId\":\"i\"}}}}}",
       "one of idToken, idTokenFile", DEXA_E_INVALID_ARG},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    cfg = NULL;
    CHECK_EQ_INT(load(bad[i].json, err, sizeof err, &cfg), bad[i].rc);
    CHECK(cfg == NULL);
    CHECK_CONTAINS(err, bad[i].why);
  }
}

static void test_auth_options_and_completion_refusals(void) {
  dexa_mcp_auth_options o;
  CHECK_EQ_INT(dexa_mcp_auth_options_init(&o, 4), DEXA_E_STRUCT_SIZE);
  CHECK_EQ_INT(dexa_mcp_auth_options_init(&o, sizeof o), DEXA_OK);
  dexa_mcp_token_store_vtable vt;
  CHECK_EQ_INT(dexa_mcp_token_store_vtable_init(&vt, sizeof vt), DEXA_OK);
  dexa_mcp_config *cfg = NULL;
  char err[300];
  CHECK_EQ_INT(load("{\"mcpServers\":{\"w\":{\"url\":\"http://127.0.0.1:9/mcp\"}}}", err, sizeof err, &cfg), DEXA_OK);
  o.token_store = &vt; /* without get and put: refused */
  CHECK_EQ_INT(dexa_mcp_config_set_auth(cfg, &o), DEXA_E_INVALID_ARG);
  o.token_store = NULL;
  o.redirect_uri = "javascript:x";
  CHECK_EQ_INT(dexa_mcp_config_set_auth(cfg, &o), DEXA_E_INVALID_ARG);
  char dir[] = "/tmp/dexa-complete-XXXXXX", path[100];
  CHECK(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/t.json", dir);
  o.redirect_uri = "http://127.0.0.1:9/cb";
  o.token_file = path;
  CHECK_EQ_INT(dexa_mcp_config_set_auth(cfg, &o), DEXA_OK);
  char *out = (char *)1;
  CHECK_EQ_INT(dexa_mcp_authorization_complete(cfg, "http://127.0.0.1:9/cb?code=x", &out, NULL, err, sizeof err),
               DEXA_E_INVALID_ARG);
  CHECK(out == NULL);
  CHECK_CONTAINS(err, "no state");
  CHECK_EQ_INT(dexa_mcp_authorization_complete(cfg, "?code=x&state=nobody", &out, NULL, err, sizeof err),
               DEXA_E_NOT_FOUND);
  /* a sign-in record of long ago has expired; it is used up all the same */
  CHECK_EQ_INT(dexa__token_file_put(path, "mcp:signin:old",
                                    "{\"server\":\"w\",\"created_ms\":1000,\"token_endpoint\":\"http://127.0.0.1:9/t\"}"),
               DEXA_OK);
  CHECK_EQ_INT(dexa_mcp_authorization_complete(cfg, "?code=x&state=old", &out, NULL, err, sizeof err),
               DEXA_E_NOT_FOUND);
  char *left = NULL;
  dexa__token_file_get(path, "mcp:signin:old", &left);
  CHECK(left == NULL);
  CHECK_EQ_INT(dexa_mcp_authorization_complete(NULL, "?state=x", &out, NULL, err, sizeof err), DEXA_E_INVALID_ARG);
  dexa_mcp_config_free(cfg);
  char cmd[120];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CHECK(system(cmd) == 0);
}

int main(void) {
  RUN(test_bearer_challenges_are_parsed);
  RUN(test_queries_forms_and_base64url);
  RUN(test_pkce_matches_rfc_7636);
  RUN(test_client_assertions_verify_with_the_public_key);
  RUN(test_the_token_file_is_private_and_shared_between_processes);
  RUN(test_auth_keys_are_checked_and_secrets_redacted);
  RUN(test_auth_options_and_completion_refusals);
  TEST_MAIN_END();
}
