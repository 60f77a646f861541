/* Retry classification of failed model calls (see retry.h). The rules are
 * those of the providers' own SDKs: 408, 409, 429 and >= 500 retry, the
 * x-should-retry header overrides, Retry-After-ms then Retry-After. */
#include "model/retry.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dexagents/errors.h"

int dexa__retry_status_code(long status, int should_retry, const char *error_code) {
  int code;
  if (status == 429) code = DEXA_E_RATE_LIMITED;
  else if (status == 408 || status == 409 || status >= 500) code = DEXA_E_TRANSIENT;
  else if (status == 401 || status == 403) code = DEXA_E_AUTH;
  else code = DEXA_E_MODEL;
  if (error_code && strcmp(error_code, "insufficient_quota") == 0) code = DEXA_E_MODEL;
  if (should_retry == 1 && code != DEXA_E_RATE_LIMITED) code = DEXA_E_TRANSIENT;
  if (should_retry == 0 && (code == DEXA_E_RATE_LIMITED || code == DEXA_E_TRANSIENT))
    code = DEXA_E_MODEL;
  return code;
}

int dexa__retry_error_type_code(const char *type) {
  if (!type) return DEXA_E_TRANSIENT;
  /* Google's status words (Gemini, Vertex) */
  if (strcmp(type, "RESOURCE_EXHAUSTED") == 0) return DEXA_E_RATE_LIMITED;
  if (strcmp(type, "UNAVAILABLE") == 0 || strcmp(type, "INTERNAL") == 0 ||
      strcmp(type, "DEADLINE_EXCEEDED") == 0 || strcmp(type, "ABORTED") == 0)
    return DEXA_E_TRANSIENT;
  if (strcmp(type, "UNAUTHENTICATED") == 0 || strcmp(type, "PERMISSION_DENIED") == 0)
    return DEXA_E_AUTH;
  if (strstr(type, "rate_limit")) return DEXA_E_RATE_LIMITED;
  if (strcmp(type, "insufficient_quota") == 0) return DEXA_E_MODEL;
  if (strstr(type, "overloaded") || strstr(type, "server_error") || strcmp(type, "api_error") == 0 ||
      strstr(type, "timeout") || strcmp(type, "internal_error") == 0)
    return DEXA_E_TRANSIENT;
  if (strstr(type, "authentication") || strstr(type, "permission")) return DEXA_E_AUTH;
  return DEXA_E_MODEL;
}

int dexa__retry_curl_code(int curl_code) {
  switch ((CURLcode)curl_code) {
  case CURLE_OK: return DEXA_OK;
  case CURLE_OPERATION_TIMEDOUT: return DEXA_E_TIMEOUT;
  case CURLE_URL_MALFORMAT:
  case CURLE_UNSUPPORTED_PROTOCOL:
  case CURLE_PEER_FAILED_VERIFICATION:
  case CURLE_SSL_CACERT_BADFILE:
  case CURLE_SSL_CERTPROBLEM:
  case CURLE_LOGIN_DENIED: return DEXA_E_MODEL;
  case CURLE_OUT_OF_MEMORY: return DEXA_E_NOMEM;
  default: return DEXA_E_TRANSIENT; /* connect, resolve, send, recv, partial, reset */
  }
}

int64_t dexa__retry_after_ms(const char *retry_after, const char *retry_after_ms, int64_t now_s) {
  double ms = -1;
  char *end;
  if (retry_after_ms && *retry_after_ms) {
    double v = strtod(retry_after_ms, &end);
    if (end != retry_after_ms && v >= 0) ms = v;
  }
  if (ms < 0 && retry_after && *retry_after) {
    double v = strtod(retry_after, &end);
    while (*end == ' ') end++;
    if (end != retry_after && !*end && v >= 0) ms = v * 1000.0;
    else {
      time_t t = curl_getdate(retry_after, NULL);
      if (t != (time_t)-1) ms = t > now_s ? (double)(t - now_s) * 1000.0 : 0;
    }
  }
  if (ms < 0) return 0;
  if (ms > DEXA__RETRY_AFTER_MAX_MS) ms = DEXA__RETRY_AFTER_MAX_MS;
  return (int64_t)ms;
}

/* Copies printable ASCII (other bytes become '?'), at most out_size - 1. */
static void copy_printable(char *out, size_t out_size, const char *s, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n && k + 1 < out_size; i++) {
    unsigned char c = (unsigned char)s[i];
    out[k++] = (c >= 0x20 && c < 0x7F) ? (char)c : (c == '\n' || c == '\t') ? ' ' : '?';
  }
  out[k] = '\0';
}

void dexa__retry_error_message(const char *body, size_t len, const char *prefix, char *out,
                               size_t out_size, char *code_out, size_t code_size) {
  if (code_out && code_size) code_out[0] = '\0';
  cJSON *doc = body && len ? cJSON_ParseWithLength(body, len) : NULL;
  const cJSON *err = cJSON_GetObjectItemCaseSensitive(doc, "error");
  const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(err, "message"));
  if (!msg) msg = cJSON_GetStringValue(err); /* {"error":"text"} (some compatible servers) */
  if (!msg) msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "message"));
  const char *code = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(err, "code"));
  if (!code) code = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(err, "type"));
  if (!code) code = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(err, "status")); /* Google */
  if (code && code_out && code_size) snprintf(code_out, code_size, "%s", code);
  char text[1024];
  if (msg) copy_printable(text, sizeof text, msg, strlen(msg));
  else if (body && len) copy_printable(text, sizeof text, body, len > 300 ? 300 : len);
  else snprintf(text, sizeof text, "no error details");
  snprintf(out, out_size, "%s: %s", prefix, text);
  cJSON_Delete(doc);
}
