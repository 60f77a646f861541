/* CompactContext: runs before a model call whose input nears the context
 * window. It summarizes the older messages with the session's model, writes
 * the cumulative summary (AgentContextSummary, naming the exact range it
 * covers) in the same atomic result that moves those messages from
 * AgentMessages into immutable AgentMessageChunks, and then lets retention
 * delete the oldest chunks beyond the policy's limit (unless the policy
 * keeps the whole transcript). A cut falls only where a turn or a model
 * round starts, so a tool call is never separated from its result. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/model_request.h"
#include "core/usage.h"
#include "util/json_span.h"

#define CHUNK_MESSAGES 20

typedef struct msg {
  int64_t seq;
  char *json;
  size_t len;
  int cut_ok; /* a summary may end just before this message */
} msg;

typedef struct history {
  msg *items;
  size_t count;
  char prev_role[16];
} history;

static int role_is(const char *json, size_t len, const char *role) {
  const char *v;
  size_t vl;
  size_t rl = strlen(role);
  return dexa__json_get(json, len, "role", &v, &vl) == 0 && vl == rl + 2 &&
         memcmp(v + 1, role, rl) == 0;
}

static int collect(void *ctx, const char *key, size_t key_len, const char *value, size_t len) {
  history *h = ctx;
  msg *p = realloc(h->items, (h->count + 1) * sizeof *p);
  if (!p) return DEXA_E_NOMEM;
  h->items = p;
  msg *m = &h->items[h->count];
  m->json = malloc(len + 1);
  if (!m->json) return DEXA_E_NOMEM;
  memcpy(m->json, value, len);
  m->json[len] = '\0';
  m->len = len;
  if (dexa__key_number(key, key_len, ATTR_MESSAGES, &m->seq) != 0) {
    free(m->json);
    return DEXA_E_CORRUPT;
  }
  int user = role_is(value, len, "user"), model = role_is(value, len, "model");
  m->cut_ok = user || (model && strcmp(h->prev_role, "tool") == 0);
  snprintf(h->prev_role, sizeof h->prev_role, "%s", user ? "user" : model ? "model" : "tool");
  h->count++;
  return 0;
}

static void history_free(history *h) {
  for (size_t i = 0; i < h->count; i++) free(h->items[i].json);
  free(h->items);
}

/* How many of the oldest messages to summarize: the longest prefix ending at
 * a cut point whose remaining suffix fits the kept share of the window. */
static size_t summary_cut(const dexa_agent_def *def, const history *h) {
  int64_t keep = def->context_window_tokens * 4 * def->compaction_keep_pct / 100;
  int64_t suffix = 0;
  size_t best = 0, newest_cut = 0;
  for (size_t i = h->count; i-- > 0;) {
    suffix += (int64_t)h->items[i].len;
    if (!h->items[i].cut_ok) continue;
    if (!newest_cut) newest_cut = i;
    if (suffix <= keep) best = i;
  }
  return best ? best : newest_cut;
}

/* The compaction request: previous summary plus the messages to summarize. */
static int build_request(dexa__ctx *c, const dexa_model *model, const history *h, size_t n,
                         dexa_model_request *req) {
  dexa__buf *b = &req->json;
  dexa__buf_puts(b, "{\"model\":");
  dexa__buf_json_cstr(b, dexa_model_name(model));
  dexa__buf_puts(b, ",\"session_id\":");
  dexa__buf_json_cstr(b, c->call->session_id);
  dexa__buf_printf(b, ",\"purpose\":\"compaction\",\"attempt\":%d,\"instructions\":",
                   (int)c->call->attempt);
  dexa__buf_json_cstr(b, "Summarize the conversation below (and the earlier summary) for your "
                         "own later use: facts, decisions, open tasks and tool results that "
                         "still matter. Be brief.");
  const char *v;
  size_t vl;
  dexa__buf_puts(b, ",\"summary\":");
  if (dexa__attr_get(c, ATTR_CONTEXT_SUMMARY, &v, &vl) == DEXA_OK) dexa__buf_append(b, v, vl);
  else dexa__buf_puts(b, "null");
  dexa__buf_puts(b, ",\"messages\":[");
  for (size_t i = 0; i < n; i++) {
    if (i) dexa__buf_putc(b, ',');
    size_t off = b->len;
    dexa__buf_append(b, h->items[i].json, h->items[i].len);
    if (dexa__model_request_add_message(req, off) != DEXA_OK) return DEXA_E_NOMEM;
  }
  dexa__buf_puts(b, "],\"tools\":[]}");
  return b->oom ? DEXA_E_NOMEM : DEXA_OK;
}

