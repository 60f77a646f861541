/* The harness contract through dexa_dispatch on the in-memory host, with a
 * toy framework (test/support/toyfw.c) that keeps its own message list as
 * its state: the turn shape (RunModel, a Step per tool call in parallel,
 * ResumeTurn, RunModel with the recorded results), the framework's state
 * and the messages new for it, per-call policies, reads inside the segment,
 * retries, lost results, Stop, Steer, queued messages, ask_user /
 * durable_wait / write_todos, compaction and the state limit. */
#include <dexagents/dexagents.h>
#include <stdarg.h>
#include <stdatomic.h>

#include <cjson/cJSON.h>

#include "harness/cc_tools.h"
#include "iface/tool_source.h"
#include "support/memhost.h"
#include "support/toyfw.h"
#include "testing.h"

/* ---- tools that count their calls ---- */

typedef struct counting_tool {
  atomic_int calls;
} counting_tool;

static counting_tool lookup, mailer, guarded, crm;

static int tool_fn(void *user, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  counting_tool *t = user;
  atomic_fetch_add(&t->calls, 1);
  const char *args;
  size_t len;
  dexa_tool_invocation_arguments(inv, &args, &len);
  char text[300];
  int k =
      snprintf(text, sizeof text, "%s got %.*s", dexa_tool_invocation_name(inv), (int)len, args);
  return dexa_tool_output_set_text(out, text, (size_t)k, 0);
}

typedef struct fixture {
  dexa_agent *agent;
  memhost *h;
  toyfw_stats *fw;
} fixture;

typedef struct setup_opts {
  uint32_t flags;
  int fold_every;
  int summarize;
  int64_t context_window;
  int64_t max_state_bytes;
} setup_opts;

static fixture *current; /* for on_block */

static void stop_now(void *ctx) {
  fixture *f = ctx;
  if (memhost_rpc(f->h, "cancel_turn", "{}", NULL) != DEXA_OK)
    fprintf(stderr, "cancel_turn failed\n");
  memhost_set_cancelled(f->h, 1);
}

static fixture setup_with(const setup_opts *o) {
  memset(&lookup, 0, sizeof lookup);
  memset(&mailer, 0, sizeof mailer);
  memset(&guarded, 0, sizeof guarded);
  memset(&crm, 0, sizeof crm);
  fixture f = {NULL, NULL, NULL};
  toyfw_options to = {o->flags, o->fold_every, o->summarize, stop_now, current, NULL};
  dexa_model *m;
  toyfw_new(&m, "toy/fw", &to, &f.fw);
  dexa_tool_source *tools;
  dexa_function_tools_new(&tools, "fns");
  dexa_function_tools_add(tools, "lookup", "Looks a thing up", NULL, DEXA_TOOL_READ,
                          DEXA_APPROVAL_NONE, tool_fn, &lookup);
  dexa_function_tools_add(tools, "send_mail", "Sends mail", NULL, DEXA_TOOL_WRITE,
                          DEXA_APPROVAL_NONE, tool_fn, &mailer);
  dexa_function_tools_add(tools, "delete_all", "Deletes everything", NULL, DEXA_TOOL_WRITE,
                          DEXA_APPROVAL_REQUIRED, tool_fn, &guarded);
  /* a Connector's source (marked as dexa_connector_tool_source_new marks
   * its sources), with a read */
  dexa_tool_source *connector;
  dexa_function_tools_new(&connector, "crm");
  dexa_function_tools_add(connector, "crm_lookup", "Looks a customer up", NULL, DEXA_TOOL_READ,
                          DEXA_APPROVAL_NONE, tool_fn, &crm);
  connector->connector = 1;
  dexa_tool_source *sources[2] = {tools, connector};
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.models = &m;
  def.model_count = 1;
  def.tool_sources = sources;
  def.tool_source_count = 2;
  def.builtin_tools = DEXA_BUILTIN_ALL;
  def.plan_mode_enabled = 1;
  def.context_window_tokens = o->context_window;
  if (o->max_state_bytes) {
    def.max_state_bytes = o->max_state_bytes;
    def.max_message_bytes = 4096;
  }
  char err[128];
  if (dexa_agent_new(&f.agent, &def, err, sizeof err) != DEXA_OK)
    fprintf(stderr, "agent: %s\n", err);
  dexa_model_free(m);
  dexa_tool_source_free(tools);
  dexa_tool_source_free(connector);
  f.h = memhost_new(f.agent, "s-harness");
  if (memhost_start(f.h, NULL) != DEXA_OK) fprintf(stderr, "start failed\n");
  memhost_run(f.h);
  return f;
}

