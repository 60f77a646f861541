/* Sampling: a tool runs one model call through the session's model client
 * (an MCP server's sampling/createMessage, after whatever approval its
 * source asks for). The tool gives plain messages; the request is built in
 * the stored-message shape every model client reads, with
 * "purpose":"sampling" (as compaction's has "compaction"), no tools and no
 * session history. The call is recorded as a sampling_finished event. A
 * harness runs frameworks, not single model calls: no sampling there. */
#include <stdio.h>
#include <string.h>

#include "core/tool_call.h"

#define MAX_MESSAGES 64
#define EVENT_TEXT_MAX 4000 /* the event keeps the start of a long reply */

static int build_request(dexa__ctx *c, const dexa__tool_call *t, const dexa_model *model,
                         const cJSON *req, dexa_model_request *out) {
  const cJSON *messages = cJSON_GetObjectItemCaseSensitive(req, "messages");
  const char *system = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "system"));
  int n = cJSON_IsArray(messages) ? cJSON_GetArraySize(messages) : 0;
  if (n < 1 || n > MAX_MESSAGES) return DEXA_E_INVALID_JSON;
  dexa__buf *b = &out->json;
  dexa__buf_puts(b, "{\"model\":");
  dexa__buf_json_cstr(b, dexa_model_name(model));
  dexa__buf_puts(b, ",\"session_id\":");
  dexa__buf_json_cstr(b, c->call->session_id);
  dexa__buf_printf(b, ",\"purpose\":\"sampling\",\"turn\":%lld,\"round\":%lld,\"attempt\":%d,"
                      "\"call_id\":",
                   (long long)t->turn, (long long)t->round, (int)c->call->attempt);
  dexa__buf_json_cstr(b, t->call_id);
  dexa__buf_puts(b, ",\"instructions\":");
  dexa__buf_json_cstr(b, system ? system : "");
  int64_t max_tokens = dexa__json_int(cJSON_GetObjectItemCaseSensitive(req, "max_tokens"), 0);
  if (max_tokens > 0) dexa__buf_printf(b, ",\"max_output_tokens\":%lld", (long long)max_tokens);
  dexa__buf_puts(b, ",\"plan_mode\":false,\"turn_mode\":\"chat\",\"plan\":null,\"summary\":null,"
                    "\"messages\":[");
  int i = 0;
  const cJSON *m;
  cJSON_ArrayForEach(m, messages) {
    const char *role = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "role"));
    const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "text"));
    if (!role || !text || (strcmp(role, "user") && strcmp(role, "assistant"))) return DEXA_E_INVALID_JSON;
    if (i) dexa__buf_putc(b, ',');
    size_t off = b->len;
    /* Stored messages without a provider item: every client reads their text. */
    if (!strcmp(role, "user")) {
      dexa__buf_printf(b, "{\"seq\":%d,\"turn\":%lld,\"role\":\"user\",\"id\":\"sampling-%d\",\"text\":",
                       i + 1, (long long)t->turn, i + 1);
    } else {
      dexa__buf_printf(b, "{\"seq\":%d,\"turn\":%lld,\"round\":%lld,\"role\":\"model\",\"model\":"
                          "\"sampling\",\"text\":",
                       i + 1, (long long)t->turn, (long long)t->round);
    }
    dexa__buf_json_cstr(b, text);
    dexa__buf_printf(b, ",\"at\":%lld}", (long long)c->call->now_ms);
    if (dexa__model_request_add_message(out, off) != DEXA_OK) return DEXA_E_NOMEM;
    i++;
  }
  dexa__buf_puts(b, "],\"tools\":[]}");
  return b->oom ? DEXA_E_NOMEM : DEXA_OK;
}

static void reply_text(const dexa_model_reply *r, dexa__buf *out) {
  for (size_t i = 0; i < r->item_count; i++) {
    if (!r->items[i].text.len) continue;
    if (out->len) dexa__buf_putc(out, '\n');
    dexa__buf_append(out, r->items[i].text.data, r->items[i].text.len);
  }
}

