/* Session settings (see settings.h). Checked once when the session starts,
 * so a bad schema is an error of start_session, not of a later turn. */
#include "core/settings.h"

#include <string.h>

#define SCHEMA_MAX_BYTES (64 << 10)

static int bad(dexa__ctx *c, const char *what) {
  return dexa__result_failf(c->result, DEXA_E_INVALID_ARG, "settings: %s", what);
}

static int name_ok(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 64) return 0;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
          (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-'))
      return 0;
  return 1;
}

static int check_schema(dexa__ctx *c, const cJSON *o) {
  if (!cJSON_IsObject(o)) return bad(c, "output_schema must be an object {\"name\"?, \"schema\", \"strict\"?}");
  const cJSON *v;
  cJSON_ArrayForEach(v, o) {
    if (strcmp(v->string, "name") && strcmp(v->string, "schema") && strcmp(v->string, "strict"))
      return dexa__result_failf(c->result, DEXA_E_UNKNOWN_KEY,
                                "settings: unknown key \"%.40s\" in output_schema", v->string);
  }
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
  const cJSON *schema = cJSON_GetObjectItemCaseSensitive(o, "schema");
  const cJSON *strict = cJSON_GetObjectItemCaseSensitive(o, "strict");
  if (name && !(cJSON_IsString(name) && name_ok(name->valuestring)))
    return bad(c, "output_schema.name must be 1 to 64 letters, digits, '_' or '-'");
  if (strict && !cJSON_IsBool(strict)) return bad(c, "output_schema.strict must be a boolean");
  const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(schema, "type"));
  if (!cJSON_IsObject(schema) || !type || strcmp(type, "object") != 0)
    return bad(c, "output_schema.schema must be a JSON Schema of \"type\":\"object\"");
  char *text = cJSON_PrintUnformatted(schema);
  size_t n = text ? strlen(text) : 0;
  cJSON_free(text);
  if (!text) return DEXA_E_NOMEM;
  if (n > SCHEMA_MAX_BYTES) return bad(c, "output_schema.schema is over 64 KiB");
  return DEXA_OK;
}

int dexa__settings_check(dexa__ctx *c, const cJSON *settings) {
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(settings, "on_truncation");
  if (t && !(cJSON_IsString(t) && (!strcmp(t->valuestring, "continue") ||
                                   !strcmp(t->valuestring, "fail"))))
    return bad(c, "on_truncation must be \"continue\" or \"fail\"");
  const cJSON *s = cJSON_GetObjectItemCaseSensitive(settings, "output_schema");
  return s && !cJSON_IsNull(s) ? check_schema(c, s) : DEXA_OK;
}

void dexa__settings_put(dexa__buf *b, const cJSON *settings) {
  static const char *const kept[] = {"on_truncation", "output_schema"};
  for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(settings, kept[i]);
    if (!v || cJSON_IsNull(v)) continue;
    char *text = cJSON_PrintUnformatted(v);
    if (!text) {
      b->oom = 1;
      return;
    }
    dexa__buf_printf(b, ",\"%s\":", kept[i]);
    dexa__buf_puts(b, text);
    cJSON_free(text);
  }
}

int dexa__settings_fail_on_truncation(dexa__ctx *c, int *rc) {
  cJSON *s;
  *rc = dexa__attr_get_json(c, ATTR_SESSION, &s);
  const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "on_truncation"));
  int fail = v && strcmp(v, "fail") == 0;
  cJSON_Delete(s);
  return fail;
}
