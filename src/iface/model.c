/* Model client handles (reference counted), requests and replies. */
#include "iface/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"
#include "util/json_span.h"

DEXA_EXTERN int dexa_model_vtable_init(dexa_model_vtable *vtable, size_t struct_size) {
  if (!vtable) return DEXA_E_INVALID_ARG;
  if (struct_size < sizeof(dexa_model_vtable)) return DEXA_E_STRUCT_SIZE;
  memset(vtable, 0, struct_size);
  vtable->struct_size = (uint32_t)sizeof(dexa_model_vtable);
  return DEXA_OK;
}

DEXA_EXTERN int dexa_model_new(dexa_model **out, const char *name,
                               const dexa_model_vtable *vtable, void *user_data) {
  if (!out) return DEXA_E_INVALID_ARG;
  *out = NULL;
  if (!name || !*name || !vtable || !vtable->generate) return DEXA_E_INVALID_ARG;
  if (vtable->struct_size < sizeof(dexa_model_vtable)) return DEXA_E_STRUCT_SIZE;
  dexa_model *m = calloc(1, sizeof *m);
  if (!m) return DEXA_E_NOMEM;
  m->name = strdup(name);
  if (!m->name) {
    free(m);
    return DEXA_E_NOMEM;
  }
  atomic_init(&m->refs, 1);
  m->vt = *vtable;
  m->user_data = user_data;
  *out = m;
  return DEXA_OK;
}

dexa_model *dexa__model_ref(dexa_model *m) {
  atomic_fetch_add(&m->refs, 1);
  return m;
}

static void free_fallbacks(dexa_model *m) {
  for (size_t i = 0; i < m->fallback_count; i++) free(m->fallbacks[i]);
  free(m->fallbacks);
  m->fallbacks = NULL;
  m->fallback_count = 0;
}

void dexa__model_unref(dexa_model *m) {
  if (!m || atomic_fetch_sub(&m->refs, 1) != 1) return;
  if (m->vt.destroy) m->vt.destroy(m->user_data);
  free(m->harness);
  free_fallbacks(m);
  free(m->name);
  free(m);
}

DEXA_EXTERN int dexa_model_set_fallbacks(dexa_model *model, const char *const *names,
                                         size_t count) {
  if (!model || (count && !names)) return DEXA_E_INVALID_ARG;
  for (size_t i = 0; i < count; i++) {
    if (!names[i] || !*names[i] || strcmp(names[i], model->name) == 0) return DEXA_E_INVALID_ARG;
    for (size_t j = 0; j < i; j++)
      if (strcmp(names[i], names[j]) == 0) return DEXA_E_INVALID_ARG;
  }
  char **copy = count ? calloc(count, sizeof *copy) : NULL;
  if (count && !copy) return DEXA_E_NOMEM;
  for (size_t i = 0; i < count; i++) {
    if (!(copy[i] = strdup(names[i]))) {
      for (size_t j = 0; j < i; j++) free(copy[j]);
      free(copy);
      return DEXA_E_NOMEM;
    }
  }
  free_fallbacks(model);
  model->fallbacks = copy;
  model->fallback_count = count;
  return DEXA_OK;
}

DEXA_EXTERN void dexa_model_free(dexa_model *model) { dexa__model_unref(model); }

DEXA_EXTERN const char *dexa_model_name(const dexa_model *model) {
  return model ? model->name : NULL;
}

/* ---- request ---- */

void dexa__model_request_init(dexa_model_request *r) {
  memset(r, 0, sizeof *r);
  dexa__buf_init(&r->json);
}

void dexa__model_request_free(dexa_model_request *r) {
  dexa__buf_free(&r->json);
  free(r->messages);
  memset(r, 0, sizeof *r);
}

int dexa__model_request_add_message(dexa_model_request *r, size_t off) {
  if (r->message_count == r->message_cap) {
    size_t cap = r->message_cap ? r->message_cap * 2 : 64;
    dexa__span *p = realloc(r->messages, cap * sizeof *p);
    if (!p) return DEXA_E_NOMEM;
    r->messages = p;
    r->message_cap = cap;
  }
  r->messages[r->message_count].off = off;
  r->messages[r->message_count].len = r->json.len - off;
  r->message_count++;
  return DEXA_OK;
}

DEXA_EXTERN int dexa_model_request_json(const dexa_model_request *request, const char **json,
                                        size_t *len) {
  if (!request || !json || !len) return DEXA_E_INVALID_ARG;
  *json = request->json.data;
  *len = request->json.len;
  return DEXA_OK;
}

DEXA_EXTERN size_t dexa_model_request_message_count(const dexa_model_request *request) {
  return request ? request->message_count : 0;
}

