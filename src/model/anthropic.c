/* "anthropic/<model>": the Anthropic Messages API (POST {base}/messages,
 * anthropic-version pinned). Each content block of a reply is stored as its
 * own item (thinking blocks with their signature, redacted_thinking as
 * received); on replay the consecutive model items form one assistant
 * message, unchanged, and tool results open the next user message. Prompt
 * caching (on by default) puts cache_control breakpoints on the system
 * text, the last tool and the last block of the newest message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"
#include "model/provider.h"
#include "model/retry.h"
#include "model/transcript.h"
#include "util/json_span.h"

/* ---- request ------------------------------------------------------------- */

/* Messages alternate; blocks of the same role go into one message. */
typedef struct convo {
  dexa__buf *b;
  const char *role; /* of the open message, NULL before the first */
  int blocks;       /* in the open message */
  size_t mark;      /* where a cache breakpoint fits in the last block we wrote, 0: none */
} convo;

static void open_role(convo *c, const char *role) {
  if (c->role && strcmp(c->role, role) == 0) {
    if (c->blocks++) dexa__buf_putc(c->b, ',');
    return;
  }
  if (c->role) dexa__buf_puts(c->b, "]},");
  else if (strcmp(role, "assistant") == 0) /* the first message must be the user's */
    dexa__buf_puts(c->b, "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":"
                         "\"(conversation continues)\"}]},");
  dexa__buf_printf(c->b, "{\"role\":\"%s\",\"content\":[", role);
  c->role = role;
  c->blocks = 1;
}

/* 1 when a stored block must not be replayed: an empty text block (the API
 * refuses those). */
static int skip_block(const char *item, size_t len) {
  const char *t;
  size_t tl;
  if (dexa__json_get(item, len, "type", &t, &tl) != 0 || tl != 6 || memcmp(t, "\"text\"", 6) != 0)
    return 0;
  return dexa__json_get(item, len, "text", &t, &tl) == 0 && tl == 2;
}

static void put_foreign(convo *c, const dexa__msg *m) {
  if (m->text && *m->text) {
    open_role(c, "assistant");
    dexa__buf_puts(c->b, "{\"type\":\"text\",\"text\":");
    dexa__buf_json_cstr(c->b, m->text);
    dexa__buf_putc(c->b, '}');
  }
  const cJSON *tc;
  cJSON_ArrayForEach(tc, m->tool_calls) {
    open_role(c, "assistant");
    dexa__buf_puts(c->b, "{\"type\":\"tool_use\",\"id\":");
    dexa__buf_json_cstr(c->b, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(tc, "call_id")));
    dexa__buf_puts(c->b, ",\"name\":");
    dexa__buf_json_cstr(c->b, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(tc, "name")));
    char *args = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(tc, "arguments"));
    dexa__buf_puts(c->b, ",\"input\":");
    dexa__buf_puts(c->b, args ? args : "{}");
    cJSON_free(args);
    dexa__buf_putc(c->b, '}');
  }
}

/* Where the block just written ends (before its '}'): a cache breakpoint
 * goes there when it is the request's last block. Verbatim items never get
 * one (their bytes are replayed as stored). */
static void mark_block(convo *c) { c->mark = c->b->len - 1; }

static void put_source(dexa__buf *b, const dexa__media *m) {
  if (m->url) {
    dexa__buf_puts(b, "{\"type\":\"url\",\"url\":");
    dexa__buf_json_cstr(b, m->url);
  } else {
    dexa__buf_puts(b, "{\"type\":\"base64\",\"media_type\":");
    dexa__buf_json_cstr(b, m->media_type);
    dexa__buf_puts(b, ",\"data\":");
    dexa__buf_json_cstr(b, m->data);
  }
  dexa__buf_putc(b, '}');
}

/* An attachment as an image or document block: images, PDFs (data or
 * URL) and text files (data). */
