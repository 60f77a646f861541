/* Session features through dexa_dispatch on the in-memory host: approvals,
 * questions, durable timers, queued messages with Delete, Steer and Stop,
 * plans, compaction with retention, the state limit, and bad input that
 * must change nothing. */
#include <cjson/cJSON.h>
#include <dexagents/dexagents.h>

#include "support/memhost.h"
#include "testing.h"

typedef struct counter {
  int calls;
} counter;

static counter reads, writes;

static int count_fn(void *user, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  counter *c = user;
  c->calls++;
  return dexa_tool_output_set_text(out, "done", 4, 0);
}

typedef struct fixture {
  dexa_agent *agent;
  memhost *h;
} fixture;

static dexa_agent *make_agent(dexa_model *model, int64_t window, int64_t retention, int64_t state_limit) {
  reads.calls = writes.calls = 0;
  dexa_tool_source *tools;
  dexa_function_tools_new(&tools, "fns");
  dexa_function_tools_add(tools, "lookup", "read", NULL, DEXA_TOOL_READ, DEXA_APPROVAL_NONE,
                          count_fn, &reads);
  dexa_function_tools_add(tools, "send_mail", "write", NULL, DEXA_TOOL_WRITE,
                          DEXA_APPROVAL_REQUIRED, count_fn, &writes);
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.models = &model;
  def.model_count = 1;
  def.tool_sources = &tools;
  def.tool_source_count = 1;
  def.builtin_tools = DEXA_BUILTIN_ALL;
  def.plan_mode_enabled = 1;
  def.context_window_tokens = window;
  if (retention >= 0) def.retention_messages = retention;
  if (state_limit > 0) {
    def.max_state_bytes = state_limit;
    def.max_message_bytes = 1024;
  }
  dexa_agent *a = NULL;
  char err[200];
  if (dexa_agent_new(&a, &def, err, sizeof err) != DEXA_OK) fprintf(stderr, "agent: %s\n", err);
  dexa_tool_source_free(tools);
  return a;
}

static fixture setup_with(int64_t window, int64_t retention, int64_t state_limit) {
  dexa_model *m;
  dexa_model_demo_new(&m, "mock/dex");
  fixture f = {make_agent(m, window, retention, state_limit), NULL};
  dexa_model_free(m);
  f.h = memhost_new(f.agent, "s-features");
  memhost_start(f.h, NULL);
  memhost_run(f.h);
  return f;
}

static fixture setup(void) { return setup_with(0, -1, 0); }

static void teardown(fixture *f) {
  memhost_free(f->h);
  dexa_agent_free(f->agent);
}

