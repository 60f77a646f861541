/* Tool source handles, tool lists, invocations and outputs. */
#include "iface/tool_source.h"

#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"
#include "flow/call.h"
#include "util/json_span.h"

DEXA_EXTERN int dexa_tool_source_vtable_init(dexa_tool_source_vtable *vtable, size_t struct_size) {
  if (!vtable) return DEXA_E_INVALID_ARG;
  if (struct_size < sizeof(dexa_tool_source_vtable)) return DEXA_E_STRUCT_SIZE;
  memset(vtable, 0, struct_size);
  vtable->struct_size = (uint32_t)sizeof(dexa_tool_source_vtable);
  return DEXA_OK;
}

DEXA_EXTERN int dexa_tool_source_new(dexa_tool_source **out, const char *name,
                                     const dexa_tool_source_vtable *vtable, void *user_data) {
  if (!out) return DEXA_E_INVALID_ARG;
  *out = NULL;
  if (!name || !*name || !vtable || !vtable->list_tools || !vtable->call_tool)
    return DEXA_E_INVALID_ARG;
  if (vtable->struct_size < sizeof(dexa_tool_source_vtable)) return DEXA_E_STRUCT_SIZE;
  dexa_tool_source *s = calloc(1, sizeof *s);
  if (!s) return DEXA_E_NOMEM;
  s->name = strdup(name);
  if (!s->name) {
    free(s);
    return DEXA_E_NOMEM;
  }
  atomic_init(&s->refs, 1);
  atomic_init(&s->in_use, 0);
  s->vt = *vtable;
  s->user_data = user_data;
  *out = s;
  return DEXA_OK;
}

dexa_tool_source *dexa__tool_source_ref(dexa_tool_source *s) {
  atomic_fetch_add(&s->refs, 1);
  return s;
}

void dexa__tool_source_unref(dexa_tool_source *s) {
  if (!s || atomic_fetch_sub(&s->refs, 1) != 1) return;
  if (s->vt.destroy) s->vt.destroy(s->user_data);
  free(s->name);
  free(s);
}

DEXA_EXTERN void dexa_tool_source_free(dexa_tool_source *source) {
  dexa__tool_source_unref(source);
}

DEXA_EXTERN const char *dexa_tool_source_name(const dexa_tool_source *source) {
  return source ? source->name : NULL;
}

DEXA_EXTERN int dexa_tool_source_list_json(char **out, size_t *out_len, dexa_tool_source *source) {
  if (!out) return DEXA_E_INVALID_ARG;
  *out = NULL;
  if (out_len) *out_len = 0;
  if (!source) return DEXA_E_INVALID_ARG;
  dexa_tool_list list;
  dexa__tool_list_init(&list);
  int rc = source->vt.list_tools(source->user_data, &list);
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_putc(&b, '[');
  for (size_t i = 0; rc == DEXA_OK && i < list.count; i++) {
    const dexa__tool_def *d = &list.defs[i];
    dexa__buf_puts(&b, i ? ",{\"name\":" : "{\"name\":");
    dexa__buf_json_cstr(&b, d->name);
    dexa__buf_puts(&b, ",\"description\":");
    dexa__buf_json_cstr(&b, d->description);
    dexa__buf_puts(&b, ",\"parameters\":");
    dexa__buf_puts(&b, d->parameters);
    dexa__buf_puts(&b, ",\"effect\":");
    dexa__buf_json_cstr(&b, dexa__tool_effect_name(d->effect));
    dexa__buf_printf(&b, ",\"approval\":%s}", d->approval == DEXA_APPROVAL_REQUIRED ? "true" : "false");
  }
  dexa__buf_putc(&b, ']');
  dexa__tool_list_free(&list);
  if (rc == DEXA_OK) {
    *out = dexa__buf_steal(&b, out_len);
    if (!*out) rc = DEXA_E_NOMEM;
  }
  dexa__buf_free(&b);
  return rc;
}

/* ---- list ---- */

void dexa__tool_list_init(dexa_tool_list *l) { memset(l, 0, sizeof *l); }

static void def_free(dexa__tool_def *d) {
  free(d->name);
  free(d->description);
  free(d->parameters);
}

void dexa__tool_list_truncate(dexa_tool_list *l, size_t mark) {
  while (l->count > mark) def_free(&l->defs[--l->count]);
}

