/* Reading a model request for a provider (see transcript.h). */
#include "model/transcript.h"

#include <string.h>

#include "dexagents/errors.h"
#include "model/decoder.h"
#include "util/json_span.h"

int dexa__msg_at(const dexa_model_request *req, size_t i, dexa__msg *m) {
  memset(m, 0, sizeof *m);
  const char *s;
  size_t n;
  if (dexa_model_request_message_at(req, i, &s, &n) != DEXA_OK) return DEXA_E_INVALID_ARG;
  m->doc = cJSON_ParseWithLength(s, n);
  if (!m->doc) return dexa__json_validate(s, n) == 0 ? DEXA_E_NOMEM : DEXA_E_CORRUPT;
  const cJSON *d = m->doc;
  m->role = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "role"));
  if (!cJSON_IsObject(d) || !m->role) {
    dexa__msg_free(m);
    return DEXA_E_CORRUPT;
  }
  m->model = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "model"));
  m->text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "text"));
  m->tool_calls = cJSON_GetObjectItemCaseSensitive(d, "tool_calls");
  m->call_id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "call_id"));
  m->name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "name"));
  m->status = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "status"));
  m->output = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "output"));
  if (!dexa__jcount(d, "round", &m->round)) m->round = 0;
  if (dexa__json_get(s, n, "item", &m->item, &m->item_len) != 0) m->item = NULL;
  return DEXA_OK;
}

void dexa__msg_free(dexa__msg *m) {
  cJSON_Delete(m->doc);
  memset(m, 0, sizeof *m);
}

int dexa__msg_is_native(const dexa__msg *m, const char *client_name, const char *prefix) {
  if (!m->item || !m->model) return 0;
  if (strcmp(m->model, client_name) == 0) return 2;
  return strncmp(m->model, prefix, strlen(prefix)) == 0 ? 1 : 0;
}

int dexa__item_type_is(const dexa__msg *m, const char *const *types) {
  const char *t;
  size_t tl;
  if (!m->item || dexa__json_get(m->item, m->item_len, "type", &t, &tl) != 0 || tl < 2) return 0;
  for (size_t i = 0; types[i]; i++)
    if (strlen(types[i]) == tl - 2 && memcmp(t + 1, types[i], tl - 2) == 0) return 1;
  return 0;
}

/* The value of a top-level member of the request, parsed (NULL if absent). */
static cJSON *head_member(const dexa_model_request *req, const char *key) {
  const char *json, *v;
  size_t len, vl;
  if (dexa_model_request_json(req, &json, &len) != DEXA_OK) return NULL;
  if (dexa__json_get(json, len, key, &v, &vl) != 0) return NULL;
  return cJSON_ParseWithLength(v, vl);
}

static void put_plan(dexa__buf *out, const cJSON *plan) {
  const cJSON *todos = cJSON_GetObjectItemCaseSensitive(plan, "todos");
  int64_t rev = 0;
  dexa__jcount(plan, "revision", &rev);
  if (!cJSON_IsArray(todos) || cJSON_GetArraySize(todos) == 0) return;
  dexa__buf_printf(out, "%sCurrent plan (revision %lld):\n", out->len ? "\n\n" : "",
                   (long long)rev);
  int i = 0;
  const cJSON *t;
  cJSON_ArrayForEach(t, todos) {
    const char *content = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "content"));
    const char *status = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "status"));
    dexa__buf_printf(out, "%d. [%s] %s\n", ++i, status ? status : "pending", content ? content : "");
  }
}