static int rpc(fixture *f, const char *name, const char *fmt, const char *arg) {
  char input[1024];
  snprintf(input, sizeof input, fmt, arg);
  return memhost_rpc(f->h, name, input, NULL);
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

static char *snapshot(fixture *f) {
  char *s = NULL;
  memhost_rpc(f->h, "snapshot", "{}", &s);
  return s;
}

/* The newest message with role, as text (borrowed from a static buffer). */
static const char *last_message(fixture *f) {
  static char buf[4096];
  char *snap = snapshot(f);
  cJSON *s = cJSON_Parse(snap);
  free(snap);
  cJSON *msgs = cJSON_GetObjectItem(s, "messages");
  char *m = cJSON_PrintUnformatted(cJSON_GetArrayItem(msgs, cJSON_GetArraySize(msgs) - 1));
  snprintf(buf, sizeof buf, "%s", m ? m : "");
  free(m);
  cJSON_Delete(s);
  return buf;
}

static const char *turn_status(fixture *f) { return memhost_attr(f->h, "AgentTurn"); }

/* ---- approvals ---- */

static void test_approval_waits_then_approve_runs_once(void) {
  fixture f = setup();
  send_text(&f, "/tool send_mail {\"to\":\"x\"}");
  memhost_run(f.h);
  CHECK_EQ_INT(writes.calls, 0);
  CHECK_EQ_INT(memhost_pending(f.h, "AwaitToolApproval"), 1);
  CHECK(memhost_attr(f.h, "PendingToolCalls/demo-t1r1c1") != NULL);
  CHECK_CONTAINS(memhost_events(f.h), "tool_call_awaiting_approval");
  CHECK_EQ_INT(rpc(&f, "resolve_approval", "{\"call_id\":\"%s\",\"decision\":\"approve\"}", "demo-t1r1c1"), DEXA_OK);
  memhost_run(f.h);
  CHECK_EQ_INT(writes.calls, 1);
  CHECK_EQ_INT(memhost_dispatches(f.h, "CallSingleAttemptTool"), 1);
  CHECK_CONTAINS(last_message(&f), "Tool send_mail (ok)");
  CHECK(memhost_attr(f.h, "PendingToolCalls/demo-t1r1c1") == NULL);
  teardown(&f);
}

static void test_reject_records_rejection_with_note(void) {
  fixture f = setup();
  send_text(&f, "/tool send_mail {}");
  memhost_run(f.h);
  CHECK_EQ_INT(rpc(&f, "resolve_approval",
                   "{\"call_id\":\"%s\",\"decision\":\"reject\",\"note\":\"not today\"}", "demo-t1r1c1"),
               DEXA_OK);
  memhost_run(f.h);
  CHECK_EQ_INT(writes.calls, 0);
  CHECK_CONTAINS(memhost_attr(f.h, "AgentMessages/00000000000000000003"), "\"status\":\"rejected\"");
  CHECK_CONTAINS(memhost_attr(f.h, "AgentMessages/00000000000000000003"), "not today");
  teardown(&f);
}

static void test_second_or_unknown_decision_is_refused_and_changes_nothing(void) {
  fixture f = setup();
  send_text(&f, "/tool send_mail {}");
  memhost_run(f.h);
  CHECK_EQ_INT(rpc(&f, "resolve_approval", "{\"call_id\":\"%s\",\"decision\":\"maybe\"}", "demo-t1r1c1"),
               DEXA_E_INVALID_JSON);
  CHECK_EQ_INT(rpc(&f, "resolve_approval", "{\"call_id\":\"%s\",\"decision\":\"approve\"}", "nope"),
               DEXA_E_NOT_PENDING);
  CHECK_EQ_INT(rpc(&f, "answer_question", "{\"call_id\":\"%s\",\"answer\":\"x\"}", "demo-t1r1c1"),
               DEXA_E_NOT_PENDING);
  CHECK_EQ_INT(rpc(&f, "resolve_approval", "{\"call_id\":\"%s\",\"decision\":\"approve\"}", "demo-t1r1c1"), DEXA_OK);
  char *before = snapshot(&f);
  CHECK_EQ_INT(rpc(&f, "resolve_approval", "{\"call_id\":\"%s\",\"decision\":\"reject\"}", "demo-t1r1c1"),
               DEXA_E_NOT_PENDING);
  char *after = snapshot(&f);
  CHECK_STR(after, before);
  free(before);
  free(after);
  memhost_run(f.h);
  CHECK_EQ_INT(writes.calls, 1);
  teardown(&f);
}

/* ---- questions ---- */

static void test_ask_user_answer_is_the_tool_result(void) {
  fixture f = setup();
  send_text(&f, "/ask What is your name?");
  memhost_run(f.h);
  CHECK_EQ_INT(memhost_pending(f.h, "AwaitQuestionAnswer"), 1);
  CHECK_CONTAINS(memhost_events(f.h), "question_asked");
  CHECK_EQ_INT(rpc(&f, "answer_question", "{\"call_id\":\"%s\",\"answer\":\"  \"}", "demo-t1r1c1"),
               DEXA_E_EMPTY_MESSAGE);
  CHECK_EQ_INT(rpc(&f, "answer_question", "{\"call_id\":\"%s\",\"answer\":\"Ada\"}", "demo-t1r1c1"), DEXA_OK);
  memhost_run(f.h);
  CHECK_CONTAINS(last_message(&f), "Tool ask_user (ok): Ada");
  CHECK_CONTAINS(memhost_events(f.h), "question_answered");
  CHECK_EQ_INT(rpc(&f, "answer_question", "{\"call_id\":\"%s\",\"answer\":\"Bob\"}", "demo-t1r1c1"),
               DEXA_E_NOT_PENDING);
  teardown(&f);
}

static void test_choose_accepts_only_a_choice(void) {
  fixture f = setup();
  send_text(&f, "/choose Pick one | red | green | blue");
  memhost_run(f.h);
  CHECK_CONTAINS(memhost_attr(f.h, "PendingToolCalls/demo-t1r1c1"), "[\"red\",\"green\",\"blue\"]");
  char *before = snapshot(&f);
  CHECK_EQ_INT(rpc(&f, "answer_question", "{\"call_id\":\"%s\",\"answer\":\"pink\"}", "demo-t1r1c1"),
               DEXA_E_INVALID_ARG);
  char *after = snapshot(&f);
  CHECK_STR(after, before);
  free(before);
  free(after);
  CHECK_EQ_INT(rpc(&f, "answer_question", "{\"call_id\":\"%s\",\"answer\":\"green\"}", "demo-t1r1c1"), DEXA_OK);
  memhost_run(f.h);
  CHECK_CONTAINS(last_message(&f), "(ok): green");
  teardown(&f);
}

/* ---- durable waits ---- */

static void test_durable_wait_fires_and_queued_message_waits(void) {
  fixture f = setup();
  send_text(&f, "/wait 60 coffee");
  memhost_run(f.h);
  CHECK_EQ_INT(memhost_pending(f.h, "AwaitTimer"), 1);
  CHECK_CONTAINS(memhost_events(f.h), "timer_set");
  send_text(&f, "after the wait");
  memhost_advance(f.h, 59000);
  memhost_run(f.h);
  CHECK_EQ_INT(memhost_pending(f.h, "AwaitTimer"), 1);
  CHECK_EQ_INT(memhost_count(f.h, "QueuedUserMessages/"), 1);
  memhost_advance(f.h, 2000);
  memhost_run(f.h);
  CHECK_EQ_INT(memhost_pending(f.h, "AwaitTimer"), 0);
  CHECK_CONTAINS(memhost_attr(f.h, "AgentMessages/00000000000000000003"), "Waited 60 seconds.");
  CHECK_CONTAINS(memhost_events(f.h), "timer_fired");
  CHECK_CONTAINS(last_message(&f), "Local demo response: after the wait");
  teardown(&f);
}

/* ---- queue, steer, stop ---- */

static void test_steer_interrupts_wait_and_starts_turn_with_steered_messages(void) {
  fixture f = setup();
  send_text(&f, "/wait 600 long");
  memhost_run(f.h);
  send_text(&f, "first steer");
  send_text(&f, "second steer");
  send_text(&f, "ordinary");
  CHECK_EQ_INT(rpc(&f, "steer", "{\"message_id\":\"%s\"}", "m2"), DEXA_OK);
  CHECK_EQ_INT(rpc(&f, "steer", "{\"message_id\":\"%s\"}", "m3"), DEXA_OK);
  CHECK_EQ_INT(rpc(&f, "steer", "{\"message_id\":\"%s\"}", "m3"), DEXA_E_BAD_STATE);
  memhost_run(f.h);
  CHECK_EQ_INT(memhost_pending(f.h, "AwaitTimer"), 0);
  CHECK_CONTAINS(memhost_attr(f.h, "AgentMessages/00000000000000000003"), "\"status\":\"cancelled\"");
  CHECK_CONTAINS(memhost_events(f.h), "\"type\":\"turn_cancelled\"");
  /* turn 2 holds both steered messages in order, then the ordinary one runs as turn 3 */
  CHECK_CONTAINS(memhost_attr(f.h, "AgentMessages/00000000000000000004"), "\"turn\":2,\"role\":\"user\",\"id\":\"m2\"");
  CHECK_CONTAINS(memhost_attr(f.h, "AgentMessages/00000000000000000005"), "\"turn\":2,\"role\":\"user\",\"id\":\"m3\"");
  CHECK_CONTAINS(memhost_attr(f.h, "AgentMessages/00000000000000000007"), "\"turn\":3,\"role\":\"user\",\"id\":\"m4\"");
  CHECK_CONTAINS(last_message(&f), "response: ordinary");
  teardown(&f);
}

static void test_steer_never_stops_a_started_call(void) {
  fixture f = setup();
  send_text(&f, "/tool lookup {}\n/tool send_mail {}");
  memhost_run(f.h); /* lookup ran; send_mail waits for approval */
  CHECK_EQ_INT(reads.calls, 1);
  send_text(&f, "change of plan");
  CHECK_EQ_INT(rpc(&f, "steer", "{\"message_id\":\"%s\"}", "m2"), DEXA_OK);
  memhost_run(f.h);
  CHECK_EQ_INT(reads.calls, 1);
  CHECK_EQ_INT(writes.calls, 0);
  CHECK_CONTAINS(memhost_attr(f.h, "AgentMessages/00000000000000000004"), "\"status\":\"ok\"");
  CHECK_CONTAINS(memhost_attr(f.h, "AgentMessages/00000000000000000005"), "\"status\":\"cancelled\"");
  CHECK_CONTAINS(last_message(&f), "response: change of plan");
  teardown(&f);
}

static void test_steer_cancels_calls_not_yet_started(void) {
  fixture f = setup();
  send_text(&f, "/tool lookup {}");
  memhost_run_steps(f.h, 2); /* AwaitUserMessage, RunModel: CallTool not started */
  CHECK_EQ_INT(memhost_pending(f.h, "CallTool"), 1);
  send_text(&f, "steered");
  CHECK_EQ_INT(rpc(&f, "steer", "{\"message_id\":\"%s\"}", "m2"), DEXA_OK);
  memhost_run(f.h);
  CHECK_EQ_INT(reads.calls, 0);
  CHECK_CONTAINS(memhost_attr(f.h, "AgentMessages/00000000000000000003"), "\"status\":\"cancelled\"");
  CHECK_CONTAINS(last_message(&f), "response: steered");
  teardown(&f);
}

static void test_stop_ends_turn_and_queued_messages_run_in_order(void) {
  fixture f = setup();
  CHECK_EQ_INT(memhost_rpc(f.h, "cancel_turn", "{}", NULL), DEXA_E_BAD_STATE);
  send_text(&f, "/ask anything?");
  memhost_run(f.h);
  send_text(&f, "q1");
  send_text(&f, "q2");
  CHECK_EQ_INT(memhost_rpc(f.h, "cancel_turn", "{}", NULL), DEXA_OK);
  memhost_run(f.h);
  CHECK_CONTAINS(memhost_attr(f.h, "AgentMessages/00000000000000000003"), "\"status\":\"cancelled\"");
  CHECK_CONTAINS(memhost_attr(f.h, "AgentMessages/00000000000000000004"), "\"turn\":2,\"role\":\"user\",\"id\":\"m2\"");
  CHECK_CONTAINS(memhost_attr(f.h, "AgentMessages/00000000000000000006"), "\"turn\":3,\"role\":\"user\",\"id\":\"m3\"");
  CHECK_CONTAINS(turn_status(&f), "\"turn\":3,\"status\":\"idle\"");
  teardown(&f);
}

static void test_delete_queued_message(void) {
  fixture f = setup();
  send_text(&f, "/wait 60 x");
  memhost_run(f.h);
  send_text(&f, "never mind");
  CHECK_EQ_INT(memhost_count(f.h, "QueuedUserMessages/"), 1);
  CHECK_EQ_INT(rpc(&f, "delete_message", "{\"message_id\":\"%s\"}", "x2"), DEXA_E_INVALID_JSON);
  CHECK_EQ_INT(rpc(&f, "delete_message", "{\"message_id\":\"%s\"}", "m9"), DEXA_E_NOT_FOUND);
  CHECK_EQ_INT(rpc(&f, "delete_message", "{\"message_id\":\"%s\"}", "m2"), DEXA_OK);
  CHECK_EQ_INT(memhost_count(f.h, "QueuedUserMessages/"), 0);
  CHECK_EQ_INT(rpc(&f, "delete_message", "{\"message_id\":\"%s\"}", "m2"), DEXA_E_NOT_FOUND);
  CHECK_CONTAINS(memhost_attr(f.h, "AgentQueueState"), "\"bytes\":0");
  memhost_advance(f.h, 61000);
  memhost_run(f.h);
  CHECK_CONTAINS(turn_status(&f), "\"turn\":1,\"status\":\"idle\"");
  teardown(&f);
}

/* ---- plans ---- */

static void test_plan_draft_execute_and_stale_revision(void) {
  fixture f = setup();
  CHECK_EQ_INT(memhost_rpc(f.h, "send_message", "{\"text\":\"build a shed\",\"plan_mode\":true}", NULL), DEXA_OK);
  memhost_run(f.h);
  const char *plan = memhost_attr(f.h, "AgentPlan");
  CHECK_CONTAINS(plan, "\"revision\":1,\"status\":\"draft\"");
  CHECK_CONTAINS(plan, "Look into: build a shed");
  CHECK_CONTAINS(memhost_events(f.h), "plan_updated");
  CHECK_EQ_INT(rpc(&f, "execute_plan", "{\"revision\":%s}", "0"), DEXA_E_STALE_REVISION);
  CHECK_EQ_INT(rpc(&f, "execute_plan", "{\"revision\":%s}", "1"), DEXA_OK);
  memhost_run_steps(f.h, 2);
  CHECK_EQ_INT(rpc(&f, "execute_plan", "{\"revision\":%s}", "2"), DEXA_E_BAD_STATE); /* a turn runs */
  memhost_run(f.h);
  CHECK_CONTAINS(memhost_attr(f.h, "AgentPlan"), "\"revision\":3,\"status\":\"completed\"");
  CHECK_CONTAINS(last_message(&f), "Plan complete: all 2 tasks are done.");
  CHECK_EQ_INT(rpc(&f, "execute_plan", "{\"revision\":%s}", "3"), DEXA_E_BAD_STATE);
  teardown(&f);
}

static void test_unfinished_plan_stays_active_and_continues(void) {
  fixture f = setup();
  memhost_rpc(f.h, "send_message", "{\"text\":\"paint\",\"plan_mode\":true}", NULL);
  memhost_run(f.h);
  rpc(&f, "execute_plan", "{\"revision\":%s}", "1");
  memhost_run_steps(f.h, 3); /* start, RunModel: task 1 done (revision 2) */
  CHECK_EQ_INT(memhost_rpc(f.h, "cancel_turn", "{}", NULL), DEXA_OK);
  memhost_run(f.h);
  CHECK_CONTAINS(memhost_attr(f.h, "AgentPlan"), "\"revision\":2,\"status\":\"active\"");
  /* a chat turn meanwhile may call every tool */
  send_text(&f, "/tool lookup {}");
  memhost_run(f.h);
  CHECK_EQ_INT(reads.calls, 1);
  CHECK_EQ_INT(rpc(&f, "execute_plan", "{\"revision\":%s}", "2"), DEXA_OK);
  memhost_run(f.h);
  CHECK_CONTAINS(memhost_attr(f.h, "AgentPlan"), "\"status\":\"completed\"");
  teardown(&f);
}

static void test_plan_clear(void) {
  fixture f = setup();
  memhost_rpc(f.h, "send_message", "{\"text\":\"x\",\"plan_mode\":true}", NULL);
  memhost_run(f.h);
  CHECK(memhost_attr(f.h, "AgentPlan") != NULL);
  send_text(&f, "/plan-clear");
  memhost_run(f.h);
  CHECK(memhost_attr(f.h, "AgentPlan") == NULL);
  teardown(&f);
}

static int planner_generate(void *user, const dexa_model_request *req, dexa_model_reply *reply) {
  const char *json;
  size_t len;
  dexa_model_request_json(req, &json, &len);
  if (!strstr(json, "\"plan_mode\":true") || strstr(json, "\"role\":\"tool\"")) {
    dexa_model_reply_add_item(reply, "{\"type\":\"message\"}", 18);
    return dexa_model_reply_add_text(reply, "done", 4);
  }
  /* a planning turn is offered write_todos alone: the request must say so */
  if (strstr(json, "\"name\":\"lookup\"")) return DEXA_E_PERMANENT;
  dexa_model_reply_add_item(reply, "{\"type\":\"function_call\"}", 24);
  return dexa_model_reply_add_tool_call(reply, "c1", "lookup", "{}", 2);
}

static void test_planning_turn_may_call_only_write_todos(void) {
  dexa_model_vtable vt;
  dexa_model_vtable_init(&vt, sizeof vt);
  vt.generate = planner_generate;
  dexa_model *m;
  dexa_model_new(&m, "test/planner", &vt, NULL);
  fixture f = {make_agent(m, 0, -1, 0), NULL};
  dexa_model_free(m);
  f.h = memhost_new(f.agent, "s-plan");
  memhost_start(f.h, NULL);
  memhost_rpc(f.h, "send_message", "{\"text\":\"plan it\",\"plan_mode\":true}", NULL);
  memhost_run(f.h);
  CHECK_EQ_INT(reads.calls, 0);
  CHECK_CONTAINS(memhost_attr(f.h, "AgentMessages/00000000000000000003"), "write_todos only");
  CHECK_CONTAINS(turn_status(&f), "\"status\":\"idle\"");
  teardown(&f);
}

static void test_plan_mode_refused_when_disabled(void) {
  dexa_model *m;
  dexa_model_demo_new(&m, "mock/dex");
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.models = &m;
  def.model_count = 1;
  dexa_agent *a;
  dexa_agent_new(&a, &def, NULL, 0);
  dexa_model_free(m);
  memhost *h = memhost_new(a, "s");
  memhost_start(h, NULL);
  CHECK_EQ_INT(memhost_rpc(h, "send_message", "{\"text\":\"x\",\"plan_mode\":true}", NULL), DEXA_E_UNSUPPORTED);
  CHECK_EQ_INT(memhost_rpc(h, "send_message", "{\"text\":\"x\",\"plan_mode\":1}", NULL), DEXA_E_INVALID_JSON);
  memhost_free(h);
  dexa_agent_free(a);
}

/* ---- compaction ---- */

static void long_turns(fixture *f, int n) {
  char text[700];
  for (int i = 0; i < n; i++) {
    snprintf(text, sizeof text, "turn %d %0600d", i, i);
    send_text(f, text);
    memhost_run(f->h);
  }
}

static void test_compaction_summarizes_into_chunks_keeping_recent(void) {
  fixture f = setup_with(4000, 100000, 0); /* 4000 tokens ~ 16000 bytes */
  long_turns(&f, 30);
  CHECK(memhost_dispatches(f.h, "CompactContext") >= 1);
  const char *summary = memhost_attr(f.h, "AgentContextSummary");
  CHECK_CONTAINS(summary, "\"through_seq\":");
  CHECK_CONTAINS(summary, "Summary of");
  CHECK(memhost_count(f.h, "AgentMessageChunks/") >= 1);
  CHECK(memhost_count(f.h, "AgentMessages/") < 60);
  CHECK_CONTAINS(memhost_events(f.h), "\"type\":\"compaction\"");
  /* the first retained message starts a turn (never a tool result) */
  cJSON *s = cJSON_Parse(summary);
  int through = cJSON_GetObjectItem(s, "through_seq")->valueint;
  cJSON_Delete(s);
  char key[64];
  snprintf(key, sizeof key, "AgentMessages/%020d", through + 1);
  CHECK_CONTAINS(memhost_attr(f.h, key), "\"role\":\"user\"");
  /* every message is still reachable by paging back */
  char *page = NULL;
  CHECK_EQ_INT(memhost_rpc(f.h, "list_agent_messages", "{\"before_seq\":5,\"limit\":10}", &page), DEXA_OK);
  CHECK_CONTAINS(page, "{\"seq\":1,");
  CHECK_CONTAINS(page, "\"has_more\":false");
  free(page);
  CHECK_CONTAINS(last_message(&f), "response: turn 29");
  teardown(&f);
}

static void test_compaction_never_splits_a_call_from_its_result(void) {
  fixture f = setup_with(1500, 100000, 0);
  for (int i = 0; i < 12; i++) {
    send_text(&f, "/tool lookup {\"pad\":\"..............................................................................................................................................................................................................................................................................................................................\"}");
    memhost_run(f.h);
  }
  CHECK(memhost_dispatches(f.h, "CompactContext") >= 1);
  cJSON *s = cJSON_Parse(memhost_attr(f.h, "AgentContextSummary"));
  int through = cJSON_GetObjectItem(s, "through_seq")->valueint;
  cJSON_Delete(s);
  char key[64];
  snprintf(key, sizeof key, "AgentMessages/%020d", through + 1);
  const char *first = memhost_attr(f.h, key);
  CHECK(first != NULL);
  CHECK(strstr(first, "\"role\":\"tool\"") == NULL);
  teardown(&f);
}

/* A provider that counts many more tokens than the bytes suggest. */
static int heavy_generate(void *user, const dexa_model_request *req, dexa_model_reply *reply) {
  dexa_model_reply_add_item(reply, "{\"type\":\"message\"}", 18);
  dexa_model_reply_add_text(reply, "noted", 5);
  return dexa_model_reply_set_usage(reply, 9000, 10);
}

static void test_compaction_uses_the_providers_token_count(void) {
  dexa_model_vtable vt;
  dexa_model_vtable_init(&vt, sizeof vt);
  vt.generate = heavy_generate;
  dexa_model *m;
  dexa_model_new(&m, "test/heavy", &vt, NULL);
  fixture f = {make_agent(m, 10000, -1, 0), NULL}; /* 10000 tokens: bytes alone never near it */
  dexa_model_free(m);
  f.h = memhost_new(f.agent, "s-usage");
  memhost_start(f.h, NULL);
  send_text(&f, "first");
  memhost_run(f.h);
  CHECK_EQ_INT(memhost_dispatches(f.h, "CompactContext"), 0);
  send_text(&f, "second");
  memhost_run(f.h);
  CHECK_EQ_INT(memhost_dispatches(f.h, "CompactContext"), 1);
  CHECK_CONTAINS(memhost_attr(f.h, "AgentContextSummary"), "\"through_seq\":2");
  /* the next call's usage is newer than the summary; with 9010 tokens it
   * asks again, but the summary never covers the newest turn */
  send_text(&f, "third");
  memhost_run(f.h);
  CHECK_CONTAINS(memhost_attr(f.h, "AgentMessages/00000000000000000005"), "\"text\":\"third\"");
  teardown(&f);
}

static void test_retention_bounds_state(void) {
  fixture f = setup_with(3000, 20, 0);
  long_turns(&f, 40);
  const char *t1 = memhost_attr(f.h, "AgentTranscript");
  cJSON *a = cJSON_Parse(t1);
  int bytes_40 = cJSON_GetObjectItem(a, "bytes")->valueint;
  cJSON_Delete(a);
  long_turns(&f, 40);
  cJSON *b = cJSON_Parse(memhost_attr(f.h, "AgentTranscript"));
  int bytes_80 = cJSON_GetObjectItem(b, "bytes")->valueint;
  cJSON_Delete(b);
  CHECK(bytes_80 < bytes_40 * 3 / 2); /* bounded, not growing with turns */
  char *page = NULL;
  memhost_rpc(f.h, "list_agent_messages", "{\"before_seq\":3,\"limit\":10}", &page);
  CHECK_CONTAINS(page, "\"messages\":[]");
  free(page);
  teardown(&f);
}

static void test_state_limit_refuses_with_clear_error(void) {
  fixture f = setup_with(0, -1, 4096);
  int rc = DEXA_OK, sent = 0;
  while (rc == DEXA_OK && sent < 100) {
    rc = send_text(&f, "a message of some length that fills the session state bit by bit ......");
    memhost_run(f.h);
    sent++;
  }
  CHECK_EQ_INT(rc, DEXA_E_STATE_LIMIT);
  char *before = snapshot(&f);
  CHECK_EQ_INT(send_text(&f, "more"), DEXA_E_STATE_LIMIT);
  char *after = snapshot(&f);
  CHECK_STR(after, before);
  free(before);
  free(after);
  teardown(&f);
}

/* Every RPC, given a wrong session id, a malformed input or the wrong
 * state, returns its documented code and leaves the snapshot unchanged. */
static void test_every_rpc_refuses_bad_input_and_changes_nothing(void) {
  fixture f = setup();
  send_text(&f, "/ask waiting?"); /* a turn waits for an answer */
  memhost_run(f.h);
  send_text(&f, "queued one");
  memhost_rpc(f.h, "send_message", "{\"text\":\"plan\",\"plan_mode\":true}", NULL);
  static const struct {
    const char *rpc, *input;
    int code;
  } cases[] = {
      {"send_message", "{}", DEXA_E_INVALID_JSON},
      {"send_message", "{\"text\":\"\\t\"}", DEXA_E_EMPTY_MESSAGE},
      {"delete_message", "{\"message_id\":\"m99\"}", DEXA_E_NOT_FOUND},
      {"delete_message", "{\"message_id\":7}", DEXA_E_INVALID_JSON},
      {"steer", "{\"message_id\":\"m99\"}", DEXA_E_NOT_FOUND},
      {"steer", "{}", DEXA_E_INVALID_JSON},
      {"resolve_approval", "{\"call_id\":\"demo-t1r1c1\",\"decision\":\"approve\"}", DEXA_E_NOT_PENDING},
      {"resolve_approval", "{\"call_id\":\"nope\",\"decision\":\"reject\"}", DEXA_E_NOT_PENDING},
      {"answer_question", "{\"call_id\":\"nope\",\"answer\":\"x\"}", DEXA_E_NOT_PENDING},
      {"answer_question", "{\"call_id\":\"demo-t1r1c1\"}", DEXA_E_INVALID_JSON},
      {"execute_plan", "{\"revision\":1}", DEXA_E_NOT_FOUND},
      {"execute_plan", "{\"revision\":\"1\"}", DEXA_E_INVALID_JSON},
      {"list_agent_messages", "{\"limit\":0}", DEXA_E_INVALID_JSON},
      {"list_agent_messages", "{\"limit\":201}", DEXA_E_INVALID_JSON},
      {"no_such_rpc", "{}", DEXA_E_UNKNOWN_RPC},
  };
  char *before = snapshot(&f);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int rc = memhost_rpc(f.h, cases[i].rpc, cases[i].input, NULL);
    if (rc != cases[i].code) fprintf(stderr, "    %s %s -> %d\n", cases[i].rpc, cases[i].input, rc);
    CHECK_EQ_INT(rc, cases[i].code);
  }
  char *after = snapshot(&f);
  CHECK_STR(after, before);
  free(after);
  /* a session id that does not exist: every RPC says so */
  memhost *other = memhost_new(f.agent, "s-missing");
  static const char *const rpcs[] = {"send_message", "snapshot", "list_agent_messages", "delete_message",
                                     "steer", "cancel_turn", "resolve_approval", "answer_question",
                                     "execute_plan"};
  static const char *const inputs[] = {"{\"text\":\"x\"}", "{}", "{}", "{\"message_id\":\"m1\"}",
                                       "{\"message_id\":\"m1\"}", "{}",
                                       "{\"call_id\":\"c\",\"decision\":\"approve\"}",
                                       "{\"call_id\":\"c\",\"answer\":\"a\"}", "{\"revision\":1}"};
  for (size_t i = 0; i < sizeof rpcs / sizeof rpcs[0]; i++) {
    int rc = memhost_rpc(other, rpcs[i], inputs[i], NULL);
    if (rc != DEXA_E_NOT_FOUND) fprintf(stderr, "    %s on a missing session -> %d\n", rpcs[i], rc);
    CHECK_EQ_INT(rc, DEXA_E_NOT_FOUND);
  }
  CHECK_EQ_INT(memhost_count(other, ""), 0);
  memhost_free(other);
  free(before);
  teardown(&f);
}

