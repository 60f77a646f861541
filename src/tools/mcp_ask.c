/* The server's requests of a tool call as questions to the person, and the
 * person's recorded answers as their results.
 *
 * Elicitation (form mode): the requested schema's properties become the
 * question's fields (string with format, length and enum or oneOf titles;
 * number and integer with bounds; boolean; array of enum values), the
 * message its prompt. URL mode: the page to open. An accepted answer is
 * the content, every field the person left out filled with its default
 * (SEP-1034) and numbers made integers where the schema says so.
 *
 * Sampling with "ask": a question with the choices Allow and Deny, showing
 * what the server wants the model to read.
 *
 * Answers are matched to requests by content: each request's key is a hash
 * of its params (without _meta), and each recorded answer is used once,
 * oldest first, so a call that runs again from the start meets the same
 * requests in the same order and gets the same answers at once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"
#include "tools/mcp_ask.h"
#include "util/buf.h"
#include "util/json_num.h"

void dexa__mcp_request_key(const cJSON *msg, char *out, size_t size) {
  const char *method = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "method"));
  cJSON *params = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(msg, "params"), 1);
  cJSON_DeleteItemFromObjectCaseSensitive(params, "_meta");
  char *text = params ? cJSON_PrintUnformatted(params) : NULL;
  uint64_t h = 1469598103934665603ULL; /* FNV-1a 64 */
  for (const char *p = method ? method : ""; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ULL;
  for (const char *p = text ? text : ""; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ULL;
  snprintf(out, size, "%s:%016llx", method && !strcmp(method, "sampling/createMessage") ? "sa" : "el",
           (unsigned long long)h);
  cJSON_free(text);
  cJSON_Delete(params);
}

const cJSON *dexa__mcp_find_answer(const cJSON *answers, const char *key, unsigned *used) {
  int i = 0;
  const cJSON *a;
  cJSON_ArrayForEach(a, answers) {
    const char *k = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "key"));
    if (i < 32 && !(*used & (1u << i)) && k && !strcmp(k, key)) {
      *used |= 1u << i;
      return a;
    }
    i++;
  }
  return NULL;
}

/* ---- elicitation ---- */

static int copy_num(cJSON *f, const char *to, const cJSON *prop, const char *from) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(prop, from);
  return !cJSON_IsNumber(v) || cJSON_AddNumberToObject(f, to, v->valuedouble) != NULL;
}

static int copy_str(cJSON *f, const char *to, const cJSON *prop, const char *from) {
  const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(prop, from));
  return !v || cJSON_AddStringToObject(f, to, v) != NULL;
}

/* enum (+ enumNames), or oneOf/anyOf [{const, title}], into enum and enum_names. */
static int copy_choices(cJSON *f, const cJSON *holder) {
  const cJSON *en = cJSON_GetObjectItemCaseSensitive(holder, "enum");
  const cJSON *names = cJSON_GetObjectItemCaseSensitive(holder, "enumNames");
  const cJSON *one = cJSON_GetObjectItemCaseSensitive(holder, "oneOf");
  if (!one) one = cJSON_GetObjectItemCaseSensitive(holder, "anyOf");
  if (cJSON_IsArray(en)) {
    if (!cJSON_AddItemToObject(f, "enum", cJSON_Duplicate(en, 1))) return 0;
    if (cJSON_IsArray(names) && cJSON_GetArraySize(names) == cJSON_GetArraySize(en))
      return cJSON_AddItemToObject(f, "enum_names", cJSON_Duplicate(names, 1));
    return 1;
  }
  if (!cJSON_IsArray(one)) return 1;
  cJSON *vals = cJSON_AddArrayToObject(f, "enum"), *titles = cJSON_AddArrayToObject(f, "enum_names");
  const cJSON *o;
  cJSON_ArrayForEach(o, one) {
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "const"));
    const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "title"));
    if (!v || !vals || !titles) return 0;
    cJSON_AddItemToArray(vals, cJSON_CreateString(v));
    cJSON_AddItemToArray(titles, cJSON_CreateString(t ? t : v));
  }
  return 1;
}

