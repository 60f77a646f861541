/* The agent session flow through dexa_dispatch, driven by the in-memory
 * host: turns, parallel tool Steps, retries, unknown outcomes, failures,
 * queued messages, verbatim items, and bad input. */
#include <dexagents/dexagents.h>
#include <stdatomic.h>

#include <cjson/cJSON.h>

#include "support/memhost.h"
#include "testing.h"

/* ---- tools that count their calls ---- */

typedef struct counting_tool {
  atomic_int calls;
  int fail_first;      /* fail this many calls with fail_code */
  int fail_code;
  char last_key[256];
} counting_tool;

static int tool_fn(void *user, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  counting_tool *t = user;
  int n = atomic_fetch_add(&t->calls, 1) + 1;
  snprintf(t->last_key, sizeof t->last_key, "%s", dexa_tool_invocation_idempotency_key(inv));
  if (n <= t->fail_first) return t->fail_code;
  const char *args;
  size_t len;
  dexa_tool_invocation_arguments(inv, &args, &len);
  char text[300];
  int k = snprintf(text, sizeof text, "%s got %.*s", dexa_tool_invocation_name(inv), (int)len, args);
  return dexa_tool_output_set_text(out, text, (size_t)k, 0);
}

static counting_tool lookup, writer;

typedef struct fixture {
  dexa_agent *agent;
  memhost *h;
} fixture;

static fixture setup(const char *settings) {
  memset(&lookup, 0, sizeof lookup);
  memset(&writer, 0, sizeof writer);
  dexa_model *m1, *m2;
  dexa_model_demo_new(&m1, "mock/dex");
  dexa_model_demo_new(&m2, "mock/dex-mini");
  dexa_tool_source *tools;
  dexa_function_tools_new(&tools, "fns");
  dexa_function_tools_add(tools, "lookup", "Looks a thing up", NULL, DEXA_TOOL_READ,
                          DEXA_APPROVAL_NONE, tool_fn, &lookup);
  dexa_function_tools_add(tools, "send_mail", "Sends mail", NULL, DEXA_TOOL_WRITE,
                          DEXA_APPROVAL_NONE, tool_fn, &writer);
  dexa_model *models[] = {m1, m2};
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.models = models;
  def.model_count = 2;
  def.tool_sources = &tools;
  def.tool_source_count = 1;
  def.tool_max_attempts = 3;
  fixture f = {NULL, NULL};
  char err[128];
  dexa_agent_new(&f.agent, &def, err, sizeof err);
  dexa_model_free(m1);
  dexa_model_free(m2);
  dexa_tool_source_free(tools);
  f.h = memhost_new(f.agent, "s-test");
  if (memhost_start(f.h, settings) != DEXA_OK) fprintf(stderr, "start failed\n");
  memhost_run(f.h);
  return f;
}

static void teardown(fixture *f) {
  memhost_free(f->h);
  dexa_agent_free(f->agent);
}

static int send(fixture *f, const char *text) {
  cJSON *in = cJSON_CreateObject();
  cJSON_AddStringToObject(in, "text", text);
  char *json = cJSON_PrintUnformatted(in);
  int rc = memhost_rpc(f->h, "send_message", json, NULL);
  free(json);
  cJSON_Delete(in);
  return rc;
}

/* The message at seq, borrowed. */
static const char *message(fixture *f, int seq) {
  char key[64];
  snprintf(key, sizeof key, "AgentMessages/%020d", seq);
  return memhost_attr(f->h, key);
}

static void test_start_session_records_default_model(void) {
  fixture f = setup("{\"model\":\"no/such-model\"}");
  CHECK_CONTAINS(memhost_attr(f.h, "AgentSession"), "\"model\":\"mock/dex\"");
  CHECK_CONTAINS(memhost_attr(f.h, "AgentTurn"), "\"status\":\"idle\"");
  CHECK_EQ_INT(memhost_pending(f.h, "AwaitUserMessage"), 1);
  teardown(&f);
}

