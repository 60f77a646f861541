/* AwaitQuestionAnswer: ask_user waits here for the person's answer (text,
 * or one of 2 to 8 choices), holding no worker; the answer is the tool
 * result in the same turn. A tool's own question (tool_question.c) waits
 * here too, and its answer runs the call again. A steer or stop records a
 * cancellation. */
#include <string.h>

#include "core/tool_decisions.h"
#include "core/tool_question.h"

static int answered(dexa__ctx *c, const dexa__tool_call *t, const cJSON *d, int fired) {
  (void)fired;
  if (dexa__tool_question_is_tool(c->input)) return dexa__tool_question_answered(c, t, d);
  if (strcmp(dexa__decision_kind(d), "answer") != 0) return dexa__decision_cancelled(c, t, d);
  const char *answer = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "answer"));
  if (!answer) answer = "";
  return dexa__tool_call_finish(c, t, "ok", answer, strlen(answer), NULL, 0);
}

int dexa__step_await_question_answer(dexa__ctx *c) { return dexa__waiting_step(c, 0, answered); }
