/* "anthropic/<model>": the Anthropic Messages API (POST {base}/messages,
 * anthropic-version pinned). Each content block of a reply is stored as its
 * own item (thinking blocks with their signature, redacted_thinking as
 * received); on replay the consecutive model items form one assistant
 * message, unchanged, and tool results open the next user message. */
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

static int put_messages(const dexa__client_cfg *cfg, const dexa_model_request *req, dexa__buf *b) {
  dexa__buf_puts(b, ",\"messages\":[");
  if (dexa__is_compaction(req)) {
    dexa__buf text;
    dexa__buf_init(&text);
    int rc = dexa__compaction_text(req, &text);
    dexa__buf_puts(b, "{\"role\":\"user\",\"content\":");
    dexa__buf_json_str(b, text.data ? text.data : "", text.len);
    dexa__buf_puts(b, "}]");
    dexa__buf_free(&text);
    return rc;
  }
  convo c = {b, NULL, 0};
  int rc = DEXA_OK;
  size_t count = dexa_model_request_message_count(req);
  for (size_t i = 0; i < count && rc == DEXA_OK; i++) {
    dexa__msg m;
    rc = dexa__msg_at(req, i, &m);
    if (rc != DEXA_OK) break;
    if (strcmp(m.role, "model") == 0) {
      static const char *const thinking[] = {"thinking", "redacted_thinking", NULL};
      int native = dexa__msg_is_native(&m, cfg->name, cfg->provider->prefix);
      if (!native) put_foreign(&c, &m);
      else if (native == 1 && dexa__item_type_is(&m, thinking)) {
        /* signatures are bound to the model that made them: dropped */
      } else if (!skip_block(m.item, m.item_len)) {
        open_role(&c, "assistant");
        dexa__buf_append(b, m.item, m.item_len); /* verbatim */
      }
    } else if (strcmp(m.role, "tool") == 0) {
      open_role(&c, "user");
      dexa__buf_puts(b, "{\"type\":\"tool_result\",\"tool_use_id\":");
      dexa__buf_json_cstr(b, m.call_id ? m.call_id : "");
      dexa__buf_puts(b, ",\"content\":");
      dexa__buf_json_cstr(b, m.output && *m.output ? m.output : "(no output)");
      if (m.status && strcmp(m.status, "ok") != 0) dexa__buf_puts(b, ",\"is_error\":true");
      dexa__buf_putc(b, '}');
    } else {
      open_role(&c, "user");
      dexa__buf_puts(b, "{\"type\":\"text\",\"text\":");
      dexa__buf_json_cstr(b, m.text && *m.text ? m.text : "(empty)");
      dexa__buf_putc(b, '}');
    }
    dexa__msg_free(&m);
  }
  if (c.role) dexa__buf_puts(b, "]}");
  dexa__buf_putc(b, ']');
  return rc;
}

static int put_tools(const dexa__client_cfg *cfg, const dexa_model_request *req, dexa__buf *b) {
  static const dexa__tool_shape shape = {"{\"name\":", ",\"input_schema\":", "}"};
  int count;
  int rc = dexa__put_tools(req, &shape, b, &count);
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

static int build_body(const dexa__client_cfg *cfg, const dexa_model_request *req, dexa__buf *b) {
  int64_t max_tokens = cfg->max_output_tokens > 0 ? cfg->max_output_tokens : 8192;
  if (cfg->thinking_budget_tokens > 0 && max_tokens <= cfg->thinking_budget_tokens)
    max_tokens = cfg->thinking_budget_tokens + 4096; /* the budget counts inside max_tokens */
  dexa__buf_puts(b, "{\"model\":");
  dexa__buf_json_cstr(b, cfg->model);
  dexa__buf_printf(b, ",\"max_tokens\":%lld", (long long)max_tokens);
  dexa__buf sys;
  dexa__buf_init(&sys);
  int rc = dexa__system_text(req, &sys);
  if (rc == DEXA_OK && sys.len) {
    dexa__buf_puts(b, ",\"system\":");
    dexa__buf_json_str(b, sys.data, sys.len);
  }
  dexa__buf_free(&sys);
  if (rc == DEXA_OK) rc = put_messages(cfg, req, b);
  if (rc == DEXA_OK && !dexa__is_compaction(req)) rc = put_tools(cfg, req, b);
  if (rc != DEXA_OK) return rc;
  if (cfg->thinking_budget_tokens > 0)
    dexa__buf_printf(b, ",\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":%lld}",
                     (long long)cfg->thinking_budget_tokens);
  dexa__buf_puts(b, ",\"stream\":true}");
  return b->oom ? DEXA_E_NOMEM : DEXA_OK;
}

static int auth_headers(const dexa__client_cfg *cfg, const char *key, char **out, size_t *n) {
  *n = 0;
  dexa__buf h;
  dexa__buf_init(&h);
  dexa__buf_printf(&h, "anthropic-version: %s",
                   cfg->anthropic_version ? cfg->anthropic_version : DEXA__ANTHROPIC_VERSION);
  out[(*n)++] = dexa__buf_steal(&h, NULL);
  if (key) {
    dexa__buf_printf(&h, "x-api-key: %s", key);
    out[(*n)++] = dexa__buf_steal(&h, NULL);
  }
  for (size_t i = 0; i < *n; i++)
    if (!out[i]) return DEXA_E_NOMEM;
  return DEXA_OK;
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
  int64_t input_tokens, output_tokens;
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

static void usage_from(an_state *s, const cJSON *u) {
  const char *in_keys[] = {"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"};
  int64_t in = 0;
  int has_in = 0;
  for (int i = 0; i < 3; i++) {
    int64_t v;
    if (dexa__jcount(u, in_keys[i], &v)) {
      in += v;
      has_in = 1;
    }
  }
  if (has_in) s->input_tokens = in; /* cumulative: the newest counts */
  int has_out = dexa__jcount(u, "output_tokens", &s->output_tokens);
  if (has_in || has_out) s->has_usage = 1;
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
  if (s->d->rc == DEXA_OK && s->has_usage)
    dexa_model_reply_set_usage(s->d->reply, s->input_tokens, s->output_tokens);
  if (s->d->rc != DEXA_OK && !strcmp(s->stop_reason, "max_tokens")) {
    s->d->rc = DEXA_E_MODEL;
    snprintf(s->d->err, sizeof s->d->err, "the output was cut at max_tokens inside a tool call");
  }
  return s->d->rc;
}

const dexa__stream_ops dexa__anthropic_stream = {"anthropic", sizeof(an_state), an_init,
                                                 an_event,    an_end,           an_free};

const dexa__provider dexa__anthropic_provider = {
    "anthropic/", "/messages", "https://api.anthropic.com/v1", "ANTHROPIC_BASE_URL",
    "ANTHROPIC_API_KEY", 1, auth_headers, build_body, &dexa__anthropic_stream};
