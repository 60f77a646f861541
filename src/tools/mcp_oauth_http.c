/* HTTP for OAuth (metadata, registration, tokens) over libcurl, and the
 * text helpers of the flows: form encoding, query parameters, base64url,
 * random values, URL parts. Responses are capped (metadata and tokens are
 * small); redirects are not followed (an authorization server that moves
 * its metadata says so in the metadata). */
#include <curl/curl.h>
#include <mbedtls/md.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include "dexagents/errors.h"
#include "tools/mcp_oauth.h"
#include "util/curl_global.h"

#define MAX_BODY (1024 * 1024)
#define OAUTH_TIMEOUT_MS 30000

void dexa__oauth_response_free(dexa__oauth_response *r) { dexa__buf_free(&r->body); }

static size_t on_body(char *buf, size_t size, size_t n, void *ud) {
  dexa__oauth_response *r = ud;
  size_t len = size * n;
  if (r->body.len + len > MAX_BODY) return 0;
  dexa__buf_append(&r->body, buf, len);
  return r->body.oom ? 0 : len;
}

static size_t on_header(char *buf, size_t size, size_t n, void *ud) {
  dexa__oauth_response *r = ud;
  size_t len = size * n;
  if (len > 13 && strncasecmp(buf, "content-type:", 13) == 0) {
    const char *v = buf + 13;
    size_t vl = len - 13;
    while (vl && (*v == ' ' || *v == '\t')) v++, vl--;
    while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n')) vl--;
    snprintf(r->content_type, sizeof r->content_type, "%.*s", (int)vl, v);
  }
  return len;
}

static int exchange(const char *url, const char *content_type, const char *body,
                    const char *authorization, dexa__oauth_response *r, char *err,
                    size_t err_size) {
  memset(r, 0, sizeof *r);
  dexa__buf_init(&r->body);
  if (dexa__curl_global_init() != DEXA_OK) return DEXA_E_INTERNAL;
  CURL *curl = curl_easy_init();
  if (!curl) return DEXA_E_NOMEM;
  struct curl_slist *hd = curl_slist_append(NULL, "Accept: application/json");
  dexa__buf h;
  dexa__buf_init(&h);
  if (content_type) {
    dexa__buf_printf(&h, "Content-Type: %s", content_type);
    if (hd && !h.oom) hd = curl_slist_append(hd, h.data);
  }
  if (authorization) {
    dexa__buf_reset(&h);
    dexa__buf_printf(&h, "Authorization: %s", authorization);
    if (hd && !h.oom) hd = curl_slist_append(hd, h.data);
    memset(h.data, 0, h.len);
  }
  dexa__buf_free(&h);
  curl_easy_setopt(curl, CURLOPT_URL, url);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hd);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, r);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, r);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)OAUTH_TIMEOUT_MS);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  if (body) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
  }
  CURLcode cc = hd ? curl_easy_perform(curl) : CURLE_OUT_OF_MEMORY;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &r->status);
  curl_easy_cleanup(curl);
  curl_slist_free_all(hd);
  if (cc == CURLE_OUT_OF_MEMORY || r->body.oom) return DEXA_E_NOMEM;
  if (cc != CURLE_OK) {
    char origin[256];
    if (dexa__url_origin(url, origin, sizeof origin) != 0) snprintf(origin, sizeof origin, "?");
    snprintf(err, err_size, "%s: %s", origin, curl_easy_strerror(cc));
    return cc == CURLE_OPERATION_TIMEDOUT ? DEXA_E_TIMEOUT : DEXA_E_IO;
  }
  dexa__buf_cstr(&r->body);
  return r->body.oom ? DEXA_E_NOMEM : DEXA_OK;
}

int dexa__oauth_get(const char *url, dexa__oauth_response *r, char *err, size_t err_size) {
  return exchange(url, NULL, NULL, NULL, r, err, err_size);
}

int dexa__oauth_post(const char *url, const char *content_type, const char *body,
                     const char *authorization, dexa__oauth_response *r, char *err,
                     size_t err_size) {
  return exchange(url, content_type, body ? body : "", authorization, r, err, err_size);
}

cJSON *dexa__oauth_json(const dexa__oauth_response *r) {
  if (r->status < 200 || r->status > 299 || !r->body.len) return NULL;
  cJSON *doc = cJSON_ParseWithLength(r->body.data, r->body.len);
  if (!cJSON_IsObject(doc)) {
    cJSON_Delete(doc);
    return NULL;
  }
  return doc;
}

/* ---- text ---- */