int dexa__system_text(const dexa_model_request *req, dexa__buf *out) {
  cJSON *ins = head_member(req, "instructions");
  cJSON *summary = head_member(req, "summary");
  cJSON *mode = head_member(req, "turn_mode");
  const char *s = cJSON_GetStringValue(ins);
  if (s) dexa__buf_puts(out, s);
  const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(summary, "text"));
  if (text && *text) {
    dexa__buf_puts(out, out->len ? "\n\nSummary of the earlier conversation:\n"
                                 : "Summary of the earlier conversation:\n");
    dexa__buf_puts(out, text);
  }
  const char *m = cJSON_GetStringValue(mode);
  if (m && (strcmp(m, "executing") == 0 || strcmp(m, "planning") == 0)) {
    cJSON *plan = head_member(req, "plan");
    put_plan(out, plan);
    cJSON_Delete(plan);
  }
  cJSON_Delete(ins);
  cJSON_Delete(summary);
  cJSON_Delete(mode);
  return out->oom ? DEXA_E_NOMEM : DEXA_OK;
}

int dexa__is_compaction(const dexa_model_request *req) {
  cJSON *p = head_member(req, "purpose");
  int yes = cJSON_GetStringValue(p) && strcmp(cJSON_GetStringValue(p), "compaction") == 0;
  cJSON_Delete(p);
  return yes;
}

int dexa__compaction_text(const dexa_model_request *req, dexa__buf *out) {
  dexa__buf_puts(out, "Conversation to summarize:\n");
  size_t count = dexa_model_request_message_count(req);
  for (size_t i = 0; i < count; i++) {
    dexa__msg m;
    int rc = dexa__msg_at(req, i, &m);
    if (rc != DEXA_OK) return rc;
    if (strcmp(m.role, "user") == 0) {
      dexa__buf_printf(out, "\n[user] %s\n", m.text ? m.text : "");
    } else if (strcmp(m.role, "tool") == 0) {
      dexa__buf_printf(out, "\n[tool %s, %s] %s\n", m.name ? m.name : "?",
                       m.status ? m.status : "ok", m.output ? m.output : "");
    } else {
      if (m.text && *m.text) dexa__buf_printf(out, "\n[assistant] %s\n", m.text);
      const cJSON *c;
      cJSON_ArrayForEach(c, m.tool_calls) {
        char *args = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(c, "arguments"));
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "name"));
        dexa__buf_printf(out, "\n[assistant calls %s] %s\n", name ? name : "?", args ? args : "{}");
        cJSON_free(args);
      }
    }
    dexa__msg_free(&m);
  }
  return out->oom ? DEXA_E_NOMEM : DEXA_OK;
}

int dexa__request_tools(const dexa_model_request *req, cJSON **tools) {
  *tools = head_member(req, "tools");
  if (!*tools) *tools = cJSON_CreateArray();
  if (!*tools) return DEXA_E_NOMEM;
  if (!cJSON_IsArray(*tools)) {
    cJSON_Delete(*tools);
    *tools = NULL;
    return DEXA_E_INVALID_JSON;
  }
  return DEXA_OK;
}

int dexa__put_tools(const dexa_model_request *req, const dexa__tool_shape *shape, dexa__buf *b,
                    int *count) {
  cJSON *tools;
  int rc = dexa__request_tools(req, &tools);
  *count = 0;
  if (rc != DEXA_OK) return rc;
  const cJSON *t;
  cJSON_ArrayForEach(t, tools) {
    dexa__buf_puts(b, (*count)++ ? "," : ",\"tools\":[");
    dexa__buf_puts(b, shape->open);
    dexa__buf_json_cstr(b, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "name")));
    const char *desc = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "description"));
    if (desc && *desc) {
      dexa__buf_puts(b, ",\"description\":");
      dexa__buf_json_cstr(b, desc);
    }
    char *params = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(t, "parameters"));
    dexa__buf_puts(b, shape->params_key);
    dexa__buf_puts(b, params ? params : "{\"type\":\"object\",\"properties\":{}}");
    cJSON_free(params);
    dexa__buf_puts(b, shape->close);
  }
  if (*count) dexa__buf_putc(b, ']');
  cJSON_Delete(tools);
  return b->oom ? DEXA_E_NOMEM : DEXA_OK;
}

void dexa__put_arguments_string(dexa__buf *b, const cJSON *arguments) {
  char *a = arguments ? cJSON_PrintUnformatted(arguments) : NULL;
  dexa__buf_json_cstr(b, a ? a : "{}");
  cJSON_free(a);
}
