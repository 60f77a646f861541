/* dexa_flow_describe names everything the flow uses: a tour through every
 * Step and RPC writes only attributes and publishes only to channels the
 * description lists, so an engine that registers only what is described
 * accepts every write. */
#include <cjson/cJSON.h>
#include <dexagents/dexagents.h>

#include "support/memhost.h"
#include "support/tour.h"
#include "testing.h"

/* 1 when name is in list: exactly, or under a map prefix ("Name/"). */
static int described(const cJSON *list, const char *name) {
  const cJSON *e;
  cJSON_ArrayForEach(e, list) {
    const char *d = e->valuestring;
    size_t n = strlen(d);
    if (n && d[n - 1] == '/' ? strncmp(name, d, n) == 0 && name[n] : strcmp(name, d) == 0)
      return 1;
  }
  return 0;
}

static int listed(const cJSON *array, const char *name) {
  const cJSON *e;
  cJSON_ArrayForEach(e, array)
    if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(e, "name")), name) == 0) return 1;
  return 0;
}

static void test_every_name_the_flow_writes_is_described(void) {
  dexa_agent *a = tour_agent(NULL, NULL);
  CHECK(a);
  char *d = NULL;
  CHECK_EQ_INT(dexa_flow_describe(&d, NULL, a), DEXA_OK);
  cJSON *desc = cJSON_Parse(d);
  dexa_free(d);
  memhost *h = memhost_new(a, "s-tour");
  int failures = tour_run(h);
  int undescribed = 0, steps_missed = 0, rpcs_missed = 0;
  for (int i = 0; i < memhost_name_count(h); i++) {
    const char *n = memhost_name_at(h, i);
    const char *list = n[0] == 'w' ? "attributes" : "channels";
    if (!described(cJSON_GetObjectItem(desc, list), n + 2)) {
      fprintf(stderr, "    not in \"%s\": %s\n", list, n + 2);
      undescribed++;
    }
  }
  const cJSON *s;
  cJSON_ArrayForEach(s, cJSON_GetObjectItem(desc, "steps")) {
    const char *name = cJSON_GetObjectItem(s, "name")->valuestring;
    if (memhost_dispatches(h, name) == 0) {
      fprintf(stderr, "    the tour never ran %s\n", name);
      steps_missed++;
    }
  }
  for (int i = 0; tour_rpcs[i]; i++) rpcs_missed += !listed(cJSON_GetObjectItem(desc, "rpcs"), tour_rpcs[i]);
  int rpc_count = cJSON_GetArraySize(cJSON_GetObjectItem(desc, "rpcs"));
  int names = memhost_name_count(h);
  cJSON_Delete(desc);
  memhost_free(h);
  dexa_agent_free(a);
  CHECK_EQ_INT(failures, 0);
  CHECK_EQ_INT(steps_missed, 0);
  CHECK_EQ_INT(rpcs_missed, 0);
  CHECK_EQ_INT(rpc_count, (int)(sizeof "0123456789" - 1)); /* the tour calls all 10 */
  CHECK(names > 10);
  CHECK_EQ_INT(undescribed, 0);
}

int main(void) {
  RUN(test_every_name_the_flow_writes_is_described);
  TEST_MAIN_END();
}