void dexa__url_encode(dexa__buf *b, const char *value) {
  static const char hex[] = "0123456789ABCDEF";
  for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
    if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
        *p == '-' || *p == '.' || *p == '_' || *p == '~') {
      dexa__buf_putc(b, (char)*p);
    } else {
      char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
      dexa__buf_append(b, e, 3);
    }
  }
}

void dexa__form_add(dexa__buf *b, const char *name, const char *value) {
  if (!value) return;
  if (b->len) dexa__buf_putc(b, '&');
  dexa__buf_puts(b, name);
  dexa__buf_putc(b, '=');
  dexa__url_encode(b, value);
}

static int hexval(char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

char *dexa__query_get(const char *url, const char *name) {
  const char *q = strchr(url, '?');
  q = q ? q + 1 : url;
  size_t nl = strlen(name);
  while (*q && *q != '#') {
    const char *end = q + strcspn(q, "&#");
    if ((size_t)(end - q) > nl && strncmp(q, name, nl) == 0 && q[nl] == '=') {
      const char *v = q + nl + 1;
      char *out = malloc((size_t)(end - v) + 1);
      if (!out) return NULL;
      size_t k = 0;
      for (const char *p = v; p < end; p++) {
        if (*p == '+') out[k++] = ' ';
        else if (*p == '%' && p + 2 < end && hexval(p[1]) >= 0 && hexval(p[2]) >= 0) {
          out[k++] = (char)(hexval(p[1]) * 16 + hexval(p[2]));
          p += 2;
        } else out[k++] = *p;
      }
      out[k] = '\0';
      return out;
    }
    q = *end == '&' ? end + 1 : end;
  }
  return NULL;
}

static void b64(dexa__buf *b, const unsigned char *d, size_t n, const char *alphabet, int pad) {
  for (size_t i = 0; i < n; i += 3) {
    uint32_t w = (uint32_t)d[i] << 16 | (i + 1 < n ? (uint32_t)d[i + 1] << 8 : 0) |
                 (i + 2 < n ? d[i + 2] : 0);
    dexa__buf_putc(b, alphabet[w >> 18 & 63]);
    dexa__buf_putc(b, alphabet[w >> 12 & 63]);
    if (i + 1 < n) dexa__buf_putc(b, alphabet[w >> 6 & 63]);
    else if (pad) dexa__buf_putc(b, '=');
    if (i + 2 < n) dexa__buf_putc(b, alphabet[w & 63]);
    else if (pad) dexa__buf_putc(b, '=');
  }
}

void dexa__base64url(dexa__buf *b, const unsigned char *data, size_t n) {
  b64(b, data, n, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", 0);
}

void dexa__base64(dexa__buf *b, const unsigned char *data, size_t n) {
  b64(b, data, n, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", 1);
}

int dexa__oauth_random(dexa__buf *b, size_t n) {
  unsigned char raw[64];
  if (n > sizeof raw) return DEXA_E_INVALID_ARG;
  size_t got = 0;
  while (got < n) {
    ssize_t r = getrandom(raw + got, n - got, 0);
    if (r <= 0) return DEXA_E_IO;
    got += (size_t)r;
  }
  dexa__base64url(b, raw, n);
  memset(raw, 0, sizeof raw);
  return b->oom ? DEXA_E_NOMEM : DEXA_OK;
}

int dexa__url_origin(const char *url, char *out, size_t size) {
  const char *p = strstr(url, "://");
  if (!p || p == url) return -1;
  const char *host = p + 3;
  size_t hl = strcspn(host, "/?#");
  if (!hl) return -1;
  if ((size_t)snprintf(out, size, "%.*s", (int)(host + hl - url), url) >= size) return -1;
  return 0;
}

void dexa__url_path(const char *url, char *out, size_t size) {
  const char *p = strstr(url, "://");
  const char *path = p ? p + 3 + strcspn(p + 3, "/?#") : url;
  size_t n = *path == '/' ? strcspn(path, "?#") : 0;
  snprintf(out, size, "%.*s", (int)(n ? n : 1), n ? path : "/");
}

int dexa__oauth_pkce_challenge(const char *verifier, dexa__buf *out) {
  unsigned char hash[32];
  const mbedtls_md_info_t *md = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
  if (!md || mbedtls_md(md, (const unsigned char *)verifier, strlen(verifier), hash) != 0)
    return DEXA_E_INTERNAL;
  dexa__base64url(out, hash, sizeof hash);
  return out->oom ? DEXA_E_NOMEM : DEXA_OK;
}
