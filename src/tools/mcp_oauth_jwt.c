/* JWT client assertions (RFC 7523, private_key_jwt): a JWT of
 * {iss, sub: the client id, aud: the authorization server's issuer, iat,
 * exp (5 minutes), jti} signed with the client's private key (PEM, PKCS#8
 * or SEC1/PKCS#1) by mbedTLS: ES256 (P-256, the signature as the 64 bytes
 * r||s JWS wants, not DER) or RS256. */
#include <mbedtls/asn1.h>
#include <mbedtls/bignum.h>
#include <mbedtls/md.h>
#include <mbedtls/pk.h>
#include <mbedtls/version.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "dexagents/errors.h"
#include "tools/mcp_oauth.h"

static int rng(void *ctx, unsigned char *out, size_t n) {
  (void)ctx;
  size_t got = 0;
  while (got < n) {
    ssize_t r = getrandom(out + got, n - got, 0);
    if (r <= 0) return -1;
    got += (size_t)r;
  }
  return 0;
}

/* DER SEQUENCE { r INTEGER, s INTEGER } to r||s, 32 bytes each. */
static int der_to_raw(const unsigned char *der, size_t n, unsigned char raw[64]) {
  unsigned char *p = (unsigned char *)der;
  const unsigned char *end = der + n;
  size_t len;
  mbedtls_mpi r, s;
  mbedtls_mpi_init(&r);
  mbedtls_mpi_init(&s);
  int bad = mbedtls_asn1_get_tag(&p, end, &len, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE) ||
            mbedtls_asn1_get_mpi(&p, end, &r) || mbedtls_asn1_get_mpi(&p, end, &s) ||
            mbedtls_mpi_write_binary(&r, raw, 32) || mbedtls_mpi_write_binary(&s, raw + 32, 32);
  mbedtls_mpi_free(&r);
  mbedtls_mpi_free(&s);
  return bad ? -1 : 0;
}

static int sign(const char *pem, int es256, const char *input, dexa__buf *sig, char *err,
                size_t err_size) {
  mbedtls_pk_context pk;
  mbedtls_pk_init(&pk);
  int rc = DEXA_OK;
#if MBEDTLS_VERSION_NUMBER >= 0x03000000
  int e = mbedtls_pk_parse_key(&pk, (const unsigned char *)pem, strlen(pem) + 1, NULL, 0, rng, NULL);
#else
  int e = mbedtls_pk_parse_key(&pk, (const unsigned char *)pem, strlen(pem) + 1, NULL, 0);
#endif
  if (e != 0) {
    snprintf(err, err_size, "the private key cannot be read (PEM, unencrypted)");
    rc = DEXA_E_INVALID_ARG;
  } else if (es256 ? !mbedtls_pk_can_do(&pk, MBEDTLS_PK_ECKEY) : !mbedtls_pk_can_do(&pk, MBEDTLS_PK_RSA)) {
    snprintf(err, err_size, "the private key is not an %s key", es256 ? "EC P-256" : "RSA");
    rc = DEXA_E_INVALID_ARG;
  }
  unsigned char hash[32], out[MBEDTLS_PK_SIGNATURE_MAX_SIZE];
  size_t out_len = 0;
  if (rc == DEXA_OK) {
    const mbedtls_md_info_t *md = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
    if (!md || mbedtls_md(md, (const unsigned char *)input, strlen(input), hash) != 0) rc = DEXA_E_INTERNAL;
  }
#if MBEDTLS_VERSION_NUMBER >= 0x03000000
  if (rc == DEXA_OK && mbedtls_pk_sign(&pk, MBEDTLS_MD_SHA256, hash, 32, out, sizeof out, &out_len, rng, NULL))
#else
  if (rc == DEXA_OK && mbedtls_pk_sign(&pk, MBEDTLS_MD_SHA256, hash, 32, out, &out_len, rng, NULL))
#endif
  {
    snprintf(err, err_size, "signing the client assertion failed");
    rc = DEXA_E_INTERNAL;
  }
  if (rc == DEXA_OK && es256) {
    unsigned char raw[64];
    if (der_to_raw(out, out_len, raw) != 0) rc = DEXA_E_INTERNAL;
    else dexa__base64url(sig, raw, 64);
  } else if (rc == DEXA_OK) {
    dexa__base64url(sig, out, out_len);
  }
  mbedtls_pk_free(&pk);
  return rc;
}

int dexa__oauth_client_assertion(const char *pem, const char *alg, const char *client_id,
                                 const char *audience, char **out, char *err, size_t err_size) {
  *out = NULL;
  int es256 = !alg || strcmp(alg, "RS256") != 0;
  dexa__buf header, claims, jti, token;
  dexa__buf_init(&header);
  dexa__buf_init(&claims);
  dexa__buf_init(&jti);
  dexa__buf_init(&token);
  int rc = dexa__oauth_random(&jti, 16);
  time_t now = time(NULL);
  dexa__buf_printf(&header, "{\"alg\":\"%s\",\"typ\":\"JWT\"}", es256 ? "ES256" : "RS256");
  dexa__buf_puts(&claims, "{\"iss\":");
  dexa__buf_json_cstr(&claims, client_id);
  dexa__buf_puts(&claims, ",\"sub\":");
  dexa__buf_json_cstr(&claims, client_id);
  dexa__buf_puts(&claims, ",\"aud\":");
  dexa__buf_json_cstr(&claims, audience);
  dexa__buf_printf(&claims, ",\"iat\":%lld,\"exp\":%lld,\"jti\":", (long long)now, (long long)now + 300);
  dexa__buf_json_str(&claims, jti.data ? jti.data : "", jti.len);
  dexa__buf_putc(&claims, '}');
  if (rc == DEXA_OK && (header.oom || claims.oom)) rc = DEXA_E_NOMEM;
  if (rc == DEXA_OK) {
    dexa__base64url(&token, (const unsigned char *)header.data, header.len);
    dexa__buf_putc(&token, '.');
    dexa__base64url(&token, (const unsigned char *)claims.data, claims.len);
    dexa__buf_cstr(&token);
    char *input = token.oom ? NULL : strdup(token.data);
    rc = input ? DEXA_OK : DEXA_E_NOMEM;
    dexa__buf_putc(&token, '.');
    if (rc == DEXA_OK) rc = sign(pem, es256, input, &token, err, err_size);
    free(input);
  }
  if (rc == DEXA_OK) {
    dexa__buf_cstr(&token);
    *out = token.oom ? NULL : dexa__buf_steal(&token, NULL);
    if (!*out) rc = DEXA_E_NOMEM;
  }
  dexa__buf_free(&header);
  dexa__buf_free(&claims);
  dexa__buf_free(&jti);
  dexa__buf_free(&token);
  return rc;
}