DEXA_EXTERN int dexa_model_request_message_at(const dexa_model_request *request, size_t index,
                                              const char **json, size_t *len) {
  if (!request || !json || !len || index >= request->message_count) return DEXA_E_INVALID_ARG;
  *json = request->json.data + request->messages[index].off;
  *len = request->messages[index].len;
  return DEXA_OK;
}

DEXA_EXTERN int dexa_model_request_emit_delta(const dexa_model_request *request, int kind,
                                              const char *text, size_t len) {
  if (!request || (!text && len) || (kind != DEXA_DELTA_TEXT && kind != DEXA_DELTA_REASONING))
    return DEXA_E_INVALID_ARG;
  if (request->emit && len) request->emit(request->emit_ctx, kind, text, len);
  return DEXA_OK;
}

DEXA_EXTERN int dexa_model_request_cancelled(const dexa_model_request *request) {
  return request && request->cancelled && request->cancelled(request->cancel_ctx) ? 1 : 0;
}

/* ---- reply ---- */

void dexa__model_reply_init(dexa_model_reply *r) {
  memset(r, 0, sizeof *r);
  r->cost_usd = -1;
}

void dexa__model_reply_free(dexa_model_reply *r) {
  for (size_t i = 0; i < r->item_count; i++) {
    free(r->items[i].json);
    dexa__buf_free(&r->items[i].text);
    dexa__buf_free(&r->items[i].reasoning);
    dexa__buf_free(&r->items[i].tool_calls);
  }
  free(r->items);
  free(r->error);
  memset(r, 0, sizeof *r);
  r->cost_usd = -1;
}

DEXA_EXTERN int dexa_model_reply_add_item(dexa_model_reply *reply, const char *item_json,
                                          size_t len) {
  if (!reply || !item_json) return DEXA_E_INVALID_ARG;
  if (dexa__json_validate(item_json, len) != 0) return DEXA_E_INVALID_JSON;
  if (reply->item_count == reply->item_cap) {
    size_t cap = reply->item_cap ? reply->item_cap * 2 : 4;
    dexa__reply_item *p = realloc(reply->items, cap * sizeof *p);
    if (!p) return DEXA_E_NOMEM;
    reply->items = p;
    reply->item_cap = cap;
  }
  dexa__reply_item *it = &reply->items[reply->item_count];
  memset(it, 0, sizeof *it);
  it->json = malloc(len + 1);
  if (!it->json) return DEXA_E_NOMEM;
  memcpy(it->json, item_json, len);
  it->json[len] = '\0';
  it->json_len = len;
  reply->item_count++;
  return DEXA_OK;
}

static dexa__reply_item *last_item(dexa_model_reply *reply) {
  return reply->item_count ? &reply->items[reply->item_count - 1] : NULL;
}

static int append_text(dexa_model_reply *reply, dexa__buf *(*pick)(dexa__reply_item *),
                       const char *text, size_t len) {
  dexa__reply_item *it = last_item(reply);
  if (!it || (!text && len)) return DEXA_E_INVALID_ARG;
  dexa__buf *b = pick(it);
  dexa__buf_append(b, text ? text : "", len);
  return b->oom ? DEXA_E_NOMEM : DEXA_OK;
}

static dexa__buf *pick_text(dexa__reply_item *it) { return &it->text; }
static dexa__buf *pick_reasoning(dexa__reply_item *it) { return &it->reasoning; }

DEXA_EXTERN int dexa_model_reply_add_text(dexa_model_reply *reply, const char *text, size_t len) {
  if (!reply) return DEXA_E_INVALID_ARG;
  return append_text(reply, pick_text, text, len);
}

DEXA_EXTERN int dexa_model_reply_add_reasoning(dexa_model_reply *reply, const char *text,
                                               size_t len) {
  if (!reply) return DEXA_E_INVALID_ARG;
  return append_text(reply, pick_reasoning, text, len);
}

static int valid_object(const char *s, size_t n) {
  const char *p = s;
  size_t l = n;
  dexa__json_trim(&p, &l);
  return l > 0 && p[0] == '{' && dexa__json_validate(s, n) == 0;
}

