/* Reading a model request for a provider (see transcript.h). */
#include "model/transcript.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <mbedtls/base64.h>

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
  m->attachments = cJSON_GetObjectItemCaseSensitive(d, "attachments");
  m->content = cJSON_GetObjectItemCaseSensitive(d, "content");
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
  static const dexa__tool_opts none = {NULL, NULL, NULL};
  return dexa__put_tools_with(req, shape, &none, b, count);
}

int dexa__put_tools_with(const dexa_model_request *req, const dexa__tool_shape *shape,
                         const dexa__tool_opts *opts, dexa__buf *b, int *count) {
  cJSON *tools;
  int rc = dexa__request_tools(req, &tools);
  *count = 0;
  if (rc != DEXA_OK) return rc;
  int n = cJSON_GetArraySize(tools);
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
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(t, "parameters");
    char *params = cJSON_PrintUnformatted(schema);
    dexa__buf_puts(b, shape->params_key);
    dexa__buf_puts(b, params ? params : "{\"type\":\"object\",\"properties\":{}}");
    cJSON_free(params);
    /* Members go before the close, into the object that holds the
     * parameters (Chat: the function object). */
    if (opts->strict_member && schema && dexa__schema_strict_ok(schema))
      dexa__buf_puts(b, opts->strict_member);
    else if (opts->nonstrict_member) dexa__buf_puts(b, opts->nonstrict_member);
    if (opts->last_member && *count == n) dexa__buf_puts(b, opts->last_member);
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

/* ---- media ---- */

/* A media type from a URL's extension, for providers that need one. */
static const char *guess_media_type(const char *url, int image) {
  static const char *const map[][2] = {
      {".png", "image/png"},   {".jpg", "image/jpeg"},      {".jpeg", "image/jpeg"},
      {".gif", "image/gif"},   {".webp", "image/webp"},     {".pdf", "application/pdf"},
      {".txt", "text/plain"},  {".md", "text/markdown"},    {".csv", "text/csv"},
      {".html", "text/html"},  {".json", "application/json"}};
  const char *q = url ? strpbrk(url, "?#") : NULL;
  size_t n = url ? (q ? (size_t)(q - url) : strlen(url)) : 0;
  for (size_t i = 0; i < sizeof map / sizeof *map; i++) {
    size_t e = strlen(map[i][0]);
    if (n > e && strncasecmp(url + n - e, map[i][0], e) == 0) return map[i][1];
  }
  return image ? "image/jpeg" : "";
}

void dexa__media_of_attachment(const cJSON *a, dexa__media *m) {
  const char *type = dexa__jstr(a, "type");
  m->image = type && strcmp(type, "image") == 0;
  m->data = dexa__jstr(a, "data");
  m->url = dexa__jstr(a, "url");
  m->name = dexa__jstr(a, "name");
  m->media_type = dexa__jstr(a, "media_type");
  if (!m->media_type) m->media_type = guess_media_type(m->url, m->image);
}

size_t dexa__tool_images(const dexa__msg *m, dexa__media *out, size_t max) {
  size_t n = 0;
  const cJSON *blk;
  cJSON_ArrayForEach(blk, cJSON_GetObjectItemCaseSensitive(m->content, "content")) {
    const char *type = dexa__jstr(blk, "type"), *data = dexa__jstr(blk, "data");
    const char *mime = dexa__jstr(blk, "mimeType");
    if (n == max || !type || strcmp(type, "image") != 0 || !data || !*data || !mime) continue;
    out[n++] = (dexa__media){1, mime, data, NULL, NULL};
  }
  return n;
}

void dexa__put_media_url(dexa__buf *b, const dexa__media *m) {
  if (m->url) {
    dexa__buf_json_cstr(b, m->url);
    return;
  }
  dexa__buf_printf(b, "\"data:%s;base64,", m->media_type);
  dexa__buf_puts(b, m->data ? m->data : ""); /* base64 needs no escaping */
  dexa__buf_putc(b, '"');
}

int dexa__media_decode(const dexa__media *m, dexa__buf *out) {
  const unsigned char *src = (const unsigned char *)(m->data ? m->data : "");
  size_t n = strlen((const char *)src), olen = 0;
  if (dexa__buf_reserve(out, n / 4 * 3 + 3) != 0) return DEXA_E_NOMEM;
  if (mbedtls_base64_decode((unsigned char *)out->data + out->len, out->cap - out->len, &olen, src,
                            n) != 0)
    return DEXA_E_CORRUPT;
  out->len += olen;
  out->data[out->len] = '\0';
  return DEXA_OK;
}

const char *dexa__media_subtype(const dexa__media *m) {
  const char *slash = m->media_type ? strchr(m->media_type, '/') : NULL;
  return slash ? slash + 1 : "";
}

int dexa__request_session(const dexa_model_request *req, char *out, size_t size) {
  cJSON *sid = head_member(req, "session_id");
  const char *s = cJSON_GetStringValue(sid);
  snprintf(out, size, "%s", s ? s : "");
  cJSON_Delete(sid);
  return out[0] != '\0';
}

cJSON *dexa__request_output_schema(const dexa_model_request *req) {
  cJSON *o = head_member(req, "output_schema");
  if (!cJSON_IsObject(o) || !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(o, "schema"))) {
    cJSON_Delete(o);
    return NULL;
  }
  return o;
}

void dexa__request_turn_round(const dexa_model_request *req, int64_t *turn, int64_t *round) {
  const char *json;
  size_t len;
  *turn = *round = 0;
  if (dexa_model_request_json(req, &json, &len) != DEXA_OK) return;
  dexa__json_get_i64(json, len, "turn", turn);
  dexa__json_get_i64(json, len, "round", round);
}

int dexa__schema_strict_ok(const cJSON *s) {
  if (!cJSON_IsObject(s)) return 1; /* true / false schemas, or nothing to check */
  const cJSON *props = cJSON_GetObjectItemCaseSensitive(s, "properties");
  const char *type = dexa__jstr(s, "type");
  if ((type && strcmp(type, "object") == 0) || props) {
    if (!cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(s, "additionalProperties"))) return 0;
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(s, "required"), *p;
    cJSON_ArrayForEach(p, props) {
      int listed = 0;
      const cJSON *r;
      cJSON_ArrayForEach(r, req) listed |= cJSON_IsString(r) && strcmp(r->valuestring, p->string) == 0;
      if (!listed || !dexa__schema_strict_ok(p)) return 0;
    }
  }
  static const char *const nested[] = {"items", "anyOf", "allOf", "oneOf", "$defs", "definitions"};
  for (size_t i = 0; i < sizeof nested / sizeof *nested; i++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(s, nested[i]), *e;
    if (cJSON_IsObject(v) && strcmp(nested[i], "items") == 0 && !dexa__schema_strict_ok(v)) return 0;
    if (cJSON_IsArray(v) || (cJSON_IsObject(v) && strcmp(nested[i], "items") != 0))
      cJSON_ArrayForEach(e, v) if (!dexa__schema_strict_ok(e)) return 0;
  }
  return 1;
}

void dexa__put_number(dexa__buf *b, const char *key, double v) {
  char text[32];
  for (int digits = 15; digits <= 17; digits++) {
    snprintf(text, sizeof text, "%.*g", digits, v);
    if (strtod(text, NULL) == v) break;
  }
  dexa__buf_printf(b, ",\"%s\":%s", key, text);
}