static int put_attachment(convo *c, const dexa__media *m) {
  dexa__buf *b = c->b;
  int pdf = !strcmp(m->media_type, "application/pdf");
  int text = !strncmp(m->media_type, "text/", 5) && m->data;
  if (!m->image && !pdf && !text)
    return dexa__body_refuse(b, "anthropic/ takes images, PDF files and text files given as data");
  open_role(c, "user");
  if (text) {
    dexa__buf plain;
    dexa__buf_init(&plain);
    int rc = dexa__media_decode(m, &plain);
    dexa__buf_puts(b, "{\"type\":\"document\",\"source\":{\"type\":\"text\",\"media_type\":\"text/plain\","
                      "\"data\":");
    dexa__buf_json_str(b, plain.data ? plain.data : "", plain.len);
    dexa__buf_putc(b, '}');
    dexa__buf_free(&plain);
    if (rc != DEXA_OK) return rc;
  } else {
    dexa__buf_printf(b, "{\"type\":\"%s\",\"source\":", m->image ? "image" : "document");
    put_source(b, m);
  }
  if (!m->image && m->name) {
    dexa__buf_puts(b, ",\"title\":");
    dexa__buf_json_cstr(b, m->name);
  }
  dexa__buf_putc(b, '}');
  return DEXA_OK;
}

static int put_user(convo *c, const dexa__msg *m) {
  const cJSON *a;
  cJSON_ArrayForEach(a, m->attachments) { /* images first, as Anthropic advises */
    dexa__media md;
    dexa__media_of_attachment(a, &md);
    int rc = put_attachment(c, &md);
    if (rc != DEXA_OK) return rc;
  }
  open_role(c, "user");
  dexa__buf_puts(c->b, "{\"type\":\"text\",\"text\":");
  dexa__buf_json_cstr(c->b, m->text && *m->text ? m->text : "(empty)");
  dexa__buf_putc(c->b, '}');
  mark_block(c);
  return DEXA_OK;
}

static void put_tool_result(convo *c, const dexa__msg *m) {
  dexa__buf *b = c->b;
  dexa__media img[DEXA__MAX_TOOL_IMAGES];
  size_t n = dexa__tool_images(m, img, DEXA__MAX_TOOL_IMAGES);
  open_role(c, "user");
  dexa__buf_puts(b, "{\"type\":\"tool_result\",\"tool_use_id\":");
  dexa__buf_json_cstr(b, m->call_id ? m->call_id : "");
  dexa__buf_puts(b, ",\"content\":");
  if (n) dexa__buf_puts(b, "[{\"type\":\"text\",\"text\":");
  dexa__buf_json_cstr(b, m->output && *m->output ? m->output : "(no output)");
  for (size_t i = 0; i < n; i++) {
    dexa__buf_puts(b, i ? ",{\"type\":\"image\",\"source\":" : "},{\"type\":\"image\",\"source\":");
    put_source(b, &img[i]);
    dexa__buf_putc(b, '}');
  }
  if (n) dexa__buf_putc(b, ']');
  if (m->status && strcmp(m->status, "ok") != 0) dexa__buf_puts(b, ",\"is_error\":true");
  dexa__buf_putc(b, '}');
  mark_block(c);
}

/* The cache_control member, with the TTL when it is not the default. */
static void put_cache_control(dexa__buf *b, const dexa__client_cfg *cfg) {
  dexa__buf_puts(b, ",\"cache_control\":{\"type\":\"ephemeral\"");
  if (cfg->cache_ttl && strcmp(cfg->cache_ttl, "5m") != 0) {
    dexa__buf_puts(b, ",\"ttl\":");
    dexa__buf_json_cstr(b, cfg->cache_ttl);
  }
  dexa__buf_putc(b, '}');
}

/* Inserts text at offset at of b. */
static void buf_insert(dexa__buf *b, size_t at, const dexa__buf *text) {
  if (!text->len || dexa__buf_reserve(b, text->len) != 0) return;
  memmove(b->data + at + text->len, b->data + at, b->len - at);
  memcpy(b->data + at, text->data, text->len);
  b->len += text->len;
  b->data[b->len] = '\0';
}

static int put_compaction(const dexa_model_request *req, dexa__buf *b) {
  dexa__buf text;
  dexa__buf_init(&text);
  int rc = dexa__compaction_text(req, &text);
  dexa__buf_puts(b, "{\"role\":\"user\",\"content\":");
  dexa__buf_json_str(b, text.data ? text.data : "", text.len);
  dexa__buf_puts(b, "}]");
  dexa__buf_free(&text);
  return rc;
}

