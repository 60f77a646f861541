/* A tool that asks the person something mid-call (dexa_tool_output_ask):
 * the call waits in AwaitQuestionAnswer as ask_user does, the answer RPC
 * takes text, a choice, fields, a decline or a cancel (and refuses what
 * does not fit the question, changing nothing), and the call's own Step
 * runs again with every answer so far. Also sampling: a tool runs one model
 * call through the session's model and the session records it. On the
 * in-memory host through dexa_dispatch. */
#include <cjson/cJSON.h>
#include <dexagents/dexagents.h>

#include "support/memhost.h"
#include "testing.h"

typedef struct probe {
  int calls;
  int effect;
  char answers[2048];
} probe;

static probe form_probe, write_probe, many_probe, bad_probe, sample_probe;

static void remember(probe *p, const dexa_tool_invocation *inv) {
  const char *a;
  size_t n;
  p->calls++;
  p->effect = dexa_tool_invocation_effect(inv);
  dexa_tool_invocation_answers(inv, &a, &n);
  snprintf(p->answers, sizeof p->answers, "%.*s", (int)n, a);
}

static const char form_question[] =
    "{\"prompt\":\"Who are you?\",\"key\":\"k-form\",\"purpose\":\"elicitation\","
    "\"fields\":[{\"name\":\"name\",\"type\":\"string\",\"required\":true,\"title\":\"Name\"},"
    "{\"name\":\"age\",\"type\":\"integer\",\"default\":30},"
    "{\"name\":\"tier\",\"type\":\"string\",\"enum\":[\"free\",\"pro\"]},"
    "{\"name\":\"tags\",\"type\":\"array\",\"enum\":[\"a\",\"b\"]},"
    "{\"name\":\"ok\",\"type\":\"boolean\"}],\"junk\":1}";

/* Asks once; then returns what it was answered. */
static int ask_form(void *u, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  remember(&form_probe, inv);
  if (!strcmp(form_probe.answers, "[]")) return dexa_tool_output_ask(out, form_question, strlen(form_question));
  return dexa_tool_output_set_text(out, form_probe.answers, strlen(form_probe.answers), 0);
}

/* A write that asks for a confirmation by choices. */
static int ask_write(void *u, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  remember(&write_probe, inv);
  static const char q[] = "{\"prompt\":\"Really send?\",\"choices\":[\"Send\",\"Keep\"],\"key\":\"k-w\"}";
  if (!strcmp(write_probe.answers, "[]")) return dexa_tool_output_ask(out, q, strlen(q));
  return dexa_tool_output_set_text(out, write_probe.answers, strlen(write_probe.answers), 0);
}

/* Never satisfied: asks at every run. */
static int ask_forever(void *u, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  remember(&many_probe, inv);
  static const char q[] = "{\"prompt\":\"Again?\",\"url\":\"https://example.com/sign-in\",\"purpose\":\"sign_in\"}";
  return dexa_tool_output_ask(out, q, strlen(q));
}

/* A question the session cannot show: one choice. */
static int ask_bad(void *u, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  remember(&bad_probe, inv);
  static const char q[] = "{\"prompt\":\"One?\",\"choices\":[\"only\"]}";
  return dexa_tool_output_ask(out, q, strlen(q));
}

static int sample(void *u, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  remember(&sample_probe, inv);
  static const char req[] =
      "{\"messages\":[{\"role\":\"user\",\"text\":\"hello sampler\"}],\"system\":\"Be brief.\","
      "\"max_tokens\":50}";
  char *reply = NULL;
  size_t n = 0;
  int rc = dexa_tool_invocation_sample(inv, req, strlen(req), &reply, &n);
  if (rc != DEXA_OK) return dexa_tool_output_set_text(out, dexa_error_name(rc), strlen(dexa_error_name(rc)), 1);
  rc = dexa_tool_output_set_text(out, reply, n, 0);
  dexa_free(reply);
  return rc;
}

typedef struct fixture {
  dexa_agent *agent;
  memhost *h;
} fixture;

