/* answer_question {"call_id","answer"}: answers an ask_user call that waits
 * in AwaitQuestionAnswer. Refused with DEXA_E_NOT_PENDING when that call
 * does not wait for an answer (a second answer included), with
 * DEXA_E_EMPTY_MESSAGE for a blank answer and with DEXA_E_INVALID_ARG for
 * an answer that is not one of the offered choices; nothing changes then. */
#include <string.h>

#include "core/tool_decisions.h"

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
  rc = dexa__pending_load(c, "question", key, sizeof key, &pending);
  if (rc != DEXA_OK) return rc;
  const cJSON *choices = cJSON_GetObjectItemCaseSensitive(pending, "choices");
  if (choices && !is_choice(choices, answer)) {
    cJSON_Delete(pending);
    return dexa__result_fail(c->result, DEXA_E_INVALID_ARG, "the answer must be one of the choices");
  }
  dexa__buf d; /* {"decision":"answer","answer":..}: one out-of-memory flag */
  dexa__buf_init(&d);
  dexa__buf_puts(&d, "{\"decision\":\"answer\",\"answer\":");
  dexa__buf_json_cstr(&d, answer);
  dexa__buf_putc(&d, '}');
  rc = d.oom ? DEXA_E_NOMEM
             : dexa__decision_deliver(c, key, dexa__input_str(c, "call_id"), d.data, d.len,
                                      "question_answered");
  if (rc == DEXA_OK) rc = dexa__result_set_response(c->result, "{\"accepted\":true}", 17);
  dexa__buf_free(&d);
  cJSON_Delete(pending);
  return rc;
}
