/* answer_question {"call_id","answer"?,"action"?,"fields"?}: answers a
 * question that waits in AwaitQuestionAnswer: ask_user's (a non-blank
 * answer, one of its choices when it has some) or a tool's
 * (tool_question.c: action accept, decline or cancel; an accepted answer
 * fits the question's choices or fields). Refused with DEXA_E_NOT_PENDING
 * when that call does not wait for an answer (a second answer included),
 * with DEXA_E_EMPTY_MESSAGE for a blank ask_user answer and with
 * DEXA_E_INVALID_ARG for an answer that does not fit the question;
 * nothing changes then. */
#include <string.h>

#include "core/tool_decisions.h"
#include "core/tool_question.h"

static int is_choice(const cJSON *choices, const char *answer) {
  const cJSON *ch;
  cJSON_ArrayForEach(ch, choices) {
    if (cJSON_IsString(ch) && strcmp(ch->valuestring, answer) == 0) return 1;
  }
  return 0;
}

/* ask_user: a text answer, as in 1.0. */
static int ask_user_decision(dexa__ctx *c, const cJSON *pending, cJSON **decision) {
  const char *answer = dexa__input_str(c, "answer");
  const char *action = dexa__input_str(c, "action");
  if (cJSON_GetObjectItemCaseSensitive(c->input, "fields") || (action && strcmp(action, "accept")))
    return dexa__result_fail(c->result, DEXA_E_INVALID_ARG,
                             "ask_user takes a text answer (no fields, no decline)");
  if (!answer) return dexa__result_fail(c->result, DEXA_E_INVALID_JSON, "answer must be a string");
  if (dexa__is_blank(answer, strlen(answer)))
    return dexa__result_fail(c->result, DEXA_E_EMPTY_MESSAGE, "the answer is blank");
  if ((int64_t)strlen(answer) > c->agent->def.max_message_bytes)
    return dexa__result_fail(c->result, DEXA_E_TOO_LARGE, "the answer is too large");
  const cJSON *choices = cJSON_GetObjectItemCaseSensitive(pending, "choices");
  if (choices && !is_choice(choices, answer))
    return dexa__result_fail(c->result, DEXA_E_INVALID_ARG, "the answer must be one of the choices");
  cJSON *d = cJSON_CreateObject();
  if (!d || !cJSON_AddStringToObject(d, "decision", "answer") ||
      !cJSON_AddStringToObject(d, "answer", answer)) {
    cJSON_Delete(d);
    return DEXA_E_NOMEM;
  }
  *decision = d;
  return DEXA_OK;
}

int dexa__rpc_answer_question(dexa__ctx *c) {
  int rc = dexa__require_session(c);
  if (rc != DEXA_OK) return rc;
  const cJSON *answer = cJSON_GetObjectItemCaseSensitive(c->input, "answer");
  if (answer && !cJSON_IsString(answer))
    return dexa__result_fail(c->result, DEXA_E_INVALID_JSON, "answer must be a string");
  char key[320];
  cJSON *pending = NULL, *d = NULL;
  rc = dexa__pending_load(c, "question", key, sizeof key, &pending);
  if (rc != DEXA_OK) return rc;
  rc = dexa__tool_question_is_tool(pending) ? dexa__tool_question_decision(c, pending, &d)
                                            : ask_user_decision(c, pending, &d);
  char *text = rc == DEXA_OK ? cJSON_PrintUnformatted(d) : NULL;
  if (rc == DEXA_OK && !text) rc = DEXA_E_NOMEM;
  if (rc == DEXA_OK)
    rc = dexa__decision_deliver(c, key, dexa__input_str(c, "call_id"), text, strlen(text),
                                "question_answered");
  if (rc == DEXA_OK) rc = dexa__result_set_response(c->result, "{\"accepted\":true}", 17);
  cJSON_free(text);
  cJSON_Delete(d);
  cJSON_Delete(pending);
  return rc;
}