static int put_messages(const dexa__client_cfg *cfg, const dexa_model_request *req, dexa__buf *b) {
  dexa__buf_puts(b, ",\"messages\":[");
  if (dexa__is_compaction(req)) return put_compaction(req, b);
  convo c = {b, NULL, 0, 0};
  int rc = DEXA_OK;
  size_t count = dexa_model_request_message_count(req);
  for (size_t i = 0; i < count && rc == DEXA_OK; i++) {
    dexa__msg m;
    rc = dexa__msg_at(req, i, &m);
    if (rc != DEXA_OK) break;
    if (strcmp(m.role, "model") == 0) {
      static const char *const thinking[] = {"thinking", "redacted_thinking", NULL};
      int native = dexa__msg_is_native(&m, cfg->name, cfg->provider->prefix);
      c.mark = 0;
      if (!native) put_foreign(&c, &m);
      else if (native == 1 && dexa__item_type_is(&m, thinking)) {
        /* signatures are bound to the model that made them: dropped */
      } else if (!skip_block(m.item, m.item_len)) {
        open_role(&c, "assistant");
        dexa__buf_append(b, m.item, m.item_len); /* verbatim */
      }
    } else if (strcmp(m.role, "tool") == 0) {
      put_tool_result(&c, &m);
    } else {
      rc = put_user(&c, &m);
    }
    dexa__msg_free(&m);
  }
  if (rc != DEXA_OK) return rc; /* a refusal: the body holds its reason */
  /* The last message is stable from here on: the next call reads it from
   * the cache (the breakpoint of incremental caching). */
  if (cfg->prompt_caching && c.mark) {
    dexa__buf cc;
    dexa__buf_init(&cc);
    put_cache_control(&cc, cfg);
    buf_insert(b, c.mark, &cc);
    if (cc.oom) b->oom = 1;
    dexa__buf_free(&cc);
  }
  if (c.role) dexa__buf_puts(b, "]}");
  dexa__buf_putc(b, ']');
  return DEXA_OK;
}

static int put_tools(const dexa__client_cfg *cfg, const dexa_model_request *req, dexa__buf *b) {
  static const dexa__tool_shape shape = {"{\"name\":", ",\"input_schema\":", "}"};
  dexa__buf last;
  dexa__buf_init(&last);
  if (cfg->prompt_caching) put_cache_control(&last, cfg);
  dexa__tool_opts opts = {cfg->strict_tools ? ",\"strict\":true" : NULL, NULL,
                          last.len ? dexa__buf_cstr(&last) : NULL};
  int count;
  int rc = last.oom ? DEXA_E_NOMEM : dexa__put_tools_with(req, &shape, &opts, b, &count);
  dexa__buf_free(&last);
  if (rc != DEXA_OK || count == 0) return rc;
  /* Forced choice ("any") is refused with thinking when the client is made. */
  const char *choice = cfg->tool_choice && !strcmp(cfg->tool_choice, "required") ? "any"
                       : cfg->tool_choice && !strcmp(cfg->tool_choice, "none") ? "none"
                                                                               : "auto";
  dexa__buf_printf(b, ",\"tool_choice\":{\"type\":\"%s\"", choice);
  if (!cfg->parallel_tool_calls && strcmp(choice, "none") != 0)
    dexa__buf_puts(b, ",\"disable_parallel_tool_use\":true");
  dexa__buf_putc(b, '}');
  return DEXA_OK;
}

/* The system text, as one cached block when prompt caching is on. */
static int put_system(const dexa__client_cfg *cfg, const dexa_model_request *req, dexa__buf *b) {
  dexa__buf sys;
  dexa__buf_init(&sys);
  int rc = dexa__system_text(req, &sys);
  if (rc == DEXA_OK && sys.len) {
    if (cfg->prompt_caching) {
      dexa__buf_puts(b, ",\"system\":[{\"type\":\"text\",\"text\":");
      dexa__buf_json_str(b, sys.data, sys.len);
      put_cache_control(b, cfg);
      dexa__buf_puts(b, "}]");
    } else {
      dexa__buf_puts(b, ",\"system\":");
      dexa__buf_json_str(b, sys.data, sys.len);
    }
  }
  dexa__buf_free(&sys);
  return rc;
}

