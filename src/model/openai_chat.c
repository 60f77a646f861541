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

static int put_messages(const dexa__client_cfg *cfg, const dexa_model_request *req, dexa__buf *b) {
  dexa__buf_puts(b, ",\"messages\":[");
  int first = 1;
  dexa__buf sys;
  dexa__buf_init(&sys);
  int rc = dexa__system_text(req, &sys);
  if (rc == DEXA_OK && sys.len) {
    dexa__buf_puts(b, "{\"role\":\"system\",\"content\":");
    dexa__buf_json_str(b, sys.data, sys.len);
    dexa__buf_putc(b, '}');
    first = 0;
  }
  dexa__buf_free(&sys);
  if (rc != DEXA_OK) return rc;
  if (dexa__is_compaction(req)) {
    dexa__buf text;
    dexa__buf_init(&text);
    rc = dexa__compaction_text(req, &text);
    if (!first) dexa__buf_putc(b, ',');
    dexa__buf_puts(b, "{\"role\":\"user\",\"content\":");
    dexa__buf_json_str(b, text.data ? text.data : "", text.len);
    dexa__buf_puts(b, "}]");
    dexa__buf_free(&text);
    return rc;
  }
  pending p;
  memset(&p, 0, sizeof p);
  dexa__buf_init(&p.text);
  dexa__buf_init(&p.calls);
  size_t count = dexa_model_request_message_count(req);
  for (size_t i = 0; i < count && rc == DEXA_OK; i++) {
    dexa__msg m;
    rc = dexa__msg_at(req, i, &m);
    if (rc != DEXA_OK) break;
    int model = strcmp(m.role, "model") == 0;
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
    } else if (strcmp(m.role, "tool") == 0) {
      dexa__buf_puts(b, "{\"role\":\"tool\",\"tool_call_id\":");
      dexa__buf_json_cstr(b, m.call_id ? m.call_id : "");
      dexa__buf_puts(b, ",\"content\":");
      dexa__buf_json_cstr(b, m.output ? m.output : "");
      dexa__buf_putc(b, '}');
    } else {
      dexa__buf_puts(b, "{\"role\":\"user\",\"content\":");
      dexa__buf_json_cstr(b, m.text ? m.text : "");
      dexa__buf_putc(b, '}');
    }
    dexa__msg_free(&m);
  }
  flush(b, &p, &first);
  int oom = p.text.oom || p.calls.oom;
  dexa__buf_free(&p.text);
  dexa__buf_free(&p.calls);
  dexa__buf_putc(b, ']');
  return rc != DEXA_OK ? rc : oom ? DEXA_E_NOMEM : DEXA_OK;
}

static int put_tools(const dexa__client_cfg *cfg, const dexa_model_request *req, dexa__buf *b) {
  static const dexa__tool_shape shape = {"{\"type\":\"function\",\"function\":{\"name\":",
                                         ",\"parameters\":", "}}"};
  int count;
  int rc = dexa__put_tools(req, &shape, b, &count);
  if (rc != DEXA_OK || count == 0) return rc;
  if (cfg->tool_choice) {
    dexa__buf_puts(b, ",\"tool_choice\":");
    dexa__buf_json_cstr(b, cfg->tool_choice);
  }
  if (!cfg->parallel_tool_calls) dexa__buf_puts(b, ",\"parallel_tool_calls\":false");
  return DEXA_OK;
}

static int build_body(const dexa__client_cfg *cfg, const dexa_model_request *req, dexa__buf *b) {
  dexa__buf_puts(b, "{\"model\":");
  dexa__buf_json_cstr(b, cfg->model);
  int rc = put_messages(cfg, req, b);
  if (rc == DEXA_OK && !dexa__is_compaction(req)) rc = put_tools(cfg, req, b);
  if (rc != DEXA_OK) return rc;
  dexa__buf_puts(b, ",\"stream\":true,\"stream_options\":{\"include_usage\":true}");
  if (cfg->max_output_tokens > 0)
    dexa__buf_printf(b, ",\"max_completion_tokens\":%lld", (long long)cfg->max_output_tokens);
  if (cfg->reasoning_effort) {
    dexa__buf_puts(b, ",\"reasoning_effort\":");
    dexa__buf_json_cstr(b, cfg->reasoning_effort);
  }
  dexa__buf_putc(b, '}');
  return b->oom ? DEXA_E_NOMEM : DEXA_OK;
}

static int auth_headers(const dexa__client_cfg *cfg, const char *key, char **out, size_t *n) {
  *n = 0;
  if (!key || !*key) return DEXA_OK; /* local servers need none */
  dexa__buf h;
  dexa__buf_init(&h);
  dexa__buf_printf(&h, "Authorization: Bearer %s", key);
  out[(*n)++] = dexa__buf_steal(&h, NULL);
  return out[0] ? DEXA_OK : DEXA_E_NOMEM;
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
  const cJSON *usage = cJSON_GetObjectItemCaseSensitive(ev, "usage");
  int64_t in, out;
  if (dexa__jcount(usage, "prompt_tokens", &in) && dexa__jcount(usage, "completion_tokens", &out))
    dexa_model_reply_set_usage(s->d->reply, in, out);
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
  return s->d->rc;
}

const dexa__stream_ops dexa__openai_chat_stream = {"openai-chat", sizeof(cc_state), cc_init,
                                                   cc_event,      cc_end,           cc_free};

const dexa__provider dexa__openai_chat_provider = {
    "openai-chat/", "/chat/completions", "https://api.openai.com/v1", "OPENAI_BASE_URL",
    "OPENAI_API_KEY", 0, auth_headers, build_body, &dexa__openai_chat_stream};
