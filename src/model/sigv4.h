/* AWS Signature Version 4 (HMAC-SHA256, mbedTLS) for bedrock/: the
 * Authorization header of a request signed with host and x-amz-date (and
 * x-amz-security-token with temporary credentials), as the AWS SDKs sign
 * non-S3 services (path segments encoded twice, the body's SHA-256). */
#ifndef DEXA_MODEL_SIGV4_H
#define DEXA_MODEL_SIGV4_H

#include <stddef.h>
#include <stdint.h>

typedef struct dexa__sigv4 {
  const char *method;        /* "POST" */
  const char *url;           /* the URL the request goes to */
  const char *body;
  size_t body_len;
  const char *region;        /* "us-east-1" */
  const char *service;       /* "bedrock" */
  const char *access_key;
  const char *secret_key;
  const char *session_token; /* NULL without temporary credentials */
  int64_t now_s;             /* Unix time of the signature */
} dexa__sigv4;

/* Writes the Authorization value to auth and the X-Amz-Date value
 * (YYYYMMDDTHHMMSSZ) to amz_date (17 bytes). Returns 0, or -1 for a URL it
 * cannot sign (no host) or when out of memory. */
int dexa__sigv4_sign(const dexa__sigv4 *s, char *auth, size_t auth_size, char *amz_date);

#endif