/* Sampling, stop sequences, thinking and structured output. */
static void put_settings(const dexa__client_cfg *cfg, const dexa_model_request *req, dexa__buf *b,
                         int compaction) {
  if (cfg->thinking_budget_tokens > 0)
    dexa__buf_printf(b, ",\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":%lld}",
                     (long long)cfg->thinking_budget_tokens);
  if (cfg->has_temperature) dexa__put_number(b, "temperature", cfg->temperature);
  if (cfg->has_top_p) dexa__put_number(b, "top_p", cfg->top_p);
  for (size_t i = 0; i < cfg->stop_count; i++) {
    dexa__buf_puts(b, i ? "," : ",\"stop_sequences\":[");
    dexa__buf_json_cstr(b, cfg->stop[i]);
  }
  if (cfg->stop_count) dexa__buf_putc(b, ']');
  cJSON *o = compaction ? NULL : dexa__request_output_schema(req);
  if (o) {
    char *schema = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(o, "schema"));
    dexa__buf_puts(b, ",\"output_config\":{\"format\":{\"type\":\"json_schema\",\"schema\":");
    dexa__buf_puts(b, schema ? schema : "{}");
    dexa__buf_puts(b, "}}");
    if (!schema) b->oom = 1;
    cJSON_free(schema);
    cJSON_Delete(o);
  }
}

static int build_body(const dexa__client_cfg *cfg, const dexa_model_request *req, dexa__buf *b) {
  int64_t max_tokens = cfg->max_output_tokens > 0 ? cfg->max_output_tokens : 8192;
  if (cfg->thinking_budget_tokens > 0 && max_tokens <= cfg->thinking_budget_tokens)
    max_tokens = cfg->thinking_budget_tokens + 4096; /* the budget counts inside max_tokens */
  dexa__buf_puts(b, "{\"model\":");
  dexa__buf_json_cstr(b, cfg->model);
  dexa__buf_printf(b, ",\"max_tokens\":%lld", (long long)max_tokens);
  int compaction = dexa__is_compaction(req);
  int rc = put_system(cfg, req, b);
  if (rc == DEXA_OK) rc = put_messages(cfg, req, b);
  if (rc == DEXA_OK && !compaction) rc = put_tools(cfg, req, b);
  if (rc != DEXA_OK) return rc;
  put_settings(cfg, req, b, compaction);
  dexa__buf_puts(b, ",\"stream\":true}");
  return b->oom ? DEXA_E_NOMEM : DEXA_OK;
}

static int url(dexa__call *call, const char *base) {
  dexa__buf_puts(&call->url, base);
  dexa__buf_puts(&call->url, "/messages");
  return DEXA_OK;
}

static int auth(dexa__call *call) {
  const dexa__client_cfg *cfg = call->cfg;
  int rc = dexa__call_header(call, "anthropic-version",
                             cfg->anthropic_version ? cfg->anthropic_version : DEXA__ANTHROPIC_VERSION);
  return rc == DEXA_OK ? dexa__auth_key_header(call, "x-api-key", "") : rc;
}

/* ---- stream -------------------------------------------------------------- */

typedef struct block {
  cJSON *start;     /* content_block_start's content_block; NULL: no block */
  dexa__buf text;   /* text_delta / thinking_delta */
  dexa__buf json;   /* input_json_delta */
  dexa__buf sig;    /* signature_delta */
  int stopped;
} block;

typedef struct an_state {
  dexa__decoder *d;
  block *blocks;
  size_t nblocks;
  int64_t input_tokens, output_tokens, cache_read, cache_write;
  int has_usage;
  char stop_reason[40];
} an_state;

static void an_init(void *state, dexa__decoder *d) { ((an_state *)state)->d = d; }

static void an_free(void *state) {
  an_state *s = state;
  for (size_t i = 0; i < s->nblocks; i++) {
    cJSON_Delete(s->blocks[i].start);
    dexa__buf_free(&s->blocks[i].text);
    dexa__buf_free(&s->blocks[i].json);
    dexa__buf_free(&s->blocks[i].sig);
  }
  free(s->blocks);
}

