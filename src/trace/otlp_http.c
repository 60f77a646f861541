/* The OTLP/HTTP sender on libcurl: one POST per batch to the traces
 * endpoint, with the configured headers. Only the exporter's thread uses
 * it, so one easy handle is kept (and its connection reused). */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dexagents/errors.h"
#include "trace/otlp.h"
#include "util/curl_global.h"
#include "util/http_header.h"

#define MAX_REPLY_BYTES 65536 /* an ExportTraceServiceResponse is small */

typedef struct http_sender {
  CURL *h;
  char *url;
  struct curl_slist *headers;
  int64_t retry_after_ms;
  size_t reply_bytes;
} http_sender;

static size_t on_body(char *p, size_t size, size_t n, void *ud) {
  http_sender *s = ud;
  (void)p;
  s->reply_bytes += size * n;
  return s->reply_bytes > MAX_REPLY_BYTES ? 0 : size * n;
}

/* Retry-After in seconds (an HTTP date is not read: the backoff applies). */
static size_t on_header(char *p, size_t size, size_t n, void *ud) {
  http_sender *s = ud;
  size_t len = size * n;
  long sec = dexa__retry_after_seconds(p, len, 3600);
  if (sec >= 0) s->retry_after_ms = (int64_t)sec * 1000;
  return len;
}

static int http_send(void *ctx, const char *body, size_t len, int64_t timeout_ms, long *status,
                     int64_t *retry_after_ms) {
  http_sender *s = ctx;
  *status = 0;
  s->retry_after_ms = 0;
  s->reply_bytes = 0;
  curl_easy_setopt(s->h, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt(s->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
  curl_easy_setopt(s->h, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
  curl_easy_setopt(s->h, CURLOPT_CONNECTTIMEOUT_MS, (long)(timeout_ms < 10000 ? timeout_ms : 10000));
  CURLcode cc = curl_easy_perform(s->h);
  curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, status);
  *retry_after_ms = s->retry_after_ms;
  if (cc != CURLE_OK && *status == 0) return DEXA_E_TRANSIENT;
  return DEXA_OK;
}

static void http_free(void *ctx) {
  http_sender *s = ctx;
  if (!s) return;
  if (s->h) curl_easy_cleanup(s->h);
  curl_slist_free_all(s->headers);
  free(s->url);
  free(s);
}

static int add_header(http_sender *s, const char *k, const char *v) {
  size_t n = strlen(k) + strlen(v) + 3;
  char *line = malloc(n);
  if (!line) return DEXA_E_NOMEM;
  snprintf(line, n, "%s: %s", k, v);
  struct curl_slist *l = curl_slist_append(s->headers, line);
  free(line);
  if (!l) return DEXA_E_NOMEM;
  s->headers = l;
  return DEXA_OK;
}

int dexa__otlp_http_sender_new(dexa__otlp_sender *out, const dexa__otlp_config *cfg) {
  memset(out, 0, sizeof *out);
  if (dexa__curl_global_init() != DEXA_OK) return DEXA_E_INTERNAL;
  http_sender *s = calloc(1, sizeof *s);
  if (!s) return DEXA_E_NOMEM;
  s->url = strdup(cfg->endpoint ? cfg->endpoint : "");
  s->h = curl_easy_init();
  int rc = s->url && s->h ? DEXA_OK : DEXA_E_NOMEM;
  if (rc == DEXA_OK)
    rc = add_header(s, "Content-Type", cfg->json ? "application/json" : "application/x-protobuf");
  if (rc == DEXA_OK) rc = add_header(s, "User-Agent", "libdexagents-otlp");
  if (rc == DEXA_OK) rc = add_header(s, "Expect", ""); /* no 100-continue round trip */
  for (size_t i = 0; i < cfg->header_count && rc == DEXA_OK; i++)
    rc = add_header(s, cfg->headers[i].key, cfg->headers[i].value);
  if (rc != DEXA_OK) {
    http_free(s);
    return rc;
  }
  curl_easy_setopt(s->h, CURLOPT_URL, s->url);
  curl_easy_setopt(s->h, CURLOPT_HTTPHEADER, s->headers);
  curl_easy_setopt(s->h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(s->h, CURLOPT_WRITEDATA, s);
  curl_easy_setopt(s->h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(s->h, CURLOPT_HEADERDATA, s);
  curl_easy_setopt(s->h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(s->h, CURLOPT_FOLLOWLOCATION, 0L);
#if LIBCURL_VERSION_NUM >= 0x075500
  curl_easy_setopt(s->h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
  curl_easy_setopt(s->h, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
  out->send = http_send;
  out->free = http_free;
  out->ctx = s;
  return DEXA_OK;
}
