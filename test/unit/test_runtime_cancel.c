/* A running call learns that its turn was stopped: the flow description
 * marks interrupting RPCs ("interrupts":true), and once one commits the
 * runtime makes the dexa_call.cancelled of the session's running tasks
 * return 1. Nothing else changes: the task's result is still applied.
 * test-needs: sqlite postgresql */
#include "testing.h"
#include "test_runtime_fake.h"

#include <stdatomic.h>

#include "flow/call.h"

static const char *DESC =
    "{\"flow_type\":\"Fake\",\"start_step\":\"Start\",\"steps\":["
    "{\"name\":\"Start\",\"options\":{\"locked\":true,\"max_attempts\":1}},"
    "{\"name\":\"Work\",\"options\":{\"max_attempts\":3}},"
    "{\"name\":\"Poll\",\"options\":{\"max_attempts\":1,\"timeout_ms\":600000}}],"
    "\"rpcs\":[{\"name\":\"get\"},{\"name\":\"put\"},"
    "{\"name\":\"custom\",\"interrupts\":true}]}";

static char dbpath[512];

/* Poll: set while a worker runs it; its result says whether it was told. */
static atomic_int poll_running;

/* Start: {"next": settings.next}. Work: writes "work" and, with input
 * {"again":1}, runs Work again. Poll: waits (up to 60 s) for cancelled.
 * custom (the interrupting RPC): fails with {"fail":1}, else writes "stop". */
static int handler(fake *f, const dexa_call *c, dexa_result *r) {
  cJSON *in = fake_input(c);
  int rc = DEXA_OK;
  if (is(c, DEXA_CALL_EXECUTE, "Start")) {
    cJSON *next = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(in, "settings"), "next");
    char *n = next ? cJSON_PrintUnformatted(next) : NULL;
    char doc[1024];
    snprintf(doc, sizeof doc, "{\"next\":%s}", n ? n : "[]");
    put_decision(r, doc);
    free(n);
  } else if (is(c, DEXA_CALL_EXECUTE, "Work")) {
    put_write(r, "work", "\"done\"");
    put_decision(r, cJSON_GetObjectItemCaseSensitive(in, "again")
                        ? "{\"next\":[{\"step\":\"Work\",\"input\":{}}]}"
                        : "{\"next\":[]}");
  } else if (is(c, DEXA_CALL_EXECUTE, "Poll")) {
    atomic_store(&poll_running, 1);
    int told = 0;
    for (int i = 0; i < 60000 && !(told = c->cancelled(c->cancel_user_data)); i++) usleep(1000);
    put_write(r, "poll", told ? "\"told\"" : "\"never told\"");
    put_decision(r, "{\"next\":[]}");
  } else if (is(c, DEXA_CALL_RPC, "custom")) {
    if (cJSON_GetObjectItemCaseSensitive(in, "fail"))
      rc = dexa__result_fail(r, DEXA_E_BAD_STATE, "refused");
    else
      put_write(r, "stop", "true");
  }
  cJSON_Delete(in);
  return rc;
}

static dexa_runtime *open_rt(fake *f) {
  dexa_runtime *rt = NULL;
  fake_init(f, handler);
  temp_db(dbpath, sizeof dbpath, "rtcancel");
  if (fake_open(&rt, f, DESC, dbpath, 60000, 10000) != DEXA_OK) return NULL;
  return rt;
}

static int start_with(dexa_runtime *rt, const char *sid, const char *settings) {
  char *out = NULL;
  size_t n;
  int rc = dexa_runtime_start_session(rt, sid, settings, strlen(settings), &out, &n);
  dexa_free(out);
  return rc;
}

static int rpc(dexa_runtime *rt, const char *sid, const char *name, const char *input) {
  char *out = NULL;
  size_t n;
  int rc = dexa_runtime_call(rt, sid, name, input, strlen(input), &out, &n);
  dexa_free(out);
  return rc;
}

static int told(const dexa_task *t) {
  const dexa_call *c = dexa_task_call(t);
  return c->cancelled ? c->cancelled(c->cancel_user_data) : -1;
}

/* Host-driven: tasks polled by the test, the RPC from the same thread. */
static void test_interrupting_rpc_tells_the_sessions_running_tasks_only(void) {
  fake f;
  dexa_runtime *rt = open_rt(&f);
  CHECK(rt);
  const char *work = "{\"next\":[{\"step\":\"Work\",\"input\":{\"again\":1}}]}";
  CHECK_EQ_INT(start_with(rt, "a", work), DEXA_OK);
  CHECK_EQ_INT(start_with(rt, "b", work), DEXA_OK);
  dexa_task *t1 = NULL, *t2 = NULL, *ta = NULL, *tb = NULL;
  CHECK_EQ_INT(dexa_runtime_poll(rt, &t1, 0), DEXA_OK);
  CHECK_EQ_INT(dexa_runtime_poll(rt, &t2, 0), DEXA_OK);
  ta = strcmp(dexa_task_call(t1)->session_id, "a") == 0 ? t1 : t2;
  tb = ta == t1 ? t2 : t1;
  CHECK_STR(dexa_task_call(tb)->session_id, "b");
  CHECK_EQ_INT(dexa_task_call(ta)->struct_size, sizeof(dexa_call));
  CHECK_EQ_INT(told(ta), 0);
  CHECK_EQ_INT(told(tb), 0);
  /* An RPC that does not interrupt, and an interrupting one that failed. */
  CHECK_EQ_INT(rpc(rt, "a", "put", "{\"key\":\"k\",\"value\":1}"), DEXA_OK);
  CHECK_EQ_INT(rpc(rt, "a", "custom", "{\"fail\":1}"), DEXA_E_BAD_STATE);
  CHECK_EQ_INT(told(ta), 0);
  CHECK_EQ_INT(rpc(rt, "a", "custom", "{}"), DEXA_OK);
  CHECK_EQ_INT(told(ta), 1);
  CHECK_EQ_INT(told(tb), 0);
  /* The flow is unchanged: the told task's result is still applied. */
  dexa_result *res = NULL;
  CHECK_EQ_INT(fake_dispatch(&f, &res, dexa_task_call(ta)), DEXA_OK);
  CHECK_EQ_INT(dexa_runtime_complete(rt, ta, res), DEXA_OK);
  dexa_result_free(res);
  char *v = fake_get(rt, "a", "work");
  CHECK_STR(v, "{\"value\":\"done\"}");
  dexa_free(v);
  /* A task claimed after the RPC belongs to what came next: not told. */
  dexa_task *tn = NULL;
  CHECK_EQ_INT(dexa_runtime_poll(rt, &tn, 0), DEXA_OK);
  CHECK_STR(dexa_task_call(tn)->session_id, "a");
  CHECK_EQ_INT(told(tn), 0);
  dexa_task_abandon(rt, tn);
  dexa_task_abandon(rt, tb);
  dexa_runtime_free(rt);
}

