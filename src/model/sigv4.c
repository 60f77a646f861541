/* AWS Signature Version 4 (see sigv4.h). The steps and names are those of
 * the AWS documentation: canonical request, string to sign, signing key,
 * signature. */
#include "model/sigv4.h"

#include <mbedtls/md.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/buf.h"

static void hex(const unsigned char *d, size_t n, char *out) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = digits[d[i] >> 4];
    out[2 * i + 1] = digits[d[i] & 15];
  }
  out[2 * n] = '\0';
}

/* mbedtls_md (not mbedtls_sha256, whose name changed between 2.x and 3.x). */
static void sha256_hex(const void *s, size_t n, char *out) {
  unsigned char d[32] = {0};
  const mbedtls_md_info_t *md = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
  if (md) mbedtls_md(md, (const unsigned char *)s, n, d);
  hex(d, 32, out);
}

static int hmac(const unsigned char *key, size_t kn, const char *msg, unsigned char *out) {
  const mbedtls_md_info_t *md = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
  return md && mbedtls_md_hmac(md, key, kn, (const unsigned char *)msg, strlen(msg), out) == 0 ? 0 : -1;
}

/* Percent-encoding of the canonical request: unreserved characters stay. */
static void uri_encode(dexa__buf *b, const char *s, size_t n, int keep_slash) {
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
        strchr("-._~", c) || (keep_slash && c == '/'))
      dexa__buf_putc(b, (char)c);
    else
      dexa__buf_printf(b, "%%%02X", c);
  }
}

/* Decodes %XX escapes (a query name or value as sent) into out. */
static void uri_decode(const char *s, size_t n, dexa__buf *out) {
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '%' && i + 2 < n) {
      unsigned v;
      char h[3] = {s[i + 1], s[i + 2], 0};
      if (sscanf(h, "%2x", &v) == 1) {
        dexa__buf_putc(out, (char)v);
        i += 2;
        continue;
      }
    }
    dexa__buf_putc(out, s[i] == '+' ? ' ' : s[i]);
  }
}

typedef struct url_parts {
  const char *host, *path, *query;
  size_t host_len, path_len, query_len;
} url_parts;

static int split_url(const char *url, url_parts *u) {
  const char *p = strstr(url, "://");
  if (!p) return -1;
  int https = strncmp(url, "https", 5) == 0;
  u->host = p + 3;
  const char *end = u->host + strcspn(u->host, "/?#");
  u->host_len = (size_t)(end - u->host);
  if (!u->host_len) return -1;
  /* curl leaves a default port out of Host: so does the signature */
  if (https && u->host_len > 4 && !memcmp(end - 4, ":443", 4)) u->host_len -= 4;
  if (!https && u->host_len > 3 && !memcmp(end - 3, ":80", 3)) u->host_len -= 3;
  u->path = *end == '/' ? end : "/";
  u->path_len = *end == '/' ? strcspn(end, "?#") : 1;
  const char *q = strchr(end, '?');
  u->query = q ? q + 1 : "";
  u->query_len = q ? strcspn(q + 1, "#") : 0;
  return 0;
}

typedef struct param {
  char *name, *value;
} param;

static int cmp_param(const void *a, const void *b) {
  const param *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  return c ? c : strcmp(x->value, y->value);
}

/* name=value pairs, decoded, encoded again, sorted. */
static int canonical_query(const url_parts *u, dexa__buf *b) {
  size_t n = 0;
  for (size_t i = 0; i < u->query_len; i++) n += u->query[i] == '&';
  param *ps = calloc(n + 1, sizeof *ps);
  if (!ps) return -1;
  size_t count = 0;
  const char *s = u->query, *stop = u->query + u->query_len;
  while (s < stop) {
    const char *amp = memchr(s, '&', (size_t)(stop - s));
    const char *e = amp ? amp : stop;
    if (e > s) {
      const char *eq = memchr(s, '=', (size_t)(e - s));
      dexa__buf k, v;
      dexa__buf_init(&k);
      dexa__buf_init(&v);
      uri_decode(s, (size_t)((eq ? eq : e) - s), &k);
      if (eq) uri_decode(eq + 1, (size_t)(e - eq - 1), &v);
      ps[count].name = dexa__buf_steal(&k, NULL);
      ps[count].value = dexa__buf_steal(&v, NULL);
      if (!ps[count].value) ps[count].value = strdup("");
      count++;
    }
    s = e + 1;
  }
  int rc = 0;
  for (size_t i = 0; i < count; i++)
    if (!ps[i].name || !ps[i].value) rc = -1;
  if (rc == 0) qsort(ps, count, sizeof *ps, cmp_param);
  for (size_t i = 0; rc == 0 && i < count; i++) {
    if (i) dexa__buf_putc(b, '&');
    uri_encode(b, ps[i].name, strlen(ps[i].name), 0);
    dexa__buf_putc(b, '=');
    uri_encode(b, ps[i].value, strlen(ps[i].value), 0);
  }
  for (size_t i = 0; i < count; i++) free(ps[i].name), free(ps[i].value);
  free(ps);
  return rc;
}

