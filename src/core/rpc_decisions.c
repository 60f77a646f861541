/* The RPCs that answer a call waiting for a person:
 *   resolve_approval {"call_id","decision":"approve"|"reject","note"?}
 *   answer_question {"call_id","answer"}
 * Each is checked against exactly what is pending in PendingToolCalls: a
 * second decision, or one for a call that does not wait, is refused with
 * DEXA_E_NOT_PENDING and changes nothing. */
#include <stdio.h>
#include <string.h>

#include "core/core.h"

/* Loads the pending call of the input's call_id; it must be of kind. */
static int load_pending(dexa__ctx *c, const char *kind, char *key, size_t key_size, cJSON **out) {
  const char *id = dexa__input_str(c, "call_id");
  if (!id || !*id || strlen(id) > 256)
    return dexa__result_fail(c->result, DEXA_E_INVALID_JSON, "call_id must be a string");
  snprintf(key, key_size, ATTR_PENDING_CALLS "%s", id);
  cJSON *p;
  int rc = dexa__attr_get_json(c, key, &p);
  if (rc != DEXA_OK) return rc;
  const char *k = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "kind"));
  if (!p || !k || strcmp(k, kind) != 0) {
    cJSON_Delete(p);
    return dexa__result_failf(c->result, DEXA_E_NOT_PENDING, "no %s is pending for call \"%.64s\"",
                              kind, id);
  }
  *out = p;
  return DEXA_OK;
}

/* Removes the pending entry and delivers the decision to its Step. */
static int deliver(dexa__ctx *c, const char *key, const char *call_id, const cJSON *decision) {
  char channel[320];
  snprintf(channel, sizeof channel, CHAN_TOOL_DECISIONS "%s", call_id);
  char *text = cJSON_PrintUnformatted(decision);
  if (!text) return DEXA_E_NOMEM;
  int rc = dexa__attr_delete(c, key);
  if (rc == DEXA_OK) rc = dexa__result_add_publish(c->result, channel, strlen(channel), text, strlen(text));
  cJSON_free(text);
  return rc;
}

static int decided_event(dexa__ctx *c, const char *type, const char *call_id, const cJSON *d) {
  char *text = cJSON_PrintUnformatted(d);
  dexa__buf e;
  dexa__event_begin(c, &e, type);
  dexa__buf_puts(&e, ",\"call_id\":");
  dexa__buf_json_cstr(&e, call_id);
  dexa__buf_puts(&e, ",\"decision\":");
  dexa__buf_puts(&e, text ? text : "null");
  cJSON_free(text);
  return dexa__event_end(c, &e);
}

int dexa__rpc_resolve_approval(dexa__ctx *c) {
  int rc = dexa__require_session(c);
  if (rc != DEXA_OK) return rc;
  const char *what = dexa__input_str(c, "decision");
  const cJSON *note = cJSON_GetObjectItemCaseSensitive(c->input, "note");
  if (!what || (strcmp(what, "approve") != 0 && strcmp(what, "reject") != 0))
    return dexa__result_fail(c->result, DEXA_E_INVALID_JSON, "decision must be \"approve\" or \"reject\"");
  if (note && !cJSON_IsString(note) && !cJSON_IsNull(note))
    return dexa__result_fail(c->result, DEXA_E_INVALID_JSON, "note must be a string");
  char key[320];
  cJSON *pending = NULL;
  rc = load_pending(c, "approval", key, sizeof key, &pending);
  if (rc != DEXA_OK) return rc;
  const char *call_id = dexa__input_str(c, "call_id");
  cJSON *d = cJSON_CreateObject();
  cJSON_AddStringToObject(d, "decision", what);
  if (cJSON_IsString(note)) cJSON_AddStringToObject(d, "note", note->valuestring);
  rc = deliver(c, key, call_id, d);
  if (rc == DEXA_OK) rc = decided_event(c, "approval_resolved", call_id, d);
  if (rc == DEXA_OK) rc = dexa__result_set_response(c->result, "{\"accepted\":true}", 17);
  cJSON_Delete(d);
  cJSON_Delete(pending);
  return rc;
}

static int is_choice(const cJSON *choices, const char *answer) {
  const cJSON *ch;
  cJSON_ArrayForEach(ch, choices) {
    if (cJSON_IsString(ch) && strcmp(ch->valuestring, answer) == 0) return 1;
  }
  return 0;
}

int dexa__rpc_answer_question(dexa__ctx *c) {
  int rc = dexa__require_session(c);
  if (rc != DEXA_OK) return rc;
  const char *answer = dexa__input_str(c, "answer");
  if (!answer) return dexa__result_fail(c->result, DEXA_E_INVALID_JSON, "answer must be a string");
  if (dexa__is_blank(answer, strlen(answer)))
    return dexa__result_fail(c->result, DEXA_E_EMPTY_MESSAGE, "the answer is blank");
  if ((int64_t)strlen(answer) > c->agent->def.max_message_bytes)
    return dexa__result_fail(c->result, DEXA_E_TOO_LARGE, "the answer is too large");
  char key[320];
  cJSON *pending = NULL;
  rc = load_pending(c, "question", key, sizeof key, &pending);
  if (rc != DEXA_OK) return rc;
  const cJSON *choices = cJSON_GetObjectItemCaseSensitive(pending, "choices");
  if (choices && !is_choice(choices, answer)) {
    cJSON_Delete(pending);
    return dexa__result_fail(c->result, DEXA_E_INVALID_ARG, "the answer must be one of the choices");
  }
  const char *call_id = dexa__input_str(c, "call_id");
  cJSON *d = cJSON_CreateObject();
  cJSON_AddStringToObject(d, "decision", "answer");
  cJSON_AddStringToObject(d, "answer", answer);
  rc = deliver(c, key, call_id, d);
  if (rc == DEXA_OK) rc = decided_event(c, "question_answered", call_id, d);
  if (rc == DEXA_OK) rc = dexa__result_set_response(c->result, "{\"accepted\":true}", 17);
  cJSON_Delete(d);
  cJSON_Delete(pending);
  return rc;
}
