/* "openai-chat/<model>": OpenAI Chat Completions (POST {base}/chat/completions)
 * and every server that speaks it (Ollama, vLLM, llama.cpp server, ...).
 * The assistant message of a reply is stored as one item and replayed
 * verbatim; tool results are "tool" messages paired by tool_call_id. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"
#include "model/provider.h"
#include "model/retry.h"
#include "model/transcript.h"

/* ---- request ------------------------------------------------------------- */

/* Consecutive model messages of another client, merged into one assistant
 * message (Chat Completions wants all the calls of a round in one). */
typedef struct pending {
  dexa__buf text;
  dexa__buf calls;
  int ncalls;
  int open;
} pending;

static void flush(dexa__buf *b, pending *p, int *first) {
  if (!p->open) return;
  if (!*first) dexa__buf_putc(b, ',');
  *first = 0;
  dexa__buf_puts(b, "{\"role\":\"assistant\",\"content\":");
  if (p->text.len) dexa__buf_json_str(b, p->text.data, p->text.len);
  else dexa__buf_puts(b, p->ncalls ? "null" : "\"\"");
  if (p->ncalls) {
    dexa__buf_puts(b, ",\"tool_calls\":[");
    dexa__buf_append(b, p->calls.data, p->calls.len);
    dexa__buf_putc(b, ']');
  }
  dexa__buf_putc(b, '}');
  dexa__buf_reset(&p->text);
  dexa__buf_reset(&p->calls);
  p->ncalls = 0;
  p->open = 0;
}

static void add_foreign(pending *p, const dexa__msg *m) {
  p->open = 1;
  if (m->text && *m->text) dexa__buf_puts(&p->text, m->text);
  const cJSON *c;
  cJSON_ArrayForEach(c, m->tool_calls) {
    if (p->ncalls++) dexa__buf_putc(&p->calls, ',');
    dexa__buf_puts(&p->calls, "{\"id\":");
    dexa__buf_json_cstr(&p->calls,
                        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "call_id")));
    dexa__buf_puts(&p->calls, ",\"type\":\"function\",\"function\":{\"name\":");
    dexa__buf_json_cstr(&p->calls, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "name")));
    dexa__buf_puts(&p->calls, ",\"arguments\":");
    dexa__put_arguments_string(&p->calls, cJSON_GetObjectItemCaseSensitive(c, "arguments"));
    dexa__buf_puts(&p->calls, "}}");
  }
}

/* A user message: plain text, or parts with its attachments. Files go as
 * data (Chat Completions takes no file URL). */
static int put_user(dexa__buf *b, const dexa__msg *m) {
  dexa__buf_puts(b, "{\"role\":\"user\",\"content\":");
  if (!cJSON_GetArraySize(m->attachments)) {
    dexa__buf_json_cstr(b, m->text ? m->text : "");
    dexa__buf_putc(b, '}');
    return DEXA_OK;
  }
  dexa__buf_puts(b, "[{\"type\":\"text\",\"text\":");
  dexa__buf_json_cstr(b, m->text ? m->text : "");
  dexa__buf_putc(b, '}');
  const cJSON *a;
  cJSON_ArrayForEach(a, m->attachments) {
    dexa__media md;
    dexa__media_of_attachment(a, &md);
    if (md.image) {
      dexa__buf_puts(b, ",{\"type\":\"image_url\",\"image_url\":{\"url\":");
      dexa__put_media_url(b, &md);
      dexa__buf_puts(b, "}}");
    } else if (md.url) {
      return dexa__body_refuse(b, "openai-chat/ takes a file attachment as data, not by URL");
    } else {
      dexa__buf_puts(b, ",{\"type\":\"file\",\"file\":{\"filename\":");
      dexa__buf_json_cstr(b, md.name ? md.name : "attachment");
      dexa__buf_puts(b, ",\"file_data\":");
      dexa__put_media_url(b, &md);
      dexa__buf_puts(b, "}}");
    }
  }
  dexa__buf_puts(b, "]}");
  return DEXA_OK;
}