static fixture setup(void) {
  memset(&form_probe, 0, sizeof form_probe);
  memset(&write_probe, 0, sizeof write_probe);
  memset(&many_probe, 0, sizeof many_probe);
  memset(&bad_probe, 0, sizeof bad_probe);
  memset(&sample_probe, 0, sizeof sample_probe);
  dexa_model *m;
  dexa_model_demo_new(&m, "mock/dex");
  dexa_tool_source *tools;
  dexa_function_tools_new(&tools, "fns");
  dexa_function_tools_add(tools, "ask_form", "", NULL, DEXA_TOOL_READ, DEXA_APPROVAL_NONE, ask_form, NULL);
  dexa_function_tools_add(tools, "ask_write", "", NULL, DEXA_TOOL_WRITE, DEXA_APPROVAL_NONE, ask_write, NULL);
  dexa_function_tools_add(tools, "ask_forever", "", NULL, DEXA_TOOL_READ, DEXA_APPROVAL_NONE, ask_forever, NULL);
  dexa_function_tools_add(tools, "ask_bad", "", NULL, DEXA_TOOL_READ, DEXA_APPROVAL_NONE, ask_bad, NULL);
  dexa_function_tools_add(tools, "sample", "", NULL, DEXA_TOOL_READ, DEXA_APPROVAL_NONE, sample, NULL);
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.models = &m;
  def.model_count = 1;
  def.tool_sources = &tools;
  def.tool_source_count = 1;
  def.builtin_tools = DEXA_BUILTIN_ALL;
  fixture f = {NULL, NULL};
  dexa_agent_new(&f.agent, &def, NULL, 0);
  dexa_tool_source_free(tools);
  dexa_model_free(m);
  f.h = memhost_new(f.agent, "s-questions");
  memhost_start(f.h, NULL);
  memhost_run(f.h);
  return f;
}

static void teardown(fixture *f) {
  memhost_free(f->h);
  dexa_agent_free(f->agent);
}

static int send_text(fixture *f, const char *text) {
  cJSON *in = cJSON_CreateObject();
  cJSON_AddStringToObject(in, "text", text);
  char *json = cJSON_PrintUnformatted(in);
  int rc = memhost_rpc(f->h, "send_message", json, NULL);
  free(json);
  cJSON_Delete(in);
  return rc;
}

static int answer(fixture *f, const char *input) { return memhost_rpc(f->h, "answer_question", input, NULL); }

static char *snapshot(fixture *f) {
  char *s = NULL;
  memhost_rpc(f->h, "snapshot", "{}", &s);
  return s;
}

static const char *result_of(fixture *f) {
  return memhost_attr(f->h, "AgentMessages/00000000000000000003");
}

static void test_tool_question_waits_and_the_answer_runs_the_call_again(void) {
  fixture f = setup();
  send_text(&f, "/tool ask_form {}");
  memhost_run(f.h);
  CHECK_EQ_INT(form_probe.calls, 1);
  CHECK_EQ_INT(form_probe.effect, DEXA_TOOL_READ);
  CHECK_EQ_INT(memhost_pending(f.h, "AwaitQuestionAnswer"), 1);
  const char *p = memhost_attr(f.h, "PendingToolCalls/demo-t1r1c1");
  CHECK_CONTAINS(p, "\"kind\":\"question\"");
  CHECK_CONTAINS(p, "\"asked_by\":\"tool\"");
  CHECK_CONTAINS(p, "\"resume\":\"CallTool\"");
  CHECK_CONTAINS(p, "\"default\":30");
  CHECK(!strstr(p, "junk")); /* only what the session shows is kept */
  CHECK_CONTAINS(memhost_events(f.h), "\"type\":\"question_asked\"");
  CHECK_CONTAINS(memhost_events(f.h), "\"name\":\"ask_form\",\"arguments\":{},\"kind\":\"question\",\"asked_by\":\"tool\"");
  CHECK(result_of(&f) == NULL);
  CHECK_EQ_INT(answer(&f, "{\"call_id\":\"demo-t1r1c1\",\"fields\":{\"name\":\"Ada\",\"tags\":[\"b\"],\"ok\":true}}"),
               DEXA_OK);
  memhost_run(f.h);
  CHECK_EQ_INT(form_probe.calls, 2);
  CHECK_STR(form_probe.answers,
            "[{\"key\":\"k-form\",\"action\":\"accept\",\"fields\":{\"name\":\"Ada\",\"tags\":[\"b\"],\"ok\":true}}]");
  CHECK_CONTAINS(result_of(&f), "\"status\":\"ok\"");
  CHECK_CONTAINS(memhost_events(f.h), "\"type\":\"question_answered\"");
  CHECK(memhost_attr(f.h, "PendingToolCalls/demo-t1r1c1") == NULL);
  CHECK_EQ_INT(memhost_dispatches(f.h, "CallTool"), 2);
  teardown(&f);
}

