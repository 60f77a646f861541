/* The checks every RPC input passes before its handler runs. An RPC input
 * is a client's (through HTTP, a binding, a CLI): it must be exactly one
 * JSON object in valid UTF-8, take only the RPC's own members, each once,
 * and hold no U+0000 (text is stored and handed to C code as strings).
 * A recovery Step's recovery_error is the host's: {"code":int,"message":..}. */
#include <string.h>

#include "core/flow_table.h"
#include "util/json_input.h"
#include "util/json_num.h"
#include "util/json_span.h"

static int member_allowed(const char *const *fields, const char *name) {
  for (size_t i = 0; fields && fields[i]; i++)
    if (strcmp(fields[i], name) == 0) return 1;
  return 0;
}

int dexa__rpc_input_check(dexa__ctx *c, const char *rpc, const char *const *fields) {
  const dexa_call *call = c->call;
  int rc = dexa__json_input_check(call->input, call->input_len);
  if (rc == DEXA_E_INVALID_ARG)
    return dexa__result_failf(c->result, rc, "the input of %s holds U+0000", rpc);
  if (rc != DEXA_OK || !cJSON_IsObject(c->input))
    return dexa__result_failf(c->result, DEXA_E_INVALID_JSON,
                              "the input of %s must be one JSON object in UTF-8", rpc);
  for (const cJSON *m = c->input->child; m; m = m->next) {
    if (!member_allowed(fields, m->string))
      return dexa__result_failf(c->result, DEXA_E_INVALID_JSON, "%s takes no member \"%.64s\"", rpc,
                                m->string);
    for (const cJSON *o = c->input->child; o != m; o = o->next)
      if (strcmp(o->string, m->string) == 0)
        return dexa__result_failf(c->result, DEXA_E_INVALID_JSON, "%s: member \"%.64s\" twice",
                                  rpc, m->string);
  }
  return DEXA_OK;
}

int dexa__recovery_error_check(dexa__ctx *c) {
  const dexa_call *call = c->call;
  if (!call->recovery_error) return DEXA_OK;
  int rc = dexa__json_validate(call->recovery_error, call->recovery_error_len) == 0
               ? DEXA_OK
               : DEXA_E_INVALID_JSON;
  cJSON *e = rc == DEXA_OK ? dexa__json_parse(call->recovery_error, call->recovery_error_len,
                                              DEXA_E_INVALID_JSON, &rc)
                           : NULL;
  if (rc == DEXA_E_NOMEM) return dexa__result_fail(c->result, rc, NULL);
  int64_t code;
  int ok = e && cJSON_IsObject(e) &&
           dexa__json_exact_int(cJSON_GetObjectItemCaseSensitive(e, "code"), &code) &&
           cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "message"));
  cJSON_Delete(e);
  if (ok) return DEXA_OK;
  return dexa__result_fail(c->result, DEXA_E_INVALID_JSON,
                           "recovery_error must be {\"code\":<integer>,\"message\":<string>}");
}