/* Tool messages take text only: the images of a run of tool results follow
 * it in one user message. */
typedef struct tool_images {
  dexa__buf parts;
  size_t count;
} tool_images;

static void collect_images(tool_images *t, const dexa__msg *m) {
  dexa__media img[DEXA__MAX_TOOL_IMAGES];
  size_t n = dexa__tool_images(m, img, DEXA__MAX_TOOL_IMAGES);
  for (size_t i = 0; i < n; i++) {
    if (!t->count++)
      dexa__buf_puts(&t->parts, "{\"type\":\"text\",\"text\":\"Images returned by the tool calls above:\"}");
    dexa__buf_puts(&t->parts, ",{\"type\":\"image_url\",\"image_url\":{\"url\":");
    dexa__put_media_url(&t->parts, &img[i]);
    dexa__buf_puts(&t->parts, "}}");
  }
}

static void flush_images(dexa__buf *b, tool_images *t, int *first) {
  if (!t->count) return;
  if (!*first) dexa__buf_putc(b, ',');
  *first = 0;
  dexa__buf_puts(b, "{\"role\":\"user\",\"content\":[");
  dexa__buf_append(b, t->parts.data, t->parts.len);
  dexa__buf_puts(b, "]}");
  dexa__buf_reset(&t->parts);
  t->count = 0;
}

static int put_system(const dexa_model_request *req, dexa__buf *b, int *first) {
  dexa__buf sys;
  dexa__buf_init(&sys);
  int rc = dexa__system_text(req, &sys);
  if (rc == DEXA_OK && sys.len) {
    dexa__buf_puts(b, "{\"role\":\"system\",\"content\":");
    dexa__buf_json_str(b, sys.data, sys.len);
    dexa__buf_putc(b, '}');
    *first = 0;
  }
  dexa__buf_free(&sys);
  return rc;
}

static int put_compaction(const dexa_model_request *req, dexa__buf *b, int first) {
  dexa__buf text;
  dexa__buf_init(&text);
  int rc = dexa__compaction_text(req, &text);
  if (!first) dexa__buf_putc(b, ',');
  dexa__buf_puts(b, "{\"role\":\"user\",\"content\":");
  dexa__buf_json_str(b, text.data ? text.data : "", text.len);
  dexa__buf_puts(b, "}]");
  dexa__buf_free(&text);
  return rc;
}

static int put_messages(const dexa__client_cfg *cfg, const dexa_model_request *req, dexa__buf *b) {
  dexa__buf_puts(b, ",\"messages\":[");
  int first = 1;
  int rc = put_system(req, b, &first);
  if (rc != DEXA_OK) return rc;
  if (dexa__is_compaction(req)) return put_compaction(req, b, first);
  pending p;
  memset(&p, 0, sizeof p);
  dexa__buf_init(&p.text);
  dexa__buf_init(&p.calls);
  tool_images ti = {{0}, 0};
  dexa__buf_init(&ti.parts);
  size_t count = dexa_model_request_message_count(req);
  for (size_t i = 0; i < count && rc == DEXA_OK; i++) {
    dexa__msg m;
    rc = dexa__msg_at(req, i, &m);
    if (rc != DEXA_OK) break;
    int model = strcmp(m.role, "model") == 0, tool = strcmp(m.role, "tool") == 0;
    if (!tool) flush_images(b, &ti, &first);
    if (model && !dexa__msg_is_native(&m, cfg->name, cfg->provider->prefix)) {
      add_foreign(&p, &m);
      dexa__msg_free(&m);
      continue;
    }
    flush(b, &p, &first);
    if (!first) dexa__buf_putc(b, ',');
    first = 0;
    if (model) {
      dexa__buf_append(b, m.item, m.item_len); /* verbatim */
    } else if (tool) {
      dexa__buf_puts(b, "{\"role\":\"tool\",\"tool_call_id\":");
      dexa__buf_json_cstr(b, m.call_id ? m.call_id : "");
      dexa__buf_puts(b, ",\"content\":");
      dexa__buf_json_cstr(b, m.output ? m.output : "");
      dexa__buf_putc(b, '}');
      collect_images(&ti, &m);
    } else {
      rc = put_user(b, &m);
    }
    dexa__msg_free(&m);
  }
  if (rc == DEXA_OK) { /* after a refusal the body holds only its reason */
    flush(b, &p, &first);
    flush_images(b, &ti, &first);
    dexa__buf_putc(b, ']');
  }
  int oom = p.text.oom || p.calls.oom || ti.parts.oom;
  dexa__buf_free(&p.text);
  dexa__buf_free(&p.calls);
  dexa__buf_free(&ti.parts);
  return rc != DEXA_OK ? rc : oom ? DEXA_E_NOMEM : DEXA_OK;
}

