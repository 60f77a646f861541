/* Session tokens: lower-case hex of HMAC-SHA256(key, session id), compared
 * in constant time. */
#include <mbedtls/md.h>
#include <string.h>

#include "dexagents/errors.h"
#include "dexagents/http.h"

#define MAC_BYTES 32

static int hmac_hex(const void *key, size_t key_len, const char *session_id, char *hex) {
  static const char digits[] = "0123456789abcdef";
  const mbedtls_md_info_t *md = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
  unsigned char mac[MAC_BYTES];
  if (!md || mbedtls_md_hmac(md, key, key_len, (const unsigned char *)session_id,
                             strlen(session_id), mac) != 0)
    return DEXA_E_INTERNAL;
  for (size_t i = 0; i < MAC_BYTES; i++) {
    hex[2 * i] = digits[mac[i] >> 4];
    hex[2 * i + 1] = digits[mac[i] & 15];
  }
  hex[2 * MAC_BYTES] = '\0';
  return DEXA_OK;
}

DEXA_EXTERN int dexa_http_token_sign(const void *key, size_t key_len, const char *session_id,
                                     char *out, size_t out_size) {
  if (!key || !key_len || !session_id || !*session_id || !out ||
      out_size < DEXA_HTTP_TOKEN_SIZE)
    return DEXA_E_INVALID_ARG;
  return hmac_hex(key, key_len, session_id, out);
}

DEXA_EXTERN int dexa_http_token_verify(const void *key, size_t key_len, const char *session_id,
                                       const char *token) {
  if (!key || !key_len || !session_id) return DEXA_E_INVALID_ARG;
  if (!token || !*session_id) return DEXA_E_AUTH;
  char expected[DEXA_HTTP_TOKEN_SIZE];
  int rc = hmac_hex(key, key_len, session_id, expected);
  if (rc != DEXA_OK) return rc;
  /* The length is not secret (always 64); the contents are compared
   * without an early exit. */
  if (strnlen(token, DEXA_HTTP_TOKEN_SIZE) != DEXA_HTTP_TOKEN_SIZE - 1) return DEXA_E_AUTH;
  unsigned char diff = 0;
  for (size_t i = 0; i < DEXA_HTTP_TOKEN_SIZE - 1; i++)
    diff |= (unsigned char)(token[i] ^ expected[i]);
  return diff == 0 ? DEXA_OK : DEXA_E_AUTH;
}