static fixture setup(uint32_t flags) {
  setup_opts o = {flags, 0, 0, 0, 0};
  return setup_with(&o);
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

static int rpc(fixture *f, const char *name, const char *fmt, ...) {
  char input[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(input, sizeof input, fmt, ap);
  va_end(ap);
  return memhost_rpc(f->h, name, input, NULL);
}

/* The text of the newest model message (static copy), or "". */
static const char *last_text(fixture *f) {
  static char text[4096];
  text[0] = '\0';
  cJSON *t = cJSON_Parse(memhost_attr(f->h, "AgentTranscript"));
  int next = cJSON_GetObjectItem(t, "next_seq")->valueint;
  cJSON_Delete(t);
  for (int seq = next - 1; seq > 0 && !text[0]; seq--) {
    char key[64];
    snprintf(key, sizeof key, "AgentMessages/%020d", seq);
    cJSON *m = cJSON_Parse(memhost_attr(f->h, key));
    const char *role = cJSON_GetStringValue(cJSON_GetObjectItem(m, "role"));
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(m, "text"));
    if (role && !strcmp(role, "model") && s) snprintf(text, sizeof text, "%s", s);
    cJSON_Delete(m);
  }
  return text;
}

static int count_events(fixture *f, const char *type) {
  char needle[96];
  snprintf(needle, sizeof needle, "\"type\":\"%s\"", type);
  int n = 0;
  for (const char *p = memhost_events(f->h); (p = strstr(p, needle)); p++) n++;
  return n;
}

static const char *turn_status(fixture *f) { return memhost_attr(f->h, "AgentTurn"); }

/* ---- the harness handle ---- */

static int noop_segment(void *u, const dexa_model_request *req, dexa_model_reply *reply) {
  return dexa_model_reply_add_item(reply, "{}", 2);
}

static void test_harness_new_checks_its_arguments(void) {
  dexa_harness_vtable vt;
  CHECK_EQ_INT(dexa_harness_vtable_init(NULL, sizeof vt), DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(dexa_harness_vtable_init(&vt, 8), DEXA_E_STRUCT_SIZE);
  CHECK_EQ_INT(dexa_harness_vtable_init(&vt, sizeof vt), DEXA_OK);
  dexa_model *m = (dexa_model *)&vt;
  CHECK_EQ_INT(dexa_harness_new(&m, "h", &vt, NULL), DEXA_E_INVALID_ARG); /* no run_segment */
  CHECK(m == NULL);
  vt.run_segment = noop_segment;
  CHECK_EQ_INT(dexa_harness_new(NULL, "h", &vt, NULL), DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(dexa_harness_new(&m, "", &vt, NULL), DEXA_E_INVALID_ARG);
  vt.flags = 8;
  CHECK_EQ_INT(dexa_harness_new(&m, "h", &vt, NULL), DEXA_E_INVALID_ARG);
  vt.flags = DEXA_HARNESS_OWNS_TRANSCRIPT | DEXA_HARNESS_RUNS_READS;
  vt.struct_size = 4;
  CHECK_EQ_INT(dexa_harness_new(&m, "h", &vt, NULL), DEXA_E_STRUCT_SIZE);
  vt.struct_size = sizeof vt;
  CHECK_EQ_INT(dexa_harness_new(&m, "fw/h", &vt, NULL), DEXA_OK);
  CHECK_STR(dexa_model_name(m), "fw/h");
  dexa_model_free(m);
  /* Accessors refuse what is not a harness's segment. */
  CHECK_EQ_INT(dexa_model_request_cancelled(NULL), 0);
  CHECK_EQ_INT(dexa_model_request_first_new_message(NULL), 0);
  CHECK_EQ_INT(dexa_model_request_harness_entry_count(NULL), 0);
  const char *j;
  size_t n;
  CHECK_EQ_INT(dexa_model_request_harness_state(NULL, &j, &n), DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(dexa_model_request_harness_entry_at(NULL, 0, &j, &n), DEXA_E_INVALID_ARG);
  char *out;
  CHECK_EQ_INT(dexa_model_request_call_tool(NULL, "c", "lookup", "{}", 2, &out, &n),
               DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(dexa_model_reply_set_harness_state(NULL, "{}", 2), DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(dexa_model_reply_add_harness_entry(NULL, "{}", 2), DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(dexa_model_reply_set_tool_policy(NULL, "c", 0, -1), DEXA_E_INVALID_ARG);
}

/* ---- the turn shape ---- */

static void test_harness_read_call_runs_in_call_tool_and_results_come_back(void) {
  fixture f = setup(DEXA_HARNESS_OWNS_TRANSCRIPT);
  CHECK_EQ_INT(send(&f, "call lookup {\"q\":1}"), DEXA_OK);
  memhost_run(f.h);
  CHECK_EQ_INT(atomic_load(&lookup.calls), 1);
  CHECK_EQ_INT(memhost_dispatches(f.h, "RunModel"), 2);
  CHECK_EQ_INT(memhost_dispatches(f.h, "CallTool"), 1);
  CHECK_EQ_INT(memhost_dispatches(f.h, "ResumeTurn"), 2); /* WaitFor and Execute */
  /* user, its call, the result, its answer: 4 messages of its own */
  CHECK_STR(last_text(&f), "results: lookup=ok:lookup got {\"q\":1} [4 messages]");
  /* the second segment got exactly the recorded result, and nothing else */
  CHECK_EQ_INT(f.fw->new_count, 1);
  CHECK_STR(f.fw->new_roles, "tool:ok");
  CHECK_EQ_INT(f.fw->request_messages, 1);
  CHECK_CONTAINS(memhost_attr(f.h, "AgentHarness"), "\"harness\":\"toy/fw\",\"segments\":2");
  CHECK_CONTAINS(turn_status(&f), "\"status\":\"idle\"");
  CHECK_EQ_INT(count_events(&f, "turn_finished"), 1);
  teardown(&f);
}

static void test_harness_parallel_calls_run_as_parallel_steps(void) {
  fixture f = setup(DEXA_HARNESS_OWNS_TRANSCRIPT);
  send(&f, "call lookup {\"q\":1}\ncall lookup {\"q\":2}");
  memhost_run_steps(f.h, 2); /* AwaitUserMessage, RunModel */
  CHECK_EQ_INT(memhost_pending(f.h, "CallTool"), 2);
  CHECK_EQ_INT(memhost_pending(f.h, "ResumeTurn"), 1);
  memhost_run(f.h);
  CHECK_EQ_INT(atomic_load(&lookup.calls), 2);
  CHECK_STR(f.fw->new_roles, "tool:ok,tool:ok");
  CHECK_CONTAINS(last_text(&f), "lookup=ok:lookup got {\"q\":1} | lookup=ok:lookup got {\"q\":2}");
  teardown(&f);
}

static void test_harness_next_turn_gets_only_the_new_user_message(void) {
  fixture f = setup(DEXA_HARNESS_OWNS_TRANSCRIPT);
  send(&f, "call lookup {}");
  memhost_run(f.h);
  send(&f, "hello again");
  memhost_run(f.h);
  CHECK_EQ_INT(f.fw->new_count, 1);
  CHECK_STR(f.fw->new_roles, "user");
  CHECK_EQ_INT(f.fw->request_messages, 1);
  CHECK_STR(last_text(&f), "echo: hello again [6 messages]");
  teardown(&f);
}

static void test_harness_with_our_transcript_gets_it_whole_and_the_new_index(void) {
  fixture f = setup(0);
  send(&f, "call lookup {}");
  memhost_run(f.h);
  send(&f, "hello again");
  memhost_run(f.h);
  /* every retained message (user, call, result, answer, user), one new */
  CHECK_EQ_INT(f.fw->request_messages, 5);
  CHECK_EQ_INT(f.fw->new_count, 1);
  CHECK_STR(f.fw->new_roles, "user");
  CHECK_STR(last_text(&f), "echo: hello again [6 messages]");
  teardown(&f);
}

static void test_harness_state_appends_entries_and_folds(void) {
  setup_opts o = {DEXA_HARNESS_OWNS_TRANSCRIPT, 3, 0, 0, 0};
  fixture f = setup_with(&o);
  send(&f, "one");
  memhost_run(f.h);
  send(&f, "two");
  memhost_run(f.h);
  CHECK(memhost_attr(f.h, "AgentHarnessState") == NULL);
  CHECK_EQ_INT(memhost_count(f.h, "AgentHarnessStateEntries/"), 2);
  CHECK_EQ_INT(f.fw->entries, 1); /* the second segment read one entry */
  send(&f, "three");              /* the third segment folds the list into the state */
  memhost_run(f.h);
  CHECK(memhost_attr(f.h, "AgentHarnessState") != NULL);
  CHECK_EQ_INT(memhost_count(f.h, "AgentHarnessStateEntries/"), 0);
  send(&f, "four");
  memhost_run(f.h);
  CHECK(f.fw->had_state);
  CHECK_EQ_INT(f.fw->entries, 0);
  CHECK_EQ_INT(memhost_count(f.h, "AgentHarnessStateEntries/"), 1);
  CHECK_STR(last_text(&f), "echo: four [8 messages]");
  /* the state's bytes are counted: the base plus the entry */
  const char *meta = memhost_attr(f.h, "AgentHarness");
  cJSON *m = cJSON_Parse(meta);
  long long bytes = (long long)cJSON_GetObjectItem(m, "bytes")->valuedouble;
  cJSON_Delete(m);
  CHECK_EQ_INT(
      bytes,
      (long long)(strlen(memhost_attr(f.h, "AgentHarnessState")) +
                  strlen(memhost_attr(f.h, "AgentHarnessStateEntries/00000000000000000002"))));
  teardown(&f);
}

static void test_harness_state_of_another_harness_is_not_given_and_is_dropped(void) {
  fixture f = setup(DEXA_HARNESS_OWNS_TRANSCRIPT);
  memhost_put(f.h, "AgentHarness",
              "{\"harness\":\"old/fw\",\"segments\":9,\"through_seq\":99,\"first_entry\":1,"
              "\"next_entry\":2,\"bytes\":20}");
  memhost_put(f.h, "AgentHarnessState", "[\"old\"]");
  memhost_put(f.h, "AgentHarnessStateEntries/00000000000000000001", "[\"older\"]");
  send(&f, "hi");
  memhost_run(f.h);
  CHECK(!f.fw->had_state);
  CHECK_EQ_INT(f.fw->entries, 0);
  CHECK_STR(f.fw->new_roles, "user"); /* from the start: not after seq 99 */
  CHECK(memhost_attr(f.h, "AgentHarnessState") == NULL);
  CHECK(memhost_attr(f.h, "AgentHarnessStateEntries/00000000000000000001") == NULL);
  CHECK_CONTAINS(memhost_attr(f.h, "AgentHarness"), "\"harness\":\"toy/fw\",\"segments\":1");
  CHECK_STR(last_text(&f), "echo: hi [2 messages]");
  teardown(&f);
}

/* ---- effects and approval ---- */

static void test_harness_write_needing_approval_waits_and_runs_once(void) {
  fixture f = setup(DEXA_HARNESS_OWNS_TRANSCRIPT);
  send(&f, "call send_mail {\"to\":\"ops\"} approval=yes");
  memhost_run(f.h);
  CHECK_EQ_INT(memhost_pending(f.h, "AwaitToolApproval"), 1);
  CHECK_EQ_INT(atomic_load(&mailer.calls), 0);
  CHECK_EQ_INT(
      rpc(&f, "resolve_approval", "{\"call_id\":\"toy-t1-r1-c1\",\"decision\":\"approve\"}"),
      DEXA_OK);
  memhost_run(f.h);
  CHECK_EQ_INT(atomic_load(&mailer.calls), 1);
  CHECK_EQ_INT(memhost_dispatches(f.h, "CallSingleAttemptTool"), 1);
  CHECK_EQ_INT(memhost_dispatches(f.h, "CallTool"), 0);
  CHECK_STR(last_text(&f), "results: send_mail=ok:send_mail got {\"to\":\"ops\"} [4 messages]");
  teardown(&f);
}

static void test_harness_rejected_call_comes_back_with_the_note(void) {
  fixture f = setup(DEXA_HARNESS_OWNS_TRANSCRIPT);
  send(&f, "call delete_all {}");
  memhost_run(f.h);
  CHECK_EQ_INT(memhost_pending(f.h, "AwaitToolApproval"), 1); /* the tool's own policy */
  CHECK_EQ_INT(rpc(&f, "resolve_approval",
                   "{\"call_id\":\"toy-t1-r1-c1\",\"decision\":\"reject\",\"note\":\"never\"}"),
               DEXA_OK);
  memhost_run(f.h);
  CHECK_EQ_INT(atomic_load(&guarded.calls), 0);
  CHECK_STR(f.fw->new_roles, "tool:rejected");
  CHECK_CONTAINS(last_text(&f),
                 "delete_all=rejected:The user rejected this call; it did not run. Note: never");
  teardown(&f);
}

static void test_harness_policy_overrides_the_tools_own(void) {
  fixture f = setup(DEXA_HARNESS_OWNS_TRANSCRIPT);
  /* the framework says send_mail is an idempotent write and delete_all
   * needs no approval: CallTool for the first, no wait for the second */
  send(&f, "call send_mail {} effect=idempotent_write\ncall delete_all {} approval=no");
  memhost_run(f.h);
  CHECK_EQ_INT(memhost_dispatches(f.h, "AwaitToolApproval"), 0);
  CHECK_EQ_INT(memhost_dispatches(f.h, "CallTool"), 1);
  CHECK_EQ_INT(memhost_dispatches(f.h, "CallSingleAttemptTool"), 1);
  CHECK_EQ_INT(atomic_load(&mailer.calls), 1);
  CHECK_EQ_INT(atomic_load(&guarded.calls), 1);
  CHECK_CONTAINS(memhost_events(f.h), "\"type\":\"tool_call_proposed\"");
  teardown(&f);
}

static void test_harness_unknown_tool_gets_an_error_result(void) {
  fixture f = setup(DEXA_HARNESS_OWNS_TRANSCRIPT);
  send(&f, "call no_such_tool {}");
  memhost_run(f.h);
  CHECK_STR(f.fw->new_roles, "tool:error");
  CHECK_CONTAINS(last_text(&f), "no_such_tool=error:unknown tool");
  teardown(&f);
}

/* ---- reads inside the segment ---- */

static void test_harness_read_inside_the_segment_is_recorded_as_an_event(void) {
  fixture f = setup(DEXA_HARNESS_OWNS_TRANSCRIPT | DEXA_HARNESS_RUNS_READS);
  send(&f, "inner lookup {\"q\":7}");
  memhost_run(f.h);
  CHECK_EQ_INT(atomic_load(&lookup.calls), 1);
  CHECK_EQ_INT(memhost_dispatches(f.h, "RunModel"), 1);
  CHECK_EQ_INT(memhost_dispatches(f.h, "CallTool"), 0);
  CHECK_STR(last_text(&f), "inner: lookup=ok:lookup got {\"q\":7} [2 messages]");
  CHECK_EQ_INT(count_events(&f, "segment_tool_call"), 1);
  CHECK_CONTAINS(
      memhost_events(f.h),
      "\"call_id\":\"toy-t1-r1-i1\",\"name\":\"lookup\",\"arguments\":{\"q\":7},\"status\":\"ok\"");
  CHECK_CONTAINS(memhost_live(f.h), "\"in_segment\":true");
  teardown(&f);
}

static void test_harness_only_reads_run_inside_the_segment(void) {
  fixture f = setup(DEXA_HARNESS_OWNS_TRANSCRIPT | DEXA_HARNESS_RUNS_READS);
  send(&f, "inner send_mail {}");
  memhost_run(f.h);
  CHECK_EQ_INT(f.fw->inner_rc, DEXA_E_BAD_STATE);
  send(&f, "inner delete_all {}");
  memhost_run(f.h);
  CHECK_EQ_INT(f.fw->inner_rc, DEXA_E_BAD_STATE);
  send(&f, "inner ask_user {\"prompt\":\"x\"}");
  memhost_run(f.h);
  CHECK_EQ_INT(f.fw->inner_rc, DEXA_E_BAD_STATE);
  send(&f, "inner nothing_like_it {}");
  memhost_run(f.h);
  CHECK_EQ_INT(f.fw->inner_rc, DEXA_E_NOT_FOUND);
  send(&f, "inner lookup [1]");
  memhost_run(f.h);
  CHECK_EQ_INT(f.fw->inner_rc, DEXA_E_INVALID_JSON);
  CHECK_EQ_INT(
      atomic_load(&mailer.calls) + atomic_load(&guarded.calls) + atomic_load(&lookup.calls), 0);
  CHECK_EQ_INT(count_events(&f, "segment_tool_call"), 0);
  teardown(&f);
}

/* The seed: a Connector tool call always leaves the segment, even a read. */
static void test_harness_connector_read_leaves_the_segment(void) {
  fixture f = setup(DEXA_HARNESS_OWNS_TRANSCRIPT | DEXA_HARNESS_RUNS_READS);
  send(&f, "inner crm_lookup {}");
  memhost_run(f.h);
  CHECK_EQ_INT(f.fw->inner_rc, DEXA_E_BAD_STATE);
  CHECK_EQ_INT(atomic_load(&crm.calls), 0);
  send(&f, "call crm_lookup {\"id\":3}");
  memhost_run(f.h);
  CHECK_EQ_INT(atomic_load(&crm.calls), 1);
  CHECK_EQ_INT(memhost_dispatches(f.h, "CallTool"), 1); /* its own Step */
  CHECK_EQ_INT(count_events(&f, "segment_tool_call"), 0);
  /* The Claude Code harness offers it to the CLI as a tool that ends the
   * segment: the request marks it, and cc_tools does not run it inside. */
  cJSON *read = cJSON_Parse("{\"name\":\"lookup\",\"effect\":\"read\",\"approval\":false}");
  cJSON *conn = cJSON_Parse(
      "{\"name\":\"crm_lookup\",\"effect\":\"read\",\"approval\":false,\"connector\":true}");
  CHECK_EQ_INT(dexa__cc_tool_runs_inside(read), 1);
  CHECK_EQ_INT(dexa__cc_tool_runs_inside(conn), 0);
  cJSON_Delete(read);
  cJSON_Delete(conn);
  teardown(&f);
}

static int capture_tools(void *u, const dexa_model_request *req, dexa_model_reply *reply) {
  const char *j;
  size_t n;
  if (dexa_model_request_json(req, &j, &n) == DEXA_OK) snprintf(u, 4096, "%.*s", (int)n, j);
  return dexa_model_reply_add_item(reply, "{}", 2);
}

static void test_harness_request_marks_connector_tools(void) {
  static char seen[4096];
  dexa_harness_vtable vt;
  dexa_harness_vtable_init(&vt, sizeof vt);
  vt.run_segment = capture_tools;
  vt.flags = DEXA_HARNESS_RUNS_READS;
  dexa_model *m;
  CHECK_EQ_INT(dexa_harness_new(&m, "cap/h", &vt, seen), DEXA_OK);
  dexa_tool_source *connector;
  dexa_function_tools_new(&connector, "crm");
  dexa_function_tools_add(connector, "crm_lookup", "Looks a customer up", NULL, DEXA_TOOL_READ,
                          DEXA_APPROVAL_NONE, tool_fn, &crm);
  connector->connector = 1;
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.models = &m;
  def.model_count = 1;
  def.tool_sources = &connector;
  def.tool_source_count = 1;
  dexa_agent *a = NULL;
  char err[128];
  CHECK_EQ_INT(dexa_agent_new(&a, &def, err, sizeof err), DEXA_OK);
  dexa_model_free(m);
  dexa_tool_source_free(connector);
  memhost *h = memhost_new(a, "s-cap");
  memhost_start(h, NULL);
  memhost_run(h);
  memhost_rpc(h, "send_message", "{\"text\":\"hi\"}", NULL);
  memhost_run(h);
  CHECK_CONTAINS(seen, "\"name\":\"crm_lookup\"");
  CHECK_CONTAINS(seen, "\"approval\":false,\"connector\":true");
  memhost_free(h);
  dexa_agent_free(a);
}

/* Tools the framework ran itself are durable events of the committed
 * segment, at least once, never Steps. */
static void test_harness_framework_tool_calls_are_recorded_as_events(void) {
  fixture f = setup(DEXA_HARNESS_OWNS_TRANSCRIPT);
  send(&f, "ran web_search {\"q\":\"dex\"} found-it\nfail 1");
  memhost_run(f.h);
  CHECK_EQ_INT(memhost_dispatches(f.h, "RunModel"), 2); /* the first attempt failed */
  CHECK_EQ_INT(memhost_dispatches(f.h, "CallTool"), 0);
  CHECK_EQ_INT(count_events(&f, "segment_tool_call"), 1); /* the committed attempt's */
  CHECK_CONTAINS(memhost_events(f.h),
                 "\"call_id\":\"toy-t1-r1-f1\",\"name\":\"web_search\",\"arguments\":{\"q\":\"dex\"},"
                 "\"status\":\"ok\",\"output\":\"found-it\",\"ran_by\":\"framework\",\"attempt\":2");
  CHECK_CONTAINS(turn_status(&f), "\"status\":\"idle\"");
  teardown(&f);
}

static int bad_framework_calls(void *u, const dexa_model_request *req, dexa_model_reply *reply) {
  int *rcs = u;
  const char *bad[] = {"{\"name\":\"t\"}", "{\"call_id\":\"\",\"name\":\"t\"}",
                       "{\"call_id\":\"c\",\"name\":\"t\",\"status\":\"maybe\"}",
                       "{\"call_id\":\"c\",\"name\":\"t\",\"output\":3}", "[1]"};
  for (int i = 0; i < 5; i++) rcs[i] = dexa_model_reply_add_framework_tool_call(reply, bad[i], strlen(bad[i]));
  rcs[5] = dexa_model_reply_add_framework_tool_call(reply, "{\"call_id\":", 11);
  const char *good = "{\"call_id\":\"c\",\"name\":\"t\",\"status\":\"error\"}";
  rcs[6] = dexa_model_reply_add_framework_tool_call(reply, good, strlen(good));
  return dexa_model_reply_add_item(reply, "{}", 2);
}

static void test_harness_framework_tool_call_is_checked(void) {
  CHECK_EQ_INT(dexa_model_reply_add_framework_tool_call(NULL, "{}", 2), DEXA_E_INVALID_ARG);
  int rcs[7] = {0};
  dexa_harness_vtable vt;
  dexa_harness_vtable_init(&vt, sizeof vt);
  vt.run_segment = bad_framework_calls;
  dexa_model *m;
  CHECK_EQ_INT(dexa_harness_new(&m, "bad/h", &vt, rcs), DEXA_OK);
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.models = &m;
  def.model_count = 1;
  dexa_agent *a = NULL;
  char err[128];
  CHECK_EQ_INT(dexa_agent_new(&a, &def, err, sizeof err), DEXA_OK);
  dexa_model_free(m);
  memhost *h = memhost_new(a, "s-bad");
  memhost_start(h, NULL);
  memhost_run(h);
  memhost_rpc(h, "send_message", "{\"text\":\"hi\"}", NULL);
  memhost_run(h);
  for (int i = 0; i < 4; i++) CHECK_EQ_INT(rcs[i], DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(rcs[4], DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(rcs[5], DEXA_E_INVALID_JSON);
  CHECK_EQ_INT(rcs[6], DEXA_OK);
  CHECK_CONTAINS(memhost_events(h), "\"status\":\"error\",\"output\":\"\",\"ran_by\":\"framework\"");
  memhost_free(h);
  dexa_agent_free(a);
}

static void test_harness_without_the_flag_runs_no_read_inside(void) {
  fixture f = setup(DEXA_HARNESS_OWNS_TRANSCRIPT);
  send(&f, "inner lookup {}");
  memhost_run(f.h);
  CHECK_EQ_INT(f.fw->inner_rc, DEXA_E_BAD_STATE);
  CHECK_EQ_INT(atomic_load(&lookup.calls), 0);
  teardown(&f);
}

/* ---- failures, retries, lost results ---- */

static void test_harness_failed_segment_reruns_whole_and_reads_repeat(void) {
  fixture f = setup(DEXA_HARNESS_OWNS_TRANSCRIPT | DEXA_HARNESS_RUNS_READS);
  send(&f, "fail 2\ninner lookup {}");
  memhost_run(f.h);
  CHECK_EQ_INT(memhost_dispatches(f.h, "RunModel"), 3);
  CHECK_EQ_INT(atomic_load(&lookup.calls), 3);            /* at least once: once per attempt */
  CHECK_EQ_INT(count_events(&f, "segment_tool_call"), 1); /* the committed attempt's */
  CHECK_CONTAINS(memhost_events(f.h), "\"attempt\":3");
  CHECK_CONTAINS(last_text(&f), "inner: lookup=ok:");
  CHECK_CONTAINS(turn_status(&f), "\"status\":\"idle\"");
  teardown(&f);
}

static void test_harness_failing_every_attempt_fails_the_turn_and_keeps_the_state(void) {
  fixture f = setup(DEXA_HARNESS_OWNS_TRANSCRIPT);
  send(&f, "first");
  memhost_run(f.h);
  send(&f, "fail 9");
  memhost_run(f.h);
  CHECK_EQ_INT(memhost_dispatches(f.h, "RecordTurnFailure"), 1);
  CHECK_CONTAINS(turn_status(&f), "\"status\":\"failed\"");
  CHECK_CONTAINS(memhost_attr(f.h, "AgentHarness"), "\"segments\":1");
  /* the next segment gets the failed turn's message too: it never saw it */
  send(&f, "again");
  memhost_run(f.h);
  CHECK_STR(f.fw->new_roles, "user,user");
  CHECK_STR(last_text(&f), "echo: again [5 messages]");
  teardown(&f);
}

static void test_harness_lost_segment_reruns_but_a_write_step_never_does(void) {
  fixture f = setup(DEXA_HARNESS_OWNS_TRANSCRIPT | DEXA_HARNESS_RUNS_READS);
  send(&f, "inner lookup {}\ncall send_mail {}");
  memhost_lose_results(f.h, "RunModel", 1);
  memhost_run(f.h);
  CHECK_EQ_INT(atomic_load(&lookup.calls), 2); /* the lost segment's read ran again */
  CHECK_EQ_INT(atomic_load(&mailer.calls), 1);
  memhost_lose_results(f.h, "CallSingleAttemptTool", 1);
  send(&f, "call send_mail {\"n\":2}");
  memhost_run(f.h);
  CHECK_EQ_INT(atomic_load(&mailer.calls), 2); /* ran once, its result lost: not repeated */
  CHECK_STR(f.fw->new_roles, "tool:unknown_outcome");
  CHECK_CONTAINS(last_text(&f), "send_mail=unknown_outcome:");
  teardown(&f);
}

/* ---- Stop, Steer, queued messages ---- */

static void test_harness_stop_during_a_segment_ends_the_turn_as_a_stop(void) {
  setup_opts o = {DEXA_HARNESS_OWNS_TRANSCRIPT, 0, 0, 0, 0};
  static fixture g; /* on_block stops the turn through it */
  current = &g;
  g = setup_with(&o);
  current = NULL;
  send(&g, "block");
  memhost_run(g.h);
  CHECK(g.fw->cancelled_seen);
  CHECK_EQ_INT(memhost_dispatches(g.h, "RunModel"), 1); /* not retried */
  CHECK_EQ_INT(memhost_dispatches(g.h, "RecordTurnFailure"), 0);
  CHECK_EQ_INT(memhost_dispatches(g.h, "ApplyTurnControl"), 1);
  CHECK_CONTAINS(turn_status(&g), "\"status\":\"cancelled\"");
  CHECK_EQ_INT(count_events(&g, "turn_cancelled"), 1);
  memhost_set_cancelled(g.h, 0);
  send(&g, "after the stop");
  memhost_run(g.h);
  CHECK_STR(g.fw->new_roles, "user,user"); /* the stopped turn's message, then this one */
  CHECK_STR(last_text(&g), "echo: after the stop [3 messages]");
  teardown(&g);
}

static void test_harness_stop_between_segments_cancels_the_waiting_call(void) {
  fixture f = setup(DEXA_HARNESS_OWNS_TRANSCRIPT);
  send(&f, "call delete_all {}");
  memhost_run(f.h);
  CHECK_EQ_INT(memhost_rpc(f.h, "cancel_turn", "{}", NULL), DEXA_OK);
  memhost_run(f.h);
  CHECK_CONTAINS(turn_status(&f), "\"status\":\"cancelled\"");
  CHECK_EQ_INT(atomic_load(&guarded.calls), 0);
  send(&f, "next");
  memhost_run(f.h);
  CHECK_STR(f.fw->new_roles, "tool:cancelled,user");
  CHECK_STR(last_text(&f), "echo: next [5 messages]");
  teardown(&f);
}

static void test_harness_steer_starts_a_turn_with_the_steered_message(void) {
  fixture f = setup(DEXA_HARNESS_OWNS_TRANSCRIPT);
  send(&f, "call lookup {}");
  memhost_run_steps(f.h, 2); /* AwaitUserMessage, RunModel: CallTool not started */
  send(&f, "steered");
  send(&f, "queued after");
  CHECK_EQ_INT(rpc(&f, "steer", "{\"message_id\":\"m2\"}"), DEXA_OK);
  memhost_run(f.h);
  CHECK_EQ_INT(atomic_load(&lookup.calls), 0);
  CHECK_EQ_INT(count_events(&f, "turn_cancelled"), 1);
  /* turn 2 saw the cancelled call and the steered message; turn 3 the queued one */
  CHECK_STR(last_text(&f), "echo: queued after [7 messages]");
  CHECK_STR(f.fw->new_roles, "user");
  CHECK_CONTAINS(turn_status(&f), "\"turn\":3,\"status\":\"idle\"");
  teardown(&f);
}

/* ---- built-in tools offered to the framework ---- */

static void test_harness_ask_user_waits_for_the_answer(void) {
  fixture f = setup(DEXA_HARNESS_OWNS_TRANSCRIPT);
  send(&f, "ask colour?");
  memhost_run(f.h);
  CHECK_EQ_INT(memhost_pending(f.h, "AwaitQuestionAnswer"), 1);
  CHECK_EQ_INT(rpc(&f, "answer_question", "{\"call_id\":\"toy-t1-r1-c1\",\"answer\":\"teal\"}"),
               DEXA_OK);
  memhost_run(f.h);
  CHECK_STR(last_text(&f), "results: ask_user=ok:teal [4 messages]");
  teardown(&f);
}

static void test_harness_durable_wait_and_write_todos(void) {
  fixture f = setup(DEXA_HARNESS_OWNS_TRANSCRIPT);
  send(&f, "wait 5");
  memhost_run(f.h);
  CHECK_EQ_INT(memhost_pending(f.h, "AwaitTimer"), 1);
  memhost_advance(f.h, 5000);
  memhost_run(f.h);
  CHECK_CONTAINS(last_text(&f), "results: durable_wait=ok:");
  send(&f, "todos");
  memhost_run(f.h);
  CHECK_CONTAINS(memhost_attr(f.h, "AgentPlan"), "\"content\":\"two\"");
  CHECK_CONTAINS(last_text(&f), "results: write_todos=ok:The plan is now revision 1.");
  teardown(&f);
}

static void test_harness_planning_turn_offers_write_todos_alone(void) {
  fixture f = setup(DEXA_HARNESS_OWNS_TRANSCRIPT);
  CHECK_EQ_INT(memhost_rpc(f.h, "send_message",
                           "{\"text\":\"call lookup {}\\ntodos\",\"plan_mode\":true}", NULL),
               DEXA_OK);
  memhost_run(f.h);
  CHECK_EQ_INT(atomic_load(&lookup.calls), 0);
  CHECK_CONTAINS(last_text(&f), "lookup=error:unknown tool \"lookup\": it is not offered to this "
                                "session (a planning turn may call write_todos only)");
  CHECK_CONTAINS(last_text(&f), "write_todos=ok:The plan is now revision 1.");
  CHECK_CONTAINS(memhost_attr(f.h, "AgentPlan"), "\"revision\":1,\"status\":\"draft\"");
  CHECK_EQ_INT(rpc(&f, "execute_plan", "{\"revision\":1}"), DEXA_OK);
  memhost_run(f.h);
  CHECK_CONTAINS(turn_status(&f), "\"turn\":2,\"status\":\"idle\",\"mode\":\"executing\"");
  CHECK_STR(f.fw->new_roles, "user");
  CHECK_STR(last_text(&f), "echo: Execute the plan (revision 1). [7 messages]");
  teardown(&f);
}

/* ---- compaction and the state limit ---- */

static void test_harness_owning_its_transcript_gets_no_compaction_and_ends_at_the_limit(void) {
  setup_opts o = {DEXA_HARNESS_OWNS_TRANSCRIPT, 0, 1, 200, 16384};
  fixture f = setup_with(&o);
  for (int i = 0; i < 3; i++) {
    char text[600];
    snprintf(text, sizeof text, "message %d %0500d", i, i);
    send(&f, text);
    memhost_run(f.h);
  }
  CHECK_EQ_INT(memhost_dispatches(f.h, "CompactContext"), 0);
  CHECK_EQ_INT(f.fw->summaries, 0);
  CHECK_CONTAINS(turn_status(&f), "\"status\":\"idle\"");
  CHECK_EQ_INT(send(&f, "grow 12000\ncall lookup {}"), DEXA_OK);
  CHECK_EQ_INT(send(&f, "queued behind"), DEXA_OK);
  memhost_run(f.h);
  CHECK_EQ_INT(atomic_load(&lookup.calls),
               0); /* the call of the segment past the limit never ran */
  CHECK_CONTAINS(turn_status(&f), "\"status\":\"failed\"");
  CHECK_CONTAINS(turn_status(&f), "\"code\":-304");
  CHECK_CONTAINS(turn_status(&f), "which Dex does not compact");
  int segments = f.fw->segments;
  CHECK_CONTAINS(memhost_events(f.h), "the session takes no more turns");
  /* the queued message's turn failed at once, without a segment */
  CHECK_EQ_INT(memhost_dispatches(f.h, "RecordTurnFailure"), 2);
  CHECK_EQ_INT(segments, 4);
  char *resp = NULL;
  CHECK_EQ_INT(memhost_rpc(f.h, "send_message", "{\"text\":\"more\"}", &resp), DEXA_E_STATE_LIMIT);
  free(resp);
  teardown(&f);
}

static void test_harness_with_our_transcript_and_summarize_gets_compaction(void) {
  setup_opts o = {0, 0, 1, 200, 0};
  fixture f = setup_with(&o);
  for (int i = 0; i < 4; i++) {
    char text[600];
    snprintf(text, sizeof text, "message %d %0300d", i, i);
    send(&f, text);
    memhost_run(f.h);
  }
  CHECK(memhost_dispatches(f.h, "CompactContext") >= 1);
  CHECK(f.fw->summaries >= 1);
  CHECK(memhost_attr(f.h, "AgentContextSummary") != NULL);
  CHECK_CONTAINS(last_text(&f), "echo: message 3 ");
  teardown(&f);
}

static void test_harness_with_our_transcript_but_no_summarize_gets_no_compaction(void) {
  setup_opts o = {0, 0, 0, 200, 0};
  fixture f = setup_with(&o);
  for (int i = 0; i < 3; i++) {
    char text[600];
    snprintf(text, sizeof text, "message %d %0300d", i, i);
    send(&f, text);
    memhost_run(f.h);
  }
  CHECK_EQ_INT(memhost_dispatches(f.h, "CompactContext"), 0);
  CHECK_CONTAINS(last_text(&f), "echo: message 2 ");
  teardown(&f);
}

/* ---- a model client stopped during its call ---- */

static memhost *stop_host;

static int stoppable_generate(void *u, const dexa_model_request *req, dexa_model_reply *reply) {
  memhost_rpc(stop_host, "cancel_turn", "{}", NULL);
  memhost_set_cancelled(stop_host, 1);
  if (!dexa_model_request_cancelled(req)) return dexa_model_reply_add_item(reply, "{}", 2);
  dexa_model_reply_set_error(reply, "aborted: the turn was stopped", 0);
  return DEXA_E_TRANSIENT;
}

static void test_model_call_ended_by_a_stop_is_not_a_failure(void) {
  dexa_model_vtable vt;
  dexa_model_vtable_init(&vt, sizeof vt);
  vt.generate = stoppable_generate;
  dexa_model *m;
  dexa_model_new(&m, "test/stoppable", &vt, NULL);
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.models = &m;
  def.model_count = 1;
  dexa_agent *a;
  dexa_agent_new(&a, &def, NULL, 0);
  dexa_model_free(m);
  memhost *h = memhost_new(a, "s-stop");
  stop_host = h;
  memhost_start(h, NULL);
  memhost_rpc(h, "send_message", "{\"text\":\"hi\"}", NULL);
  memhost_run(h);
  CHECK_EQ_INT(memhost_dispatches(h, "RunModel"), 1);
  CHECK_EQ_INT(memhost_dispatches(h, "RecordTurnFailure"), 0);
  CHECK_CONTAINS(memhost_attr(h, "AgentTurn"), "\"status\":\"cancelled\"");
  memhost_free(h);
  dexa_agent_free(a);
}

/* ---- reply checks inside a segment ---- */

static struct {
  int state_bad_json, entry_bad_json, policy_unknown_call, policy_bad_effect, policy_bad_approval;
  int policy_ok, state_drop, call_tool_no_out;
} probe;

static int probe_segment(void *u, const dexa_model_request *req, dexa_model_reply *reply) {
  probe.state_bad_json = dexa_model_reply_set_harness_state(reply, "{", 1);
  probe.entry_bad_json = dexa_model_reply_add_harness_entry(reply, "[1,", 3);
  dexa_model_reply_add_item(reply, "{\"type\":\"probe\"}", 16);
  dexa_model_reply_add_text(reply, "probed", 6);
  probe.policy_unknown_call =
      dexa_model_reply_set_tool_policy(reply, "c1", DEXA_TOOL_READ, DEXA_APPROVAL_DEFAULT);
  dexa_model_reply_add_tool_call(reply, "c1", "lookup", "{}", 2);
  probe.policy_bad_effect = dexa_model_reply_set_tool_policy(reply, "c1", 4, DEXA_APPROVAL_DEFAULT);
  probe.policy_bad_approval = dexa_model_reply_set_tool_policy(reply, "c1", DEXA_TOOL_READ, 2);
  probe.policy_ok = dexa_model_reply_set_tool_policy(reply, "c1", DEXA_TOOL_EFFECT_DEFAULT,
                                                     DEXA_APPROVAL_REQUIRED);
  size_t n;
  probe.call_tool_no_out = dexa_model_request_call_tool(req, "i1", "lookup", "{}", 2, NULL, &n);
  dexa_model_reply_add_harness_entry(reply, "[1]", 3);
  probe.state_drop = dexa_model_reply_set_harness_state(reply, NULL, 0); /* drops the entry too */
  return DEXA_OK;
}

static void test_harness_reply_refuses_bad_state_and_policies(void) {
  dexa_harness_vtable vt;
  dexa_harness_vtable_init(&vt, sizeof vt);
  vt.flags = DEXA_HARNESS_RUNS_READS;
  vt.run_segment = probe_segment;
  dexa_model *m;
  dexa_harness_new(&m, "probe", &vt, NULL);
  dexa_tool_source *tools;
  dexa_function_tools_new(&tools, "fns");
  dexa_function_tools_add(tools, "lookup", "", NULL, DEXA_TOOL_READ, DEXA_APPROVAL_NONE, tool_fn,
                          &lookup);
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.models = &m;
  def.model_count = 1;
  def.tool_sources = &tools;
  def.tool_source_count = 1;
  dexa_agent *a;
  dexa_agent_new(&a, &def, NULL, 0);
  dexa_model_free(m);
  dexa_tool_source_free(tools);
  memhost *h = memhost_new(a, "s-probe");
  memhost_start(h, NULL);
  memhost_rpc(h, "send_message", "{\"text\":\"hi\"}", NULL);
  memhost_run(h);
  CHECK_EQ_INT(probe.state_bad_json, DEXA_E_INVALID_JSON);
  CHECK_EQ_INT(probe.entry_bad_json, DEXA_E_INVALID_JSON);
  CHECK_EQ_INT(probe.policy_unknown_call, DEXA_E_NOT_FOUND);
  CHECK_EQ_INT(probe.policy_bad_effect, DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(probe.policy_bad_approval, DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(probe.policy_ok, DEXA_OK);
  CHECK_EQ_INT(probe.call_tool_no_out, DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(probe.state_drop, DEXA_OK);
  CHECK_EQ_INT(memhost_pending(h, "AwaitToolApproval"), 1); /* the policy asked for approval */
  CHECK(memhost_attr(h, "AgentHarnessState") == NULL);
  CHECK_EQ_INT(memhost_count(h, "AgentHarnessStateEntries/"), 0);
  CHECK_CONTAINS(memhost_attr(h, "AgentHarness"), "\"bytes\":0");
  memhost_free(h);
  dexa_agent_free(a);
}

static void test_flow_describe_lists_the_harness_attributes(void) {
  fixture f = setup(0);
  char *d;
  size_t n;
  CHECK_EQ_INT(dexa_flow_describe(&d, &n, f.agent), DEXA_OK);
  CHECK_CONTAINS(d, "\"AgentHarness\",\"AgentHarnessState\",\"AgentHarnessStateEntries/\"");
  dexa_free(d);
  teardown(&f);
}

static void test_call_struct_of_1_0_has_no_cancellation(void) {
  /* A host built against 1.0 passes the smaller struct: its calls carry no
   * cancellation callback, whatever lies past its end. */
  struct {
    dexa_call call;
    char tail[64];
  } big;
  memset(&big, 0xff, sizeof big);
  size_t v1 = offsetof(dexa_call, cancelled);
  CHECK_EQ_INT(dexa_call_init(&big.call, v1 - 1), DEXA_E_STRUCT_SIZE);
  CHECK_EQ_INT(dexa_call_init(&big.call, v1), DEXA_OK);
  CHECK_EQ_INT(big.call.struct_size, v1);
  CHECK_EQ_INT(dexa_call_init(&big.call, sizeof big.call), DEXA_OK);
  CHECK_EQ_INT(big.call.struct_size, sizeof big.call);
  CHECK(big.call.cancelled == NULL);
}

int main(void) {
  RUN(test_harness_new_checks_its_arguments);
  RUN(test_harness_read_call_runs_in_call_tool_and_results_come_back);
  RUN(test_harness_parallel_calls_run_as_parallel_steps);
  RUN(test_harness_next_turn_gets_only_the_new_user_message);
  RUN(test_harness_with_our_transcript_gets_it_whole_and_the_new_index);
  RUN(test_harness_state_appends_entries_and_folds);
  RUN(test_harness_state_of_another_harness_is_not_given_and_is_dropped);
  RUN(test_harness_write_needing_approval_waits_and_runs_once);
  RUN(test_harness_rejected_call_comes_back_with_the_note);
  RUN(test_harness_policy_overrides_the_tools_own);
  RUN(test_harness_unknown_tool_gets_an_error_result);
  RUN(test_harness_read_inside_the_segment_is_recorded_as_an_event);
  RUN(test_harness_only_reads_run_inside_the_segment);
  RUN(test_harness_without_the_flag_runs_no_read_inside);
  RUN(test_harness_connector_read_leaves_the_segment);
  RUN(test_harness_request_marks_connector_tools);
  RUN(test_harness_framework_tool_calls_are_recorded_as_events);
  RUN(test_harness_framework_tool_call_is_checked);
  RUN(test_harness_failed_segment_reruns_whole_and_reads_repeat);
  RUN(test_harness_failing_every_attempt_fails_the_turn_and_keeps_the_state);
  RUN(test_harness_lost_segment_reruns_but_a_write_step_never_does);
  RUN(test_harness_stop_during_a_segment_ends_the_turn_as_a_stop);
  RUN(test_harness_stop_between_segments_cancels_the_waiting_call);
  RUN(test_harness_steer_starts_a_turn_with_the_steered_message);
  RUN(test_harness_ask_user_waits_for_the_answer);
  RUN(test_harness_durable_wait_and_write_todos);
  RUN(test_harness_planning_turn_offers_write_todos_alone);
  RUN(test_harness_owning_its_transcript_gets_no_compaction_and_ends_at_the_limit);
  RUN(test_harness_with_our_transcript_and_summarize_gets_compaction);
  RUN(test_harness_with_our_transcript_but_no_summarize_gets_no_compaction);
  RUN(test_model_call_ended_by_a_stop_is_not_a_failure);
  RUN(test_harness_reply_refuses_bad_state_and_policies);
  RUN(test_flow_describe_lists_the_harness_attributes);
  RUN(test_call_struct_of_1_0_has_no_cancellation);
  TEST_MAIN_END();
}