void dexa__tool_list_free(dexa_tool_list *l) {
  dexa__tool_list_truncate(l, 0);
  free(l->defs);
  memset(l, 0, sizeof *l);
}

const dexa__tool_def *dexa__tool_list_find(const dexa_tool_list *l, const char *name,
                                           size_t name_len) {
  for (size_t i = 0; i < l->count; i++)
    if (strlen(l->defs[i].name) == name_len && memcmp(l->defs[i].name, name, name_len) == 0)
      return &l->defs[i];
  return NULL;
}

/* Tool names as providers accept them: 1..64 of [A-Za-z0-9_.-]. */
static int valid_tool_name(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 64) return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          c == '_' || c == '-' || c == '.'))
      return 0;
  }
  return 1;
}

DEXA_EXTERN int dexa_tool_list_add(dexa_tool_list *list, const char *name, const char *description,
                                   const char *parameters_json, size_t parameters_len,
                                   int effect, int approval) {
  if (!list || !name || !valid_tool_name(name)) return DEXA_E_INVALID_ARG;
  if (effect < DEXA_TOOL_READ || effect > DEXA_TOOL_WRITE) return DEXA_E_INVALID_ARG;
  if (approval != DEXA_APPROVAL_NONE && approval != DEXA_APPROVAL_REQUIRED)
    return DEXA_E_INVALID_ARG;
  if (!parameters_json) {
    parameters_json = "{\"type\":\"object\"}";
    parameters_len = strlen(parameters_json);
  }
  const char *p = parameters_json;
  size_t pl = parameters_len;
  dexa__json_trim(&p, &pl);
  if (pl == 0 || p[0] != '{' || dexa__json_validate(p, pl) != 0) return DEXA_E_INVALID_JSON;
  if (dexa__tool_list_find(list, name, strlen(name))) return DEXA_E_ALREADY_EXISTS;
  if (list->count == list->cap) {
    size_t cap = list->cap ? list->cap * 2 : 16;
    dexa__tool_def *d = realloc(list->defs, cap * sizeof *d);
    if (!d) return DEXA_E_NOMEM;
    list->defs = d;
    list->cap = cap;
  }
  dexa__tool_def *d = &list->defs[list->count];
  d->name = strdup(name);
  d->description = strdup(description ? description : "");
  d->parameters = strndup(p, pl);
  d->effect = effect;
  d->approval = approval;
  d->source = list->current_source;
  d->connector = list->current_connector;
  if (!d->name || !d->description || !d->parameters) {
    def_free(d);
    return DEXA_E_NOMEM;
  }
  list->count++;
  return DEXA_OK;
}

/* ---- invocation ---- */

DEXA_EXTERN const char *dexa_tool_invocation_name(const dexa_tool_invocation *invocation) {
  return invocation ? invocation->name : NULL;
}

DEXA_EXTERN const char *dexa_tool_invocation_call_id(const dexa_tool_invocation *invocation) {
  return invocation ? invocation->call_id : NULL;
}

DEXA_EXTERN const char *dexa_tool_invocation_session_id(const dexa_tool_invocation *invocation) {
  return invocation ? invocation->session_id : NULL;
}

DEXA_EXTERN const char *dexa_tool_invocation_idempotency_key(
    const dexa_tool_invocation *invocation) {
  return invocation ? invocation->idempotency_key : NULL;
}

DEXA_EXTERN int dexa_tool_invocation_arguments(const dexa_tool_invocation *invocation,
                                               const char **json, size_t *len) {
  if (!invocation || !json || !len) return DEXA_E_INVALID_ARG;
  *json = invocation->arguments;
  *len = invocation->arguments_len;
  return DEXA_OK;
}

DEXA_EXTERN int32_t dexa_tool_invocation_attempt(const dexa_tool_invocation *invocation) {
  return invocation ? invocation->attempt : 0;
}

DEXA_EXTERN int dexa_tool_invocation_cancelled(const dexa_tool_invocation *invocation) {
  return invocation ? dexa__call_cancelled(invocation->call) : 0;
}

