/* list_agent_messages {"before_seq"?,"limit"?}: pages back through the
 * conversation, newest page first, from AgentMessages and then the immutable
 * AgentMessageChunks, down to the first message (unless retention deleted
 * it). Response: {"messages":[..oldest first..],"has_more":bool}. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "util/json_num.h"
#include "util/json_span.h"

#define DEFAULT_PAGE 50
#define MAX_PAGE 200

typedef struct page {
  int64_t before;
  size_t cap; /* limit + 1, to know whether more exist */
  char **items;
  size_t *lens;
  size_t seen;
  int rc;
  char bad[128]; /* the key of a damaged value */
} page;

static int damaged(page *p, const char *key, size_t key_len) {
  snprintf(p->bad, sizeof p->bad, "%.*s", (int)(key_len < 120 ? key_len : 120), key);
  return DEXA_E_CORRUPT;
}

static void keep(page *p, const char *json, size_t len) {
  size_t slot = p->seen % p->cap;
  char *copy = malloc(len + 1);
  if (!copy) {
    p->rc = DEXA_E_NOMEM;
    return;
  }
  memcpy(copy, json, len);
  copy[len] = '\0';
  free(p->items[slot]);
  p->items[slot] = copy;
  p->lens[slot] = len;
  p->seen++;
}

static int visit_message(void *ctx, const char *key, size_t key_len, const char *value, size_t len) {
  page *p = ctx;
  int64_t seq;
  if (dexa__key_number(key, key_len, ATTR_MESSAGES, &seq) != 0 ||
      dexa__json_validate(value, len) != 0)
    return damaged(p, key, key_len);
  if (seq >= p->before) return 1;
  keep(p, value, len);
  return p->rc;
}

static int visit_chunk(void *ctx, const char *key, size_t key_len, const char *value, size_t len) {
  page *p = ctx;
  int64_t first;
  if (dexa__key_number(key, key_len, ATTR_MESSAGE_CHUNKS, &first) != 0) return damaged(p, key, key_len);
  if (first >= p->before) return 1;
  const char *arr;
  size_t al;
  if (dexa__json_get(value, len, "messages", &arr, &al) != 0 || al < 2) return damaged(p, key, key_len);
  size_t pos = 1; /* past '[' */
  while (pos < al - 1) {
    while (pos < al && (arr[pos] == ',' || arr[pos] == ' ')) pos++;
    size_t start = pos;
    if (arr[pos] == ']') break;
    if (dexa__json_skip(arr, al, &pos) != 0) return damaged(p, key, key_len);
    int64_t seq = 0;
    dexa__json_get_i64(arr + start, pos - start, "seq", &seq);
    if (seq >= p->before) return 1;
    keep(p, arr + start, pos - start);
    if (p->rc != DEXA_OK) return p->rc;
  }
  return 0;
}

static void respond(dexa__ctx *c, page *p) {
  size_t limit = p->cap - 1;
  size_t n = p->seen < limit ? p->seen : limit;
  size_t start = p->seen - n;
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_puts(&b, "{\"messages\":[");
  for (size_t i = 0; i < n; i++) {
    size_t slot = (start + i) % p->cap;
    if (i) dexa__buf_putc(&b, ',');
    dexa__buf_append(&b, p->items[slot], p->lens[slot]);
  }
  dexa__buf_printf(&b, "],\"has_more\":%s}", p->seen > limit ? "true" : "false");
  p->rc = b.oom ? DEXA_E_NOMEM : dexa__result_set_response(c->result, b.data, b.len);
  dexa__buf_free(&b);
}

int dexa__rpc_list_agent_messages(dexa__ctx *c) {
  int rc = dexa__require_session(c);
  if (rc != DEXA_OK) return rc;
  const cJSON *before = cJSON_GetObjectItemCaseSensitive(c->input, "before_seq");
  const cJSON *limit = cJSON_GetObjectItemCaseSensitive(c->input, "limit");
  int64_t before_seq = INT64_MAX, n = DEFAULT_PAGE;
  if ((before && !dexa__json_exact_int(before, &before_seq)) ||
      (limit && (!dexa__json_exact_int(limit, &n) || n < 1 || n > MAX_PAGE)))
    return dexa__result_fail(c->result, DEXA_E_INVALID_JSON,
                             "list_agent_messages takes {\"before_seq\":N,\"limit\":1..200} (integers)");
  size_t cap = (size_t)n + 1;
  page p = {before_seq, cap, calloc(cap, sizeof(char *)),
            calloc(cap, sizeof(size_t)), 0, DEXA_OK, ""};
  if (!p.items || !p.lens) rc = DEXA_E_NOMEM;
  if (rc == DEXA_OK) rc = dexa__attr_scan(c, ATTR_MESSAGE_CHUNKS, visit_chunk, &p);
  if (rc == DEXA_OK) rc = dexa__attr_scan(c, ATTR_MESSAGES, visit_message, &p);
  if (rc == DEXA_OK) rc = p.rc;
  if (rc == DEXA_E_CORRUPT && p.bad[0])
    dexa__result_failf(c->result, rc, "attribute %s is damaged: its value is not JSON", p.bad);
  if (rc == DEXA_OK) {
    respond(c, &p);
    rc = p.rc;
  }
  for (size_t i = 0; p.items && i < cap; i++) free(p.items[i]);
  free(p.items);
  free(p.lens);
  return rc;
}