/* sampling_finished: the call, the model, the outcome, the start of the text. */
static int finished_event(dexa__ctx *c, const dexa__tool_call *t, const dexa_model *model,
                          int rc, const dexa_model_reply *reply, const dexa__buf *text) {
  dexa__buf e;
  dexa__event_begin(c, &e, "sampling_finished");
  dexa__buf_printf(&e, ",\"turn\":%lld,\"call_id\":", (long long)t->turn);
  dexa__buf_json_cstr(&e, t->call_id);
  dexa__buf_puts(&e, ",\"name\":");
  dexa__buf_json_cstr(&e, t->name);
  dexa__buf_puts(&e, ",\"model\":");
  dexa__buf_json_cstr(&e, model ? dexa_model_name(model) : NULL);
  dexa__buf_printf(&e, ",\"status\":\"%s\"", rc == DEXA_OK ? "ok" : "error");
  if (rc == DEXA_OK) {
    size_t n = text->len < EVENT_TEXT_MAX ? text->len : EVENT_TEXT_MAX;
    while (n < text->len && n > 0 && ((unsigned char)text->data[n] & 0xC0) == 0x80) n--;
    dexa__buf_puts(&e, ",\"text\":");
    dexa__buf_json_str(&e, text->data ? text->data : "", n);
    if (n < text->len) dexa__buf_puts(&e, ",\"truncated\":true");
  } else {
    dexa__buf_puts(&e, ",\"error\":");
    dexa__buf_json_cstr(&e, reply && reply->error ? reply->error : dexa_strerror(rc));
  }
  if (reply && reply->has_usage)
    dexa__buf_printf(&e, ",\"usage\":{\"input_tokens\":%lld,\"output_tokens\":%lld}",
                     (long long)reply->input_tokens, (long long)reply->output_tokens);
  return dexa__event_end(c, &e);
}

static int call_model(dexa__ctx *c, const dexa__tool_call *t, const dexa_model *model,
                      const cJSON *req, dexa__buf *out) {
  dexa_model_request r;
  dexa_model_reply reply;
  dexa__model_request_init(&r);
  dexa__model_reply_init(&reply);
  dexa__buf text;
  dexa__buf_init(&text);
  int rc = build_request(c, t, model, req, &r);
  if (rc == DEXA_OK) {
    rc = model->vt.generate(model->user_data, &r, &reply);
    if (rc == DEXA_OK && reply.oom) rc = DEXA_E_NOMEM;
    if (rc == DEXA_OK) reply_text(&reply, &text);
    int erc = finished_event(c, t, model, rc, &reply, &text);
    if (rc == DEXA_OK) rc = erc;
  }
  if (rc == DEXA_OK) {
    dexa__buf_puts(out, "{\"text\":");
    dexa__buf_json_str(out, text.data ? text.data : "", text.len);
    dexa__buf_puts(out, ",\"model\":");
    dexa__buf_json_cstr(out, dexa_model_name(model));
    dexa__buf_puts(out, ",\"stop_reason\":\"end_turn\"");
    if (reply.has_usage)
      dexa__buf_printf(out, ",\"usage\":{\"input_tokens\":%lld,\"output_tokens\":%lld}",
                       (long long)reply.input_tokens, (long long)reply.output_tokens);
    dexa__buf_putc(out, '}');
    if (out->oom || text.oom) rc = DEXA_E_NOMEM;
  }
  dexa__buf_free(&text);
  dexa__model_reply_free(&reply);
  dexa__model_request_free(&r);
  return rc;
}

int dexa__tool_sample(void *ctx, const char *request, size_t len, dexa__buf *reply) {
  dexa__sampling *s = ctx;
  const dexa_model *model = NULL;
  int rc = dexa__session_model(s->c, &model);
  if (rc == DEXA_E_NOT_FOUND) return DEXA_E_UNSUPPORTED;
  if (rc != DEXA_OK) return rc;
  if (model->harness) return DEXA_E_UNSUPPORTED;
  cJSON *req = cJSON_ParseWithLength(request, len);
  if (!cJSON_IsObject(req)) {
    cJSON_Delete(req);
    return DEXA_E_INVALID_JSON;
  }
  rc = call_model(s->c, s->t, model, req, reply);
  cJSON_Delete(req);
  return rc;
}
