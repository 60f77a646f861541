/* libcurl plumbing for model calls (see http.h). */
#include "model/http.h"

#include <curl/curl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "dexagents/errors.h"
#include "util/curl_global.h"

int dexa__model_http_global_init(void) { return dexa__curl_global_init(); }

void dexa__model_http_response_init(dexa__model_http_response *r) {
  memset(r, 0, sizeof *r);
  r->should_retry = -1;
  dexa__buf_init(&r->error_body);
}

void dexa__model_http_response_free(dexa__model_http_response *r) { dexa__buf_free(&r->error_body); }

typedef struct transfer {
  CURL *curl;
  dexa__model_http_response *r;
  dexa__model_http_body_fn on_body;
  void *ctx;
} transfer;

/* Copies a header's value (trimmed) into out when the line is "name: ...". */
static int header_value(const char *line, size_t n, const char *name, char *out, size_t out_size) {
  size_t k = strlen(name);
  if (n <= k || strncasecmp(line, name, k) != 0 || line[k] != ':') return 0;
  const char *v = line + k + 1;
  size_t vn = n - k - 1;
  while (vn && (*v == ' ' || *v == '\t')) v++, vn--;
  while (vn && (v[vn - 1] == '\r' || v[vn - 1] == '\n' || v[vn - 1] == ' ')) vn--;
  if (vn >= out_size) vn = out_size - 1;
  memcpy(out, v, vn);
  out[vn] = '\0';
  return 1;
}

static size_t on_header(char *data, size_t size, size_t nitems, void *ud) {
  transfer *t = ud;
  size_t n = size * nitems;
  dexa__model_http_response *r = t->r;
  if (n >= 5 && strncmp(data, "HTTP/", 5) == 0) { /* a new response (after 100, redirects) */
    r->retry_after[0] = r->retry_after_ms[0] = r->content_type[0] = r->request_id[0] = '\0';
    r->should_retry = -1;
    return n;
  }
  char v[16];
  if (header_value(data, n, "x-should-retry", v, sizeof v))
    r->should_retry = strcasecmp(v, "true") == 0 ? 1 : strcasecmp(v, "false") == 0 ? 0 : -1;
  header_value(data, n, "retry-after", r->retry_after, sizeof r->retry_after);
  header_value(data, n, "retry-after-ms", r->retry_after_ms, sizeof r->retry_after_ms);
  header_value(data, n, "content-type", r->content_type, sizeof r->content_type);
  if (!header_value(data, n, "x-request-id", r->request_id, sizeof r->request_id))
    header_value(data, n, "request-id", r->request_id, sizeof r->request_id);
  return n;
}

static size_t on_write(char *data, size_t size, size_t nmemb, void *ud) {
  transfer *t = ud;
  size_t n = size * nmemb;
  if (!t->r->status) curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &t->r->status);
  if (t->r->status >= 400 || t->r->status < 200) {
    dexa__buf *b = &t->r->error_body;
    size_t room = DEXA__MODEL_HTTP_MAX_ERROR_BODY - b->len;
    dexa__buf_append(b, data, n < room ? n : room);
    return b->oom ? 0 : n;
  }
  return t->on_body(t->ctx, data, n) == 0 ? n : 0;
}

static struct curl_slist *make_headers(const char *const *headers) {
  struct curl_slist *list = NULL;
  for (size_t i = 0; headers && headers[i]; i++) {
    struct curl_slist *n = curl_slist_append(list, headers[i]);
    if (!n) {
      curl_slist_free_all(list);
      return NULL;
    }
    list = n;
  }
  /* No "Expect: 100-continue" round trip on large requests. */
  struct curl_slist *n = curl_slist_append(list, "Expect:");
  if (!n) curl_slist_free_all(list);
  return n;
}

int dexa__model_http_post(const dexa__model_http_request *rq, dexa__model_http_response *r,
                    dexa__model_http_body_fn on_body, void *ctx) {
  int rc = dexa__model_http_global_init();
  if (rc != DEXA_OK) return rc;
  CURL *curl = curl_easy_init();
  if (!curl) return DEXA_E_INTERNAL;
  struct curl_slist *headers = make_headers(rq->headers);
  if (!headers) {
    curl_easy_cleanup(curl);
    return DEXA_E_NOMEM;
  }
  transfer t = {curl, r, on_body, ctx};
  curl_easy_setopt(curl, CURLOPT_URL, rq->url);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L); /* worker threads: no SIGALRM */
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_POST, 1L);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, rq->body);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->body_len);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)rq->timeout_ms);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, (long)rq->connect_timeout_ms);
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "libdexagents/1");
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, r->curl_error);
  r->curl_code = (int)curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  if (status) r->status = status;
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  return r->error_body.oom ? DEXA_E_NOMEM : DEXA_OK;
}