static cJSON *field_of(const char *name, const cJSON *prop, int required, const char **why) {
  const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(prop, "type"));
  if (!type && (cJSON_GetObjectItemCaseSensitive(prop, "enum") || cJSON_GetObjectItemCaseSensitive(prop, "oneOf")))
    type = "string";
  if (!type || (strcmp(type, "string") && strcmp(type, "number") && strcmp(type, "integer") &&
                strcmp(type, "boolean") && strcmp(type, "array"))) {
    *why = "a property of a type elicitation does not allow";
    return NULL;
  }
  cJSON *f = cJSON_CreateObject();
  int ok = f && cJSON_AddStringToObject(f, "name", name) && cJSON_AddStringToObject(f, "type", type) &&
           cJSON_AddBoolToObject(f, "required", required) && copy_str(f, "title", prop, "title") &&
           copy_str(f, "description", prop, "description");
  if (ok && !strcmp(type, "string"))
    ok = copy_str(f, "format", prop, "format") && copy_num(f, "min_length", prop, "minLength") &&
         copy_num(f, "max_length", prop, "maxLength") && copy_choices(f, prop);
  else if (ok && (!strcmp(type, "number") || !strcmp(type, "integer")))
    ok = copy_num(f, "minimum", prop, "minimum") && copy_num(f, "maximum", prop, "maximum");
  else if (ok && !strcmp(type, "array"))
    ok = copy_num(f, "min_items", prop, "minItems") && copy_num(f, "max_items", prop, "maxItems") &&
         copy_choices(f, cJSON_GetObjectItemCaseSensitive(prop, "items"));
  const cJSON *dflt = cJSON_GetObjectItemCaseSensitive(prop, "default");
  if (ok && dflt) ok = cJSON_AddItemToObject(f, "default", cJSON_Duplicate(dflt, 1));
  if (!ok) {
    cJSON_Delete(f);
    *why = "out of memory";
    return NULL;
  }
  return f;
}

static int is_required(const cJSON *schema, const char *name) {
  const cJSON *r;
  cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(schema, "required")) {
    if (cJSON_IsString(r) && !strcmp(r->valuestring, name)) return 1;
  }
  return 0;
}

char *dexa__mcp_elicitation_question(const cJSON *params, const char *key, const char **why) {
  const char *message = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(params, "message"));
  const char *mode = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(params, "mode"));
  const char *url = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(params, "url"));
  const cJSON *schema = cJSON_GetObjectItemCaseSensitive(params, "requestedSchema");
  *why = NULL;
  if (!message || !*message) {
    *why = "an elicitation without a message";
    return NULL;
  }
  cJSON *q = cJSON_CreateObject();
  int ok = q && cJSON_AddStringToObject(q, "prompt", message) && cJSON_AddStringToObject(q, "key", key);
  if (ok && mode && !strcmp(mode, "url")) {
    if (!url || (strncmp(url, "https://", 8) && strncmp(url, "http://", 7))) *why = "a URL elicitation without an http(s) URL";
    else ok = cJSON_AddStringToObject(q, "url", url) && cJSON_AddStringToObject(q, "purpose", "elicitation_url");
  } else if (ok) {
    ok = cJSON_AddStringToObject(q, "purpose", "elicitation") != NULL;
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(schema, "properties");
    if (ok && cJSON_GetArraySize(props) > 0) {
      cJSON *fields = cJSON_AddArrayToObject(q, "fields");
      const cJSON *p;
      cJSON_ArrayForEach(p, props) {
        cJSON *f = fields && !*why ? field_of(p->string, p, is_required(schema, p->string), why) : NULL;
        if (!f) break;
        cJSON_AddItemToArray(fields, f);
      }
      ok = fields != NULL;
    }
  }
  char *text = ok && !*why ? cJSON_PrintUnformatted(q) : NULL;
  if (!ok && !*why) *why = "out of memory";
  cJSON_Delete(q);
  return text;
}

/* The content of an accepted form: the answer's fields, each property left
 * out filled with its default; integers where the schema says integer. */
static cJSON *content_of(const cJSON *params, const cJSON *fields) {
  const cJSON *props = cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(params, "requestedSchema"), "properties");
  cJSON *content = cJSON_CreateObject();
  const cJSON *p;
  cJSON_ArrayForEach(p, props) {
    if (!content) break;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(fields, p->string);
    if (!v) v = cJSON_GetObjectItemCaseSensitive(p, "default");
    if (!v) continue;
    cJSON_AddItemToObject(content, p->string, cJSON_Duplicate(v, 1));
  }
  return content;
}

cJSON *dexa__mcp_elicitation_result(const cJSON *params, const cJSON *answer) {
  const char *action = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(answer, "action"));
  const char *mode = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(params, "mode"));
  if (!action) action = "accept";
  cJSON *res = cJSON_CreateObject();
  if (!res || !cJSON_AddStringToObject(res, "action", action)) {
    cJSON_Delete(res);
    return NULL;
  }
  if (!strcmp(action, "accept") && !(mode && !strcmp(mode, "url")))
    cJSON_AddItemToObject(res, "content", content_of(params, cJSON_GetObjectItemCaseSensitive(answer, "fields")));
  return res;
}

