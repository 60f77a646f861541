/* The MCP wire: JSON-RPC 2.0 messages (one object each; batches were
 * removed in 2025-06-18) and the Server-Sent Events stream of Streamable
 * HTTP. Both read untrusted bytes, so both are fuzzed
 * (test/fuzz/fuzz_mcp_wire.c). */
#include <stdio.h>
#include <string.h>

#include "tools/mcp_internal.h"
#include "util/json_num.h"

int dexa__rpc_id_text(const cJSON *id, char *out, size_t size) {
  if (cJSON_IsNumber(id)) {
    int64_t v;
    if (!dexa__json_exact_int(id, &v)) return -1;
    snprintf(out, size, "%lld", (long long)v);
    return 0;
  }
  if (cJSON_IsString(id) && strlen(id->valuestring) + 3 <= size) {
    snprintf(out, size, "s:%s", id->valuestring);
    return 0;
  }
  return -1;
}

void dexa__rpc_msg_free(dexa__rpc_msg *m) {
  cJSON_Delete(m->root);
  memset(m, 0, sizeof *m);
}

int dexa__rpc_parse(const char *s, size_t n, dexa__rpc_msg *m) {
  memset(m, 0, sizeof *m);
  m->root = cJSON_ParseWithLength(s, n);
  if (!cJSON_IsObject(m->root)) goto bad;
  const cJSON *ver = cJSON_GetObjectItemCaseSensitive(m->root, "jsonrpc");
  /* Some servers omit "jsonrpc"; anything else than "2.0" is refused. */
  if (ver && !(cJSON_IsString(ver) && strcmp(ver->valuestring, "2.0") == 0)) goto bad;
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(m->root, "id");
  const cJSON *method = cJSON_GetObjectItemCaseSensitive(m->root, "method");
  const cJSON *result = cJSON_GetObjectItemCaseSensitive(m->root, "result");
  const cJSON *error = cJSON_GetObjectItemCaseSensitive(m->root, "error");
  if (id && !cJSON_IsNull(id) && dexa__rpc_id_text(id, m->id, sizeof m->id) != 0) goto bad;
  if (method) {
    if (!cJSON_IsString(method) || result || error) goto bad;
    m->method = method->valuestring;
    m->params = cJSON_GetObjectItemCaseSensitive(m->root, "params");
    if (m->params && !cJSON_IsObject(m->params) && !cJSON_IsArray(m->params)) goto bad;
    m->kind = m->id[0] ? DEXA__RPC_REQUEST : DEXA__RPC_NOTIFICATION;
    if (id && !m->id[0]) goto bad; /* "id": null on a request */
    return 0;
  }
  if (result && !error) {
    if (!m->id[0]) goto bad;
    m->result = result;
    m->kind = DEXA__RPC_RESULT;
    return 0;
  }
  if (error && !result) {
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(error, "code");
    if (!cJSON_IsObject(error) || !dexa__json_exact_int(code, &m->error_code)) goto bad;
    m->error_message = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(error, "message"));
    if (!m->error_message) m->error_message = "";
    m->kind = DEXA__RPC_ERROR; /* the id may be missing (parse error) */
    return 0;
  }
bad:
  cJSON_Delete(m->root);
  memset(m, 0, sizeof *m);
  m->kind = DEXA__RPC_INVALID;
  return -1;
}

/* ---- SSE (WHATWG "event stream interpretation") ---- */

void dexa__sse_init(dexa__sse *p, size_t max_event, dexa__sse_fn fn, void *user_data) {
  memset(p, 0, sizeof *p);
  dexa__buf_init(&p->line);
  dexa__buf_init(&p->data);
  dexa__buf_init(&p->event);
  p->retry_ms = -1;
  p->max_event = max_event;
  p->fn = fn;
  p->user_data = user_data;
}

void dexa__sse_free(dexa__sse *p) {
  dexa__buf_free(&p->line);
  dexa__buf_free(&p->data);
  dexa__buf_free(&p->event);
}