static int put_tools(const dexa__client_cfg *cfg, const dexa_model_request *req, dexa__buf *b) {
  static const dexa__tool_shape shape = {"{\"type\":\"function\",\"function\":{\"name\":",
                                         ",\"parameters\":", "}}"};
  dexa__tool_opts opts = {cfg->strict_tools ? ",\"strict\":true" : NULL, NULL, NULL};
  int count;
  int rc = dexa__put_tools_with(req, &shape, &opts, b, &count);
  if (rc != DEXA_OK || count == 0) return rc;
  if (cfg->tool_choice) {
    dexa__buf_puts(b, ",\"tool_choice\":");
    dexa__buf_json_cstr(b, cfg->tool_choice);
  }
  if (!cfg->parallel_tool_calls) dexa__buf_puts(b, ",\"parallel_tool_calls\":false");
  return DEXA_OK;
}

/* "response_format":{"type":"json_schema",...} for the session's output schema. */
static void put_output_schema(dexa__buf *b, const dexa_model_request *req) {
  cJSON *o = dexa__request_output_schema(req);
  if (!o) return;
  const char *name = dexa__jstr(o, "name");
  char *schema = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(o, "schema"));
  dexa__buf_puts(b, ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":");
  dexa__buf_json_cstr(b, name ? name : "output");
  dexa__buf_puts(b, ",\"schema\":");
  dexa__buf_puts(b, schema ? schema : "{}");
  dexa__buf_printf(b, ",\"strict\":%s}}",
                   cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(o, "strict")) ? "false" : "true");
  if (!schema) b->oom = 1;
  cJSON_free(schema);
  cJSON_Delete(o);
}

static void put_settings(const dexa__client_cfg *cfg, const dexa_model_request *req, dexa__buf *b) {
  dexa__buf_puts(b, ",\"stream\":true,\"stream_options\":{\"include_usage\":true}");
  if (cfg->max_output_tokens > 0)
    dexa__buf_printf(b, ",\"max_completion_tokens\":%lld", (long long)cfg->max_output_tokens);
  if (cfg->reasoning_effort) {
    dexa__buf_puts(b, ",\"reasoning_effort\":");
    dexa__buf_json_cstr(b, cfg->reasoning_effort);
  }
  if (cfg->has_temperature) dexa__put_number(b, "temperature", cfg->temperature);
  if (cfg->has_top_p) dexa__put_number(b, "top_p", cfg->top_p);
  if (cfg->has_seed) dexa__buf_printf(b, ",\"seed\":%lld", (long long)cfg->seed);
  for (size_t i = 0; i < cfg->stop_count; i++) {
    dexa__buf_puts(b, i ? "," : ",\"stop\":[");
    dexa__buf_json_cstr(b, cfg->stop[i]);
  }
  if (cfg->stop_count) dexa__buf_putc(b, ']');
  char sid[256];
  if (cfg->prompt_caching && dexa__request_session(req, sid, sizeof sid)) {
    dexa__buf_puts(b, ",\"prompt_cache_key\":");
    dexa__buf_json_cstr(b, sid);
  }
}

