/* "bedrock/<model id>": Amazon Bedrock's Converse stream API (POST
 * {base}/model/<id>/converse-stream), answered in the AWS event stream
 * framing. Requests are signed with SigV4 from the standard AWS variables
 * (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION)
 * or carry a Bedrock API key (AWS_BEARER_TOKEN_BEDROCK). Each content block
 * of a reply is stored as its own item (reasoning with its signature, or
 * redacted); on replay the consecutive items of this client form one
 * assistant message, unchanged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"
#include "model/provider.h"
#include "model/retry.h"
#include "model/sigv4.h"
#include "model/transcript.h"
#include "util/json_span.h"

/* ---- request ------------------------------------------------------------- */

typedef struct convo {
  dexa__buf *b;
  const char *role;
  int blocks;
  int cache;     /* put a cachePoint after the newest user content */
  size_t docs;   /* documents named so far (names must differ) */
} convo;

static void open_role(convo *c, const char *role) {
  if (c->role && strcmp(c->role, role) == 0) {
    if (c->blocks++) dexa__buf_putc(c->b, ',');
    return;
  }
  if (c->role) dexa__buf_puts(c->b, "]},");
  else if (strcmp(role, "assistant") == 0) /* the first message must be the user's */
    dexa__buf_puts(c->b, "{\"role\":\"user\",\"content\":[{\"text\":\"(conversation continues)\"}]},");
  dexa__buf_printf(c->b, "{\"role\":\"%s\",\"content\":[", role);
  c->role = role;
  c->blocks = 1;
}

/* An empty text block cannot be replayed (the API refuses blank text). */
static int skip_block(const char *item, size_t len) {
  const char *t;
  size_t tl;
  return dexa__json_get(item, len, "text", &t, &tl) == 0 && tl == 2;
}

static void put_foreign(convo *c, const dexa__msg *m) {
  if (m->text && *m->text) {
    open_role(c, "assistant");
    dexa__buf_puts(c->b, "{\"text\":");
    dexa__buf_json_cstr(c->b, m->text);
    dexa__buf_putc(c->b, '}');
  }
  const cJSON *tc;
  cJSON_ArrayForEach(tc, m->tool_calls) {
    char *args = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(tc, "arguments"));
    open_role(c, "assistant");
    dexa__buf_puts(c->b, "{\"toolUse\":{\"toolUseId\":");
    dexa__buf_json_cstr(c->b, dexa__jstr(tc, "call_id"));
    dexa__buf_puts(c->b, ",\"name\":");
    dexa__buf_json_cstr(c->b, dexa__jstr(tc, "name"));
    dexa__buf_puts(c->b, ",\"input\":");
    dexa__buf_puts(c->b, args ? args : "{}");
    dexa__buf_puts(c->b, "}}");
    cJSON_free(args);
  }
}

