/* Incremental Server-Sent Events parser; see sse.h for the rules. */
#include "model/sse.h"

#include <string.h>

void dexa__sse_parser_init(dexa__sse_parser *p, dexa__sse_parser_fn on_event, void *ctx) {
  memset(p, 0, sizeof *p);
  dexa__buf_init(&p->line);
  dexa__buf_init(&p->event);
  dexa__buf_init(&p->data);
  p->on_event = on_event;
  p->ctx = ctx;
}

void dexa__sse_parser_free(dexa__sse_parser *p) {
  dexa__buf_free(&p->line);
  dexa__buf_free(&p->event);
  dexa__buf_free(&p->data);
}

static int dispatch(dexa__sse_parser *p) {
  int rc = 0;
  if (p->has_data) {
    const char *ev = p->event.len ? dexa__buf_cstr(&p->event) : "";
    const char *data = dexa__buf_cstr(&p->data);
    if (!ev || !data) return -1;
    rc = p->on_event(p->ctx, ev, data, p->data.len);
  }
  dexa__buf_reset(&p->event);
  dexa__buf_reset(&p->data);
  p->has_data = 0;
  return rc;
}

/* One complete line (without its end). */
static int take_line(dexa__sse_parser *p, const char *s, size_t n) {
  if (n == 0) return dispatch(p);
  if (s[0] == ':') return 0; /* comment */
  const char *colon = memchr(s, ':', n);
  size_t name_len = colon ? (size_t)(colon - s) : n;
  const char *value = colon ? colon + 1 : s + n;
  size_t value_len = colon ? n - name_len - 1 : 0;
  if (value_len && value[0] == ' ') {
    value++;
    value_len--;
  }
  if (name_len == 4 && memcmp(s, "data", 4) == 0) {
    if (p->data.len + value_len + 1 > DEXA__SSE_MAX_EVENT) return -1;
    if (p->has_data) dexa__buf_putc(&p->data, '\n');
    dexa__buf_append(&p->data, value, value_len);
    p->has_data = 1;
    return p->data.oom ? -1 : 0;
  }
  if (name_len == 5 && memcmp(s, "event", 5) == 0) {
    dexa__buf_reset(&p->event);
    dexa__buf_append(&p->event, value, value_len);
    return p->event.oom ? -1 : 0;
  }
  return 0; /* id, retry and unknown fields */
}

int dexa__sse_parser_feed(dexa__sse_parser *p, const char *bytes, size_t n) {
  if (p->failed) return -1;
  size_t i = 0;
  if (!p->bom_done && n) {
    /* Skip a BOM at the very start, possibly split across feeds. */
    static const char bom[3] = {'\xEF', '\xBB', '\xBF'};
    while (i < n && p->line.len + i < 3 && bytes[i] == bom[p->line.len + i]) i++;
    if (p->line.len + i < 3 && i == n) {
      dexa__buf_append(&p->line, bytes, n);
      return 0;
    }
    if (p->line.len + i == 3) dexa__buf_reset(&p->line);
    else {
      dexa__buf_append(&p->line, bytes, i); /* not a BOM after all */
    }
    p->bom_done = 1;
  }
  while (i < n) {
    if (p->last_cr && bytes[i] == '\n') {
      p->last_cr = 0;
      i++;
      continue;
    }
    p->last_cr = 0;
    size_t j = i;
    while (j < n && bytes[j] != '\n' && bytes[j] != '\r') j++;
    if (p->line.len + (j - i) > DEXA__SSE_MAX_LINE) {
      p->failed = 1;
      return -1;
    }
    if (j == n) {
      dexa__buf_append(&p->line, bytes + i, j - i);
      if (p->line.oom) p->failed = 1;
      return p->failed ? -1 : 0;
    }
    int rc;
    if (p->line.len) {
      dexa__buf_append(&p->line, bytes + i, j - i);
      rc = p->line.oom ? -1 : take_line(p, p->line.data, p->line.len);
      dexa__buf_reset(&p->line);
    } else {
      rc = take_line(p, bytes + i, j - i);
    }
    p->last_cr = bytes[j] == '\r';
    i = j + 1;
    if (rc != 0) {
      p->failed = 1;
      return rc;
    }
  }
  return 0;
}

int dexa__sse_parser_finish(dexa__sse_parser *p) {
  int pending = p->line.len > 0 || p->has_data;
  dexa__buf_reset(&p->line);
  dexa__buf_reset(&p->event);
  dexa__buf_reset(&p->data);
  p->has_data = 0;
  return pending;
}