int dexa__openai_chat_body(const dexa__client_cfg *cfg, const dexa_model_request *req,
                           dexa__buf *b) {
  dexa__buf_puts(b, "{\"model\":");
  dexa__buf_json_cstr(b, cfg->model);
  int compaction = dexa__is_compaction(req);
  int rc = put_messages(cfg, req, b);
  if (rc == DEXA_OK && !compaction) rc = put_tools(cfg, req, b);
  if (rc != DEXA_OK) return rc;
  if (!compaction) put_output_schema(b, req);
  put_settings(cfg, req, b);
  dexa__buf_putc(b, '}');
  return b->oom ? DEXA_E_NOMEM : DEXA_OK;
}

static int url(dexa__call *call, const char *base) {
  dexa__buf_puts(&call->url, base);
  dexa__buf_puts(&call->url, "/chat/completions");
  return DEXA_OK;
}

/* ---- stream -------------------------------------------------------------- */

typedef struct call {
  char *id;
  char *name;
  dexa__buf args;
} call;

typedef struct cc_state {
  dexa__decoder *d;
  dexa__buf text;
  dexa__buf reasoning;
  call *calls;
  size_t ncalls;
  char finish[32];
  int got_finish;
} cc_state;

static void cc_init(void *state, dexa__decoder *d) {
  cc_state *s = state;
  s->d = d;
  dexa__buf_init(&s->text);
  dexa__buf_init(&s->reasoning);
}

static void cc_free(void *state) {
  cc_state *s = state;
  dexa__buf_free(&s->text);
  dexa__buf_free(&s->reasoning);
  for (size_t i = 0; i < s->ncalls; i++) {
    free(s->calls[i].id);
    free(s->calls[i].name);
    dexa__buf_free(&s->calls[i].args);
  }
  free(s->calls);
}

static call *call_at(cc_state *s, size_t index) {
  if (index >= DEXA__MODEL_MAX_PARTS) {
    dexa__decoder_fail(s->d, DEXA_E_MODEL, "tool call index %zu over %d", index,
                       DEXA__MODEL_MAX_PARTS);
    return NULL;
  }
  if (index >= s->ncalls) {
    call *p = realloc(s->calls, (index + 1) * sizeof *p);
    if (!p) {
      dexa__decoder_fail(s->d, DEXA_E_NOMEM, "out of memory");
      return NULL;
    }
    for (size_t i = s->ncalls; i <= index; i++) {
      memset(&p[i], 0, sizeof p[i]);
      dexa__buf_init(&p[i].args);
    }
    s->calls = p;
    s->ncalls = index + 1;
  }
  return &s->calls[index];
}

static int set_once(cc_state *s, char **slot, const char *v) {
  if (!v || *slot) return DEXA_OK;
  *slot = strdup(v);
  return *slot ? DEXA_OK : dexa__decoder_fail(s->d, DEXA_E_NOMEM, "out of memory");
}

static int tool_fragments(cc_state *s, const cJSON *frags) {
  const cJSON *f;
  cJSON_ArrayForEach(f, frags) {
    const char *id = dexa__jstr(f, "id");
    size_t index;
    int64_t idx;
    if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(f, "index"))) {
      if (!dexa__jcount(f, "index", &idx) || idx >= DEXA__MODEL_MAX_PARTS)
        return dexa__decoder_fail(s->d, DEXA_E_MODEL, "a tool call index that is out of range");
      index = (size_t)idx;
    }
    else index = (id || !s->ncalls) ? s->ncalls : s->ncalls - 1; /* servers without index */
    call *c = call_at(s, index);
    if (!c) return s->d->rc;
    const cJSON *fn = cJSON_GetObjectItemCaseSensitive(f, "function");
    const char *args = dexa__jstr(fn, "arguments");
    if (set_once(s, &c->id, id) || set_once(s, &c->name, dexa__jstr(fn, "name"))) return s->d->rc;
    if (args) dexa__buf_puts(&c->args, args);
    if (c->args.oom) return dexa__decoder_fail(s->d, DEXA_E_NOMEM, "out of memory");
  }
  return DEXA_OK;
}

/* usage: prompt_tokens (prompt_tokens_details.cached_tokens) and
 * completion_tokens (completion_tokens_details.reasoning_tokens). */