static void test_turn_echoes_with_streamed_deltas(void) {
  fixture f = setup(NULL);
  CHECK_EQ_INT(send(&f, "hello there"), DEXA_OK);
  memhost_run(f.h);
  CHECK_CONTAINS(message(&f, 1), "\"role\":\"user\"");
  CHECK_CONTAINS(message(&f, 2), "\"text\":\"Local demo response: hello there\"");
  CHECK_CONTAINS(memhost_attr(f.h, "AgentTurn"), "\"status\":\"idle\"");
  const char *live = memhost_live(f.h);
  int deltas = 0;
  for (const char *p = live; (p = strstr(p, "text_delta")); p++) deltas++;
  CHECK(deltas >= 3);
  const char *ev = memhost_events(f.h);
  CHECK_CONTAINS(ev, "turn_started");
  CHECK_CONTAINS(ev, "turn_finished");
  CHECK_EQ_INT(memhost_pending(f.h, "AwaitUserMessage"), 1);
  teardown(&f);
}

static void test_model_command_names_session_model(void) {
  fixture f = setup("{\"model\":\"mock/dex-mini\"}");
  send(&f, "/model");
  memhost_run(f.h);
  CHECK_CONTAINS(message(&f, 2), "\"text\":\"mock/dex-mini\"");
  teardown(&f);
}

static void test_parallel_tool_steps_join_in_resume_turn(void) {
  fixture f = setup(NULL);
  send(&f, "/tool lookup {\"q\":1}\n/tool lookup {\"q\":2}");
  memhost_run(f.h);
  CHECK_EQ_INT(atomic_load(&lookup.calls), 2);
  CHECK_EQ_INT(memhost_dispatches(f.h, "CallTool"), 2);
  CHECK_EQ_INT(memhost_dispatches(f.h, "RunModel"), 2);
  /* seq 1 user, 2-3 the two call items, 4-5 their results, 6 the answer */
  CHECK_CONTAINS(message(&f, 4), "\"status\":\"ok\"");
  CHECK_CONTAINS(message(&f, 5), "lookup got {\\\"q\\\":2}");
  CHECK_CONTAINS(message(&f, 6), "Tool lookup (ok)");
  CHECK(strstr(message(&f, 6), "Tool ?") == NULL); /* only the round's two results */
  CHECK_CONTAINS(lookup.last_key, "s-test:demo-t1r1c");
  teardown(&f);
}

static void test_call_tool_retries_transient_failures(void) {
  fixture f = setup(NULL);
  lookup.fail_first = 2;
  lookup.fail_code = DEXA_E_TRANSIENT;
  send(&f, "/tool lookup {}");
  memhost_run(f.h);
  CHECK_EQ_INT(atomic_load(&lookup.calls), 3);
  CHECK_CONTAINS(message(&f, 3), "\"status\":\"ok\"");
  teardown(&f);
}

static void test_call_tool_out_of_attempts_records_error(void) {
  fixture f = setup(NULL);
  lookup.fail_first = 100;
  lookup.fail_code = DEXA_E_TRANSIENT;
  send(&f, "/tool lookup {}");
  memhost_run(f.h);
  CHECK_EQ_INT(atomic_load(&lookup.calls), 3);
  CHECK_EQ_INT(memhost_dispatches(f.h, "RecordToolOutcome"), 1);
  CHECK_CONTAINS(message(&f, 3), "\"status\":\"error\"");
  CHECK_CONTAINS(message(&f, 4), "Tool lookup (error)");
  teardown(&f);
}

static void test_single_attempt_write_lost_is_unknown_outcome(void) {
  fixture f = setup(NULL);
  memhost_lose_results(f.h, "CallSingleAttemptTool", 1);
  send(&f, "/tool send_mail {\"to\":\"a@b\"}");
  memhost_run(f.h);
  CHECK_EQ_INT(atomic_load(&writer.calls), 1);
  CHECK_EQ_INT(memhost_dispatches(f.h, "CallSingleAttemptTool"), 1);
  CHECK_CONTAINS(message(&f, 3), "\"status\":\"unknown_outcome\"");
  CHECK_CONTAINS(message(&f, 4), "unknown_outcome");
  CHECK_CONTAINS(memhost_attr(f.h, "AgentTurn"), "\"status\":\"idle\"");
  teardown(&f);
}

