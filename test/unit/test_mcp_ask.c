/* Elicitation and sampling requests as questions and answers as results
 * (src/tools/mcp_ask.c): the restricted schema as fields, defaults filled
 * in (SEP-1034), URL mode, what cannot be shown, request keys that ignore
 * _meta, answers used once in order, sampling requests and results. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testing.h"
#include "tools/mcp_ask.h"

static char *print(const cJSON *v) {
  static char buf[4096];
  char *t = cJSON_PrintUnformatted(v);
  snprintf(buf, sizeof buf, "%s", t ? t : "(null)");
  cJSON_free(t);
  return buf;
}

static const char schema_params[] =
    "{\"message\":\"Who?\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{"
    "\"name\":{\"type\":\"string\",\"title\":\"Name\",\"minLength\":2,\"default\":\"John Doe\"},"
    "\"age\":{\"type\":\"integer\",\"minimum\":0,\"default\":30},"
    "\"score\":{\"type\":\"number\",\"default\":95.5},"
    "\"status\":{\"type\":\"string\",\"oneOf\":[{\"const\":\"a\",\"title\":\"Active\"},{\"const\":\"i\",\"title\":\"Idle\"}],\"default\":\"a\"},"
    "\"tags\":{\"type\":\"array\",\"items\":{\"enum\":[\"x\",\"y\"]},\"maxItems\":2},"
    "\"ok\":{\"type\":\"boolean\",\"default\":true}},\"required\":[\"age\"]}}";

static void test_a_form_elicitation_becomes_fields(void) {
  cJSON *p = cJSON_Parse(schema_params);
  const char *why = NULL;
  char *q = dexa__mcp_elicitation_question(p, "el:1", &why);
  CHECK(q && !why);
  CHECK_CONTAINS(q, "\"prompt\":\"Who?\",\"key\":\"el:1\",\"purpose\":\"elicitation\"");
  CHECK_CONTAINS(q, "{\"name\":\"name\",\"type\":\"string\",\"required\":false,\"title\":\"Name\",\"min_length\":2,\"default\":\"John Doe\"}");
  CHECK_CONTAINS(q, "{\"name\":\"age\",\"type\":\"integer\",\"required\":true,\"minimum\":0,\"default\":30}");
  CHECK_CONTAINS(q, "\"enum\":[\"a\",\"i\"],\"enum_names\":[\"Active\",\"Idle\"],\"default\":\"a\"");
  CHECK_CONTAINS(q, "{\"name\":\"tags\",\"type\":\"array\",\"required\":false,\"max_items\":2,\"enum\":[\"x\",\"y\"]}");
  free(q);
  cJSON_Delete(p);
}

static void test_an_accepted_answer_gets_the_defaults_of_what_it_left_out(void) {
  cJSON *p = cJSON_Parse(schema_params);
  cJSON *a = cJSON_Parse("{\"action\":\"accept\",\"fields\":{\"age\":41,\"tags\":[\"y\"]}}");
  cJSON *r = dexa__mcp_elicitation_result(p, a);
  CHECK_STR(print(r), "{\"action\":\"accept\",\"content\":{\"name\":\"John Doe\",\"age\":41,\"score\":95.5,"
                      "\"status\":\"a\",\"tags\":[\"y\"],\"ok\":true}}");
  cJSON_Delete(r);
  cJSON_Delete(a);
  a = cJSON_Parse("{\"action\":\"decline\"}");
  r = dexa__mcp_elicitation_result(p, a);
  CHECK_STR(print(r), "{\"action\":\"decline\"}");
  cJSON_Delete(r);
  cJSON_Delete(a);
  cJSON_Delete(p);
}

static void test_url_mode_and_what_cannot_be_shown(void) {
  cJSON *p = cJSON_Parse("{\"mode\":\"url\",\"message\":\"Pay\",\"url\":\"https://pay.example/x\",\"elicitationId\":\"e1\"}");
  const char *why = NULL;
  char *q = dexa__mcp_elicitation_question(p, "el:2", &why);
  CHECK_CONTAINS(q, "\"url\":\"https://pay.example/x\",\"purpose\":\"elicitation_url\"");
  free(q);
  cJSON *a = cJSON_Parse("{\"action\":\"accept\"}");
  cJSON *r = dexa__mcp_elicitation_result(p, a);
  CHECK_STR(print(r), "{\"action\":\"accept\"}"); /* no content in URL mode */
  cJSON_Delete(r);
  cJSON_Delete(a);
  cJSON_Delete(p);
  p = cJSON_Parse("{\"mode\":\"url\",\"message\":\"x\",\"url\":\"javascript:alert(1)\"}");
  CHECK(dexa__mcp_elicitation_question(p, "k", &why) == NULL && why);
  cJSON_Delete(p);
  p = cJSON_Parse("{\"message\":\"x\",\"requestedSchema\":{\"properties\":{\"o\":{\"type\":\"object\"}}}}");
  why = NULL;
  CHECK(dexa__mcp_elicitation_question(p, "k", &why) == NULL);
  CHECK_CONTAINS(why, "a type elicitation does not allow");
  cJSON_Delete(p);
  p = cJSON_Parse("{\"requestedSchema\":{}}");
  why = NULL;
  CHECK(dexa__mcp_elicitation_question(p, "k", &why) == NULL && why);
  cJSON_Delete(p);
}

