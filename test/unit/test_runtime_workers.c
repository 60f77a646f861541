/* Worker threads and group commit: many sessions run to the end on two
 * threads; every step runs exactly once when nothing fails.
 * test-needs: sqlite postgresql */
#include "testing.h"
#include "test_runtime_fake.h"

static const char *DESC =
    "{\"flow_type\":\"Fake\",\"start_step\":\"Start\",\"steps\":["
    "{\"name\":\"Start\",\"options\":{\"locked\":true}},{\"name\":\"Work\"},"
    "{\"name\":\"Bump\",\"options\":{\"locked\":true}}]," FAKE_RPCS "}";

/* Work {"left":k}: k > 0 goes on with k-1 plus a locked Bump; 0 writes done. */
static int h_chain(fake *f, const dexa_call *c, dexa_result *r) {
  if (is(c, DEXA_CALL_EXECUTE, "Start")) {
    put_decision(r, "{\"next\":[{\"step\":\"Work\",\"input\":{\"left\":4}}]}");
    return DEXA_OK;
  }
  if (is(c, DEXA_CALL_EXECUTE, "Bump")) {
    const char *v;
    size_t n;
    int count = 0;
    if (c->attr_get(c->attr_user_data, "bumps", 5, &v, &n) == DEXA_OK) count = atoi(v);
    char buf[16];
    snprintf(buf, sizeof buf, "%d", count + 1);
    put_write(r, "bumps", buf);
    return DEXA_OK;
  }
  cJSON *in = fake_input(c);
  int left = cJSON_GetObjectItem(in, "left")->valueint;
  cJSON_Delete(in);
  if (left == 0) {
    put_write(r, "done", "true");
    return DEXA_OK;
  }
  char d[200];
  snprintf(d, sizeof d, "{\"next\":[{\"step\":\"Work\",\"input\":{\"left\":%d}},{\"step\":\"Bump\"}]}", left - 1);
  put_decision(r, d);
  return DEXA_OK;
}

#define SESSIONS 40

static void test_worker_threads_run_many_sessions(void) {
  fake f;
  fake_init(&f, h_chain);
  char path[1024];
  temp_db(path, sizeof path, "workers");
  dexa_runtime *rt = NULL;
  CHECK_EQ_INT(fake_open(&rt, &f, DESC, path, 5000, 10000), DEXA_OK);
  CHECK_EQ_INT(dexa_runtime_start(rt, 2), DEXA_OK);
  CHECK_EQ_INT(dexa_runtime_start(rt, 2), DEXA_E_BAD_STATE);
  char sid[SESSIONS][16];
  for (int i = 0; i < SESSIONS; i++) {
    snprintf(sid[i], sizeof sid[i], "w%d", i);
    CHECK_EQ_INT(fake_start(rt, sid[i]), DEXA_OK);
  }
  for (int i = 0; i < SESSIONS; i++) CHECK_EQ_INT(dexa_runtime_wait_idle(rt, sid[i], 30000), DEXA_OK);
  CHECK_EQ_INT(dexa_runtime_stop(rt), DEXA_OK);
  CHECK_EQ_INT(fake_count(&f, "E Work "), SESSIONS * 5);
  CHECK_EQ_INT(fake_count(&f, "E Bump "), SESSIONS * 4);
  for (int i = 0; i < SESSIONS; i++) {
    char *v = fake_get(rt, sid[i], "done");
    CHECK_STR(v, "{\"value\":true}");
    dexa_free(v);
    v = fake_get(rt, sid[i], "bumps");
    CHECK_STR(v, "{\"value\":4}");
    dexa_free(v);
  }
  /* Restartable after stop. */
  CHECK_EQ_INT(dexa_runtime_start(rt, 1), DEXA_OK);
  dexa_runtime_free(rt);
  temp_store_remove(path);
}

int main(void) {
  RUN(test_worker_threads_run_many_sessions);
  TEST_MAIN_END();
}
