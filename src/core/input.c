/* Reading a Step's or RPC's input. */
#include "core/core.h"
#include "util/json_num.h"
#include "util/json_span.h"

int64_t dexa__json_int(const cJSON *v, int64_t dflt) {
  int64_t n;
  return dexa__json_exact_int(v, &n) ? n : dflt;
}

int dexa__input_i64(dexa__ctx *c, const char *name, int64_t *out) {
  return dexa__json_exact_int(cJSON_GetObjectItemCaseSensitive(c->input, name), out)
             ? DEXA_OK
             : DEXA_E_INVALID_JSON;
}

cJSON *dexa__json_parse(const char *s, size_t n, int bad, int *rc) {
  cJSON *v = s ? cJSON_ParseWithLength(s, n) : NULL;
  *rc = v ? DEXA_OK : s && dexa__json_validate(s, n) == 0 ? DEXA_E_NOMEM : bad;
  return v;
}

int dexa__json_set(cJSON *obj, const char *key, cJSON *item) {
  if (!item) return DEXA_E_NOMEM;
  int ok = cJSON_GetObjectItemCaseSensitive(obj, key)
               ? cJSON_ReplaceItemInObjectCaseSensitive(obj, key, item)
               : cJSON_AddItemToObject(obj, key, item);
  if (!ok) {
    cJSON_Delete(item);
    return DEXA_E_NOMEM;
  }
  /* cJSON 1.7.15 replaces even when it could not copy the key (the member
   * then prints as ""): the item, now obj's, tells. */
  return item->string ? DEXA_OK : DEXA_E_NOMEM;
}

const char *dexa__input_str(dexa__ctx *c, const char *name) {
  return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c->input, name));
}

/* Decodes one UTF-8 code point; returns its length, 0 when invalid. */
static size_t utf8_next(const unsigned char *s, size_t n, unsigned *cp) {
  if (s[0] < 0x80) {
    *cp = s[0];
    return 1;
  }
  size_t len = s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC0 ? 2 : 0;
  if (!len || len > n) return 0;
  *cp = s[0] & (0x3F >> (len - 1));
  for (size_t i = 1; i < len; i++) *cp = (*cp << 6) | (s[i] & 0x3F);
  return len;
}

/* Python's str.isspace(): the Unicode White_Space-like set it uses. */
static int py_space(unsigned cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 ||
         cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
         cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

int dexa__is_blank(const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0;
  while (i < n) {
    unsigned cp;
    size_t l = utf8_next(p + i, n - i, &cp);
    if (!l || !py_space(cp)) return 0;
    i += l;
  }
  return 1;
}