/* Bedrock's formats of documents, by media type. */
static const char *document_format(const char *media_type) {
  static const char *const map[][2] = {
      {"application/pdf", "pdf"}, {"text/csv", "csv"}, {"text/html", "html"}, {"text/plain", "txt"},
      {"text/markdown", "md"},    {"application/msword", "doc"},
      {"application/vnd.openxmlformats-officedocument.wordprocessingml.document", "docx"},
      {"application/vnd.ms-excel", "xls"},
      {"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "xlsx"}};
  for (size_t i = 0; i < sizeof map / sizeof *map; i++)
    if (!strcmp(media_type, map[i][0])) return map[i][1];
  return NULL;
}

static int put_media(convo *c, const dexa__media *m) {
  dexa__buf *b = c->b;
  if (m->url) return dexa__body_refuse(b, "bedrock/ takes attachments as data, not by URL");
  if (m->image) {
    dexa__buf_printf(b, "{\"image\":{\"format\":\"%s\",\"source\":{\"bytes\":", dexa__media_subtype(m));
    dexa__buf_json_cstr(b, m->data);
    dexa__buf_puts(b, "}}}");
    return DEXA_OK;
  }
  const char *format = document_format(m->media_type);
  if (!format)
    return dexa__body_refuse(b, "bedrock/ takes documents as pdf, csv, doc, docx, xls, xlsx, html, txt or md");
  /* Names allow letters, digits, spaces, hyphens, parentheses and brackets only. */
  dexa__buf_printf(b, "{\"document\":{\"format\":\"%s\",\"name\":\"document %zu\",\"source\":{\"bytes\":",
                   format, ++c->docs);
  dexa__buf_json_cstr(b, m->data);
  dexa__buf_puts(b, "}}}");
  return DEXA_OK;
}

static int put_user(convo *c, const dexa__msg *m) {
  const cJSON *a;
  cJSON_ArrayForEach(a, m->attachments) {
    dexa__media md;
    dexa__media_of_attachment(a, &md);
    open_role(c, "user");
    int rc = put_media(c, &md);
    if (rc != DEXA_OK) return rc;
  }
  open_role(c, "user");
  dexa__buf_puts(c->b, "{\"text\":");
  dexa__buf_json_cstr(c->b, m->text && *m->text ? m->text : "(empty)");
  dexa__buf_putc(c->b, '}');
  return DEXA_OK;
}

static void put_tool_result(convo *c, const dexa__msg *m) {
  dexa__media img[DEXA__MAX_TOOL_IMAGES];
  size_t n = dexa__tool_images(m, img, DEXA__MAX_TOOL_IMAGES);
  open_role(c, "user");
  dexa__buf_puts(c->b, "{\"toolResult\":{\"toolUseId\":");
  dexa__buf_json_cstr(c->b, m->call_id ? m->call_id : "");
  dexa__buf_puts(c->b, ",\"content\":[{\"text\":");
  dexa__buf_json_cstr(c->b, m->output && *m->output ? m->output : "(no output)");
  dexa__buf_putc(c->b, '}');
  for (size_t i = 0; i < n; i++) {
    dexa__buf_putc(c->b, ',');
    put_media(c, &img[i]);
  }
  dexa__buf_putc(c->b, ']');
  if (m->status && strcmp(m->status, "ok") != 0) dexa__buf_puts(c->b, ",\"status\":\"error\"");
  dexa__buf_puts(c->b, "}}");
}

static int put_messages(const dexa__client_cfg *cfg, const dexa_model_request *req, dexa__buf *b) {
  dexa__buf_puts(b, "{\"messages\":[");
  if (dexa__is_compaction(req)) {
    dexa__buf text;
    dexa__buf_init(&text);
    int rc = dexa__compaction_text(req, &text);
    dexa__buf_puts(b, "{\"role\":\"user\",\"content\":[{\"text\":");
    dexa__buf_json_str(b, text.data ? text.data : "", text.len);
    dexa__buf_puts(b, "}]}]");
    dexa__buf_free(&text);
    return rc;
  }
  convo c = {b, NULL, 0, cfg->prompt_caching, 0};
  int rc = DEXA_OK;
  size_t count = dexa_model_request_message_count(req);
  for (size_t i = 0; i < count && rc == DEXA_OK; i++) {
    dexa__msg m;
    rc = dexa__msg_at(req, i, &m);
    if (rc != DEXA_OK) break;
    if (strcmp(m.role, "model") == 0) {
      int native = dexa__msg_is_native(&m, cfg->name, cfg->provider->prefix);
      const char *v;
      size_t vl;
      int is_reasoning = m.item && dexa__json_get(m.item, m.item_len, "reasoningContent", &v, &vl) == 0;
      if (!native) put_foreign(&c, &m);
      else if (native == 1 && is_reasoning) {
        /* reasoning signatures are bound to the model that made them: dropped */
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
  if (rc != DEXA_OK) return rc;
  if (c.cache && c.role && !strcmp(c.role, "user"))
    dexa__buf_puts(b, ",{\"cachePoint\":{\"type\":\"default\"}}");
  if (c.role) dexa__buf_puts(b, "]}");
  dexa__buf_putc(b, ']');
  return DEXA_OK;
}

static int put_tools(const dexa__client_cfg *cfg, const dexa_model_request *req, dexa__buf *b) {
  static const dexa__tool_shape shape = {"{\"toolSpec\":{\"name\":", ",\"inputSchema\":{\"json\":",
                                         "}}}"};
  dexa__buf tools;
  dexa__buf_init(&tools);
  int count;
  int rc = dexa__put_tools(req, &shape, &tools, &count);
  if (rc == DEXA_OK && count) {
    /* ,"tools":[...] goes inside toolConfig */
    dexa__buf_puts(b, ",\"toolConfig\":{\"tools\":");
    dexa__buf_append(b, tools.data + 9, tools.len - 10);
    if (cfg->prompt_caching) dexa__buf_puts(b, ",{\"cachePoint\":{\"type\":\"default\"}}");
    dexa__buf_printf(b, "],\"toolChoice\":{\"%s\":{}}}",
                     cfg->tool_choice && !strcmp(cfg->tool_choice, "required") ? "any" : "auto");
  }
  if (tools.oom) rc = DEXA_E_NOMEM;
  dexa__buf_free(&tools);
  return rc;
}

static void put_settings(const dexa__client_cfg *cfg, dexa__buf *b) {
  int64_t max_tokens = cfg->max_output_tokens;
  if (cfg->thinking_budget_tokens > 0 && max_tokens <= cfg->thinking_budget_tokens)
    max_tokens = cfg->thinking_budget_tokens + 4096; /* the budget counts inside it */
  dexa__buf m; /* the members, each with a leading comma */
  dexa__buf_init(&m);
  if (max_tokens > 0) dexa__buf_printf(&m, ",\"maxTokens\":%lld", (long long)max_tokens);
  if (cfg->has_temperature) dexa__put_number(&m, "temperature", cfg->temperature);
  if (cfg->has_top_p) dexa__put_number(&m, "topP", cfg->top_p);
  for (size_t i = 0; i < cfg->stop_count; i++) {
    dexa__buf_puts(&m, i ? "," : ",\"stopSequences\":[");
    dexa__buf_json_cstr(&m, cfg->stop[i]);
  }
  if (cfg->stop_count) dexa__buf_putc(&m, ']');
  dexa__buf_puts(b, ",\"inferenceConfig\":{");
  if (m.len) dexa__buf_append(b, m.data + 1, m.len - 1);
  dexa__buf_putc(b, '}');
  if (m.oom) b->oom = 1;
  dexa__buf_free(&m);
  if (cfg->thinking_budget_tokens > 0)
    dexa__buf_printf(b, ",\"additionalModelRequestFields\":{\"thinking\":{\"type\":\"enabled\","
                        "\"budget_tokens\":%lld}}",
                     (long long)cfg->thinking_budget_tokens);
}

static int build_body(const dexa__client_cfg *cfg, const dexa_model_request *req, dexa__buf *b) {
  int compaction = dexa__is_compaction(req);
  cJSON *schema = compaction ? NULL : dexa__request_output_schema(req);
  cJSON_Delete(schema);
  if (schema)
    return dexa__body_refuse(b, "bedrock/ has no structured output: remove the session's output_schema");
  int rc = put_messages(cfg, req, b);
  if (rc != DEXA_OK) return rc;
  dexa__buf sys;
  dexa__buf_init(&sys);
  rc = dexa__system_text(req, &sys);
  if (rc == DEXA_OK && sys.len) {
    dexa__buf_puts(b, ",\"system\":[{\"text\":");
    dexa__buf_json_str(b, sys.data, sys.len);
    dexa__buf_puts(b, cfg->prompt_caching ? "},{\"cachePoint\":{\"type\":\"default\"}}]" : "}]");
  }
  dexa__buf_free(&sys);
  if (rc == DEXA_OK && !compaction) rc = put_tools(cfg, req, b);
  if (rc != DEXA_OK) return rc;
  put_settings(cfg, b);
  dexa__buf_putc(b, '}');
  return b->oom ? DEXA_E_NOMEM : DEXA_OK;
}

static const char *region_of(const dexa__client_cfg *cfg) {
  const char *r = cfg->region;
  if (!r) r = secure_getenv("AWS_REGION");
  if (!r || !*r) r = secure_getenv("AWS_DEFAULT_REGION");
  return r && *r ? r : NULL;
}

static int url(dexa__call *call, const char *base) {
  const char *region = region_of(call->cfg);
  if (!base) base = secure_getenv("AWS_ENDPOINT_URL");
  if (!region) {
    snprintf(call->err, sizeof call->err, "no region (set AWS_REGION or the region option)");
    return DEXA_E_AUTH;
  }
  if (base && *base) {
    size_t n = strlen(base);
    while (n && base[n - 1] == '/') n--;
    dexa__buf_append(&call->url, base, n);
  } else {
    dexa__buf_printf(&call->url, "https://bedrock-runtime.%s.amazonaws.com", region);
  }
  dexa__buf_puts(&call->url, "/model/");
  dexa__url_escape(&call->url, call->cfg->model);
  dexa__buf_puts(&call->url, "/converse-stream");
  return DEXA_OK;
}

/* A Bedrock API key (bearer), else SigV4 with the AWS variables. */
static int auth(dexa__call *call) {
  if (dexa__client_key(call->cfg)) return dexa__auth_bearer(call);
  const char *ak = secure_getenv("AWS_ACCESS_KEY_ID"), *sk = secure_getenv("AWS_SECRET_ACCESS_KEY");
  const char *token = secure_getenv("AWS_SESSION_TOKEN");
  if (!ak || !*ak || !sk || !*sk) {
    snprintf(call->err, sizeof call->err,
             "no AWS credentials (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or "
             "AWS_BEARER_TOKEN_BEDROCK)");
    return DEXA_E_AUTH;
  }
  dexa__sigv4 s = {"POST", dexa__buf_cstr(&call->url), call->body.data, call->body.len,
                   region_of(call->cfg), "bedrock", ak, sk, token && *token ? token : NULL, call->now_s};
  char value[512], date[17];
  if (dexa__sigv4_sign(&s, value, sizeof value, date) != 0) {
    snprintf(call->err, sizeof call->err, "could not sign the request");
    return DEXA_E_AUTH;
  }
  int rc = dexa__call_header(call, "X-Amz-Date", date);
  if (rc == DEXA_OK && s.session_token) rc = dexa__call_header(call, "X-Amz-Security-Token", s.session_token);
  if (rc == DEXA_OK) rc = dexa__call_header(call, "Authorization", value);
  return rc;
}

/* ---- stream -------------------------------------------------------------- */

typedef struct block {
  int used;
  int kind;          /* 0 text, 1 toolUse, 2 reasoning */
  char *tool_id, *tool_name;
  dexa__buf text;    /* text, reasoning text, or tool input JSON */
  dexa__buf sig;     /* reasoning signature */
  dexa__buf redacted;
  int stopped;
} block;

typedef struct br_state {
  dexa__decoder *d;
  block *blocks;
  size_t nblocks;
  char stop_reason[48];
  dexa_model_usage usage;
  int has_usage;
} br_state;

static void br_init(void *state, dexa__decoder *d) { ((br_state *)state)->d = d; }

static void br_free(void *state) {
  br_state *s = state;
  for (size_t i = 0; i < s->nblocks; i++) {
    free(s->blocks[i].tool_id);
    free(s->blocks[i].tool_name);
    dexa__buf_free(&s->blocks[i].text);
    dexa__buf_free(&s->blocks[i].sig);
    dexa__buf_free(&s->blocks[i].redacted);
  }
  free(s->blocks);
}

static block *block_at(br_state *s, const cJSON *ev) {
  int64_t idx;
  if (!dexa__jcount(ev, "contentBlockIndex", &idx) || idx >= DEXA__MODEL_MAX_PARTS) {
    dexa__decoder_fail(s->d, DEXA_E_TRANSIENT, "a content block event without a valid index");
    return NULL;
  }
  size_t i = (size_t)idx;
  if (i >= s->nblocks) {
    block *p = realloc(s->blocks, (i + 1) * sizeof *p);
    if (!p) {
      dexa__decoder_fail(s->d, DEXA_E_NOMEM, "out of memory");
      return NULL;
    }
    for (size_t k = s->nblocks; k <= i; k++) {
      memset(&p[k], 0, sizeof p[k]);
      dexa__buf_init(&p[k].text);
      dexa__buf_init(&p[k].sig);
      dexa__buf_init(&p[k].redacted);
    }
    s->blocks = p;
    s->nblocks = i + 1;
  }
  block *b = &s->blocks[i];
  if (b->stopped) {
    dexa__decoder_fail(s->d, DEXA_E_TRANSIENT, "an event for content block %zu after its stop", i);
    return NULL;
  }
  return b;
}

static int on_start(br_state *s, const cJSON *ev) {
  block *b = block_at(s, ev);
  if (!b) return s->d->rc;
  const cJSON *tu = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ev, "start"), "toolUse");
  if (b->used && tu) return dexa__decoder_fail(s->d, DEXA_E_TRANSIENT, "a content block started twice");
  b->used = 1;
  if (tu) {
    const char *id = dexa__jstr(tu, "toolUseId"), *name = dexa__jstr(tu, "name");
    if (!id || !name) return dexa__decoder_fail(s->d, DEXA_E_TRANSIENT, "a toolUse start without id or name");
    b->kind = 1;
    b->tool_id = strdup(id);
    b->tool_name = strdup(name);
    if (!b->tool_id || !b->tool_name) return dexa__decoder_fail(s->d, DEXA_E_NOMEM, "out of memory");
  } else if (cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ev, "start"),
                                              "reasoningContent")) {
    b->kind = 2;
  }
  return DEXA_OK;
}

/* Text and reasoning blocks start with their first delta (no start event). */
static int on_delta(br_state *s, const cJSON *ev) {
  block *b = block_at(s, ev);
  if (!b) return s->d->rc;
  const cJSON *delta = cJSON_GetObjectItemCaseSensitive(ev, "delta");
  const cJSON *rc = cJSON_GetObjectItemCaseSensitive(delta, "reasoningContent");
  const cJSON *tu = cJSON_GetObjectItemCaseSensitive(delta, "toolUse");
  const char *v;
  if (rc) {
    if (b->used && b->kind != 2) return dexa__decoder_fail(s->d, DEXA_E_TRANSIENT, "a reasoning delta in another block");
    b->used = 1;
    b->kind = 2;
    if ((v = dexa__jstr(rc, "text"))) {
      dexa__buf_puts(&b->text, v);
      dexa__decoder_emit(s->d, DEXA_DELTA_REASONING, v, strlen(v));
    }
    if ((v = dexa__jstr(rc, "signature"))) dexa__buf_puts(&b->sig, v);
    if ((v = dexa__jstr(rc, "redactedContent"))) dexa__buf_puts(&b->redacted, v);
  } else if (tu) {
    if (b->kind != 1) return dexa__decoder_fail(s->d, DEXA_E_TRANSIENT, "a toolUse delta without its start");
    if ((v = dexa__jstr(tu, "input"))) dexa__buf_puts(&b->text, v);
  } else if ((v = dexa__jstr(delta, "text"))) {
    if (b->used && b->kind != 0) return dexa__decoder_fail(s->d, DEXA_E_TRANSIENT, "a text delta in another block");
    b->used = 1;
    dexa__buf_puts(&b->text, v);
    dexa__decoder_emit(s->d, DEXA_DELTA_TEXT, v, strlen(v));
  } /* other deltas (citations, images) are ignored */
  if (b->text.oom || b->sig.oom || b->redacted.oom) return dexa__decoder_fail(s->d, DEXA_E_NOMEM, "out of memory");
  return DEXA_OK;
}

/* usage: inputTokens excludes the cache reads and writes. */
static void on_metadata(br_state *s, const cJSON *ev) {
  const cJSON *u = cJSON_GetObjectItemCaseSensitive(ev, "usage");
  dexa_model_usage n;
  dexa_model_usage_init(&n, sizeof n);
  int64_t in = 0;
  if (!dexa__jcount(u, "inputTokens", &in) || !dexa__jcount(u, "outputTokens", &n.output_tokens)) return;
  dexa__jcount(u, "cacheReadInputTokens", &n.cached_input_tokens);
  dexa__jcount(u, "cacheWriteInputTokens", &n.cache_write_tokens);
  n.input_tokens = in + n.cached_input_tokens + n.cache_write_tokens;
  s->usage = n;
  s->has_usage = 1;
}

static int exception(br_state *s, const char *type, const cJSON *ev) {
  const char *msg = dexa__jstr(ev, "message");
  int code = strstr(type, "hrottling")                                                ? DEXA_E_RATE_LIMITED
             : strstr(type, "nternalServer") || strstr(type, "erviceUnavailable") ||
                       strstr(type, "odelStreamError") || strstr(type, "odelNotReady") ? DEXA_E_TRANSIENT
             : strstr(type, "ccessDenied")                                             ? DEXA_E_AUTH
                                                                                       : DEXA_E_MODEL;
  return dexa__decoder_fail(s->d, code, "stream error: %.500s (%.60s)", msg ? msg : "no message", type);
}

static int br_event(void *state, const char *event, const char *data, size_t len) {
  br_state *s = state;
  cJSON *ev = dexa__decoder_parse(s->d, data, len);
  if (!ev) return s->d->rc;
  int rc = DEXA_OK;
  if (!strncmp(event, "exception:", 10)) {
    rc = exception(s, event + 10, ev);
  } else if (s->d->done && strcmp(event, "metadata") != 0) {
    /* nothing but usage counts after messageStop */
  } else if (!strcmp(event, "contentBlockStart")) {
    rc = on_start(s, ev);
  } else if (!strcmp(event, "contentBlockDelta")) {
    rc = on_delta(s, ev);
  } else if (!strcmp(event, "contentBlockStop")) {
    block *b = block_at(s, ev);
    if (b) b->stopped = 1;
    rc = s->d->rc;
  } else if (!strcmp(event, "messageStop")) {
    const char *r = dexa__jstr(ev, "stopReason");
    snprintf(s->stop_reason, sizeof s->stop_reason, "%s", r ? r : "");
    s->d->done = 1;
  } else if (!strcmp(event, "metadata")) {
    on_metadata(s, ev);
  } /* messageStart and unknown events are ignored */
  cJSON_Delete(ev);
  return rc;
}

static int add_block(br_state *s, block *b) {
  dexa__buf item;
  dexa__buf_init(&item);
  dexa_model_reply *r = s->d->reply;
  if (b->kind == 0 && !b->text.len) return DEXA_OK; /* an empty text block cannot be replayed */
  if (b->kind == 0) {
    dexa__buf_puts(&item, "{\"text\":");
    dexa__buf_json_str(&item, b->text.data, b->text.len);
    dexa__buf_putc(&item, '}');
  } else if (b->kind == 1) {
    const char *p = b->text.data ? b->text.data : "";
    size_t n = b->text.len;
    dexa__json_trim(&p, &n);
    if (n && (p[0] != '{' || dexa__json_validate(p, n) != 0))
      return dexa__decoder_fail(s->d, DEXA_E_TRANSIENT, "the input of tool call %.80s is not a JSON object",
                                b->tool_id);
    dexa__buf_puts(&item, "{\"toolUse\":{\"toolUseId\":");
    dexa__buf_json_cstr(&item, b->tool_id);
    dexa__buf_puts(&item, ",\"name\":");
    dexa__buf_json_cstr(&item, b->tool_name);
    dexa__buf_puts(&item, ",\"input\":");
    if (n) dexa__buf_append(&item, p, n);
    else dexa__buf_puts(&item, "{}");
    dexa__buf_puts(&item, "}}");
  } else if (b->redacted.len) {
    dexa__buf_puts(&item, "{\"reasoningContent\":{\"redactedContent\":");
    dexa__buf_json_str(&item, b->redacted.data, b->redacted.len);
    dexa__buf_puts(&item, "}}");
  } else {
    dexa__buf_puts(&item, "{\"reasoningContent\":{\"reasoningText\":{\"text\":");
    dexa__buf_json_str(&item, b->text.data ? b->text.data : "", b->text.len);
    if (b->sig.len) {
      dexa__buf_puts(&item, ",\"signature\":");
      dexa__buf_json_str(&item, b->sig.data, b->sig.len);
    }
    dexa__buf_puts(&item, "}}}");
  }
  int rc = item.oom ? DEXA_E_NOMEM : dexa_model_reply_add_item(r, item.data, item.len);
  dexa__buf_free(&item);
  if (rc == DEXA_OK && b->kind == 0) rc = dexa_model_reply_add_text(r, b->text.data, b->text.len);
  if (rc == DEXA_OK && b->kind == 2 && b->text.len) rc = dexa_model_reply_add_reasoning(r, b->text.data, b->text.len);
  if (rc != DEXA_OK) return dexa__decoder_fail(s->d, rc, "recording a content block");
  if (b->kind == 1)
    return dexa__decoder_tool_call(s->d, b->tool_id, b->tool_name, b->text.data, b->text.len);
  return DEXA_OK;
}

static const char *finish_of(const br_state *s) {
  const char *r = s->stop_reason;
  if (!strcmp(r, "max_tokens") || !strcmp(r, "model_context_window_exceeded")) return "length";
  if (!strcmp(r, "guardrail_intervened") || !strcmp(r, "content_filtered")) return "content_filter";
  if (dexa__decoder_call_count(s->d) || !strcmp(r, "tool_use")) return "tool_calls";
  return "stop";
}

static int br_end(void *state) {
  br_state *s = state;
  if (!s->d->done)
    return dexa__decoder_fail(s->d, DEXA_E_TRANSIENT, "the stream ended before messageStop (truncated)");
  for (size_t i = 0; i < s->nblocks && s->d->rc == DEXA_OK; i++)
    if (s->blocks[i].used) add_block(s, &s->blocks[i]);
  if (s->d->rc != DEXA_OK && !strcmp(s->stop_reason, "max_tokens")) {
    s->d->rc = DEXA_E_MODEL;
    snprintf(s->d->err, sizeof s->d->err, "the output was cut at max_tokens inside a tool call");
  }
  if (s->d->rc != DEXA_OK) return s->d->rc;
  if (!dexa__decoder_item_count(s->d))
    return dexa__decoder_fail(s->d, DEXA_E_TRANSIENT, "the model returned no output (stopReason %s)",
                              s->stop_reason[0] ? s->stop_reason : "none");
  if (s->has_usage) dexa_model_reply_set_token_usage(s->d->reply, &s->usage);
  dexa_model_reply_set_finish_reason(s->d->reply, finish_of(s), s->stop_reason[0] ? s->stop_reason : NULL);
  return DEXA_OK;
}

const dexa__stream_ops dexa__bedrock_stream = {
    "bedrock", sizeof(br_state), br_init, br_event, br_end, br_free,
    DEXA__FRAMING_AWS_EVENTSTREAM, "application/vnd.amazon.eventstream"};

const dexa__provider dexa__bedrock_provider = {
    "bedrock/", NULL, "AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_BEARER_TOKEN_BEDROCK", 0,
    DEXA__OPT_API_KEY | DEXA__OPT_THINKING | DEXA__OPT_STOP | DEXA__OPT_REGION |
        DEXA__OPT_PROMPT_CACHING,
    4, 0, url, build_body, auth, &dexa__bedrock_stream};