static block *block_at(an_state *s, const cJSON *ev, int create) {
  int64_t idx;
  if (!dexa__jcount(ev, "index", &idx) || idx >= DEXA__MODEL_MAX_PARTS) {
    dexa__decoder_fail(s->d, DEXA_E_TRANSIENT, "a content block event without a valid index");
    return NULL;
  }
  size_t i = (size_t)idx;
  if (i >= s->nblocks) {
    if (!create) {
      dexa__decoder_fail(s->d, DEXA_E_TRANSIENT, "a delta for content block %zu that never started", i);
      return NULL;
    }
    block *p = realloc(s->blocks, (i + 1) * sizeof *p);
    if (!p) {
      dexa__decoder_fail(s->d, DEXA_E_NOMEM, "out of memory");
      return NULL;
    }
    for (size_t k = s->nblocks; k <= i; k++) {
      memset(&p[k], 0, sizeof p[k]);
      dexa__buf_init(&p[k].text);
      dexa__buf_init(&p[k].json);
      dexa__buf_init(&p[k].sig);
    }
    s->blocks = p;
    s->nblocks = i + 1;
  }
  block *b = &s->blocks[i];
  if (create && b->start) {
    dexa__decoder_fail(s->d, DEXA_E_TRANSIENT, "content block %zu started twice", i);
    return NULL;
  }
  if (!create && (!b->start || b->stopped)) {
    dexa__decoder_fail(s->d, DEXA_E_TRANSIENT, "an event for content block %zu that is not open", i);
    return NULL;
  }
  return b;
}

static int on_delta(an_state *s, const cJSON *ev) {
  block *b = block_at(s, ev, 0);
  if (!b) return s->d->rc;
  const cJSON *delta = cJSON_GetObjectItemCaseSensitive(ev, "delta");
  const char *type = dexa__jstr(delta, "type");
  const char *v;
  if (!type) return DEXA_OK;
  if (!strcmp(type, "text_delta") && (v = dexa__jstr(delta, "text"))) {
    dexa__buf_puts(&b->text, v);
    dexa__decoder_emit(s->d, DEXA_DELTA_TEXT, v, strlen(v));
  } else if (!strcmp(type, "thinking_delta") && (v = dexa__jstr(delta, "thinking"))) {
    dexa__buf_puts(&b->text, v);
    dexa__decoder_emit(s->d, DEXA_DELTA_REASONING, v, strlen(v));
  } else if (!strcmp(type, "signature_delta") && (v = dexa__jstr(delta, "signature"))) {
    dexa__buf_puts(&b->sig, v);
  } else if (!strcmp(type, "input_json_delta") && (v = dexa__jstr(delta, "partial_json"))) {
    dexa__buf_puts(&b->json, v);
  } else if (!strcmp(type, "citations_delta")) {
    const cJSON *cit = cJSON_GetObjectItemCaseSensitive(delta, "citation");
    cJSON *arr = cJSON_GetObjectItemCaseSensitive(b->start, "citations");
    if (!cJSON_IsArray(arr)) {
      cJSON_DeleteItemFromObjectCaseSensitive(b->start, "citations");
      arr = cJSON_AddArrayToObject(b->start, "citations");
    }
    if (cit && arr) cJSON_AddItemToArray(arr, cJSON_Duplicate(cit, 1));
  } /* unknown delta types are ignored */
  if (b->text.oom || b->json.oom || b->sig.oom)
    return dexa__decoder_fail(s->d, DEXA_E_NOMEM, "out of memory");
  return DEXA_OK;
}

/* Appends text to the string member key of o (creating it). */
static int append_member(cJSON *o, const char *key, const dexa__buf *more) {
  if (!more->len) return 0;
  const char *old = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
  dexa__buf v;
  dexa__buf_init(&v);
  if (old) dexa__buf_puts(&v, old);
  dexa__buf_append(&v, more->data, more->len);
  cJSON *s = v.oom ? NULL : cJSON_CreateString(dexa__buf_cstr(&v));
  dexa__buf_free(&v);
  if (!s) return -1;
  if (cJSON_GetObjectItemCaseSensitive(o, key)) cJSON_ReplaceItemInObjectCaseSensitive(o, key, s);
  else cJSON_AddItemToObject(o, key, s);
  return 0;
}