/* Worker threads: a Step running on a worker sees the flag while it runs. */
static void test_a_step_running_on_a_worker_is_told_by_the_rpc(void) {
  fake f;
  dexa_runtime *rt = open_rt(&f);
  CHECK(rt);
  atomic_store(&poll_running, 0);
  CHECK_EQ_INT(start_with(rt, "a", "{\"next\":[{\"step\":\"Poll\",\"input\":{}}]}"), DEXA_OK);
  CHECK_EQ_INT(dexa_runtime_start(rt, 2), DEXA_OK);
  for (int i = 0; i < 60000 && !atomic_load(&poll_running); i++) usleep(1000);
  CHECK(atomic_load(&poll_running));
  CHECK_EQ_INT(rpc(rt, "a", "custom", "{}"), DEXA_OK);
  CHECK_EQ_INT(dexa_runtime_wait_idle(rt, "a", 60000), DEXA_OK);
  char *v = fake_get(rt, "a", "poll");
  CHECK_STR(v, "{\"value\":\"told\"}");
  dexa_free(v);
  CHECK_EQ_INT(dexa_runtime_stop(rt), DEXA_OK);
  dexa_runtime_free(rt);
}

/* The agent's description marks cancel_turn, and only it, as interrupting. */
static void test_agent_description_marks_cancel_turn_interrupting(void) {
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  dexa_model *m = NULL;
  CHECK_EQ_INT(dexa_model_demo_new(&m, "mock/dex"), DEXA_OK);
  def.models = &m;
  def.model_count = 1;
  dexa_agent *agent = NULL;
  CHECK_EQ_INT(dexa_agent_new(&agent, &def, NULL, 0), DEXA_OK);
  dexa_model_free(m);
  char *d = NULL;
  CHECK_EQ_INT(dexa_flow_describe(&d, NULL, agent), DEXA_OK);
  cJSON *root = cJSON_Parse(d);
  dexa_free(d);
  int interrupting = 0, seen = 0;
  const cJSON *r;
  cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(root, "rpcs")) {
    const cJSON *i = cJSON_GetObjectItemCaseSensitive(r, "interrupts");
    seen += cJSON_IsBool(i);
    if (cJSON_IsTrue(i)) {
      interrupting++;
      const char *name = cJSON_GetObjectItemCaseSensitive(r, "name")->valuestring;
      if (strcmp(name, "cancel_turn") != 0 && strcmp(name, "end_session") != 0) interrupting += 100;
    }
  }
  int total = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(root, "rpcs"));
  cJSON_Delete(root);
  dexa_agent_free(agent);
  CHECK(total > 0);
  CHECK_EQ_INT(seen, total);
  CHECK_EQ_INT(interrupting, 2); /* cancel_turn (Stop) and end_session */
}

static int always(void *u) { return u != NULL; }

/* A caller compiled against the 1.0 header has no cancelled member: what
 * lies after its structure is never read. */
static void test_a_1_0_call_is_never_cancelled(void) {
  dexa_call call;
  CHECK_EQ_INT(dexa_call_init(&call, DEXA__CALL_V1_SIZE - 1), DEXA_E_STRUCT_SIZE);
  CHECK_EQ_INT(dexa_call_init(&call, sizeof call), DEXA_OK);
  CHECK_EQ_INT(call.struct_size, sizeof call);
  CHECK(call.cancelled == NULL && call.cancel_user_data == NULL);
  CHECK_EQ_INT(dexa__call_cancelled(&call), 0);
  call.cancelled = always;
  call.cancel_user_data = &call;
  CHECK_EQ_INT(dexa__call_cancelled(&call), 1);
  CHECK_EQ_INT(dexa_call_init(&call, DEXA__CALL_V1_SIZE), DEXA_OK);
  CHECK_EQ_INT(call.struct_size, DEXA__CALL_V1_SIZE);
  CHECK(call.cancelled == always); /* beyond the caller's size: untouched */
  CHECK_EQ_INT(dexa__call_cancelled(&call), 0);
  CHECK_EQ_INT(dexa__call_cancelled(NULL), 0);
}

int main(void) {
  RUN(test_a_1_0_call_is_never_cancelled);
  RUN(test_interrupting_rpc_tells_the_sessions_running_tasks_only);
  RUN(test_a_step_running_on_a_worker_is_told_by_the_rpc);
  RUN(test_agent_description_marks_cancel_turn_interrupting);
  temp_store_remove(dbpath);
  TEST_MAIN_END();
}