DEXA_EXTERN int dexa_tool_invocation_answers(const dexa_tool_invocation *invocation,
                                             const char **json, size_t *len) {
  if (!invocation || !json || !len) return DEXA_E_INVALID_ARG;
  *json = invocation->answers && invocation->answers_len ? invocation->answers : "[]";
  *len = invocation->answers && invocation->answers_len ? invocation->answers_len : 2;
  return DEXA_OK;
}

DEXA_EXTERN int dexa_tool_invocation_effect(const dexa_tool_invocation *invocation) {
  return invocation ? invocation->effect : 0;
}

DEXA_EXTERN int dexa_tool_invocation_sample(const dexa_tool_invocation *invocation,
                                            const char *request_json, size_t len,
                                            char **reply_json, size_t *reply_len) {
  if (reply_json) *reply_json = NULL;
  if (reply_len) *reply_len = 0;
  if (!invocation || !request_json || !reply_json) return DEXA_E_INVALID_ARG;
  if (!invocation->sample) return DEXA_E_UNSUPPORTED;
  dexa__buf b;
  dexa__buf_init(&b);
  int rc = invocation->sample(invocation->sample_ctx, request_json, len, &b);
  if (rc == DEXA_OK && b.oom) rc = DEXA_E_NOMEM;
  if (rc == DEXA_OK) {
    size_t n = 0;
    *reply_json = dexa__buf_steal(&b, &n);
    if (!*reply_json) rc = DEXA_E_NOMEM;
    else if (reply_len) *reply_len = n;
  }
  dexa__buf_free(&b);
  return rc;
}

/* ---- output ---- */

void dexa__tool_output_init(dexa_tool_output *o) { memset(o, 0, sizeof *o); }

void dexa__tool_output_free(dexa_tool_output *o) {
  dexa__buf_free(&o->text);
  dexa__buf_free(&o->content);
  dexa__buf_free(&o->question);
}

DEXA_EXTERN int dexa_tool_output_set_text(dexa_tool_output *out, const char *text, size_t len,
                                          int is_error) {
  if (!out || (!text && len)) return DEXA_E_INVALID_ARG;
  dexa__buf_reset(&out->text);
  dexa__buf_append(&out->text, text ? text : "", len);
  out->has_text = 1;
  out->is_error = is_error != 0;
  return out->text.oom ? DEXA_E_NOMEM : DEXA_OK;
}

DEXA_EXTERN int dexa_tool_output_set_content(dexa_tool_output *out, const char *json, size_t len) {
  if (!out || !json) return DEXA_E_INVALID_ARG;
  if (dexa__json_validate(json, len) != 0) return DEXA_E_INVALID_JSON;
  dexa__buf_reset(&out->content);
  dexa__buf_append(&out->content, json, len);
  return out->content.oom ? DEXA_E_NOMEM : DEXA_OK;
}

DEXA_EXTERN int dexa_tool_output_ask(dexa_tool_output *out, const char *question_json, size_t len) {
  if (!out || !question_json) return DEXA_E_INVALID_ARG;
  const char *p = question_json;
  size_t n = len;
  dexa__json_trim(&p, &n);
  if (n == 0 || p[0] != '{' || dexa__json_validate(p, n) != 0) return DEXA_E_INVALID_JSON;
  const char *prompt;
  size_t pl;
  /* The core checks the rest; a question needs at least words to show. */
  if (dexa__json_get(p, n, "prompt", &prompt, &pl) != 0 || pl < 3 || prompt[0] != '"')
    return DEXA_E_INVALID_ARG;
  dexa__buf_reset(&out->question);
  dexa__buf_append(&out->question, p, n);
  out->asks = 1;
  return out->question.oom ? DEXA_E_NOMEM : DEXA_OK;
}

const char *dexa__tool_effect_name(int effect) {
  switch (effect) {
  case DEXA_TOOL_READ: return "read";
  case DEXA_TOOL_IDEMPOTENT_WRITE: return "idempotent_write";
  default: return "write";
  }
}

int dexa__tool_effect_parse(const char *s, size_t n) {
  if (n == 4 && memcmp(s, "read", 4) == 0) return DEXA_TOOL_READ;
  if (n == 16 && memcmp(s, "idempotent_write", 16) == 0) return DEXA_TOOL_IDEMPOTENT_WRITE;
  if (n == 5 && memcmp(s, "write", 5) == 0) return DEXA_TOOL_WRITE;
  return 0;
}