static int on_stop(an_state *s, const cJSON *ev) {
  block *b = block_at(s, ev, 0);
  if (!b) return s->d->rc;
  const char *type = dexa__jstr(b->start, "type");
  int bad = 0;
  if (type && !strcmp(type, "thinking")) bad |= append_member(b->start, "thinking", &b->text);
  else bad |= append_member(b->start, "text", &b->text);
  bad |= append_member(b->start, "signature", &b->sig);
  if (b->json.len) {
    const char *p = b->json.data;
    size_t n = b->json.len;
    dexa__json_trim(&p, &n);
    if (n && (p[0] != '{' || dexa__json_validate(p, n) != 0))
      return dexa__decoder_fail(s->d, DEXA_E_TRANSIENT,
                                "the input of content block %s is not a JSON object",
                                dexa__jstr(b->start, "id") ? dexa__jstr(b->start, "id") : "?");
    if (n) {
      cJSON *raw = cJSON_CreateRaw(dexa__buf_cstr(&b->json));
      if (!raw) bad = 1;
      else if (cJSON_GetObjectItemCaseSensitive(b->start, "input"))
        cJSON_ReplaceItemInObjectCaseSensitive(b->start, "input", raw);
      else cJSON_AddItemToObject(b->start, "input", raw);
    }
  }
  if (bad) return dexa__decoder_fail(s->d, DEXA_E_NOMEM, "out of memory");
  b->stopped = 1;
  return DEXA_OK;
}

/* Usage is cumulative: the newest count of each kind holds. input_tokens
 * excludes the cache reads and writes, which are counted apart. */
static void usage_from(an_state *s, const cJSON *u) {
  int has = dexa__jcount(u, "input_tokens", &s->input_tokens);
  has |= dexa__jcount(u, "cache_creation_input_tokens", &s->cache_write);
  has |= dexa__jcount(u, "cache_read_input_tokens", &s->cache_read);
  has |= dexa__jcount(u, "output_tokens", &s->output_tokens);
  if (has) s->has_usage = 1;
}

static void set_usage(an_state *s) {
  dexa_model_usage u;
  dexa_model_usage_init(&u, sizeof u);
  u.input_tokens = s->input_tokens + s->cache_read + s->cache_write;
  u.cached_input_tokens = s->cache_read;
  u.cache_write_tokens = s->cache_write;
  u.output_tokens = s->output_tokens;
  dexa_model_reply_set_token_usage(s->d->reply, &u);
}

/* end_turn, stop_sequence, pause_turn: stop; tool_use; max_tokens and a
 * full context window: length; refusal. */
static void set_finish(an_state *s) {
  const char *r = s->stop_reason;
  const char *why = !strcmp(r, "max_tokens") || !strcmp(r, "model_context_window_exceeded") ? "length"
                    : !strcmp(r, "refusal")                                                 ? "refusal"
                    : dexa__decoder_call_count(s->d) || !strcmp(r, "tool_use")               ? "tool_calls"
                                                                                            : "stop";
  dexa_model_reply_set_finish_reason(s->d->reply, why, *r ? r : NULL);
}

static int an_event(void *state, const char *event, const char *data, size_t len) {
  an_state *s = state;
  if (s->d->done) return DEXA_OK;
  cJSON *ev = dexa__decoder_parse(s->d, data, len);
  if (!ev) return s->d->rc;
  const char *type = dexa__jstr(ev, "type");
  if (!type) type = event;
  int rc = DEXA_OK;
  if (!strcmp(type, "message_start")) {
    usage_from(s, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ev, "message"),
                                                   "usage"));
  } else if (!strcmp(type, "content_block_start")) {
    const cJSON *cb = cJSON_GetObjectItemCaseSensitive(ev, "content_block");
    block *b = cJSON_IsObject(cb) && dexa__jstr(cb, "type") ? block_at(s, ev, 1) : NULL;
    if (!b && s->d->rc == DEXA_OK)
      dexa__decoder_fail(s->d, DEXA_E_TRANSIENT, "content_block_start without a typed block");
    if (b && !(b->start = cJSON_Duplicate(cb, 1)))
      dexa__decoder_fail(s->d, DEXA_E_NOMEM, "out of memory");
    rc = s->d->rc;
  } else if (!strcmp(type, "content_block_delta")) {
    rc = on_delta(s, ev);
  } else if (!strcmp(type, "content_block_stop")) {
    rc = on_stop(s, ev);
  } else if (!strcmp(type, "message_delta")) {
    const char *stop = dexa__jstr(cJSON_GetObjectItemCaseSensitive(ev, "delta"), "stop_reason");
    if (stop) snprintf(s->stop_reason, sizeof s->stop_reason, "%s", stop);
    usage_from(s, cJSON_GetObjectItemCaseSensitive(ev, "usage"));
  } else if (!strcmp(type, "message_stop")) {
    s->d->done = 1;
  } else if (!strcmp(type, "error")) {
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(ev, "error");
    const char *etype = dexa__jstr(err, "type");
    const char *msg = dexa__jstr(err, "message");
    rc = dexa__decoder_fail(s->d, dexa__retry_error_type_code(etype), "stream error: %.500s (%.60s)",
                            msg ? msg : "no message", etype ? etype : "no type");
  } /* ping and unknown events are ignored */
  cJSON_Delete(ev);
  return rc;
}

