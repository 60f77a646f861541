/* A tool's question (see tool_question.h): checked and copied member by
 * member into the pending entry (never stored as the tool gave it), asked,
 * answered, and the call run again. */
#include "core/tool_question.h"

#include <stdio.h>
#include <string.h>

#include "core/tool_decisions.h"
#include "util/json_num.h"

#define MAX_PROMPT 8192
#define MAX_FIELDS 32
#define MAX_ENUM 64
#define MAX_TEXT 1024
#define MAX_URL 4096
#define MAX_KEY 256

/* The members a question's field may have, by JSON type. */
static const char *const field_strings[] = {"title", "description", "format", NULL};
static const char *const field_numbers[] = {"minimum", "maximum", "min_length", "max_length",
                                            "min_items", "max_items", NULL};
static const char *const field_types[] = {"string", "number", "integer", "boolean", "array", NULL};

static int in_list(const char *const *list, const char *s) {
  for (size_t i = 0; list[i]; i++)
    if (strcmp(list[i], s) == 0) return 1;
  return 0;
}

static int name_ok(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 64) return 0;
  for (size_t i = 0; i < n; i++) {
    char ch = s[i];
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
          ch == '_' || ch == '-' || ch == '.'))
      return 0;
  }
  return 1;
}

/* 1..max unique non-empty strings of at most MAX_TEXT bytes. */
static int strings_ok(const cJSON *a, int min, int max) {
  int n = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : -1;
  if (n < min || n > max) return 0;
  for (const cJSON *x = a->child; x; x = x->next) {
    if (!cJSON_IsString(x) || !*x->valuestring || strlen(x->valuestring) > MAX_TEXT) return 0;
    for (const cJSON *y = a->child; y != x; y = y->next)
      if (strcmp(x->valuestring, y->valuestring) == 0) return 0;
  }
  return 1;
}

static const char *field_type(const cJSON *f) {
  return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "type"));
}

/* 1 when v is a value of field f (its type, and its enum when it has one). */
static int value_fits(const cJSON *f, const cJSON *v) {
  const char *type = field_type(f);
  const cJSON *en = cJSON_GetObjectItemCaseSensitive(f, "enum"), *x;
  if (strcmp(type, "string") == 0) {
    if (!cJSON_IsString(v)) return 0;
    if (!en) return 1;
    cJSON_ArrayForEach(x, en) {
      if (strcmp(x->valuestring, v->valuestring) == 0) return 1;
    }
    return 0;
  }
  if (strcmp(type, "number") == 0) return cJSON_IsNumber(v);
  if (strcmp(type, "integer") == 0) {
    int64_t n;
    return dexa__json_exact_int(v, &n);
  }
  if (strcmp(type, "boolean") == 0) return cJSON_IsBool(v);
  if (!cJSON_IsArray(v)) return 0; /* array: of the enum's strings */
  const cJSON *item;
  cJSON_ArrayForEach(item, v) {
    int found = !en && cJSON_IsString(item);
    cJSON_ArrayForEach(x, en) {
      if (cJSON_IsString(item) && !strcmp(x->valuestring, item->valuestring)) found = 1;
    }
    if (!found) return 0;
  }
  return 1;
}