static void test_single_attempt_write_error_is_not_retried(void) {
  fixture f = setup(NULL);
  writer.fail_first = 1;
  writer.fail_code = DEXA_E_TRANSIENT;
  send(&f, "/tool send_mail {}");
  memhost_run(f.h);
  CHECK_EQ_INT(atomic_load(&writer.calls), 1);
  CHECK_CONTAINS(message(&f, 3), "\"status\":\"error\"");
  teardown(&f);
}

static void test_run_model_retries_then_succeeds(void) {
  fixture f = setup(NULL);
  send(&f, "/fail 2");
  memhost_run(f.h);
  CHECK_EQ_INT(memhost_dispatches(f.h, "RunModel"), 3);
  CHECK_CONTAINS(message(&f, 2), "succeeded on attempt 3");
  teardown(&f);
}

static void test_run_model_fails_turn_after_three_attempts(void) {
  fixture f = setup(NULL);
  send(&f, "/fail 3");
  memhost_run(f.h);
  CHECK_EQ_INT(memhost_dispatches(f.h, "RunModel"), 3);
  CHECK_EQ_INT(memhost_dispatches(f.h, "RecordTurnFailure"), 1);
  CHECK_CONTAINS(memhost_attr(f.h, "AgentTurn"), "\"status\":\"failed\"");
  CHECK_CONTAINS(memhost_events(f.h), "turn_failed");
  CHECK(!memhost_failed(f.h));
  send(&f, "again");
  memhost_run(f.h);
  CHECK_CONTAINS(message(&f, 3), "Local demo response: again");
  teardown(&f);
}

static void test_queued_messages_run_in_order(void) {
  fixture f = setup(NULL);
  send(&f, "first");
  send(&f, "second");
  CHECK_EQ_INT(memhost_count(f.h, "QueuedUserMessages/"), 2);
  memhost_run(f.h);
  CHECK_EQ_INT(memhost_count(f.h, "QueuedUserMessages/"), 0);
  CHECK_CONTAINS(message(&f, 1), "\"text\":\"first\"");
  CHECK_CONTAINS(message(&f, 2), "response: first");
  CHECK_CONTAINS(message(&f, 3), "\"text\":\"second\"");
  CHECK_CONTAINS(message(&f, 4), "response: second");
  CHECK_CONTAINS(memhost_attr(f.h, "AgentTranscript"), "\"turn\":2");
  teardown(&f);
}

/* A message sent during a turn is queued and signalled. The next idle wait
 * finds it queued and takes the signal with it: once the queue is empty the
 * session waits at once, instead of waking for that signal to find nothing.
 * Per turn one WaitFor and one Execute of AwaitUserMessage, then one
 * WaitFor that waits: 2 + 2 + 1. */
static void test_a_queued_message_leaves_no_stale_wakeup(void) {
  fixture f = setup(NULL);
  send(&f, "first");
  for (int i = 0; i < 10 && memhost_pending(f.h, "AwaitUserMessage"); i++)
    memhost_run_steps(f.h, 1);
  CHECK_EQ_INT(memhost_pending(f.h, "RunModel"), 1);
  send(&f, "second");
  CHECK_EQ_INT(memhost_count(f.h, "QueuedUserMessages/"), 1);
  memhost_run(f.h);
  CHECK_CONTAINS(message(&f, 4), "response: second");
  CHECK_EQ_INT(memhost_dispatches(f.h, "AwaitUserMessage"), 5);
  CHECK_EQ_INT(memhost_pending(f.h, "AwaitUserMessage"), 1);
  /* And it still wakes for the next message. */
  send(&f, "third");
  memhost_run(f.h);
  CHECK_CONTAINS(message(&f, 6), "response: third");
  teardown(&f);
}