static int add_block(an_state *s, block *b) {
  const char *type = dexa__jstr(b->start, "type");
  if (!strcmp(type, "text") && b->text.len == 0 &&
      !(dexa__jstr(b->start, "text") && *dexa__jstr(b->start, "text")))
    return DEXA_OK; /* an empty text block cannot be replayed */
  char *json = cJSON_PrintUnformatted(b->start);
  if (!json) return dexa__decoder_fail(s->d, DEXA_E_NOMEM, "out of memory");
  dexa_model_reply *r = s->d->reply;
  int rc = dexa_model_reply_add_item(r, json, strlen(json));
  cJSON_free(json);
  const char *t = !strcmp(type, "thinking") ? dexa__jstr(b->start, "thinking")
                                             : dexa__jstr(b->start, "text");
  if (rc == DEXA_OK && t && *t) {
    if (!strcmp(type, "text")) rc = dexa_model_reply_add_text(r, t, strlen(t));
    else if (!strcmp(type, "thinking")) rc = dexa_model_reply_add_reasoning(r, t, strlen(t));
  }
  if (rc != DEXA_OK) return dexa__decoder_fail(s->d, rc, "recording a content block");
  if (!strcmp(type, "tool_use")) {
    char *input = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(b->start, "input"));
    rc = dexa__decoder_tool_call(s->d, dexa__jstr(b->start, "id"), dexa__jstr(b->start, "name"),
                                 input, input ? strlen(input) : 0);
    cJSON_free(input);
  }
  return rc;
}

static int an_end(void *state) {
  an_state *s = state;
  if (!s->d->done)
    return dexa__decoder_fail(s->d, DEXA_E_TRANSIENT, "the stream ended before message_stop (truncated)");
  for (size_t i = 0; i < s->nblocks; i++) {
    block *b = &s->blocks[i];
    if (!b->start) continue;
    if (!b->stopped)
      return dexa__decoder_fail(s->d, DEXA_E_TRANSIENT, "content block %zu never stopped", i);
    if (add_block(s, b) != DEXA_OK) break;
  }
  if (s->d->rc == DEXA_OK && s->has_usage) set_usage(s);
  if (s->d->rc == DEXA_OK) set_finish(s);
  if (s->d->rc != DEXA_OK && !strcmp(s->stop_reason, "max_tokens")) {
    s->d->rc = DEXA_E_MODEL;
    snprintf(s->d->err, sizeof s->d->err, "the output was cut at max_tokens inside a tool call");
  }
  return s->d->rc;
}

const dexa__stream_ops dexa__anthropic_stream = {
    "anthropic", sizeof(an_state), an_init, an_event, an_end, an_free, DEXA__FRAMING_SSE,
    "text/event-stream"};

const dexa__provider dexa__anthropic_provider = {
    "anthropic/", "https://api.anthropic.com/v1", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", 1,
    DEXA__OPT_API_KEY | DEXA__OPT_THINKING | DEXA__OPT_ANTHROPIC_VERSION | DEXA__OPT_STOP |
        DEXA__OPT_STRICT_TOOLS | DEXA__OPT_CACHE_TTL | DEXA__OPT_PROMPT_CACHING |
        DEXA__OPT_PARALLEL_TOOLS,
    8, 1, url, build_body, auth, &dexa__anthropic_stream};