/* Moves messages [0, n) into chunks of CHUNK_MESSAGES; returns chunk bytes. */
static int move_to_chunks(dexa__ctx *c, const history *h, size_t n, int64_t *chunk_bytes) {
  int rc = DEXA_OK;
  for (size_t start = 0; start < n && rc == DEXA_OK; start += CHUNK_MESSAGES) {
    size_t end = start + CHUNK_MESSAGES < n ? start + CHUNK_MESSAGES : n;
    dexa__buf b;
    dexa__buf_init(&b);
    dexa__buf_printf(&b, "{\"first_seq\":%lld,\"last_seq\":%lld,\"messages\":[",
                     (long long)h->items[start].seq, (long long)h->items[end - 1].seq);
    for (size_t i = start; i < end; i++) {
      if (i > start) dexa__buf_putc(&b, ',');
      dexa__buf_append(&b, h->items[i].json, h->items[i].len);
      char key[48];
      dexa__message_key(key, sizeof key, h->items[i].seq);
      if (rc == DEXA_OK) rc = dexa__attr_delete(c, key);
    }
    dexa__buf_puts(&b, "]}");
    char key[64];
    snprintf(key, sizeof key, ATTR_MESSAGE_CHUNKS "%020lld", (long long)h->items[start].seq);
    if (rc == DEXA_OK) rc = b.oom ? DEXA_E_NOMEM : dexa__attr_put_raw(c, key, b.data, b.len);
    *chunk_bytes += (int64_t)b.len;
    dexa__buf_free(&b);
  }
  return rc;
}

typedef struct chunk_scan {
  dexa__ctx *c;
  int64_t total_messages;
  int64_t bytes;
  char **keys;
  int64_t *counts;
  int64_t *sizes;
  size_t count;
} chunk_scan;

static int chunk_visit(void *ctx, const char *key, size_t key_len, const char *value, size_t len) {
  chunk_scan *s = ctx;
  int64_t first = 0, last = 0;
  dexa__json_get_i64(value, len, "first_seq", &first);
  dexa__json_get_i64(value, len, "last_seq", &last);
  char **k = realloc(s->keys, (s->count + 1) * sizeof *k);
  int64_t *n = k ? realloc(s->counts, (s->count + 1) * sizeof *n) : NULL;
  int64_t *z = n ? realloc(s->sizes, (s->count + 1) * sizeof *z) : NULL;
  if (k) s->keys = k;
  if (n) s->counts = n;
  if (z) s->sizes = z;
  if (!k || !n || !z || !(k[s->count] = strndup(key, key_len))) return DEXA_E_NOMEM;
  n[s->count] = last - first + 1;
  z[s->count] = (int64_t)len;
  s->total_messages += last - first + 1;
  s->bytes += (int64_t)len;
  s->count++;
  return 0;
}

/* Retention: deletes the oldest stored chunks while the summarized messages
 * kept (new_messages in new chunks included) pass the policy's limit.
 * *kept_bytes: the bytes of every chunk that remains, new ones included. */
static int apply_retention(dexa__ctx *c, int64_t new_messages, int64_t new_bytes,
                           int64_t *kept_bytes, int *deleted) {
  chunk_scan s = {c, new_messages, new_bytes, NULL, NULL, NULL, 0};
  int rc = dexa__attr_scan(c, ATTR_MESSAGE_CHUNKS, chunk_visit, &s);
  const dexa_agent_def *def = &c->agent->def;
  for (size_t i = 0; rc == DEXA_OK && i < s.count && !def->keep_full_transcript &&
                     s.total_messages > def->retention_messages;
       i++) {
    rc = dexa__attr_delete(c, s.keys[i]);
    s.total_messages -= s.counts[i];
    s.bytes -= s.sizes[i];
    (*deleted)++;
  }
  for (size_t i = 0; i < s.count; i++) free(s.keys[i]);
  free(s.keys);
  free(s.counts);
  free(s.sizes);
  *kept_bytes = s.bytes;
  return rc;
}

static int write_summary(dexa__ctx *c, const dexa_model_reply *reply, int64_t through) {
  cJSON *old;
  int rc = dexa__attr_get_json(c, ATTR_CONTEXT_SUMMARY, &old);
  if (rc != DEXA_OK) return rc;
  const cJSON *from = cJSON_GetObjectItemCaseSensitive(old, "from_seq");
  const cJSON *gen = cJSON_GetObjectItemCaseSensitive(old, "generation");
  dexa__buf text, b;
  dexa__buf_init(&text);
  dexa__buf_init(&b);
  for (size_t i = 0; i < reply->item_count; i++)
    dexa__buf_append(&text, reply->items[i].text.data, reply->items[i].text.len);
  dexa__buf_printf(&b, "{\"from_seq\":%lld,\"through_seq\":%lld,\"generation\":%lld,\"at\":%lld,\"text\":",
                   (long long)dexa__json_int(from, 1), (long long)through,
                   (long long)dexa__json_int(gen, 0) + 1,
                   (long long)c->call->now_ms);
  dexa__buf_json_str(&b, text.data ? text.data : "", text.len);
  dexa__buf_putc(&b, '}');
  rc = b.oom || text.oom ? DEXA_E_NOMEM : dexa__attr_put_raw(c, ATTR_CONTEXT_SUMMARY, b.data, b.len);
  dexa__buf_free(&text);
  dexa__buf_free(&b);
  cJSON_Delete(old);
  return rc;
}