static void test_unknown_tool_gets_error_result(void) {
  fixture f = setup(NULL);
  send(&f, "/tool nope {}");
  memhost_run(f.h);
  CHECK_CONTAINS(message(&f, 3), "unknown tool");
  CHECK_CONTAINS(message(&f, 4), "Tool nope (error)");
  teardown(&f);
}

static void test_send_message_bad_input_changes_nothing(void) {
  fixture f = setup(NULL);
  int before = memhost_count(f.h, "");
  const char *before_queue = memhost_attr(f.h, "AgentQueueState");
  char *copy = strdup(before_queue);
  CHECK_EQ_INT(send(&f, " \t\n\xe2\x80\x83"), DEXA_E_EMPTY_MESSAGE);
  CHECK_EQ_INT(memhost_rpc(f.h, "send_message", "{\"text\":5}", NULL), DEXA_E_INVALID_JSON);
  CHECK_EQ_INT(memhost_rpc(f.h, "send_message", "{\"text\":", NULL), DEXA_E_INVALID_JSON);
  CHECK_EQ_INT(memhost_rpc(f.h, "send_message", "[]", NULL), DEXA_E_INVALID_JSON);
  CHECK_EQ_INT(memhost_rpc(f.h, "no_such_rpc", "{}", NULL), DEXA_E_UNKNOWN_RPC);
  char *big = malloc((1 << 20) + 2);
  memset(big, 'x', (1 << 20) + 1);
  big[(1 << 20) + 1] = '\0';
  CHECK_EQ_INT(send(&f, big), DEXA_E_TOO_LARGE);
  free(big);
  /* an RPC input far over any message is refused before it is parsed */
  size_t huge_len = (size_t)7 << 20;
  char *huge = malloc(huge_len + 1);
  memset(huge, ' ', huge_len);
  memcpy(huge, "{\"text\":\"x\"}", 12);
  huge[huge_len] = '\0';
  CHECK_EQ_INT(memhost_rpc(f.h, "send_message", huge, NULL), DEXA_E_TOO_LARGE);
  free(huge);
  CHECK_EQ_INT(memhost_count(f.h, ""), before);
  CHECK_STR(memhost_attr(f.h, "AgentQueueState"), copy);
  free(copy);
  teardown(&f);
}

static void test_rpc_on_unknown_session_is_not_found(void) {
  dexa_model *m;
  dexa_model_demo_new(&m, "mock/dex");
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.models = &m;
  def.model_count = 1;
  dexa_agent *a;
  dexa_agent_new(&a, &def, NULL, 0);
  dexa_model_free(m);
  memhost *h = memhost_new(a, "never-started");
  char *resp = NULL;
  CHECK_EQ_INT(memhost_rpc(h, "send_message", "{\"text\":\"hi\"}", &resp), DEXA_E_NOT_FOUND);
  CHECK_CONTAINS(resp, "never-started");
  free(resp);
  CHECK_EQ_INT(memhost_rpc(h, "snapshot", "{}", NULL), DEXA_E_NOT_FOUND);
  CHECK_EQ_INT(memhost_count(h, ""), 0);
  memhost_free(h);
  dexa_agent_free(a);
}

static void test_snapshot_holds_newest_200_messages_and_queue(void) {
  fixture f = setup(NULL);
  for (int i = 0; i < 101; i++) {
    char text[32];
    snprintf(text, sizeof text, "msg %d", i);
    send(&f, text);
    memhost_run(f.h);
  }
  send(&f, "still queued");
  char *snap = NULL;
  CHECK_EQ_INT(memhost_rpc(f.h, "snapshot", "{}", &snap), DEXA_OK);
  cJSON *s = cJSON_Parse(snap);
  free(snap);
  const cJSON *msgs = cJSON_GetObjectItem(s, "messages");
  CHECK_EQ_INT(cJSON_GetArraySize(msgs), 200);
  CHECK_EQ_INT(cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, 0), "seq")->valueint, 3);
  CHECK_EQ_INT(cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, 199), "seq")->valueint, 202);
  CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(s, "queue")), 1);
  CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(s, "session"), "model")->valuestring, "mock/dex");
  cJSON_Delete(s);
  teardown(&f);
}