static void set_usage(cc_state *s, const cJSON *u) {
  dexa_model_usage usage;
  dexa_model_usage_init(&usage, sizeof usage);
  if (!dexa__jcount(u, "prompt_tokens", &usage.input_tokens) ||
      !dexa__jcount(u, "completion_tokens", &usage.output_tokens))
    return;
  dexa__jcount(cJSON_GetObjectItemCaseSensitive(u, "prompt_tokens_details"), "cached_tokens",
               &usage.cached_input_tokens);
  dexa__jcount(cJSON_GetObjectItemCaseSensitive(u, "completion_tokens_details"), "reasoning_tokens",
               &usage.reasoning_tokens);
  dexa__usage_clamp(&usage);
  dexa_model_reply_set_token_usage(s->d->reply, &usage);
}

static int chunk(cc_state *s, const cJSON *ev) {
  const cJSON *err = cJSON_GetObjectItemCaseSensitive(ev, "error");
  if (err && !cJSON_IsNull(err)) {
    const char *type = dexa__jstr(err, "code");
    if (!type) type = dexa__jstr(err, "type");
    const char *msg = dexa__jstr(err, "message");
    return dexa__decoder_fail(s->d, dexa__retry_error_type_code(type), "stream error: %.500s",
                              msg ? msg : cJSON_GetStringValue(err) ? cJSON_GetStringValue(err)
                                                                    : "no message");
  }
  set_usage(s, cJSON_GetObjectItemCaseSensitive(ev, "usage"));
  const cJSON *choice = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(ev, "choices"), 0);
  if (!choice) return DEXA_OK;
  const cJSON *ci = cJSON_GetObjectItemCaseSensitive(choice, "index");
  if (cJSON_IsNumber(ci) && ci->valuedouble != 0.0) return DEXA_OK; /* n > 1: only the first */
  const cJSON *delta = cJSON_GetObjectItemCaseSensitive(choice, "delta");
  const char *t = dexa__jstr(delta, "content");
  if (t && *t) {
    dexa__buf_puts(&s->text, t);
    dexa__decoder_emit(s->d, DEXA_DELTA_TEXT, t, strlen(t));
  }
  const char *r = dexa__jstr(delta, "reasoning_content");
  if (!r) r = dexa__jstr(delta, "reasoning");
  if (r && *r) {
    dexa__buf_puts(&s->reasoning, r);
    dexa__decoder_emit(s->d, DEXA_DELTA_REASONING, r, strlen(r));
  }
  const char *refusal = dexa__jstr(delta, "refusal");
  if (refusal) dexa__buf_puts(&s->text, refusal);
  if (s->text.oom || s->reasoning.oom) return dexa__decoder_fail(s->d, DEXA_E_NOMEM, "out of memory");
  int rc = tool_fragments(s, cJSON_GetObjectItemCaseSensitive(delta, "tool_calls"));
  const char *fin = dexa__jstr(choice, "finish_reason");
  if (fin) {
    snprintf(s->finish, sizeof s->finish, "%s", fin);
    s->got_finish = 1;
  }
  return rc;
}

static int cc_event(void *state, const char *event, const char *data, size_t len) {
  cc_state *s = state;
  if (s->d->done) return DEXA_OK;
  if (len == 6 && memcmp(data, "[DONE]", 6) == 0) {
    s->d->done = 1;
    return DEXA_OK;
  }
  cJSON *ev = dexa__decoder_parse(s->d, data, len);
  if (!ev) return s->d->rc;
  int rc = chunk(s, ev);
  cJSON_Delete(ev);
  return rc;
}

