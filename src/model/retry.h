/* Retry classification of failed model calls, shared by every provider:
 * which HTTP statuses, transport errors and provider error types are worth a
 * retry (RunModel retries the transient codes), the provider's message from
 * an error body, and the Retry-After delay. */
#ifndef DEXA_MODEL_RETRY_H
#define DEXA_MODEL_RETRY_H

#include <stddef.h>
#include <stdint.h>

/* Longest Retry-After honoured; a longer one is cut to this. */
#define DEXA__RETRY_AFTER_MAX_MS 600000

/* The DEXA_E_* code for an HTTP status (>= 400): 429 DEXA_E_RATE_LIMITED;
 * 408, 409, 5xx (529 too) DEXA_E_TRANSIENT; 401, 403 DEXA_E_AUTH; any other
 * 4xx DEXA_E_MODEL. should_retry is the x-should-retry header: 1 true,
 * 0 false, -1 absent; it overrides the status either way. error_code is the
 * provider's error code or type from the body (may be NULL):
 * "insufficient_quota" is permanent even with 429. */
int dexa__retry_status_code(long status, int should_retry, const char *error_code);

/* The code for a provider error type seen inside a stream (an "error" event
 * after HTTP 200): overloaded/server/api errors are transient, rate limits
 * DEXA_E_RATE_LIMITED, authentication DEXA_E_AUTH, anything else
 * DEXA_E_MODEL. Google's status words (RESOURCE_EXHAUSTED, UNAVAILABLE,
 * INTERNAL, ...) are classified the same way. */
int dexa__retry_error_type_code(const char *type);

/* The code for a libcurl result (CURLcode as int): timeouts DEXA_E_TIMEOUT,
 * connection failures and resets DEXA_E_TRANSIENT, a bad URL or TLS
 * verification failure DEXA_E_MODEL. */
int dexa__retry_curl_code(int curl_code);

/* Parses Retry-After: delta seconds (decimals allowed) or an HTTP date
 * relative to now_s. Returns milliseconds (capped), or 0 when absent or
 * unparsable. */
int64_t dexa__retry_after_ms(const char *retry_after, const char *retry_after_ms, int64_t now_s);

/* Writes "<prefix>: <provider message>" to out from an error body in the
 * OpenAI ({"error":{"message","code","type"}}), Anthropic
 * ({"type":"error","error":{"type","message"}}), Google
 * ({"error":{"code","message","status"}}) or Bedrock ({"message"}) shape;
 * code_out receives the error code, type or status ("" if none). Falls back to the body's first
 * bytes (printable ASCII only) when it is not JSON. */
void dexa__retry_error_message(const char *body, size_t len, const char *prefix, char *out,
                               size_t out_size, char *code_out, size_t code_size);

#endif