static int continue_turn(dexa__ctx *c, int64_t turn, int64_t round) {
  char input[96];
  snprintf(input, sizeof input, "{\"turn\":%lld,\"round\":%lld,\"compacted\":true}",
           (long long)turn, (long long)round);
  return dexa__decide_next(c, STEP_RUN_MODEL, input);
}

static int compaction_event(dexa__ctx *c, int64_t through, size_t moved, int deleted) {
  dexa__buf e;
  dexa__event_begin(c, &e, "compaction");
  dexa__buf_printf(&e, ",\"through_seq\":%lld,\"moved\":%zu,\"deleted_chunks\":%d",
                   (long long)through, moved, deleted);
  return dexa__event_end(c, &e);
}

/* Stores the summary, moves the summarized messages and applies retention. */
static int record(dexa__ctx *c, const dexa_model_reply *reply, const history *h, size_t n) {
  dexa__transcript t;
  int rc = dexa__transcript_load(c, &t);
  int64_t through = h->items[n - 1].seq, moved_bytes = 0, kept_bytes = 0, remaining = 0;
  int deleted = 0;
  if (rc == DEXA_OK) rc = write_summary(c, reply, through);
  if (rc == DEXA_OK) rc = move_to_chunks(c, h, n, &moved_bytes);
  /* The new chunks are staged, not scanned: count them in, never delete them. */
  if (rc == DEXA_OK) rc = apply_retention(c, (int64_t)n, moved_bytes, &kept_bytes, &deleted);
  if (rc != DEXA_OK) return rc;
  for (size_t i = n; i < h->count; i++) remaining += (int64_t)h->items[i].len;
  t.first_seq = h->items[n].seq;
  t.bytes = remaining + kept_bytes;
  rc = dexa__transcript_store(c, &t);
  return rc == DEXA_OK ? compaction_event(c, through, n, deleted) : rc;
}

static int summarize(dexa__ctx *c, const history *h, size_t n, int64_t turn, int64_t round) {
  const dexa_model *model;
  int rc = dexa__session_model(c, &model);
  if (rc != DEXA_OK) return rc;
  dexa_model_request req;
  dexa_model_reply reply;
  dexa__model_request_init(&req);
  dexa__model_reply_init(&reply);
  rc = build_request(c, model, h, n, &req);
  if (rc == DEXA_OK) rc = model->vt.generate(model->user_data, &req, &reply);
  if (rc == DEXA_OK && reply.item_count == 0) rc = DEXA_E_TRANSIENT;
  if (rc == DEXA_OK) rc = record(c, &reply, h, n);
  if (rc == DEXA_OK) rc = dexa__usage_add(c, turn, &reply); /* summaries cost tokens too */
  if (rc == DEXA_OK) rc = continue_turn(c, turn, round);
  else if (dexa_error_class(rc) == DEXA_CLASS_TRANSIENT)
    dexa__result_failf(c->result, rc, "compaction: %s", reply.error ? reply.error : dexa_strerror(rc));
  else if (dexa_error_class(rc) == DEXA_CLASS_PERMANENT)
    rc = continue_turn(c, turn, round); /* the model cannot summarize: go on without */
  dexa__model_reply_free(&reply);
  dexa__model_request_free(&req);
  return rc;
}

int dexa__step_compact_context(dexa__ctx *c) {
  int64_t turn, round;
  if (dexa__input_i64(c, "turn", &turn) != DEXA_OK || dexa__input_i64(c, "round", &round) != DEXA_OK)
    return dexa__result_fail(c->result, DEXA_E_INVALID_JSON, "CompactContext needs turn and round");
  int rc;
  if (!dexa__turn_is_running(c, turn, NULL, &rc))
    return rc != DEXA_OK ? rc : dexa__result_set_decision(c->result, "{\"next\":[]}", 11);
  history h = {NULL, 0, ""};
  rc = dexa__attr_scan(c, ATTR_MESSAGES, collect, &h);
  size_t n = rc == DEXA_OK ? summary_cut(&c->agent->def, &h) : 0;
  if (rc == DEXA_OK) rc = n ? summarize(c, &h, n, turn, round) : continue_turn(c, turn, round);
  history_free(&h);
  return rc;
}
