/* libcurl plumbing for model calls: one streaming POST per call on its own
 * easy handle (no shared state between threads), with the response headers
 * a retry decision needs. libcurl's global init runs once (pthread_once)
 * before the first handle; see dexa__model_http_global_init. */
#ifndef DEXA_MODEL_HTTP_H
#define DEXA_MODEL_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

#define DEXA__MODEL_HTTP_MAX_ERROR_BODY (64u << 10) /* an error body is cut here */

typedef struct dexa__model_http_request {
  const char *url;
  const char *const *headers; /* "Name: value" strings, NULL-terminated */
  const char *body;
  size_t body_len;
  int64_t timeout_ms;         /* the whole call */
  int64_t connect_timeout_ms;
} dexa__model_http_request;

typedef struct dexa__model_http_response {
  long status;                /* 0 when no response came */
  int curl_code;              /* CURLcode */
  char curl_error[256];
  char retry_after[64];
  char retry_after_ms[32];
  int should_retry;           /* x-should-retry: 1, 0, or -1 when absent */
  char content_type[128];
  char request_id[128];
  dexa__buf error_body;       /* the body when status >= 400, capped */
} dexa__model_http_response;

/* Called with each piece of a 2xx body; non-zero aborts the transfer. */
typedef int (*dexa__model_http_body_fn)(void *ctx, const char *bytes, size_t n);

/* Initializes libcurl once per process. Returns DEXA_OK or DEXA_E_INTERNAL.
 * libcurl >= 7.84 built thread-safe (CURL_VERSION_THREADSAFE) makes this
 * safe even when the host calls curl_global_init itself on another thread;
 * with an older libcurl the host must call curl_global_init before it
 * starts threads (dexa_model_client_new(3)). */
int dexa__model_http_global_init(void);

void dexa__model_http_response_init(dexa__model_http_response *r);
void dexa__model_http_response_free(dexa__model_http_response *r);

/* Runs the POST. Returns DEXA_OK when a response came (any status; see
 * r->status), DEXA_E_NOMEM, or DEXA_E_INTERNAL when curl cannot start;
 * transport failures are in r->curl_code. */
int dexa__model_http_post(const dexa__model_http_request *rq, dexa__model_http_response *r,
                    dexa__model_http_body_fn on_body, void *ctx);

#endif
