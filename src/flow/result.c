/* Result builder and the public accessors of dexa_result. */
#include "flow/result.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"
#include "util/buf.h"

dexa_result *dexa__result_new(void) { return calloc(1, sizeof(dexa_result)); }

static char *dup_bytes(const char *s, size_t n) {
  char *p = malloc(n + 1);
  if (!p) return NULL;
  if (n) memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

static void entries_clear(dexa__entries *e) {
  for (size_t i = 0; i < e->count; i++) {
    free(e->items[i].key);
    free(e->items[i].value);
  }
  free(e->items);
  memset(e, 0, sizeof *e);
}

static int entries_add(dexa__entries *e, const char *key, size_t key_len, const char *value,
                       size_t value_len) {
  if (e->count == e->cap) {
    size_t cap = e->cap ? e->cap * 2 : 8;
    dexa__entry *p = realloc(e->items, cap * sizeof *p);
    if (!p) return DEXA_E_NOMEM;
    e->items = p;
    e->cap = cap;
  }
  dexa__entry *it = &e->items[e->count];
  it->key = key ? dup_bytes(key, key_len) : NULL;
  it->key_len = key ? key_len : 0;
  it->value = value ? dup_bytes(value, value_len) : NULL;
  it->value_len = value ? value_len : 0;
  if ((key && !it->key) || (value && !it->value)) {
    free(it->key);
    free(it->value);
    return DEXA_E_NOMEM;
  }
  e->count++;
  return DEXA_OK;
}

int dexa__result_add_write(dexa_result *r, const char *key, size_t key_len, const char *value,
                           size_t value_len) {
  return entries_add(&r->writes, key, key_len, value, value_len);
}

int dexa__result_add_publish(dexa_result *r, const char *channel, size_t channel_len,
                             const char *value, size_t value_len) {
  return entries_add(&r->publishes, channel, channel_len, value, value_len);
}

int dexa__result_add_event(dexa_result *r, const char *json, size_t len) {
  return entries_add(&r->events, NULL, 0, json, len);
}

static int set_doc(char **slot, size_t *slot_len, const char *json, size_t len) {
  char *p = dup_bytes(json, len);
  if (!p) return DEXA_E_NOMEM;
  free(*slot);
  *slot = p;
  *slot_len = len;
  return DEXA_OK;
}

int dexa__result_set_wait(dexa_result *r, const char *json, size_t len) {
  return set_doc(&r->wait, &r->wait_len, json, len);
}

int dexa__result_set_decision(dexa_result *r, const char *json, size_t len) {
  return set_doc(&r->decision, &r->decision_len, json, len);
}

int dexa__result_set_response(dexa_result *r, const char *json, size_t len) {
  return set_doc(&r->response, &r->response_len, json, len);
}

static void drop_effects(dexa_result *r) {
  entries_clear(&r->writes);
  entries_clear(&r->publishes);
  entries_clear(&r->events);
  free(r->wait);
  free(r->decision);
  free(r->response);
  r->wait = r->decision = r->response = NULL;
  r->wait_len = r->decision_len = r->response_len = 0;
}

int dexa__result_fail(dexa_result *r, int code, const char *message) {
  drop_effects(r);
  r->status = code;
  free(r->errmsg);
  r->errmsg = message ? dup_bytes(message, strlen(message)) : NULL;
  return code;
}

int dexa__result_failf(dexa_result *r, int code, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return dexa__result_fail(r, code, msg);
}

int dexa__result_find_write(const dexa_result *r, const char *key, size_t key_len,
                            const char **value, size_t *value_len) {
  for (size_t i = r->writes.count; i-- > 0;) {
    const dexa__entry *e = &r->writes.items[i];
    if (e->key_len == key_len && memcmp(e->key, key, key_len) == 0) {
      *value = e->value;
      *value_len = e->value_len;
      return 1;
    }
  }
  return 0;
}

/* ---- public accessors ---- */

DEXA_EXTERN void dexa_result_free(dexa_result *result) {
  if (!result) return;
  drop_effects(result);
  free(result->errmsg);
  free(result);
}

DEXA_EXTERN int dexa_result_status(const dexa_result *result) {
  return result ? result->status : DEXA_E_INVALID_ARG;
}

DEXA_EXTERN const char *dexa_result_errmsg(const dexa_result *result) {
  /* As documented: "" for NULL and for a successful result. */
  if (!result || result->status == DEXA_OK) return "";
  return result->errmsg ? result->errmsg : dexa_strerror(result->status);
}

DEXA_EXTERN int64_t dexa_result_retry_after_ms(const dexa_result *result) {
  return result ? result->retry_after_ms : 0;
}

static int entry_at(const dexa__entries *e, size_t i, const char **key, size_t *key_len,
                    const char **value, size_t *value_len) {
  if (i >= e->count) return DEXA_E_INVALID_ARG;
  if (key) *key = e->items[i].key;
  if (key_len) *key_len = e->items[i].key_len;
  if (value) *value = e->items[i].value;
  if (value_len) *value_len = e->items[i].value_len;
  return DEXA_OK;
}

DEXA_EXTERN size_t dexa_result_write_count(const dexa_result *result) {
  return result ? result->writes.count : 0;
}

DEXA_EXTERN int dexa_result_write_at(const dexa_result *result, size_t index, const char **key,
                                     size_t *key_len, const char **value, size_t *value_len) {
  if (!result) return DEXA_E_INVALID_ARG;
  return entry_at(&result->writes, index, key, key_len, value, value_len);
}

DEXA_EXTERN size_t dexa_result_publish_count(const dexa_result *result) {
  return result ? result->publishes.count : 0;
}

DEXA_EXTERN int dexa_result_publish_at(const dexa_result *result, size_t index,
                                       const char **channel, size_t *channel_len,
                                       const char **value, size_t *value_len) {
  if (!result) return DEXA_E_INVALID_ARG;
  return entry_at(&result->publishes, index, channel, channel_len, value, value_len);
}

DEXA_EXTERN size_t dexa_result_event_count(const dexa_result *result) {
  return result ? result->events.count : 0;
}

DEXA_EXTERN int dexa_result_event_at(const dexa_result *result, size_t index, const char **json,
                                     size_t *len) {
  if (!result) return DEXA_E_INVALID_ARG;
  return entry_at(&result->events, index, NULL, NULL, json, len);
}

static int doc(const char *p, size_t n, const char **json, size_t *len) {
  if (!json || !len) return DEXA_E_INVALID_ARG;
  *json = p;
  *len = p ? n : 0;
  return DEXA_OK;
}

DEXA_EXTERN int dexa_result_wait(const dexa_result *result, const char **json, size_t *len) {
  if (!result) {
    (void)doc(NULL, 0, json, len); /* no document */
    return DEXA_E_INVALID_ARG;
  }
  return doc(result->wait, result->wait_len, json, len);
}

DEXA_EXTERN int dexa_result_decision(const dexa_result *result, const char **json, size_t *len) {
  if (!result) {
    (void)doc(NULL, 0, json, len); /* no document */
    return DEXA_E_INVALID_ARG;
  }
  return doc(result->decision, result->decision_len, json, len);
}

DEXA_EXTERN int dexa_result_response(const dexa_result *result, const char **json, size_t *len) {
  if (!result) {
    (void)doc(NULL, 0, json, len); /* no document */
    return DEXA_E_INVALID_ARG;
  }
  return doc(result->response, result->response_len, json, len);
}

static void put_json_or_null(dexa__buf *b, const char *json, size_t len) {
  if (json) dexa__buf_append(b, json, len);
  else dexa__buf_puts(b, "null");
}

static void put_entries(dexa__buf *b, const char *name, const char *key_name,
                        const dexa__entries *e) {
  dexa__buf_printf(b, ",\"%s\":[", name);
  for (size_t i = 0; i < e->count; i++) {
    if (i) dexa__buf_putc(b, ',');
    if (!key_name) {
      put_json_or_null(b, e->items[i].value, e->items[i].value_len);
      continue;
    }
    dexa__buf_printf(b, "{\"%s\":", key_name);
    dexa__buf_json_str(b, e->items[i].key, e->items[i].key_len);
    dexa__buf_puts(b, ",\"value\":");
    put_json_or_null(b, e->items[i].value, e->items[i].value_len);
    dexa__buf_putc(b, '}');
  }
  dexa__buf_putc(b, ']');
}

DEXA_EXTERN int dexa_result_json(char **out, size_t *out_len, const dexa_result *result) {
  if (out) *out = NULL; /* on every error, as documented */
  if (out_len) *out_len = 0;
  if (!out || !result) return DEXA_E_INVALID_ARG;
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_printf(&b, "{\"status\":%d,\"error\":", result->status);
  dexa__buf_json_cstr(&b, result->status ? dexa_result_errmsg(result) : "");
  dexa__buf_printf(&b, ",\"retry_after_ms\":%lld", (long long)result->retry_after_ms);
  put_entries(&b, "writes", "key", &result->writes);
  put_entries(&b, "publishes", "channel", &result->publishes);
  put_entries(&b, "events", NULL, &result->events);
  dexa__buf_puts(&b, ",\"wait\":");
  put_json_or_null(&b, result->wait, result->wait_len);
  dexa__buf_puts(&b, ",\"decision\":");
  put_json_or_null(&b, result->decision, result->decision_len);
  dexa__buf_puts(&b, ",\"response\":");
  put_json_or_null(&b, result->response, result->response_len);
  dexa__buf_putc(&b, '}');
  *out = dexa__buf_steal(&b, out_len);
  return *out ? DEXA_OK : DEXA_E_NOMEM;
}
