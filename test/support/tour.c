/* tour: see tour.h. */
#include "support/tour.h"

#include "iface/model.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const tour_rpcs[] = {"send_message",     "snapshot",        "list_agent_messages",
                                  "delete_message",   "steer",           "cancel_turn",
                                  "resolve_approval", "answer_question", "execute_plan",
                                  "end_session",      NULL};

static tour_tool_hook hook;
static void *hook_user;

static int tool_fn(void *user, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  if (hook) hook(hook_user, 1);
  int rc = user ? DEXA_E_TRANSIENT : dexa_tool_output_set_text(out, "done", 4, 0);
  if (hook) hook(hook_user, 0);
  return rc;
}

/* A tool that asks the person mid-call: its first run asks, the run after
 * the answer finishes (the tool-question path of AwaitQuestionAnswer). */
static int asking_fn(void *user, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  const char *answers = "[]";
  size_t len = 2;
  if (hook) hook(hook_user, 1);
  dexa_tool_invocation_answers(inv, &answers, &len);
  static const char question[] = "{\"prompt\":\"Which size?\",\"key\":\"size\"}";
  int rc = len <= 2 ? dexa_tool_output_ask(out, question, sizeof question - 1)
                    : dexa_tool_output_set_text(out, "sized", 5, 0);
  if (hook) hook(hook_user, 0);
  return rc;
}

/* The demo model inside the hook, like the tools: its own allocations are
 * the model client's business, not the flow's. */
static int hooked_generate(void *user, const dexa_model_request *req, dexa_model_reply *reply) {
  dexa_model *demo = user;
  hook(hook_user, 1);
  int rc = demo->vt.generate(demo->user_data, req, reply);
  hook(hook_user, 0);
  return rc;
}

static void hooked_destroy(void *user) { dexa_model_free(user); }

static dexa_model *tour_model(void) {
  dexa_model *demo = NULL, *m = NULL;
  if (dexa_model_demo_new(&demo, "mock/dex") != DEXA_OK || !hook) return demo;
  dexa_model_vtable vt;
  dexa_model_vtable_init(&vt, sizeof vt);
  vt.generate = hooked_generate;
  vt.destroy = hooked_destroy;
  if (dexa_model_new(&m, "mock/dex", &vt, demo) != DEXA_OK) dexa_model_free(demo);
  return m;
}

dexa_agent *tour_agent(tour_tool_hook h, void *user) {
  hook = h;
  hook_user = user;
  dexa_model *m = tour_model();
  dexa_tool_source *tools = NULL;
  if (!m) return NULL;
  dexa_function_tools_new(&tools, "fns");
  dexa_function_tools_add(tools, "lookup", "read", NULL, DEXA_TOOL_READ, DEXA_APPROVAL_NONE,
                          tool_fn, NULL);
  dexa_function_tools_add(tools, "send_mail", "write", NULL, DEXA_TOOL_WRITE,
                          DEXA_APPROVAL_REQUIRED, tool_fn, NULL);
  dexa_function_tools_add(tools, "post", "write", NULL, DEXA_TOOL_WRITE, DEXA_APPROVAL_NONE,
                          tool_fn, NULL);
  dexa_function_tools_add(tools, "flaky", "read", NULL, DEXA_TOOL_READ, DEXA_APPROVAL_NONE,
                          tool_fn, "fails");
  dexa_function_tools_add(tools, "size_up", "asks", NULL, DEXA_TOOL_READ, DEXA_APPROVAL_NONE,
                          asking_fn, NULL);
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.models = &m;
  def.model_count = 1;
  def.tool_sources = &tools;
  def.tool_source_count = 1;
  def.builtin_tools = DEXA_BUILTIN_ALL;
  def.plan_mode_enabled = 1;
  def.tool_max_attempts = 2;
  def.context_window_tokens = 2500;
  def.retention_messages = 20;
  dexa_agent *a = NULL;
  char err[200];
  if (dexa_agent_new(&a, &def, err, sizeof err) != DEXA_OK) fprintf(stderr, "tour agent: %s\n", err);
  dexa_model_free(m);
  dexa_tool_source_free(tools);
  return a;
}

typedef struct tour {
  memhost *h;
  int failures;
} tour;

static void expect(tour *t, int ok, const char *what) {
  if (ok) return;
  fprintf(stderr, "    tour: %s\n", what);
  t->failures++;
}