/* ---- sampling ---- */

/* The text of a content block or array of blocks; other media are named. */
static void content_text(dexa__buf *b, const cJSON *content) {
  if (cJSON_IsArray(content)) {
    const cJSON *c;
    cJSON_ArrayForEach(c, content) {
      content_text(b, c);
    }
    return;
  }
  const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(content, "type"));
  const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(content, "text"));
  if (b->len) dexa__buf_putc(b, '\n');
  if (type && !strcmp(type, "text")) dexa__buf_puts(b, text ? text : "");
  else dexa__buf_printf(b, "[%s content left out]", type ? type : "unknown");
}

char *dexa__mcp_sampling_request(const cJSON *params) {
  const cJSON *messages = cJSON_GetObjectItemCaseSensitive(params, "messages");
  const char *system = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(params, "systemPrompt"));
  int64_t max_tokens = 0;
  dexa__json_exact_int(cJSON_GetObjectItemCaseSensitive(params, "maxTokens"), &max_tokens);
  if (!cJSON_IsArray(messages) || !cJSON_GetArraySize(messages)) return NULL;
  dexa__buf b, t;
  dexa__buf_init(&b);
  dexa__buf_init(&t);
  dexa__buf_puts(&b, "{\"messages\":[");
  int i = 0;
  const cJSON *m;
  cJSON_ArrayForEach(m, messages) {
    const char *role = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "role"));
    dexa__buf_reset(&t);
    content_text(&t, cJSON_GetObjectItemCaseSensitive(m, "content"));
    dexa__buf_printf(&b, "%s{\"role\":\"%s\",\"text\":", i++ ? "," : "",
                     role && !strcmp(role, "assistant") ? "assistant" : "user");
    dexa__buf_json_str(&b, t.data ? t.data : "", t.len);
    dexa__buf_putc(&b, '}');
  }
  dexa__buf_putc(&b, ']');
  if (system) {
    dexa__buf_puts(&b, ",\"system\":");
    dexa__buf_json_cstr(&b, system);
  }
  if (max_tokens > 0) dexa__buf_printf(&b, ",\"max_tokens\":%lld", (long long)max_tokens);
  dexa__buf_putc(&b, '}');
  dexa__buf_free(&t);
  dexa__buf_cstr(&b);
  return b.oom ? (dexa__buf_free(&b), NULL) : dexa__buf_steal(&b, NULL);
}

char *dexa__mcp_sampling_question(const char *server, const cJSON *params, const char *key) {
  const cJSON *messages = cJSON_GetObjectItemCaseSensitive(params, "messages");
  dexa__buf t, q;
  dexa__buf_init(&t);
  dexa__buf_init(&q);
  content_text(&t, cJSON_GetObjectItemCaseSensitive(
                       cJSON_GetArrayItem(messages, cJSON_GetArraySize(messages) - 1), "content"));
  size_t n = t.len > 500 ? 500 : t.len;
  while (n < t.len && n > 0 && ((unsigned char)t.data[n] & 0xC0) == 0x80) n--;
  char prompt[700];
  snprintf(prompt, sizeof prompt, "The MCP server %s asks to run the model on: \"%.*s%s\"", server,
           (int)n, t.data ? t.data : "", n < t.len ? "..." : "");
  dexa__buf_puts(&q, "{\"prompt\":");
  dexa__buf_json_cstr(&q, prompt);
  dexa__buf_puts(&q, ",\"choices\":[\"Allow\",\"Deny\"],\"purpose\":\"sampling\",\"key\":");
  dexa__buf_json_cstr(&q, key);
  dexa__buf_putc(&q, '}');
  dexa__buf_free(&t);
  dexa__buf_cstr(&q);
  return q.oom ? (dexa__buf_free(&q), NULL) : dexa__buf_steal(&q, NULL);
}

cJSON *dexa__mcp_sampling_result(const char *reply_json) {
  cJSON *reply = cJSON_Parse(reply_json);
  const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(reply, "text"));
  const char *model = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(reply, "model"));
  cJSON *res = cJSON_CreateObject();
  cJSON *content = res ? cJSON_AddObjectToObject(res, "content") : NULL;
  int ok = content && cJSON_AddStringToObject(res, "role", "assistant") &&
           cJSON_AddStringToObject(content, "type", "text") &&
           cJSON_AddStringToObject(content, "text", text ? text : "") &&
           cJSON_AddStringToObject(res, "model", model ? model : "unknown") &&
           cJSON_AddStringToObject(res, "stopReason", "endTurn");
  cJSON_Delete(reply);
  if (!ok) {
    cJSON_Delete(res);
    return NULL;
  }
  return res;
}