/* A checked copy of one field of a tool's question, or NULL with why. */
static cJSON *copy_field(const cJSON *f, const cJSON *done, const char **why) {
  const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "name"));
  const char *type = field_type(f);
  if (!cJSON_IsObject(f) || !name || !name_ok(name)) {
    *why = "a field needs a name of 1 to 64 of [A-Za-z0-9_.-]";
    return NULL;
  }
  const cJSON *x;
  cJSON_ArrayForEach(x, done) {
    if (!strcmp(cJSON_GetObjectItemCaseSensitive(x, "name")->valuestring, name)) {
      *why = "two fields have the same name";
      return NULL;
    }
  }
  if (!type || !in_list(field_types, type)) {
    *why = "a field's type is string, number, integer, boolean or array";
    return NULL;
  }
  cJSON *out = cJSON_CreateObject();
  int ok = out && cJSON_AddStringToObject(out, "name", name) && cJSON_AddStringToObject(out, "type", type);
  const cJSON *m;
  cJSON_ArrayForEach(m, f) {
    if (!ok) break;
    if (in_list(field_strings, m->string)) {
      if (!cJSON_IsString(m) || strlen(m->valuestring) > MAX_TEXT) *why = "a field's text is too long";
      else ok = cJSON_AddStringToObject(out, m->string, m->valuestring) != NULL;
    } else if (in_list(field_numbers, m->string)) {
      if (!cJSON_IsNumber(m)) *why = "a field's bound must be a number";
      else ok = cJSON_AddNumberToObject(out, m->string, m->valuedouble) != NULL;
    } else if (!strcmp(m->string, "required")) {
      if (!cJSON_IsBool(m)) *why = "a field's required is true or false";
      else ok = cJSON_AddBoolToObject(out, "required", cJSON_IsTrue(m)) != NULL;
    } else if (!strcmp(m->string, "enum") || !strcmp(m->string, "enum_names")) {
      if (!strings_ok(m, 1, MAX_ENUM)) *why = "a field's enum is 1 to 64 unique strings";
      else ok = cJSON_AddItemToObject(out, m->string, cJSON_Duplicate(m, 1));
    }
  }
  const cJSON *en = cJSON_GetObjectItemCaseSensitive(out, "enum");
  const cJSON *names = cJSON_GetObjectItemCaseSensitive(out, "enum_names");
  if (ok && !*why && en && strcmp(type, "string") && strcmp(type, "array")) *why = "only string and array fields have an enum";
  if (ok && !*why && names && (!en || cJSON_GetArraySize(names) != cJSON_GetArraySize(en)))
    *why = "enum_names must name each enum value";
  const cJSON *dflt = cJSON_GetObjectItemCaseSensitive(f, "default");
  if (ok && !*why && dflt) { /* a default that is not a value of the field is dropped */
    if (value_fits(out, dflt)) ok = cJSON_AddItemToObject(out, "default", cJSON_Duplicate(dflt, 1));
  }
  if (!ok && !*why) *why = "out of memory";
  if (*why) {
    cJSON_Delete(out);
    return NULL;
  }
  return out;
}

/* Copies what the session shows of question q into entry; why on refusal. */
static int copy_question(const cJSON *q, cJSON *entry, const char **why) {
  const char *prompt = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(q, "prompt"));
  const cJSON *choices = cJSON_GetObjectItemCaseSensitive(q, "choices");
  const cJSON *fields = cJSON_GetObjectItemCaseSensitive(q, "fields");
  const cJSON *url = cJSON_GetObjectItemCaseSensitive(q, "url");
  const cJSON *purpose = cJSON_GetObjectItemCaseSensitive(q, "purpose");
  const cJSON *key = cJSON_GetObjectItemCaseSensitive(q, "key");
  if (!prompt || !*prompt || strlen(prompt) > MAX_PROMPT) *why = "the prompt is empty or too long";
  else if (choices && !strings_ok(choices, 2, 8)) *why = "choices are 2 to 8 unique non-empty strings";
  else if (choices && fields) *why = "a question has choices or fields, not both";
  else if (fields && (!cJSON_IsArray(fields) || cJSON_GetArraySize(fields) > MAX_FIELDS))
    *why = "fields is an array of at most 32 fields";
  else if (url && (!cJSON_IsString(url) || strlen(url->valuestring) > MAX_URL ||
                   (strncmp(url->valuestring, "https://", 8) && strncmp(url->valuestring, "http://", 7))))
    *why = "url must be an http:// or https:// URL";
  else if (purpose && (!cJSON_IsString(purpose) || !name_ok(purpose->valuestring)))
    *why = "purpose is a short name";
  else if (key && (!cJSON_IsString(key) || strlen(key->valuestring) > MAX_KEY))
    *why = "key is a string of at most 256 bytes";
  if (*why) return DEXA_E_INVALID_ARG;
  int ok = cJSON_AddStringToObject(entry, "prompt", prompt) != NULL;
  if (ok && choices) ok = cJSON_AddItemToObject(entry, "choices", cJSON_Duplicate(choices, 1));
  if (ok && fields) {
    cJSON *list = cJSON_AddArrayToObject(entry, "fields");
    const cJSON *f;
    ok = list != NULL;
    cJSON_ArrayForEach(f, fields) {
      cJSON *copy = ok ? copy_field(f, list, why) : NULL;
      if (!copy) return *why ? DEXA_E_INVALID_ARG : DEXA_E_NOMEM;
      cJSON_AddItemToArray(list, copy);
    }
  }
  if (ok && url) ok = cJSON_AddStringToObject(entry, "url", url->valuestring) != NULL;
  if (ok && purpose) ok = cJSON_AddStringToObject(entry, "purpose", purpose->valuestring) != NULL;
  if (ok && key) ok = cJSON_AddStringToObject(entry, "key", key->valuestring) != NULL;
  return ok ? DEXA_OK : DEXA_E_NOMEM;
}

