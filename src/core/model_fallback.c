/* Fallback models (see model_fallback.h). */
#include "core/model_fallback.h"

#include <string.h>

const dexa_model *dexa__agent_model(const dexa_agent *a, const char *name) {
  for (size_t i = 0; i < a->model_count; i++)
    if (strcmp(a->models[i]->name, name) == 0) return a->models[i];
  return NULL;
}

static int retryable(int code) {
  int cls = dexa_error_class(code);
  return cls == DEXA_CLASS_TRANSIENT;
}

static int generate(const dexa_model *m, const dexa_model_request *req, dexa_model_reply *reply) {
  int rc = m->vt.generate(m->user_data, req, reply);
  if (rc == DEXA_OK && reply->oom) rc = DEXA_E_NOMEM;
  if (rc == DEXA_OK && reply->item_count == 0) {
    dexa_model_reply_set_error(reply, "the model returned no output", 0);
    rc = DEXA_E_TRANSIENT;
  }
  return rc;
}

static int fallback_event(dexa__ctx *c, int64_t turn, int64_t round, const dexa_model *from,
                          const char *to, int code, const dexa_model_reply *failed) {
  dexa__buf e;
  dexa__event_begin(c, &e, "model_fallback");
  dexa__buf_printf(&e, ",\"turn\":%lld,\"round\":%lld,\"from\":", (long long)turn,
                   (long long)round);
  dexa__buf_json_cstr(&e, from->name);
  dexa__buf_puts(&e, ",\"to\":");
  dexa__buf_json_cstr(&e, to);
  dexa__buf_printf(&e, ",\"error\":{\"code\":%d,\"message\":", code);
  dexa__buf_json_cstr(&e, failed->error ? failed->error : dexa_strerror(code));
  dexa__buf_putc(&e, '}');
  return dexa__event_end(c, &e);
}

int dexa__model_generate(dexa__ctx *c, int64_t turn, int64_t round, const dexa_model **model,
                         const dexa_model_request *req, dexa_model_reply *reply) {
  const dexa_model *first = *model;
  int rc = generate(first, req, reply);
  if (rc == DEXA_OK || !retryable(rc) || c->call->attempt < 2) return rc;
  for (size_t i = 0; i < first->fallback_count; i++) {
    const dexa_model *next = dexa__agent_model(c->agent, first->fallbacks[i]);
    if (!next) continue; /* dexa_agent_new checked the names */
    int erc = fallback_event(c, turn, round, *model, next->name, rc, reply);
    if (erc != DEXA_OK) return erc;
    dexa__model_reply_free(reply);
    dexa__model_reply_init(reply);
    *model = next;
    rc = generate(next, req, reply);
    if (rc == DEXA_OK || !retryable(rc)) return rc;
  }
  return rc;
}