/* The assistant message as stored and replayed. */
static void build_item(cc_state *s, dexa__buf *b) {
  dexa__buf_puts(b, "{\"role\":\"assistant\",\"content\":");
  if (s->text.len || !s->ncalls) dexa__buf_json_str(b, s->text.data ? s->text.data : "", s->text.len);
  else dexa__buf_puts(b, "null");
  if (s->ncalls) {
    dexa__buf_puts(b, ",\"tool_calls\":[");
    for (size_t i = 0; i < s->ncalls; i++) {
      call *c = &s->calls[i];
      if (i) dexa__buf_putc(b, ',');
      dexa__buf_puts(b, "{\"id\":");
      dexa__buf_json_cstr(b, c->id);
      dexa__buf_puts(b, ",\"type\":\"function\",\"function\":{\"name\":");
      dexa__buf_json_cstr(b, c->name);
      dexa__buf_puts(b, ",\"arguments\":");
      dexa__buf_json_str(b, c->args.data ? c->args.data : "", c->args.len);
      dexa__buf_puts(b, "}}");
    }
    dexa__buf_putc(b, ']');
  }
  dexa__buf_putc(b, '}');
}

static int cc_end(void *state) {
  cc_state *s = state;
  if (!s->d->done && !s->got_finish)
    return dexa__decoder_fail(s->d, DEXA_E_TRANSIENT,
                              "the stream ended before finish_reason and [DONE] (truncated)");
  for (size_t i = 0; i < s->ncalls; i++) {
    call *c = &s->calls[i];
    if (!c->name) return dexa__decoder_fail(s->d, DEXA_E_TRANSIENT, "tool call %zu has no name", i);
    if (!c->id) { /* some local servers send none: make one, stored in the item */
      char id[48];
      snprintf(id, sizeof id, "call_%zu", i);
      if (set_once(s, &c->id, id) != DEXA_OK) return s->d->rc;
    }
  }
  if (!s->text.len && !s->ncalls)
    return dexa__decoder_fail(s->d, DEXA_E_TRANSIENT, "the model returned no output (finish %s)",
                              s->got_finish ? s->finish : "none");
  dexa__buf item;
  dexa__buf_init(&item);
  build_item(s, &item);
  int rc = item.oom ? DEXA_E_NOMEM : dexa_model_reply_add_item(s->d->reply, item.data, item.len);
  dexa__buf_free(&item);
  if (rc == DEXA_OK && s->text.len) rc = dexa_model_reply_add_text(s->d->reply, s->text.data, s->text.len);
  if (rc == DEXA_OK && s->reasoning.len)
    rc = dexa_model_reply_add_reasoning(s->d->reply, s->reasoning.data, s->reasoning.len);
  if (rc != DEXA_OK) return dexa__decoder_fail(s->d, rc, "recording the reply");
  for (size_t i = 0; i < s->ncalls && rc == DEXA_OK; i++)
    rc = dexa__decoder_tool_call(s->d, s->calls[i].id, s->calls[i].name, s->calls[i].args.data,
                                 s->calls[i].args.len);
  if (rc != DEXA_OK && strcmp(s->finish, "length") == 0) {
    s->d->rc = DEXA_E_MODEL;
    snprintf(s->d->err, sizeof s->d->err, "the output was cut at the token limit inside a tool call");
  }
  if (s->d->rc == DEXA_OK) {
    const char *f = s->finish;
    const char *why = !strcmp(f, "length")           ? "length"
                      : !strcmp(f, "content_filter") ? "content_filter"
                      : s->ncalls                    ? "tool_calls"
                                                     : "stop";
    dexa_model_reply_set_finish_reason(s->d->reply, why, s->got_finish && *f ? f : NULL);
  }
  return s->d->rc;
}

const dexa__stream_ops dexa__openai_chat_stream = {
    "openai-chat", sizeof(cc_state), cc_init, cc_event, cc_end, cc_free, DEXA__FRAMING_SSE,
    "text/event-stream"};

const dexa__provider dexa__openai_chat_provider = {
    "openai-chat/", "https://api.openai.com/v1", "OPENAI_BASE_URL", "OPENAI_API_KEY", 0,
    DEXA__OPT_API_KEY | DEXA__OPT_REASONING_EFFORT | DEXA__OPT_SEED | DEXA__OPT_STOP |
        DEXA__OPT_STRICT_TOOLS | DEXA__OPT_PROMPT_CACHING | DEXA__OPT_PARALLEL_TOOLS,
    4, 0, url, dexa__openai_chat_body, dexa__auth_bearer, &dexa__openai_chat_stream};
