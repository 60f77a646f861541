/* Builds a model request: the retained messages are spliced in as the JSON
 * text they were stored as; no history is parsed or re-printed. */
#include <string.h>

#include "core/model_request.h"
#include "util/json_span.h"

typedef struct splice {
  dexa_model_request *req;
  int rc;
} splice;

int dexa__model_request_splice(dexa_model_request *req, const char *json, size_t len) {
  dexa__buf *b = &req->json;
  if (req->message_count) dexa__buf_putc(b, ',');
  size_t off = b->len;
  dexa__buf_append(b, json, len);
  if (b->oom || dexa__model_request_add_message(req, off) != DEXA_OK) return DEXA_E_NOMEM;
  return DEXA_OK;
}

static int splice_message(void *ctx, const char *key, size_t key_len, const char *value,
                          size_t value_len) {
  splice *s = ctx;
  s->rc = dexa__model_request_splice(s->req, value, value_len);
  return s->rc;
}

int dexa__model_request_tail(dexa_model_request *req, const dexa_tool_list *tools,
                             const char *members, int with_approval) {
  dexa__buf *b = &req->json;
  dexa__buf_putc(b, ']');
  if (members) dexa__buf_puts(b, members);
  dexa__buf_puts(b, ",\"tools\":[");
  for (size_t i = 0; i < tools->count; i++) {
    const dexa__tool_def *d = &tools->defs[i];
    if (i) dexa__buf_putc(b, ',');
    dexa__buf_puts(b, "{\"name\":");
    dexa__buf_json_cstr(b, d->name);
    dexa__buf_puts(b, ",\"description\":");
    dexa__buf_json_cstr(b, d->description);
    dexa__buf_puts(b, ",\"parameters\":");
    dexa__buf_puts(b, d->parameters);
    dexa__buf_puts(b, ",\"effect\":");
    dexa__buf_json_cstr(b, dexa__tool_effect_name(d->effect));
    if (with_approval)
      dexa__buf_puts(b, d->approval == DEXA_APPROVAL_REQUIRED ? ",\"approval\":true"
                                                              : ",\"approval\":false");
    if (with_approval && d->connector) dexa__buf_puts(b, ",\"connector\":true");
    dexa__buf_putc(b, '}');
  }
  dexa__buf_puts(b, "]}");
  return b->oom ? DEXA_E_NOMEM : DEXA_OK;
}

/* Appends ,"name":<attribute JSON or null>. */
static int put_attr(dexa__ctx *c, dexa__buf *b, const char *name, const char *key) {
  const char *v;
  size_t n;
  int rc = dexa__attr_get(c, key, &v, &n);
  dexa__buf_printf(b, ",\"%s\":", name);
  if (rc == DEXA_OK) dexa__buf_append(b, v, n);
  else dexa__buf_puts(b, "null");
  return rc == DEXA_E_NOT_FOUND ? DEXA_OK : rc;
}

/* Appends ,"output_schema":{...} when the session's settings have one. */
static int put_output_schema(dexa__ctx *c, dexa__buf *b) {
  const char *v, *schema;
  size_t n, sn;
  int rc = dexa__attr_get(c, ATTR_SESSION, &v, &n);
  if (rc != DEXA_OK) return rc == DEXA_E_NOT_FOUND ? DEXA_OK : rc;
  if (dexa__json_get(v, n, "output_schema", &schema, &sn) == 0) {
    dexa__buf_puts(b, ",\"output_schema\":");
    dexa__buf_append(b, schema, sn);
  }
  return DEXA_OK;
}

int dexa__model_request_head(dexa__ctx *c, const dexa_model *model, const dexa__turn *turn,
                             int64_t round, dexa_model_request *req) {
  dexa__buf *b = &req->json;
  dexa__buf_reserve(b, 4096);
  dexa__buf_puts(b, "{\"model\":");
  dexa__buf_json_cstr(b, dexa_model_name(model));
  dexa__buf_puts(b, ",\"session_id\":");
  dexa__buf_json_cstr(b, c->call->session_id);
  dexa__buf_printf(b, ",\"turn\":%lld,\"round\":%lld,\"attempt\":%d,\"instructions\":",
                   (long long)turn->turn, (long long)round, (int)c->call->attempt);
  dexa__buf_json_cstr(b, c->agent->instructions);
  dexa__buf_printf(b, ",\"plan_mode\":%s,\"turn_mode\":",
                   strcmp(turn->mode, "planning") == 0 ? "true" : "false");
  dexa__buf_json_cstr(b, turn->mode);
  int rc = put_attr(c, b, "plan", ATTR_PLAN);
  if (rc == DEXA_OK) rc = put_attr(c, b, "summary", ATTR_CONTEXT_SUMMARY);
  if (rc == DEXA_OK) rc = put_output_schema(c, b);
  if (rc != DEXA_OK) return rc;
  dexa__buf_puts(b, ",\"messages\":[");
  return b->oom ? DEXA_E_NOMEM : DEXA_OK;
}

int dexa__model_request_build(dexa__ctx *c, const dexa_model *model, const dexa__turn *turn,
                              int64_t round, const dexa_tool_list *tools, dexa_model_request *req) {
  int rc = dexa__model_request_head(c, model, turn, round, req);
  if (rc != DEXA_OK) return rc;
  splice s = {req, DEXA_OK};
  rc = dexa__attr_scan(c, ATTR_MESSAGES, splice_message, &s);
  if (s.rc != DEXA_OK) return s.rc;
  if (rc != DEXA_OK) return rc;
  return dexa__model_request_tail(req, tools, NULL, 0);
}
