/* The compatibility check: an application built against the headers of the
 * ABI baseline (test/abi/compat.sh extracts them from the commit that last
 * wrote abi/libdexagents.abi) and run with the freshly built
 * libdexagents.so.1. It uses the public structs (dexa_agent_def,
 * dexa_runtime_options, both with sizeof of the baseline's headers), a host
 * function tool that needs approval, the embedded runtime with worker threads
 * and the client operations, and checks their results. Prints one line per
 * check and exits non-zero on the first failure. */
#include <dexagents/dexagents.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tool_runs;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static int save_file(void *user_data, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  const char *args = NULL;
  size_t n = 0;
  pthread_mutex_lock(&mu);
  tool_runs++;
  pthread_mutex_unlock(&mu);
  dexa_tool_invocation_arguments(inv, &args, &n);
  char text[256];
  int len = snprintf(text, sizeof text, "%s saved %.*s", (const char *)user_data, (int)n, args);
  return dexa_tool_output_set_text(out, text, (size_t)len, 0);
}

#define CHECK(what, cond)                                   \
  do {                                                      \
    if (!(cond)) {                                          \
      printf("FAIL %s (line %d)\n", what, __LINE__);        \
      if (rt) printf("    %s\n", dexa_runtime_errmsg(rt));  \
      return 1;                                             \
    }                                                       \
    printf("ok   %s\n", what);                              \
  } while (0)

/* The value of "key":"..." in json, copied into buf (a tiny scanner: the
 * application must not depend on a JSON library for this check). */
static const char *field(const char *json, const char *key, char *buf, size_t size) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":\"", key);
  const char *p = json ? strstr(json, pat) : NULL;
  if (!p) return NULL;
  p += strlen(pat);
  size_t i = 0;
  while (p[i] && p[i] != '"' && i + 1 < size) buf[i] = p[i], i++;
  buf[i] = 0;
  return buf;
}

int main(void) {
  dexa_runtime *rt = NULL;
  dexa_model *demo = NULL;
  dexa_tool_source *tools = NULL;
  dexa_agent *agent = NULL;
  char err[256] = "", *out = NULL, buf[128];
  size_t len = 0;

  CHECK("dexa_version_num is 1.x", (dexa_version_num() >> 16) == 1);
  CHECK("dexa_error_name(DEXA_E_NOT_PENDING)",
        strcmp(dexa_error_name(DEXA_E_NOT_PENDING), "DEXA_E_NOT_PENDING") == 0);
  CHECK("dexa_model_demo_new", dexa_model_demo_new(&demo, "mock/dex") == DEXA_OK);
  CHECK("dexa_function_tools_new", dexa_function_tools_new(&tools, "host") == DEXA_OK);
  CHECK("dexa_function_tools_add (WRITE, approval required)",
        dexa_function_tools_add(tools, "save_file", "Saves a file.",
                                "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}}}",
                                DEXA_TOOL_WRITE, DEXA_APPROVAL_REQUIRED, save_file,
                                (void *)"compat") == DEXA_OK);
  dexa_agent_def def;
  CHECK("dexa_agent_def_init(sizeof of the baseline)", dexa_agent_def_init(&def, sizeof def) == DEXA_OK);
  CHECK("agent defaults", def.tool_max_attempts == 5 && def.run_model_max_attempts == 3 &&
                              def.max_message_bytes == 1048576);
  def.instructions = "compat";
  def.models = &demo;
  def.model_count = 1;
  def.tool_sources = &tools;
  def.tool_source_count = 1;
  CHECK("dexa_agent_new", dexa_agent_new(&agent, &def, err, sizeof err) == DEXA_OK);
  dexa_model_free(demo);
  dexa_tool_source_free(tools);

  dexa_runtime_options opts;
  CHECK("dexa_runtime_options_init", dexa_runtime_options_init(&opts, sizeof opts) == DEXA_OK);
  opts.store = ":memory:";
  CHECK("dexa_runtime_new", dexa_runtime_new(&rt, agent, &opts, err, sizeof err) == DEXA_OK);
  CHECK("dexa_runtime_start", dexa_runtime_start(rt, 2) == DEXA_OK);
  CHECK("start_session", dexa_runtime_start_session(rt, "s-compat", NULL, 0, &out, &len) == DEXA_OK);
  dexa_free(out), out = NULL;
  const char *msg = "{\"text\":\"/tool save_file {\\\"path\\\":\\\"a.txt\\\"}\"}";
  CHECK("send_message", dexa_runtime_call(rt, "s-compat", "send_message", msg, strlen(msg), &out,
                                          &len) == DEXA_OK);
  dexa_free(out), out = NULL;
  CHECK("wait_idle", dexa_runtime_wait_idle(rt, "s-compat", 20000) == DEXA_OK);
  CHECK("snapshot", dexa_runtime_call(rt, "s-compat", "snapshot", "{}", 2, &out, &len) == DEXA_OK);
  CHECK("the call waits for approval", strstr(out, "\"kind\":\"approval\"") && tool_runs == 0);
  char call_id[64];
  CHECK("pending call id", field(strstr(out, "\"pending\""), "call_id", call_id, sizeof call_id));
  dexa_free(out), out = NULL;
  char dec[256];
  snprintf(dec, sizeof dec, "{\"call_id\":\"%s\",\"decision\":\"approve\"}", call_id);
  CHECK("resolve_approval", dexa_runtime_call(rt, "s-compat", "resolve_approval", dec, strlen(dec),
                                              &out, &len) == DEXA_OK);
  dexa_free(out), out = NULL;
  CHECK("wait_idle", dexa_runtime_wait_idle(rt, "s-compat", 20000) == DEXA_OK);
  CHECK("the tool ran once", tool_runs == 1);
  CHECK("snapshot", dexa_runtime_call(rt, "s-compat", "snapshot", "{}", 2, &out, &len) == DEXA_OK);
  CHECK("the final answer", strstr(out, "Tool save_file (ok): compat saved {\\\"path\\\":\\\"a.txt\\\"}") != NULL);
  dexa_free(out), out = NULL;
  CHECK("a second decision is refused",
        dexa_runtime_call(rt, "s-compat", "resolve_approval", dec, strlen(dec), &out, &len) ==
            DEXA_E_NOT_PENDING && strstr(out, "DEXA_E_NOT_PENDING"));
  dexa_free(out), out = NULL;
  CHECK("a wrong session is DEXA_E_NOT_FOUND",
        dexa_runtime_call(rt, "nope", "snapshot", "{}", 2, &out, &len) == DEXA_E_NOT_FOUND);
  dexa_free(out), out = NULL;
  CHECK("read_events", dexa_runtime_read_events(rt, "s-compat", "", 1000, 0, &out, &len) == DEXA_OK &&
                           strstr(out, "\"turn_finished\"") && field(out, "token", buf, sizeof buf));
  dexa_free(out), out = NULL;
  dexa_runtime_free(rt);
  dexa_agent_free(agent);
  printf("compat: ok\n");
  return 0;
}