static void test_answers_that_do_not_fit_are_refused_and_change_nothing(void) {
  fixture f = setup();
  send_text(&f, "/tool ask_form {}");
  memhost_run(f.h);
  char *before = snapshot(&f);
  static const struct {
    const char *input;
    int rc;
  } bad[] = {
      {"{\"call_id\":\"demo-t1r1c1\",\"fields\":{\"name\":\"Ada\",\"nick\":\"x\"}}", DEXA_E_INVALID_ARG},
      {"{\"call_id\":\"demo-t1r1c1\",\"fields\":{\"name\":7}}", DEXA_E_INVALID_ARG},
      {"{\"call_id\":\"demo-t1r1c1\",\"fields\":{\"name\":\"Ada\",\"age\":2.5}}", DEXA_E_INVALID_ARG},
      {"{\"call_id\":\"demo-t1r1c1\",\"fields\":{\"name\":\"Ada\",\"tier\":\"gold\"}}", DEXA_E_INVALID_ARG},
      {"{\"call_id\":\"demo-t1r1c1\",\"fields\":{\"name\":\"Ada\",\"tags\":[\"c\"]}}", DEXA_E_INVALID_ARG},
      {"{\"call_id\":\"demo-t1r1c1\",\"fields\":{\"age\":3}}", DEXA_E_INVALID_ARG}, /* name required */
      {"{\"call_id\":\"demo-t1r1c1\"}", DEXA_E_INVALID_ARG},                       /* likewise */
      {"{\"call_id\":\"demo-t1r1c1\",\"fields\":[1]}", DEXA_E_INVALID_JSON},
      {"{\"call_id\":\"demo-t1r1c1\",\"action\":\"decline\",\"fields\":{}}", DEXA_E_INVALID_ARG},
      {"{\"call_id\":\"demo-t1r1c1\",\"action\":\"maybe\"}", DEXA_E_INVALID_ARG},
      {"{\"call_id\":\"demo-t1r1c1\",\"answer\":3}", DEXA_E_INVALID_JSON},
      {"{\"call_id\":\"nope\",\"action\":\"decline\"}", DEXA_E_NOT_PENDING},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int rc = answer(&f, bad[i].input);
    if (rc != bad[i].rc) fprintf(stderr, "    %s\n", bad[i].input);
    CHECK_EQ_INT(rc, bad[i].rc);
  }
  char *after = snapshot(&f);
  CHECK_STR(after, before);
  free(before);
  free(after);
  CHECK_EQ_INT(answer(&f, "{\"call_id\":\"demo-t1r1c1\",\"action\":\"decline\"}"), DEXA_OK);
  CHECK_EQ_INT(answer(&f, "{\"call_id\":\"demo-t1r1c1\",\"action\":\"cancel\"}"), DEXA_E_NOT_PENDING);
  memhost_run(f.h);
  CHECK_STR(form_probe.answers, "[{\"key\":\"k-form\",\"action\":\"decline\"}]");
  teardown(&f);
}