/* The call's own input members (what any tool Step of it reads). */
static cJSON *call_entry(dexa__ctx *c, const dexa__tool_call *t) {
  cJSON *e = cJSON_CreateObject();
  int ok = e && cJSON_AddNumberToObject(e, "turn", (double)t->turn) &&
           cJSON_AddNumberToObject(e, "round", (double)t->round) &&
           cJSON_AddNumberToObject(e, "seq", (double)t->seq) &&
           cJSON_AddStringToObject(e, "call_id", t->call_id) &&
           cJSON_AddStringToObject(e, "name", t->name) &&
           cJSON_AddStringToObject(e, "source", t->source) &&
           cJSON_AddStringToObject(e, "effect", t->effect);
  const cJSON *args = cJSON_GetObjectItemCaseSensitive(c->input, "arguments");
  const cJSON *answers = cJSON_GetObjectItemCaseSensitive(c->input, "answers");
  if (ok) ok = cJSON_AddItemToObject(e, "arguments", cJSON_IsObject(args) ? cJSON_Duplicate(args, 1) : cJSON_CreateObject());
  if (ok) ok = cJSON_AddItemToObject(e, "answers", cJSON_IsArray(answers) ? cJSON_Duplicate(answers, 1) : cJSON_CreateArray());
  if (!ok) cJSON_Delete(e);
  return ok ? e : NULL;
}

static int refuse(dexa__ctx *c, const dexa__tool_call *t, const char *why) {
  char text[300];
  snprintf(text, sizeof text, "the tool asked a question the session cannot show: %s", why);
  return dexa__tool_call_finish(c, t, "error", text, strlen(text), NULL, 0);
}

/* question_asked: the call, then what the entry shows. */
static int asked_event(dexa__ctx *c, const dexa__tool_call *t, const cJSON *entry) {
  static const char *const shown[] = {"arguments", "kind", "asked_by", "prompt", "choices",
                                      "fields", "url", "purpose"};
  dexa__buf e;
  dexa__event_begin(c, &e, "question_asked");
  dexa__buf_printf(&e, ",\"turn\":%lld,\"call_id\":", (long long)t->turn);
  dexa__buf_json_cstr(&e, t->call_id);
  dexa__buf_puts(&e, ",\"name\":");
  dexa__buf_json_cstr(&e, t->name);
  for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(entry, shown[i]);
    char *text = v ? cJSON_PrintUnformatted(v) : NULL;
    if (v && !text) e.oom = 1;
    if (text) dexa__buf_printf(&e, ",\"%s\":%s", shown[i], text);
    cJSON_free(text);
  }
  return dexa__event_end(c, &e);
}

int dexa__tool_question_ask(dexa__ctx *c, const dexa__tool_call *t, const char *q, size_t n,
                            const char *resume) {
  char action[16];
  int crc = DEXA_OK;
  if (dexa__control_pending(c, t->turn, action, &crc)) { /* a steer or stop came meanwhile */
    static const char text[] =
        "Cancelled: the turn was steered or stopped while the tool waited to ask the user.";
    return dexa__tool_call_finish(c, t, "cancelled", text, sizeof text - 1, NULL, 0);
  }
  if (crc != DEXA_OK) return crc;
  const cJSON *answers = cJSON_GetObjectItemCaseSensitive(c->input, "answers");
  if (cJSON_GetArraySize(answers) >= DEXA__MAX_TOOL_QUESTIONS)
    return refuse(c, t, "it asked more than 16 questions in one call");
  cJSON *question = cJSON_ParseWithLength(q, n);
  cJSON *entry = question ? call_entry(c, t) : NULL;
  const char *why = NULL;
  int rc = entry ? DEXA_OK : DEXA_E_NOMEM;
  if (rc == DEXA_OK && !(cJSON_AddStringToObject(entry, "kind", "question") &&
                         cJSON_AddNumberToObject(entry, "at", (double)c->call->now_ms) &&
                         cJSON_AddStringToObject(entry, "asked_by", "tool") &&
                         cJSON_AddStringToObject(entry, "resume", resume)))
    rc = DEXA_E_NOMEM;
  if (rc == DEXA_OK) rc = copy_question(question, entry, &why);
  char *text = rc == DEXA_OK ? cJSON_PrintUnformatted(entry) : NULL;
  if (rc == DEXA_OK && !text) rc = DEXA_E_NOMEM;
  if (rc == DEXA_OK) {
    char key[320];
    snprintf(key, sizeof key, ATTR_PENDING_CALLS "%s", t->call_id);
    rc = dexa__attr_put_raw(c, key, text, strlen(text));
    if (rc == DEXA_OK) rc = asked_event(c, t, entry);
    if (rc == DEXA_OK) rc = dexa__decide_next(c, STEP_AWAIT_QUESTION_ANSWER, text);
  } else if (rc == DEXA_E_INVALID_ARG) {
    rc = refuse(c, t, why);
  }
  cJSON_free(text);
  cJSON_Delete(entry);
  cJSON_Delete(question);
  return rc;
}