/* A model whose item has unusual spacing and an encrypted blob: both must
 * come back byte for byte in the next request. */
static const char weird_item[] =
    "{ \"type\" : \"reasoning\",\"encrypted_content\":\"gAAAA+/=\\u00e9\" , \"summary\":[] }";
static char captured[8192];

static int verbatim_generate(void *user, const dexa_model_request *req, dexa_model_reply *reply) {
  size_t n = dexa_model_request_message_count(req);
  const char *last;
  size_t len;
  dexa_model_request_message_at(req, n - 1, &last, &len);
  if (strstr(last, "\"role\":\"user\"") && n > 1) {
    const char *prev;
    size_t pl;
    dexa_model_request_message_at(req, n - 2, &prev, &pl);
    snprintf(captured, sizeof captured, "%.*s", (int)pl, prev);
  }
  dexa_model_reply_add_item(reply, weird_item, strlen(weird_item));
  dexa_model_reply_add_reasoning(reply, "thinking", 8);
  const char *msg = "{\"type\":\"message\",\"content\":\"ok\"}";
  dexa_model_reply_add_item(reply, msg, strlen(msg));
  return dexa_model_reply_add_text(reply, "ok", 2);
}

static void test_output_items_are_stored_and_replayed_verbatim(void) {
  dexa_model_vtable vt;
  dexa_model_vtable_init(&vt, sizeof vt);
  vt.generate = verbatim_generate;
  dexa_model *m;
  CHECK_EQ_INT(dexa_model_new(&m, "test/verbatim", &vt, NULL), DEXA_OK);
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.models = &m;
  def.model_count = 1;
  dexa_agent *a;
  dexa_agent_new(&a, &def, NULL, 0);
  dexa_model_free(m);
  memhost *h = memhost_new(a, "s-v");
  memhost_start(h, NULL);
  memhost_run(h);
  memhost_rpc(h, "send_message", "{\"text\":\"one\"}", NULL);
  memhost_run(h);
  memhost_rpc(h, "send_message", "{\"text\":\"two\"}", NULL);
  memhost_run(h);
  CHECK_CONTAINS(memhost_attr(h, "AgentMessages/00000000000000000002"), weird_item);
  CHECK_CONTAINS(memhost_attr(h, "AgentMessages/00000000000000000002"), "\"reasoning\":\"thinking\"");
  /* The message before the second user message is the first reply's last item;
   * the reasoning item is the one before it: check the stored one is spliced. */
  CHECK_CONTAINS(captured, "\"item\":{\"type\":\"message\",\"content\":\"ok\"}");
  memhost_free(h);
  dexa_agent_free(a);
}

/* ---- the dispatch ABI itself ---- */

static int get_none(void *u, const char *k, size_t kl, const char **v, size_t *vl) {
  return DEXA_E_NOT_FOUND;
}
static int scan_none(void *u, const char *p, size_t pl, dexa_attr_visit_fn f, void *c) {
  return DEXA_OK;
}