static int canonical_request(const dexa__sigv4 *s, const url_parts *u, const char *amz_date,
                             const char *signed_headers, dexa__buf *b) {
  dexa__buf_puts(b, s->method);
  dexa__buf_putc(b, '\n');
  uri_encode(b, u->path, u->path_len, 1); /* the path as sent, encoded once more */
  dexa__buf_putc(b, '\n');
  if (canonical_query(u, b) != 0) return -1;
  dexa__buf_puts(b, "\nhost:");
  for (size_t i = 0; i < u->host_len; i++) {
    char c = u->host[i];
    dexa__buf_putc(b, c >= 'A' && c <= 'Z' ? (char)(c + 32) : c);
  }
  dexa__buf_printf(b, "\nx-amz-date:%s\n", amz_date);
  if (s->session_token) dexa__buf_printf(b, "x-amz-security-token:%s\n", s->session_token);
  dexa__buf_printf(b, "\n%s\n", signed_headers);
  char body_hash[65];
  sha256_hex(s->body ? s->body : "", s->body ? s->body_len : 0, body_hash);
  dexa__buf_puts(b, body_hash);
  return b->oom ? -1 : 0;
}

int dexa__sigv4_sign(const dexa__sigv4 *s, char *auth, size_t auth_size, char *amz_date) {
  url_parts u;
  if (split_url(s->url, &u) != 0) return -1;
  time_t t = (time_t)s->now_s;
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(amz_date, 17, "%Y%m%dT%H%M%SZ", &tm);
  char date[9];
  memcpy(date, amz_date, 8);
  date[8] = '\0';
  const char *signed_headers = s->session_token ? "host;x-amz-date;x-amz-security-token" : "host;x-amz-date";
  dexa__buf creq, sts;
  dexa__buf_init(&creq);
  dexa__buf_init(&sts);
  int rc = canonical_request(s, &u, amz_date, signed_headers, &creq);
  char creq_hash[65];
  if (rc == 0) sha256_hex(creq.data, creq.len, creq_hash);
  dexa__buf_printf(&sts, "AWS4-HMAC-SHA256\n%s\n%s/%s/%s/aws4_request\n%s", amz_date, date, s->region,
                   s->service, rc == 0 ? creq_hash : "");
  dexa__buf key;
  dexa__buf_init(&key);
  dexa__buf_printf(&key, "AWS4%s", s->secret_key);
  unsigned char k1[32], k2[32], k3[32], k4[32], sig[32];
  if (rc == 0 && (sts.oom || key.oom)) rc = -1;
  if (rc == 0)
    rc = hmac((const unsigned char *)key.data, key.len, date, k1) || hmac(k1, 32, s->region, k2) ||
                 hmac(k2, 32, s->service, k3) || hmac(k3, 32, "aws4_request", k4) ||
                 hmac(k4, 32, dexa__buf_cstr(&sts), sig)
             ? -1
             : 0;
  if (rc == 0) {
    char sig_hex[65];
    hex(sig, 32, sig_hex);
    int n = snprintf(auth, auth_size,
                     "AWS4-HMAC-SHA256 Credential=%s/%s/%s/%s/aws4_request, SignedHeaders=%s, "
                     "Signature=%s",
                     s->access_key, date, s->region, s->service, signed_headers, sig_hex);
    if (n < 0 || (size_t)n >= auth_size) rc = -1;
  }
  if (key.data) memset(key.data, 0, key.len); /* the secret */
  memset(k1, 0, sizeof k1);
  memset(k4, 0, sizeof k4);
  dexa__buf_free(&key);
  dexa__buf_free(&creq);
  dexa__buf_free(&sts);
  return rc;
}