int dexa__tool_question_is_tool(const cJSON *pending) {
  const char *by = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(pending, "asked_by"));
  return by && strcmp(by, "tool") == 0;
}

/* ---- the answer (answer_question) ---- */

static int check_fields(dexa__ctx *c, const cJSON *declared, const cJSON *given) {
  if (!cJSON_IsObject(given))
    return dexa__result_fail(c->result, DEXA_E_INVALID_JSON, "fields must be an object");
  const cJSON *v, *f;
  cJSON_ArrayForEach(v, given) {
    const cJSON *match = NULL;
    cJSON_ArrayForEach(f, declared) {
      if (!strcmp(cJSON_GetObjectItemCaseSensitive(f, "name")->valuestring, v->string)) match = f;
    }
    if (!match)
      return dexa__result_failf(c->result, DEXA_E_INVALID_ARG, "the question has no field \"%.64s\"", v->string);
    for (const cJSON *w = given->child; w != v; w = w->next)
      if (!strcmp(w->string, v->string))
        return dexa__result_failf(c->result, DEXA_E_INVALID_JSON, "field \"%.64s\" appears twice", v->string);
    if (!value_fits(match, v))
      return dexa__result_failf(c->result, DEXA_E_INVALID_ARG, "field \"%.64s\" is not a %s%s", v->string,
                                field_type(match),
                                cJSON_GetObjectItemCaseSensitive(match, "enum") ? " of its choices" : "");
  }
  cJSON_ArrayForEach(f, declared) {
    const char *name = cJSON_GetObjectItemCaseSensitive(f, "name")->valuestring;
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f, "required")) &&
        !cJSON_GetObjectItemCaseSensitive(f, "default") && !cJSON_GetObjectItemCaseSensitive(given, name))
      return dexa__result_failf(c->result, DEXA_E_INVALID_ARG, "field \"%.64s\" is required", name);
  }
  return DEXA_OK;
}

static int check_accept(dexa__ctx *c, const cJSON *pending, const cJSON *answer, const cJSON *fields) {
  const cJSON *choices = cJSON_GetObjectItemCaseSensitive(pending, "choices");
  const cJSON *declared = cJSON_GetObjectItemCaseSensitive(pending, "fields");
  if (answer && !cJSON_IsString(answer))
    return dexa__result_fail(c->result, DEXA_E_INVALID_JSON, "answer must be a string");
  if (answer && (int64_t)strlen(answer->valuestring) > c->agent->def.max_message_bytes)
    return dexa__result_fail(c->result, DEXA_E_TOO_LARGE, "the answer is too large");
  if (choices) {
    int found = 0;
    const cJSON *ch;
    cJSON_ArrayForEach(ch, choices) {
      found |= answer && !strcmp(ch->valuestring, answer->valuestring);
    }
    if (!found) return dexa__result_fail(c->result, DEXA_E_INVALID_ARG, "the answer must be one of the choices");
  }
  if (fields && !declared)
    return dexa__result_fail(c->result, DEXA_E_INVALID_ARG, "the question has no fields");
  return declared ? check_fields(c, declared, fields) : DEXA_OK;
}