int main(void) {
  RUN(test_approval_waits_then_approve_runs_once);
  RUN(test_reject_records_rejection_with_note);
  RUN(test_second_or_unknown_decision_is_refused_and_changes_nothing);
  RUN(test_ask_user_answer_is_the_tool_result);
  RUN(test_choose_accepts_only_a_choice);
  RUN(test_durable_wait_fires_and_queued_message_waits);
  RUN(test_steer_interrupts_wait_and_starts_turn_with_steered_messages);
  RUN(test_steer_never_stops_a_started_call);
  RUN(test_steer_cancels_calls_not_yet_started);
  RUN(test_stop_ends_turn_and_queued_messages_run_in_order);
  RUN(test_delete_queued_message);
  RUN(test_plan_draft_execute_and_stale_revision);
  RUN(test_unfinished_plan_stays_active_and_continues);
  RUN(test_plan_clear);
  RUN(test_planning_turn_may_call_only_write_todos);
  RUN(test_plan_mode_refused_when_disabled);
  RUN(test_compaction_summarizes_into_chunks_keeping_recent);
  RUN(test_compaction_never_splits_a_call_from_its_result);
  RUN(test_compaction_uses_the_providers_token_count);
  RUN(test_retention_bounds_state);
  RUN(test_state_limit_refuses_with_clear_error);
  RUN(test_every_rpc_refuses_bad_input_and_changes_nothing);
  TEST_MAIN_END();
}
