/* Server-Sent Events frames (WHATWG HTML, "Server-sent events"): the id of
 * a frame is the event's resume token, so a browser's Last-Event-ID (or
 * the page's own copy of it) resumes right after it. */
#include <cjson/cJSON.h>
#include <string.h>

#include "dexagents/errors.h"
#include "dexagents/http.h"
#include "http/http_internal.h"

static int has_newline(const char *s) { return s && strpbrk(s, "\r\n") != NULL; }

int dexa__sse_append(dexa__buf *b, const char *id, const char *event, const char *data,
                     size_t data_len) {
  if (has_newline(id) || has_newline(event)) return DEXA_E_INVALID_ARG;
  if (id) {
    dexa__buf_puts(b, "id: ");
    dexa__buf_puts(b, id);
    dexa__buf_putc(b, '\n');
  }
  if (event) {
    dexa__buf_puts(b, "event: ");
    dexa__buf_puts(b, event);
    dexa__buf_putc(b, '\n');
  }
  /* Each line of data is its own "data:" field; CR, LF and CRLF all end a
   * line, so a bare CR must not pass through into one field. */
  size_t i = 0;
  for (;;) {
    size_t j = i;
    while (j < data_len && data[j] != '\n' && data[j] != '\r') j++;
    dexa__buf_puts(b, "data: ");
    dexa__buf_append(b, data + i, j - i);
    dexa__buf_putc(b, '\n');
    if (j >= data_len) break;
    if (data[j] == '\r' && j + 1 < data_len && data[j + 1] == '\n') j++;
    i = j + 1;
  }
  dexa__buf_putc(b, '\n');
  return b->oom ? DEXA_E_NOMEM : DEXA_OK;
}

static int give(dexa__buf *b, char **out, size_t *out_len) {
  if (b->oom) {
    dexa__buf_free(b);
    return DEXA_E_NOMEM;
  }
  size_t n = 0;
  char *s = dexa__buf_steal(b, &n);
  if (!s) return DEXA_E_NOMEM;
  *out = s;
  if (out_len) *out_len = n;
  return DEXA_OK;
}

DEXA_EXTERN int dexa_http_sse_frame(const char *id, const char *event, const char *data,
                                    size_t data_len, char **out, size_t *out_len) {
  if (!out || (!data && data_len)) return DEXA_E_INVALID_ARG;
  *out = NULL;
  if (out_len) *out_len = 0;
  dexa__buf b;
  dexa__buf_init(&b);
  int rc = dexa__sse_append(&b, id, event, data ? data : "", data_len);
  if (rc != DEXA_OK) {
    dexa__buf_free(&b);
    return rc;
  }
  return give(&b, out, out_len);
}

int dexa__sse_append_events(dexa__buf *b, const cJSON *doc) {
  const cJSON *events = cJSON_GetObjectItemCaseSensitive(doc, "events");
  if (!cJSON_IsArray(events)) return DEXA_E_INVALID_JSON;
  const cJSON *item;
  cJSON_ArrayForEach(item, events) {
    const char *token = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(item, "token"));
    const cJSON *event = cJSON_GetObjectItemCaseSensitive(item, "event");
    if (!token || !cJSON_IsObject(event)) return DEXA_E_INVALID_JSON;
    char *data = cJSON_PrintUnformatted(event);
    if (!data) return DEXA_E_NOMEM;
    int rc = dexa__sse_append(b, token, NULL, data, strlen(data));
    cJSON_free(data);
    if (rc != DEXA_OK) return rc == DEXA_E_INVALID_ARG ? DEXA_E_INVALID_JSON : rc;
  }
  return b->oom ? DEXA_E_NOMEM : DEXA_OK;
}

DEXA_EXTERN int dexa_http_sse_frames(const char *events_json, size_t events_len, char **out,
                                     size_t *out_len) {
  if (!out || !events_json) return DEXA_E_INVALID_ARG;
  *out = NULL;
  if (out_len) *out_len = 0;
  cJSON *doc = cJSON_ParseWithLength(events_json, events_len);
  if (!doc) return DEXA_E_INVALID_JSON;
  dexa__buf b;
  dexa__buf_init(&b);
  int rc = dexa__sse_append_events(&b, doc);
  cJSON_Delete(doc);
  if (rc != DEXA_OK) {
    dexa__buf_free(&b);
    return rc;
  }
  return give(&b, out, out_len);
}