int dexa__tool_question_decision(dexa__ctx *c, const cJSON *pending, cJSON **decision) {
  *decision = NULL;
  const char *action = dexa__input_str(c, "action");
  const cJSON *answer = cJSON_GetObjectItemCaseSensitive(c->input, "answer");
  const cJSON *fields = cJSON_GetObjectItemCaseSensitive(c->input, "fields");
  cJSON *empty = NULL;
  if (cJSON_GetObjectItemCaseSensitive(c->input, "action") && !action)
    return dexa__result_fail(c->result, DEXA_E_INVALID_JSON, "action must be a string");
  if (!action) action = "accept";
  if (strcmp(action, "accept") && strcmp(action, "decline") && strcmp(action, "cancel"))
    return dexa__result_fail(c->result, DEXA_E_INVALID_ARG, "action is accept, decline or cancel");
  if (strcmp(action, "accept") && (answer || fields))
    return dexa__result_failf(c->result, DEXA_E_INVALID_ARG, "a %s carries no answer", action);
  if (!strcmp(action, "accept") && cJSON_GetObjectItemCaseSensitive(pending, "fields") && !fields)
    fields = empty = cJSON_CreateObject(); /* every field left out: defaults apply */
  int rc = strcmp(action, "accept") ? DEXA_OK : check_accept(c, pending, answer, fields);
  cJSON *d = rc == DEXA_OK ? cJSON_CreateObject() : NULL;
  if (rc == DEXA_OK && !(d && cJSON_AddStringToObject(d, "decision", "answer") &&
                         cJSON_AddStringToObject(d, "action", action) &&
                         (!answer || cJSON_AddStringToObject(d, "answer", answer->valuestring)) &&
                         (!fields || cJSON_AddItemToObject(d, "fields", cJSON_Duplicate(fields, 1)))))
    rc = DEXA_E_NOMEM;
  cJSON_Delete(empty);
  if (rc != DEXA_OK) {
    cJSON_Delete(d);
    return rc;
  }
  *decision = d;
  return DEXA_OK;
}

/* ---- AwaitQuestionAnswer ---- */

/* Adds a deep copy of v to obj under name; 0 (nothing leaked) when memory
 * runs out. */
static int add_copy(cJSON *obj, const char *name, const cJSON *v) {
  cJSON *copy = cJSON_Duplicate(v, 1);
  if (copy && cJSON_AddItemToObject(obj, name, copy)) return 1;
  cJSON_Delete(copy);
  return 0;
}

static int cancelled(dexa__ctx *c, const dexa__tool_call *t, const cJSON *d) {
  const char *reason = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "reason"));
  char text[200];
  snprintf(text, sizeof text, "Cancelled: the turn was %s while this call waited for an answer.",
           reason && !strcmp(reason, "steer") ? "steered" : "stopped");
  return dexa__tool_call_finish(c, t, "cancelled", text, strlen(text), NULL, 0);
}

int dexa__tool_question_answered(dexa__ctx *c, const dexa__tool_call *t, const cJSON *d) {
  if (strcmp(dexa__decision_kind(d), "answer") != 0) return cancelled(c, t, d);
  const char *resume = dexa__input_str(c, "resume");
  if (!resume || (strcmp(resume, STEP_CALL_TOOL) && strcmp(resume, STEP_CALL_SINGLE_ATTEMPT_TOOL)))
    return dexa__result_fail(c->result, DEXA_E_INVALID_JSON, "a tool's question needs its resume Step");
  cJSON *next = call_entry(c, t);
  cJSON *record = next ? cJSON_CreateObject() : NULL;
  const cJSON *key = cJSON_GetObjectItemCaseSensitive(c->input, "key");
  const char *action = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "action"));
  const cJSON *answer = cJSON_GetObjectItemCaseSensitive(d, "answer");
  const cJSON *fields = cJSON_GetObjectItemCaseSensitive(d, "fields");
  cJSON *key_copy = cJSON_IsString(key) ? cJSON_CreateString(key->valuestring) : cJSON_CreateNull();
  int ok = record && cJSON_AddItemToObject(record, "key", key_copy);
  if (!ok) cJSON_Delete(key_copy);
  ok = ok && cJSON_AddStringToObject(record, "action", action ? action : "accept") &&
       (!cJSON_IsString(answer) ||
        cJSON_AddStringToObject(record, "answer", answer->valuestring)) &&
       (!cJSON_IsObject(fields) || add_copy(record, "fields", fields)) &&
       cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(next, "answers"), record);
  if (ok) record = NULL; /* the array owns it now */
  char *text = ok ? cJSON_PrintUnformatted(next) : NULL;
  int rc = text ? dexa__decide_next(c, resume, text) : DEXA_E_NOMEM;
  cJSON_free(text);
  cJSON_Delete(record);
  cJSON_Delete(next);
  return rc;
}