static int rpc(tour *t, const char *name, const char *input) {
  char *resp = NULL;
  int rc = memhost_rpc(t->h, name, input, &resp);
  if (rc != DEXA_OK) fprintf(stderr, "    tour: %s %s: %s\n", name, input, resp ? resp : "");
  free(resp);
  return rc;
}

static int say(tour *t, const char *text) {
  cJSON *in = cJSON_CreateObject();
  cJSON_AddStringToObject(in, "text", text);
  char *json = cJSON_PrintUnformatted(in);
  int rc = rpc(t, "send_message", json);
  free(json);
  cJSON_Delete(in);
  return rc;
}

/* Call k of the running turn's first round ("demo-t<turn>r1c<k>"). */
static void call_id(tour *t, int k, char *out, size_t n) {
  cJSON *turn = cJSON_Parse(memhost_attr(t->h, "AgentTurn"));
  const cJSON *v = cJSON_GetObjectItem(turn, "turn");
  snprintf(out, n, "demo-t%dr1c%d", cJSON_IsNumber(v) ? v->valueint : 0, k);
  cJSON_Delete(turn);
}

static int decide_k(tour *t, int k, const char *rpc_name, const char *fmt) {
  char id[64], input[256];
  call_id(t, k, id, sizeof id);
  snprintf(input, sizeof input, fmt, id);
  return rpc(t, rpc_name, input);
}

static int decide(tour *t, const char *rpc_name, const char *fmt) {
  char id[64], input[256];
  call_id(t, 1, id, sizeof id);
  snprintf(input, sizeof input, fmt, id);
  return rpc(t, rpc_name, input);
}

static void chat_and_tools(tour *t) {
  expect(t, say(t, "hello") == DEXA_OK, "send_message");
  memhost_run(t->h);
  expect(t, say(t, "/tool lookup {\"q\":1}\n/tool send_mail {}\n/tool post {}") == DEXA_OK,
         "tools");
  memhost_run(t->h);
  expect(t, memhost_pending(t->h, "AwaitToolApproval") == 1, "an approval waits");
  expect(t, decide_k(t, 2, "resolve_approval",
                     "{\"call_id\":\"%s\",\"decision\":\"approve\"}") == DEXA_OK,
         "approve");
  memhost_run(t->h);
  expect(t, say(t, "/tool send_mail {}") == DEXA_OK, "tool to reject");
  memhost_run(t->h);
  expect(t, decide(t, "resolve_approval",
                   "{\"call_id\":\"%s\",\"decision\":\"reject\",\"note\":\"no\"}") == DEXA_OK,
         "reject");
  memhost_run(t->h);
  expect(t, say(t, "/tool flaky {}") == DEXA_OK, "flaky tool");
  memhost_run(t->h);
  expect(t, memhost_dispatches(t->h, "RecordToolOutcome") == 1, "RecordToolOutcome ran");
  memhost_lose_results(t->h, "CallSingleAttemptTool", 1);
  expect(t, say(t, "/tool post {}") == DEXA_OK, "lost write");
  memhost_run(t->h);
  expect(t, memhost_dispatches(t->h, "RecordToolOutcome") == 2, "an unknown outcome recorded");
}

static void questions_and_timers(tour *t) {
  expect(t, say(t, "/ask Name?") == DEXA_OK, "ask");
  memhost_run(t->h);
  expect(t, decide(t, "answer_question", "{\"call_id\":\"%s\",\"answer\":\"Ada\"}") == DEXA_OK,
         "answer");
  memhost_run(t->h);
  expect(t, say(t, "/choose Pick | red | blue") == DEXA_OK, "choose");
  memhost_run(t->h);
  expect(t, decide(t, "answer_question", "{\"call_id\":\"%s\",\"answer\":\"red\"}") == DEXA_OK,
         "choice");
  memhost_run(t->h);
  expect(t, say(t, "/tool size_up {}") == DEXA_OK, "a tool that asks");
  memhost_run(t->h);
  expect(t, memhost_pending(t->h, "AwaitQuestionAnswer") == 1, "the tool's question waits");
  expect(t, decide(t, "answer_question", "{\"call_id\":\"%s\",\"answer\":\"L\"}") == DEXA_OK,
         "the tool's answer");
  memhost_run(t->h);
  expect(t, memhost_pending(t->h, "AwaitQuestionAnswer") == 0, "the tool finished");
  expect(t, say(t, "/wait 5 tea") == DEXA_OK, "wait");
  memhost_run(t->h);
  expect(t, memhost_pending(t->h, "AwaitTimer") == 1, "a timer waits");
  memhost_advance(t->h, 6000);
  memhost_run(t->h);
  expect(t, memhost_pending(t->h, "AwaitTimer") == 0, "the timer fired");
}

