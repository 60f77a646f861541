/* Replays the corpus of the dexa_dispatch fuzz target
 * (test/fuzz/corpus/fuzz_dispatch/) through LLVMFuzzerTestOneInput, so
 * `make check` and its ASan build run every input a fuzzing session kept,
 * and checks the result contract of every handler on hand-made hostile
 * calls. */
#include <dirent.h>
#include <stdlib.h>

#include "testing.h"

#include "fuzz/fuzz_dispatch.c"

static void test_replay_dispatch_corpus(void) {
  DIR *d = opendir("test/fuzz/corpus/fuzz_dispatch");
  CHECK(d != NULL);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char file[1024];
    snprintf(file, sizeof file, "test/fuzz/corpus/fuzz_dispatch/%s", e->d_name);
    FILE *f = fopen(file, "rb");
    if (!f) continue;
    uint8_t buf[65536];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, len);
    n++;
  }
  closedir(d);
  CHECK(n >= 10);
}

/* Dispatches one hostile call and checks the result's contract: a known
 * code that equals the result's status, and a failed result carries a
 * message and nothing to apply. Returns 1 when the contract holds. */
static int contract_holds(unsigned kind, unsigned name, const char *input, const char *conditions) {
  dexa_call call;
  dexa_call_init(&call, sizeof call);
  call.kind = 1 + (int)kind;
  call.name = names[name];
  call.session_id = "s-fuzz";
  call.step_execution_id = "Step-1";
  call.input = input;
  call.input_len = strlen(input);
  call.conditions = conditions;
  call.conditions_len = strlen(conditions);
  call.now_ms = 1700000000000;
  call.attr_get = get;
  call.attr_scan = scan;
  dexa_result *r = NULL;
  int rc = dexa_dispatch(&r, agent(), &call);
  const char *json;
  size_t len;
  dexa_result_decision(r, &json, &len);
  int ok = r && rc == dexa_result_status(r) &&
           (rc == DEXA_OK || (strcmp(dexa_error_name(rc), "DEXA_E_UNKNOWN") != 0 &&
                              *dexa_result_errmsg(r) && dexa_result_write_count(r) == 0 &&
                              dexa_result_publish_count(r) == 0 && json == NULL));
  if (!ok) fprintf(stderr, "    %s kind %u input %.60s -> %d\n", names[name], kind, input, rc);
  dexa_result_free(r);
  return ok;
}

/* Every name with every kind and some nasty inputs. */
static void test_every_handler_keeps_its_contract_on_hostile_input(void) {
  static const char *const inputs[] = {
    "", "null", "[]", "{}", "{\"turn\":1,\"round\":1}", "{\"turn\":1e308,\"round\":-1}",
    "{\"text\":\"\\u0000\"}", "{\"message_id\":\"m2\"}", "{\"call_id\":\"c1\",\"decision\":\"approve\"}",
    "{\"call_id\":\"c1\",\"answer\":\"x\"}", "{\"revision\":2}",
    "{\"turn\":1,\"round\":1,\"seq\":3,\"call_id\":\"c1\",\"name\":\"send\",\"source\":\"fns\","
    "\"effect\":\"write\",\"arguments\":{\"a\":[1,2]},\"calls\":1,\"fires_at_ms\":5}",
    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
    "{\"settings\":{\"model\":7}}", "\xff\xfe{", "{\"text\":\"\xc3\x28\"}"};
  static const char *const conditions[] = {
    "", "{\"fired\":[\"timer\"],\"channels\":{\"decision\":[{\"decision\":\"reject\"}]}}",
    "{\"channels\":{\"results\":[{\"bytes\":\"x\"}],\"decision\":[7]}}", "not json"};
  int broken = 0;
  for (unsigned kind = 0; kind < 3; kind++)
    for (unsigned name = 0; name < NAME_COUNT; name++)
      for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++)
        for (size_t j = 0; j < sizeof conditions / sizeof conditions[0]; j++)
          broken += !contract_holds(kind, name, inputs[i], conditions[j]);
  CHECK_EQ_INT(broken, 0);
}

int main(void) {
  RUN(test_replay_dispatch_corpus);
  RUN(test_every_handler_keeps_its_contract_on_hostile_input);
  dexa_agent_free(agent());
  TEST_MAIN_END();
}