static void test_dispatch_rejects_bad_calls(void) {
  fixture f = setup(NULL);
  dexa_result *r = NULL;
  CHECK_EQ_INT(dexa_dispatch(NULL, f.agent, NULL), DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(dexa_dispatch(&r, f.agent, NULL), DEXA_E_INVALID_ARG);
  CHECK(strlen(dexa_result_errmsg(r)) > 0);
  dexa_result_free(r);
  dexa_call call;
  CHECK_EQ_INT(dexa_call_init(&call, 8), DEXA_E_STRUCT_SIZE);
  dexa_call_init(&call, sizeof call);
  call.kind = DEXA_CALL_EXECUTE;
  call.session_id = "s";
  call.name = "RunModel";
  CHECK_EQ_INT(dexa_dispatch(&r, f.agent, &call), DEXA_E_INVALID_ARG); /* no reader */
  CHECK_CONTAINS(dexa_result_errmsg(r), "reader");
  dexa_result_free(r);
  call.attr_get = get_none;
  call.attr_scan = scan_none;
  call.struct_size = 12;
  CHECK_EQ_INT(dexa_dispatch(&r, f.agent, &call), DEXA_E_STRUCT_SIZE);
  dexa_result_free(r);
  call.struct_size = sizeof call;
  call.name = "NoSuchStep";
  CHECK_EQ_INT(dexa_dispatch(&r, f.agent, &call), DEXA_E_UNKNOWN_STEP);
  CHECK_EQ_INT(dexa_result_write_count(r), 0);
  dexa_result_free(r);
  call.name = "RunModel";
  call.input = "{\"turn\":";
  call.input_len = strlen(call.input);
  CHECK_EQ_INT(dexa_dispatch(&r, f.agent, &call), DEXA_E_INVALID_JSON);
  dexa_result_free(r);
  call.input = "{} x";
  call.input_len = strlen(call.input);
  CHECK_EQ_INT(dexa_dispatch(&r, f.agent, &call), DEXA_E_INVALID_JSON);
  dexa_result_free(r);
  call.kind = DEXA_CALL_WAIT_FOR;
  call.input = "{}";
  call.input_len = 2;
  CHECK_EQ_INT(dexa_dispatch(&r, f.agent, &call), DEXA_E_INVALID_ARG);
  dexa_result_free(r);
  call.kind = 9;
  CHECK_EQ_INT(dexa_dispatch(&r, f.agent, &call), DEXA_E_INVALID_ARG);
  dexa_result_free(r);
  teardown(&f);
}

static void test_agent_def_validation(void) {
  dexa_agent_def def;
  CHECK_EQ_INT(dexa_agent_def_init(&def, 4), DEXA_E_STRUCT_SIZE);
  CHECK_EQ_INT(dexa_agent_def_init(&def, sizeof def), DEXA_OK);
  CHECK_EQ_INT(def.run_model_max_attempts, 3);
  CHECK_EQ_INT(def.max_state_bytes, 64 << 20);
  dexa_agent *a = (dexa_agent *)1;
  char err[100];
  CHECK_EQ_INT(dexa_agent_new(&a, &def, err, sizeof err), DEXA_E_INVALID_ARG);
  CHECK(a == NULL);
  CHECK_CONTAINS(err, "model");
  dexa_model *m;
  dexa_model_demo_new(&m, "mock/dex");
  dexa_model *twice[] = {m, m};
  def.models = twice;
  def.model_count = 2;
  CHECK_EQ_INT(dexa_agent_new(&a, &def, err, sizeof err), DEXA_E_INVALID_ARG);
  CHECK_CONTAINS(err, "same name");
  def.model_count = 1;
  def.struct_size = 8;
  CHECK_EQ_INT(dexa_agent_new(&a, &def, err, sizeof err), DEXA_E_STRUCT_SIZE);
  def.struct_size = sizeof def;
  CHECK_EQ_INT(dexa_agent_new(&a, &def, err, sizeof err), DEXA_OK);
  CHECK_STR(dexa_agent_flow_type(a), "AgentSession");
  dexa_model_free(m);
  dexa_agent_free(a);
  dexa_agent_free(NULL);
  CHECK_EQ_INT(dexa_model_demo_new(&m, "gpt-4"), DEXA_E_INVALID_ARG);
}

static int failing_list(void *user, dexa_tool_list *list) { return DEXA_E_IO; }
static int no_call(void *user, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  return DEXA_E_TOOL;
}

static void test_tool_source_lists_its_tools_as_json(void) {
  dexa_tool_source *fns;
  dexa_function_tools_new(&fns, "fns");
  dexa_function_tools_add(fns, "lookup", "Looks up", NULL, DEXA_TOOL_READ, DEXA_APPROVAL_NONE,
                          tool_fn, &lookup);
  dexa_function_tools_add(fns, "send_mail", "Sends", "{\"type\":\"object\",\"properties\":{}}",
                          DEXA_TOOL_WRITE, DEXA_APPROVAL_REQUIRED, tool_fn, &writer);
  char *json = NULL;
  size_t len = 0;
  CHECK_EQ_INT(dexa_tool_source_list_json(&json, &len, fns), DEXA_OK);
  CHECK_STR(json, "[{\"name\":\"lookup\",\"description\":\"Looks up\",\"parameters\":"
                  "{\"type\":\"object\"},\"effect\":\"read\",\"approval\":false},"
                  "{\"name\":\"send_mail\",\"description\":\"Sends\",\"parameters\":"
                  "{\"type\":\"object\",\"properties\":{}},\"effect\":\"write\",\"approval\":true}]");
  CHECK_EQ_INT(len, strlen(json));
  dexa_free(json);
  dexa_tool_source_free(fns);
  dexa_tool_source_vtable vt;
  dexa_tool_source_vtable_init(&vt, sizeof vt);
  vt.list_tools = failing_list;
  vt.call_tool = no_call;
  dexa_tool_source *down;
  dexa_tool_source_new(&down, "down", &vt, NULL);
  json = (char *)1;
  CHECK_EQ_INT(dexa_tool_source_list_json(&json, NULL, down), DEXA_E_IO);
  CHECK(json == NULL);
  CHECK_EQ_INT(dexa_tool_source_list_json(&json, NULL, NULL), DEXA_E_INVALID_ARG);
  dexa_tool_source_free(down);
}

static void test_flow_describe_lists_steps_and_options(void) {
  fixture f = setup(NULL);
  char *d;
  size_t n;
  CHECK_EQ_INT(dexa_flow_describe(&d, &n, f.agent), DEXA_OK);
  cJSON *j = cJSON_Parse(d);
  CHECK(j != NULL);
  CHECK_CONTAINS(d, "\"start_step\":\"StartAgentSession\"");
  CHECK_CONTAINS(d, "{\"name\":\"CallSingleAttemptTool\",\"options\":{\"max_attempts\":1");
  CHECK_CONTAINS(d, "\"recovery\":\"RecordTurnFailure\"");
  cJSON_Delete(j);
  dexa_free(d);
  teardown(&f);
}

int main(void) {
  RUN(test_start_session_records_default_model);
  RUN(test_turn_echoes_with_streamed_deltas);
  RUN(test_model_command_names_session_model);
  RUN(test_parallel_tool_steps_join_in_resume_turn);
  RUN(test_call_tool_retries_transient_failures);
  RUN(test_call_tool_out_of_attempts_records_error);
  RUN(test_single_attempt_write_lost_is_unknown_outcome);
  RUN(test_single_attempt_write_error_is_not_retried);
  RUN(test_run_model_retries_then_succeeds);
  RUN(test_run_model_fails_turn_after_three_attempts);
  RUN(test_queued_messages_run_in_order);
  RUN(test_a_queued_message_leaves_no_stale_wakeup);
  RUN(test_unknown_tool_gets_error_result);
  RUN(test_send_message_bad_input_changes_nothing);
  RUN(test_rpc_on_unknown_session_is_not_found);
  RUN(test_snapshot_holds_newest_200_messages_and_queue);
  RUN(test_output_items_are_stored_and_replayed_verbatim);
  RUN(test_dispatch_rejects_bad_calls);
  RUN(test_agent_def_validation);
  RUN(test_tool_source_lists_its_tools_as_json);
  RUN(test_flow_describe_lists_steps_and_options);
  TEST_MAIN_END();
}