/* Message ids are "m<n>", n counting every message sent so far. */
static int sent_count(tour *t) {
  cJSON *q = cJSON_Parse(memhost_attr(t->h, "AgentQueueState"));
  const cJSON *v = cJSON_GetObjectItem(q, "next_id");
  int n = cJSON_IsNumber(v) ? v->valueint - 1 : -1;
  cJSON_Delete(q);
  return n;
}

static void queue_steer_stop(tour *t) {
  char in[64];
  expect(t, say(t, "/wait 600 long") == DEXA_OK, "long wait");
  memhost_run(t->h);
  expect(t, say(t, "to delete") == DEXA_OK, "queued");
  snprintf(in, sizeof in, "{\"message_id\":\"m%d\"}", sent_count(t));
  expect(t, rpc(t, "delete_message", in) == DEXA_OK, "delete_message");
  expect(t, say(t, "steered") == DEXA_OK, "queued for steer");
  snprintf(in, sizeof in, "{\"message_id\":\"m%d\"}", sent_count(t));
  expect(t, rpc(t, "steer", in) == DEXA_OK, "steer");
  memhost_run(t->h);
  expect(t, memhost_dispatches(t->h, "ApplyTurnControl") >= 1, "ApplyTurnControl ran");
  expect(t, say(t, "/ask stop me?") == DEXA_OK, "ask before stop");
  memhost_run(t->h);
  expect(t, rpc(t, "cancel_turn", "{}") == DEXA_OK, "cancel_turn");
  memhost_run(t->h);
}

static void plans_and_failures(tour *t) {
  expect(t, rpc(t, "send_message", "{\"text\":\"build a shed\",\"plan_mode\":true}") == DEXA_OK,
         "plan mode");
  memhost_run(t->h);
  cJSON *plan = cJSON_Parse(memhost_attr(t->h, "AgentPlan"));
  const cJSON *rev = cJSON_GetObjectItem(plan, "revision");
  char in[64];
  snprintf(in, sizeof in, "{\"revision\":%d}", cJSON_IsNumber(rev) ? rev->valueint : -1);
  cJSON_Delete(plan);
  expect(t, rpc(t, "execute_plan", in) == DEXA_OK, "execute_plan");
  memhost_run(t->h);
  expect(t, say(t, "/fail 5") == DEXA_OK, "failing model");
  memhost_run(t->h);
  expect(t, memhost_dispatches(t->h, "RecordTurnFailure") == 1, "RecordTurnFailure ran");
}

static void compaction_and_reads(tour *t) {
  char text[700];
  for (int i = 0; i < 8 && memhost_dispatches(t->h, "CompactContext") == 0; i++) {
    snprintf(text, sizeof text, "turn %d %0600d", i, i);
    expect(t, say(t, text) == DEXA_OK, "long message");
    memhost_run(t->h);
  }
  expect(t, memhost_dispatches(t->h, "CompactContext") >= 1, "CompactContext ran");
  expect(t, rpc(t, "snapshot", "{}") == DEXA_OK, "snapshot");
  expect(t, rpc(t, "list_agent_messages", "{\"before_seq\":30,\"limit\":5}") == DEXA_OK,
         "list_agent_messages");
}

/* Last: the session ends, and then refuses every change. */
static void ending(tour *t) {
  expect(t, say(t, "/ask still there?") == DEXA_OK, "ask before the end");
  memhost_run(t->h);
  expect(t, rpc(t, "end_session", "{\"reason\":\"tour\"}") == DEXA_OK, "end_session");
  expect(t, memhost_pending(t->h, NULL) == 0, "no Step left after end_session");
  expect(t, rpc(t, "send_message", "{\"text\":\"late\"}") == DEXA_E_SESSION_ENDED,
         "send_message after the end");
  expect(t, rpc(t, "end_session", "{}") == DEXA_E_SESSION_ENDED, "end_session twice");
  expect(t, rpc(t, "snapshot", "{}") == DEXA_OK, "snapshot after the end");
}

int tour_run(memhost *h) {
  tour t = {h, 0};
  expect(&t, memhost_start(h, "{}") == DEXA_OK, "StartAgentSession");
  memhost_run(h);
  chat_and_tools(&t);
  questions_and_timers(&t);
  queue_steer_stop(&t);
  plans_and_failures(&t);
  compaction_and_reads(&t);
  ending(&t);
  return t.failures;
}