static void test_keys_ignore_meta_and_answers_are_used_once_in_order(void) {
  cJSON *m1 = cJSON_Parse("{\"method\":\"elicitation/create\",\"id\":1,\"params\":{\"message\":\"a\",\"_meta\":{\"x\":1}}}");
  cJSON *m2 = cJSON_Parse("{\"method\":\"elicitation/create\",\"id\":9,\"params\":{\"message\":\"a\"}}");
  cJSON *m3 = cJSON_Parse("{\"method\":\"sampling/createMessage\",\"id\":2,\"params\":{\"message\":\"a\"}}");
  char k1[32], k2[32], k3[32];
  dexa__mcp_request_key(m1, k1, sizeof k1);
  dexa__mcp_request_key(m2, k2, sizeof k2);
  dexa__mcp_request_key(m3, k3, sizeof k3);
  CHECK_STR(k1, k2);
  CHECK(strncmp(k1, "el:", 3) == 0 && strncmp(k3, "sa:", 3) == 0 && strlen(k1) == 19);
  char text[300];
  snprintf(text, sizeof text, "[{\"key\":\"%s\",\"answer\":\"first\"},{\"key\":\"auth:1\"},{\"key\":\"%s\",\"answer\":\"second\"}]", k1, k1);
  cJSON *answers = cJSON_Parse(text);
  unsigned used = 0;
  const cJSON *a = dexa__mcp_find_answer(answers, k1, &used);
  CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(a, "answer")), "first");
  a = dexa__mcp_find_answer(answers, k1, &used);
  CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(a, "answer")), "second");
  CHECK(dexa__mcp_find_answer(answers, k1, &used) == NULL);
  CHECK(dexa__mcp_find_answer(answers, k3, &used) == NULL);
  cJSON_Delete(answers);
  cJSON_Delete(m1);
  cJSON_Delete(m2);
  cJSON_Delete(m3);
}

static void test_sampling_requests_questions_and_results(void) {
  cJSON *p = cJSON_Parse(
      "{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":\"hi\"}},"
      "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"yes?\"},{\"type\":\"image\",\"data\":\"AA\"}]},"
      "{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":\"sum up\"}}],"
      "\"systemPrompt\":\"Be brief\",\"maxTokens\":64,\"modelPreferences\":{}}");
  char *r = dexa__mcp_sampling_request(p);
  CHECK_STR(r, "{\"messages\":[{\"role\":\"user\",\"text\":\"hi\"},{\"role\":\"assistant\",\"text\":\"yes?\\n[image content left out]\"},"
               "{\"role\":\"user\",\"text\":\"sum up\"}],\"system\":\"Be brief\",\"max_tokens\":64}");
  free(r);
  char *q = dexa__mcp_sampling_question("docs", p, "sa:1");
  CHECK_STR(q, "{\"prompt\":\"The MCP server docs asks to run the model on: \\\"sum up\\\"\","
               "\"choices\":[\"Allow\",\"Deny\"],\"purpose\":\"sampling\",\"key\":\"sa:1\"}");
  free(q);
  cJSON_Delete(p);
  cJSON *res = dexa__mcp_sampling_result("{\"text\":\"short\",\"model\":\"mock/dex\"}");
  CHECK_STR(print(res), "{\"content\":{\"type\":\"text\",\"text\":\"short\"},\"role\":\"assistant\",\"model\":\"mock/dex\",\"stopReason\":\"endTurn\"}");
  cJSON_Delete(res);
  p = cJSON_Parse("{\"messages\":[]}");
  CHECK(dexa__mcp_sampling_request(p) == NULL);
  cJSON_Delete(p);
}

int main(void) {
  RUN(test_a_form_elicitation_becomes_fields);
  RUN(test_an_accepted_answer_gets_the_defaults_of_what_it_left_out);
  RUN(test_url_mode_and_what_cannot_be_shown);
  RUN(test_keys_ignore_meta_and_answers_are_used_once_in_order);
  RUN(test_sampling_requests_questions_and_results);
  TEST_MAIN_END();
}
