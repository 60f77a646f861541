/* Attribute access for Steps and RPCs: the host's reader with this
 * dispatch's own staged writes layered on top (read-your-writes). */
#include <string.h>

#include "core/core.h"

int dexa__attr_get(dexa__ctx *c, const char *key, const char **val, size_t *len) {
  size_t kl = strlen(key);
  if (dexa__result_find_write(c->result, key, kl, val, len))
    return *val ? DEXA_OK : DEXA_E_NOT_FOUND;
  const dexa_call *call = c->call;
  int rc = call->attr_get(call->attr_user_data, key, kl, val, len);
  if (rc == DEXA_OK && !*val) return DEXA_E_NOT_FOUND;
  if (rc == DEXA_OK || rc == DEXA_E_NOT_FOUND) return rc;
  return DEXA_E_CALLBACK_FAILED;
}

int dexa__attr_get_json(dexa__ctx *c, const char *key, cJSON **out) {
  const char *v;
  size_t n;
  *out = NULL;
  int rc = dexa__attr_get(c, key, &v, &n);
  if (rc == DEXA_E_NOT_FOUND) return DEXA_OK;
  if (rc != DEXA_OK) return rc;
  *out = dexa__json_parse(v, n, DEXA_E_CORRUPT, &rc);
  return rc;
}

int dexa__attr_put_raw(dexa__ctx *c, const char *key, const char *json, size_t len) {
  return dexa__result_add_write(c->result, key, strlen(key), json, len);
}

int dexa__attr_put_json(dexa__ctx *c, const char *key, const cJSON *value) {
  char *text = cJSON_PrintUnformatted(value);
  if (!text) return DEXA_E_NOMEM;
  int rc = dexa__attr_put_raw(c, key, text, strlen(text));
  cJSON_free(text);
  return rc;
}

int dexa__attr_delete(dexa__ctx *c, const char *key) {
  return dexa__result_add_write(c->result, key, strlen(key), NULL, 0);
}

int dexa__attr_scan(dexa__ctx *c, const char *prefix, dexa_attr_visit_fn visit, void *ctx) {
  /* A visitor's own error code comes back through the host unchanged. */
  const dexa_call *call = c->call;
  int rc = call->attr_scan(call->attr_user_data, prefix, strlen(prefix), visit, ctx);
  return rc > 0 ? DEXA_E_CALLBACK_FAILED : rc;
}