DEXA_EXTERN int dexa_model_reply_add_tool_call(dexa_model_reply *reply, const char *call_id,
                                               const char *name, const char *arguments_json,
                                               size_t arguments_len) {
  if (!reply || !call_id || !*call_id || !name || !*name) return DEXA_E_INVALID_ARG;
  dexa__reply_item *it = last_item(reply);
  if (!it) return DEXA_E_INVALID_ARG;
  if (!arguments_json) {
    arguments_json = "{}";
    arguments_len = 2;
  }
  if (!valid_object(arguments_json, arguments_len)) return DEXA_E_INVALID_JSON;
  dexa__buf *b = &it->tool_calls;
  if (it->tool_call_count) dexa__buf_putc(b, ',');
  dexa__buf_puts(b, "{\"call_id\":");
  dexa__buf_json_cstr(b, call_id);
  dexa__buf_puts(b, ",\"name\":");
  dexa__buf_json_cstr(b, name);
  dexa__buf_puts(b, ",\"arguments\":");
  dexa__buf_append(b, arguments_json, arguments_len);
  dexa__buf_putc(b, '}');
  if (b->oom) return DEXA_E_NOMEM;
  it->tool_call_count++;
  reply->tool_call_count++;
  return DEXA_OK;
}

DEXA_EXTERN int dexa_model_reply_set_usage(dexa_model_reply *reply, int64_t input_tokens,
                                           int64_t output_tokens) {
  if (!reply || input_tokens < 0 || output_tokens < 0) return DEXA_E_INVALID_ARG;
  reply->input_tokens = input_tokens;
  reply->output_tokens = output_tokens;
  reply->has_usage = 1;
  return DEXA_OK;
}

DEXA_EXTERN int dexa_model_usage_init(dexa_model_usage *usage, size_t struct_size) {
  if (!usage) return DEXA_E_INVALID_ARG;
  if (struct_size < sizeof(dexa_model_usage)) return DEXA_E_STRUCT_SIZE;
  memset(usage, 0, struct_size);
  usage->struct_size = (uint32_t)sizeof(dexa_model_usage);
  usage->cost_usd = -1;
  return DEXA_OK;
}

DEXA_EXTERN int dexa_model_reply_set_token_usage(dexa_model_reply *reply,
                                                 const dexa_model_usage *u) {
  if (!reply || !u) return DEXA_E_INVALID_ARG;
  if (u->struct_size < sizeof(dexa_model_usage)) return DEXA_E_STRUCT_SIZE;
  if (u->input_tokens < 0 || u->output_tokens < 0 || u->cached_input_tokens < 0 ||
      u->cache_write_tokens < 0 || u->reasoning_tokens < 0 ||
      u->cached_input_tokens + u->cache_write_tokens > u->input_tokens ||
      u->reasoning_tokens > u->output_tokens || !(u->cost_usd == u->cost_usd))
    return DEXA_E_INVALID_ARG;
  reply->input_tokens = u->input_tokens;
  reply->output_tokens = u->output_tokens;
  reply->cached_input_tokens = u->cached_input_tokens;
  reply->cache_write_tokens = u->cache_write_tokens;
  reply->reasoning_tokens = u->reasoning_tokens;
  reply->cost_usd = u->cost_usd < 0 ? -1 : u->cost_usd;
  reply->has_usage = 1;
  return DEXA_OK;
}

static const char *const finish_reasons[] = {"stop",    "tool_calls", "length", "content_filter",
                                             "refusal", "other",      NULL};

/* 1 when s is printable ASCII of 1..max bytes (a provider's word, kept as is). */
static int printable_word(const char *s, size_t max) {
  size_t n = strlen(s);
  if (n == 0 || n > max) return 0;
  for (size_t i = 0; i < n; i++)
    if (s[i] < 0x20 || s[i] > 0x7e || s[i] == '"' || s[i] == '\\') return 0;
  return 1;
}

DEXA_EXTERN int dexa_model_reply_set_finish_reason(dexa_model_reply *reply, const char *reason,
                                                   const char *provider_reason) {
  if (!reply || !reason) return DEXA_E_INVALID_ARG;
  int known = 0;
  for (size_t i = 0; finish_reasons[i]; i++) known |= strcmp(reason, finish_reasons[i]) == 0;
  if (!known) return DEXA_E_INVALID_ARG;
  if (provider_reason && !printable_word(provider_reason, sizeof reply->provider_finish_reason - 1))
    return DEXA_E_INVALID_ARG;
  snprintf(reply->finish_reason, sizeof reply->finish_reason, "%s", reason);
  snprintf(reply->provider_finish_reason, sizeof reply->provider_finish_reason, "%s",
           provider_reason ? provider_reason : "");
  return DEXA_OK;
}

DEXA_EXTERN int dexa_model_reply_set_error(dexa_model_reply *reply, const char *message,
                                           int64_t retry_after_ms) {
  if (!reply || retry_after_ms < 0) return DEXA_E_INVALID_ARG;
  free(reply->error);
  reply->error = message ? strdup(message) : NULL;
  reply->retry_after_ms = retry_after_ms;
  return (message && !reply->error) ? DEXA_E_NOMEM : DEXA_OK;
}