static void test_a_write_asks_and_its_single_attempt_step_runs_again(void) {
  fixture f = setup();
  send_text(&f, "/tool ask_write {}");
  memhost_run(f.h);
  CHECK_EQ_INT(write_probe.calls, 1);
  CHECK_EQ_INT(write_probe.effect, DEXA_TOOL_WRITE);
  CHECK_CONTAINS(memhost_attr(f.h, "PendingToolCalls/demo-t1r1c1"), "\"resume\":\"CallSingleAttemptTool\"");
  CHECK_EQ_INT(answer(&f, "{\"call_id\":\"demo-t1r1c1\",\"answer\":\"Later\"}"), DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(answer(&f, "{\"call_id\":\"demo-t1r1c1\",\"answer\":\"Send\"}"), DEXA_OK);
  memhost_run(f.h);
  CHECK_EQ_INT(write_probe.calls, 2);
  CHECK_EQ_INT(memhost_dispatches(f.h, "CallSingleAttemptTool"), 2);
  CHECK_STR(write_probe.answers, "[{\"key\":\"k-w\",\"action\":\"accept\",\"answer\":\"Send\"}]");
  CHECK_CONTAINS(result_of(&f), "\"status\":\"ok\"");
  teardown(&f);
}

static void test_stop_while_a_tool_question_waits_cancels_the_call(void) {
  fixture f = setup();
  send_text(&f, "/tool ask_form {}");
  memhost_run(f.h);
  CHECK_EQ_INT(memhost_rpc(f.h, "cancel_turn", "{}", NULL), DEXA_OK);
  memhost_run(f.h);
  CHECK_EQ_INT(form_probe.calls, 1);
  CHECK_CONTAINS(result_of(&f), "\"status\":\"cancelled\"");
  CHECK_CONTAINS(result_of(&f), "while this call waited for an answer");
  CHECK(memhost_attr(f.h, "PendingToolCalls/demo-t1r1c1") == NULL);
  teardown(&f);
}

/* A stop that lands while the tool runs: its question is not asked (no one
 * would answer it), the call is cancelled and the turn ends. */
static memhost *stop_host;
static int ask_after_stop(void *u, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  remember(&many_probe, inv);
  memhost_rpc(stop_host, "cancel_turn", "{}", NULL);
  static const char q[] = "{\"prompt\":\"Too late?\"}";
  return dexa_tool_output_ask(out, q, strlen(q));
}

static void test_a_stop_during_the_run_cancels_the_question(void) {
  memset(&many_probe, 0, sizeof many_probe);
  dexa_model *m;
  dexa_model_demo_new(&m, "mock/dex");
  dexa_tool_source *tools;
  dexa_function_tools_new(&tools, "fns");
  dexa_function_tools_add(tools, "ask_late", "", NULL, DEXA_TOOL_READ, DEXA_APPROVAL_NONE, ask_after_stop, NULL);
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.models = &m;
  def.model_count = 1;
  def.tool_sources = &tools;
  def.tool_source_count = 1;
  dexa_agent *a = NULL;
  dexa_agent_new(&a, &def, NULL, 0);
  dexa_tool_source_free(tools);
  dexa_model_free(m);
  fixture f = {a, memhost_new(a, "s-stop-ask")};
  stop_host = f.h;
  memhost_start(f.h, NULL);
  memhost_run(f.h);
  send_text(&f, "/tool ask_late {}");
  memhost_run(f.h);
  CHECK_EQ_INT(many_probe.calls, 1);
  CHECK_EQ_INT(memhost_pending(f.h, "AwaitQuestionAnswer"), 0);
  CHECK(memhost_attr(f.h, "PendingToolCalls/demo-t1r1c1") == NULL);
  CHECK_CONTAINS(result_of(&f), "\"status\":\"cancelled\"");
  CHECK_CONTAINS(memhost_attr(f.h, "AgentTurn"), "\"status\":\"cancelled\"");
  teardown(&f);
}

static void test_a_tool_that_keeps_asking_fails_after_sixteen_questions(void) {
  fixture f = setup();
  send_text(&f, "/tool ask_forever {}");
  memhost_run(f.h);
  for (int i = 0; i < 16; i++) {
    CHECK_CONTAINS(memhost_attr(f.h, "PendingToolCalls/demo-t1r1c1"), "\"url\":\"https://example.com/sign-in\"");
    CHECK_EQ_INT(answer(&f, "{\"call_id\":\"demo-t1r1c1\"}"), DEXA_OK);
    memhost_run(f.h);
  }
  CHECK_EQ_INT(many_probe.calls, 17);
  CHECK(memhost_attr(f.h, "PendingToolCalls/demo-t1r1c1") == NULL);
  CHECK_CONTAINS(result_of(&f), "more than 16 questions");
  teardown(&f);
}

static void test_a_question_the_session_cannot_show_is_the_calls_error(void) {
  fixture f = setup();
  send_text(&f, "/tool ask_bad {}");
  memhost_run(f.h);
  CHECK_EQ_INT(bad_probe.calls, 1);
  CHECK_EQ_INT(memhost_pending(f.h, "AwaitQuestionAnswer"), 0);
  CHECK_CONTAINS(result_of(&f), "\"status\":\"error\"");
  CHECK_CONTAINS(result_of(&f), "cannot show: choices are 2 to 8");
  teardown(&f);
}

static void test_ask_user_takes_no_fields_nor_decline(void) {
  fixture f = setup();
  send_text(&f, "/ask Name?");
  memhost_run(f.h);
  CHECK_EQ_INT(answer(&f, "{\"call_id\":\"demo-t1r1c1\",\"action\":\"decline\"}"), DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(answer(&f, "{\"call_id\":\"demo-t1r1c1\",\"answer\":\"x\",\"fields\":{}}"), DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(answer(&f, "{\"call_id\":\"demo-t1r1c1\",\"answer\":\"Ada\"}"), DEXA_OK);
  memhost_run(f.h);
  CHECK_CONTAINS(result_of(&f), "Ada");
  teardown(&f);
}

static void test_sampling_runs_the_session_model_and_is_recorded(void) {
  fixture f = setup();
  send_text(&f, "/tool sample {}");
  memhost_run(f.h);
  CHECK_EQ_INT(sample_probe.calls, 1);
  const char *r = result_of(&f);
  CHECK_CONTAINS(r, "\"status\":\"ok\"");
  CHECK_CONTAINS(r, "hello sampler");
  CHECK_CONTAINS(r, "\\\"model\\\":\\\"mock/dex\\\"");
  const char *ev = memhost_events(f.h);
  CHECK_CONTAINS(ev, "\"type\":\"sampling_finished\"");
  CHECK_CONTAINS(ev, "\"model\":\"mock/dex\",\"status\":\"ok\"");
  teardown(&f);
}

static void test_sampling_outside_a_session_is_unsupported(void) {
  char *reply = (char *)1;
  size_t n = 9;
  CHECK_EQ_INT(dexa_tool_invocation_sample(NULL, "{}", 2, &reply, &n), DEXA_E_INVALID_ARG);
  CHECK(reply == NULL && n == 0);
  const char *a;
  size_t al;
  CHECK_EQ_INT(dexa_tool_invocation_answers(NULL, &a, &al), DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(dexa_tool_invocation_effect(NULL), 0);
  CHECK_EQ_INT(dexa_tool_output_ask(NULL, "{}", 2), DEXA_E_INVALID_ARG);
}

int main(void) {
  RUN(test_tool_question_waits_and_the_answer_runs_the_call_again);
  RUN(test_answers_that_do_not_fit_are_refused_and_change_nothing);
  RUN(test_a_write_asks_and_its_single_attempt_step_runs_again);
  RUN(test_stop_while_a_tool_question_waits_cancels_the_call);
  RUN(test_a_stop_during_the_run_cancels_the_question);
  RUN(test_a_tool_that_keeps_asking_fails_after_sixteen_questions);
  RUN(test_a_question_the_session_cannot_show_is_the_calls_error);
  RUN(test_ask_user_takes_no_fields_nor_decline);
  RUN(test_sampling_runs_the_session_model_and_is_recorded);
  RUN(test_sampling_outside_a_session_is_unsupported);
  TEST_MAIN_END();
}
