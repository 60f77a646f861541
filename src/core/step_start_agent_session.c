/* StartAgentSession: records the session's settings and empty state, then
 * waits for the first user message. */
#include <string.h>

#include "core/settings.h"

/* The allowed model named by the settings, or the default: a name from the
 * settings never creates a client. */
static const char *allowed_model(const dexa_agent *a, const cJSON *settings) {
  const char *want = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(settings, "model"));
  for (size_t i = 0; want && i < a->model_count; i++)
    if (strcmp(a->models[i]->name, want) == 0) return a->models[i]->name;
  return a->models[0]->name;
}

static int write_initial_state(dexa__ctx *c, const char *model, const cJSON *settings) {
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_puts(&b, "{\"model\":");
  dexa__buf_json_cstr(&b, model);
  dexa__settings_put(&b, settings);
  dexa__buf_printf(&b, ",\"created_ms\":%lld}", (long long)c->call->now_ms);
  int rc = b.oom ? DEXA_E_NOMEM : dexa__attr_put_raw(c, ATTR_SESSION, b.data, b.len);
  dexa__buf_free(&b);
  dexa__transcript t = {1, 1, 0, 0};
  if (rc == DEXA_OK) rc = dexa__transcript_store(c, &t);
  if (rc == DEXA_OK) rc = dexa__turn_set(c, 0, "idle", "chat", NULL);
  if (rc == DEXA_OK) rc = dexa__attr_put_raw(c, ATTR_QUEUE_STATE, "{\"next_id\":1,\"bytes\":0}", 23);
  return rc;
}

int dexa__step_start_agent_session(dexa__ctx *c) {
  const cJSON *settings = cJSON_GetObjectItemCaseSensitive(c->input, "settings");
  if (settings && !cJSON_IsObject(settings) && !cJSON_IsNull(settings))
    return dexa__result_fail(c->result, DEXA_E_INVALID_JSON, "settings must be a JSON object");
  const char *v;
  size_t n;
  int rc = dexa__attr_get(c, ATTR_SESSION, &v, &n);
  if (rc == DEXA_OK) return dexa__decide_next(c, STEP_AWAIT_USER_MESSAGE, NULL); /* a repeat */
  if (rc != DEXA_E_NOT_FOUND) return rc;
  rc = dexa__settings_check(c, settings);
  if (rc != DEXA_OK) return rc;
  const char *model = allowed_model(c->agent, settings);
  rc = write_initial_state(c, model, settings);
  if (rc != DEXA_OK) return rc;
  dexa__buf e;
  dexa__event_begin(c, &e, "session_started");
  dexa__buf_puts(&e, ",\"model\":");
  dexa__buf_json_cstr(&e, model);
  rc = dexa__event_end(c, &e);
  if (rc != DEXA_OK) return rc;
  return dexa__decide_next(c, STEP_AWAIT_USER_MESSAGE, NULL);
}