static int dispatch(dexa__sse *p) {
  int rc = 0;
  if (p->data.len > 0) {
    size_t n = p->data.len - 1; /* the last data line's '\n' */
    dexa__buf_cstr(&p->event);
    p->data.data[n] = '\0';
    dexa__sse_event ev = {p->event.len ? p->event.data : "", p->has_id ? p->last_id : NULL,
                          p->data.data, n};
    rc = p->fn(p->user_data, &ev);
  }
  dexa__buf_reset(&p->data);
  dexa__buf_reset(&p->event);
  p->has_id = 0;
  return rc;
}

static int field(dexa__sse *p, const char *s, size_t n) {
  if (n == 0) return dispatch(p);
  if (s[0] == ':') return 0; /* comment */
  const char *colon = memchr(s, ':', n);
  size_t fl = colon ? (size_t)(colon - s) : n;
  const char *v = colon ? colon + 1 : s + n;
  size_t vl = colon ? n - fl - 1 : 0;
  if (vl && v[0] == ' ') v++, vl--;
  if (fl == 4 && memcmp(s, "data", 4) == 0) {
    dexa__buf_append(&p->data, v, vl);
    dexa__buf_putc(&p->data, '\n');
  } else if (fl == 5 && memcmp(s, "event", 5) == 0) {
    dexa__buf_reset(&p->event);
    dexa__buf_append(&p->event, v, vl);
  } else if (fl == 2 && memcmp(s, "id", 2) == 0) {
    if (!memchr(v, '\0', vl) && vl < sizeof p->last_id) {
      memcpy(p->last_id, v, vl);
      p->last_id[vl] = '\0';
      p->has_id = 1;
    }
  } else if (fl == 5 && memcmp(s, "retry", 5) == 0) {
    int64_t ms = 0;
    size_t i = 0;
    for (; i < vl && v[i] >= '0' && v[i] <= '9' && ms < 86400000; i++) ms = ms * 10 + (v[i] - '0');
    if (i == vl && vl > 0) p->retry_ms = ms;
  }
  return 0;
}

int dexa__sse_feed(dexa__sse *p, const char *s, size_t n) {
  if (p->failed) return -1;
  for (size_t i = 0; i < n; i++) {
    char ch = s[i];
    if (p->saw_cr && ch == '\n') { /* "\r\n" ends one line */
      p->saw_cr = 0;
      continue;
    }
    p->saw_cr = ch == '\r';
    if (ch == '\r' || ch == '\n') {
      int rc = field(p, p->line.data ? p->line.data : "", p->line.len);
      dexa__buf_reset(&p->line);
      if (rc) return rc;
      continue;
    }
    dexa__buf_putc(&p->line, ch);
    if (p->line.len + p->data.len > p->max_event || p->line.oom || p->data.oom) {
      p->failed = 1;
      return -1;
    }
  }
  return 0;
}

void dexa__sse_end(dexa__sse *p) {
  dexa__buf_reset(&p->line);
  dexa__buf_reset(&p->data);
  dexa__buf_reset(&p->event);
}

/* ---- header values (2026-07-28) ---- */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void dexa__mcp_header_value(dexa__buf *b, const char *v) {
  size_t n = strlen(v);
  int plain = n > 0 && strncmp(v, "=?base64?", 9) != 0;
  for (size_t i = 0; plain && i < n; i++) plain = v[i] >= 0x21 && v[i] <= 0x7e;
  if (plain) {
    dexa__buf_append(b, v, n);
    return;
  }
  dexa__buf_puts(b, "=?base64?");
  const unsigned char *u = (const unsigned char *)v;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t w = (uint32_t)u[i] << 16 | (i + 1 < n ? (uint32_t)u[i + 1] << 8 : 0) |
                 (i + 2 < n ? u[i + 2] : 0);
    char q[4] = {b64[w >> 18 & 63], b64[w >> 12 & 63], i + 1 < n ? b64[w >> 6 & 63] : '=',
                 i + 2 < n ? b64[w & 63] : '='};
    dexa__buf_append(b, q, 4);
  }
  dexa__buf_puts(b, "?=");
}
