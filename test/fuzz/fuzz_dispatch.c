/* libFuzzer target: dexa_dispatch with hostile calls. Byte 0 picks the call
 * kind, byte 1 the Step or RPC name (or an unknown one); the rest is split at
 * NUL bytes into the input, the condition results and the recovery error.
 * Attributes come from a fixed, valid session in the middle of a turn (a
 * queued message, a pending approval, messages), so every handler reaches
 * its parsing and state paths. Any result is fine; a crash, a leak or
 * undefined behaviour is not. Build with `make fuzz`;
 * test/unit/test_dispatch_fuzz_replay.c replays the corpus in `make check`. */
#include <dexagents/dexagents.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct fixed_attr {
  const char *key;
  const char *value;
} fixed_attr;

/* Sorted by key, as a host's reader returns them. */
static const fixed_attr attrs[] = {
  {"AgentMessages/00000000000000000001",
   "{\"seq\":1,\"turn\":1,\"role\":\"user\",\"id\":\"m1\",\"text\":\"hi\",\"at\":1}"},
  {"AgentMessages/00000000000000000002",
   "{\"seq\":2,\"turn\":1,\"round\":1,\"role\":\"model\",\"model\":\"mock/dex\",\"at\":1,"
   "\"tool_calls\":[{\"call_id\":\"c1\",\"name\":\"send\",\"arguments\":{}}],"
   "\"item\":{\"type\":\"function_call\",\"call_id\":\"c1\",\"name\":\"send\",\"arguments\":\"{}\"}}"},
  {"AgentPlan", "{\"revision\":2,\"status\":\"draft\",\"todos\":[{\"content\":\"a\",\"status\":\"pending\"}]}"},
  {"AgentQueueState", "{\"next_id\":3,\"bytes\":80}"},
  {"AgentSession", "{\"model\":\"mock/dex\",\"created_ms\":1}"},
  {"AgentTranscript", "{\"next_seq\":4,\"first_seq\":1,\"turn\":1,\"bytes\":300}"},
  {"AgentTurn", "{\"turn\":1,\"status\":\"running\",\"mode\":\"chat\",\"since_ms\":1}"},
  {"PendingToolCalls/c1",
   "{\"turn\":1,\"round\":1,\"seq\":3,\"call_id\":\"c1\",\"name\":\"send\",\"source\":\"fns\","
   "\"effect\":\"write\",\"arguments\":{},\"kind\":\"approval\",\"at\":1}"},
  {"QueuedUserMessages/00000000000000000002",
   "{\"id\":\"m2\",\"text\":\"next\",\"plan_mode\":false,\"steered\":false,\"at\":1}"},
};
#define ATTR_COUNT (sizeof attrs / sizeof attrs[0])

static int get(void *u, const char *key, size_t n, const char **v, size_t *vl) {
  for (size_t i = 0; i < ATTR_COUNT; i++)
    if (strlen(attrs[i].key) == n && memcmp(attrs[i].key, key, n) == 0) {
      *v = attrs[i].value;
      *vl = strlen(*v);
      return DEXA_OK;
    }
  return DEXA_E_NOT_FOUND;
}

static int scan(void *u, const char *prefix, size_t n, dexa_attr_visit_fn visit, void *ctx) {
  for (size_t i = 0; i < ATTR_COUNT; i++) {
    if (strncmp(attrs[i].key, prefix, n) != 0) continue;
    int rc = visit(ctx, attrs[i].key, strlen(attrs[i].key), attrs[i].value, strlen(attrs[i].value));
    if (rc < 0) return rc;
    if (rc > 0) break;
  }
  return DEXA_OK;
}

static const char *const names[] = {
  "StartAgentSession", "AwaitUserMessage", "RunModel", "CompactContext", "AwaitToolApproval",
  "CallTool", "CallSingleAttemptTool", "RecordToolOutcome", "AwaitQuestionAnswer", "AwaitTimer",
  "ResumeTurn", "ApplyTurnControl", "RecordTurnFailure", "send_message", "snapshot",
  "list_agent_messages", "delete_message", "steer", "cancel_turn", "resolve_approval",
  "answer_question", "execute_plan", "NoSuchName"};
#define NAME_COUNT (sizeof names / sizeof names[0])

static int tool(void *u, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  return dexa_tool_output_set_text(out, "ok", 2, 0);
}

static dexa_agent *agent(void) {
  static dexa_agent *a;
  if (a) return a;
  dexa_model *m = NULL;
  dexa_tool_source *fns = NULL;
  dexa_model_demo_new(&m, "mock/dex");
  dexa_function_tools_new(&fns, "fns");
  dexa_function_tools_add(fns, "send", "", NULL, DEXA_TOOL_WRITE, DEXA_APPROVAL_REQUIRED, tool, NULL);
  dexa_function_tools_add(fns, "look", "", NULL, DEXA_TOOL_READ, DEXA_APPROVAL_NONE, tool, NULL);
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.models = &m;
  def.model_count = 1;
  def.tool_sources = &fns;
  def.tool_source_count = 1;
  def.builtin_tools = DEXA_BUILTIN_ALL;
  def.plan_mode_enabled = 1;
  def.context_window_tokens = 200; /* small: RunModel may compact */
  dexa_agent_new(&a, &def, NULL, 0);
  dexa_model_free(m);
  dexa_tool_source_free(fns);
  return a;
}

/* The next NUL-separated part of data, or NULL when none is left. */
static const char *part(const uint8_t **p, const uint8_t *end, size_t *len) {
  if (*p >= end) {
    *len = 0;
    return NULL;
  }
  const uint8_t *start = *p, *nul = memchr(start, 0, (size_t)(end - start));
  *len = (size_t)((nul ? nul : end) - start);
  *p = nul ? nul + 1 : end;
  return (const char *)start;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2 || !agent()) return 0;
  const uint8_t *p = data + 2, *end = data + size;
  dexa_call call;
  dexa_call_init(&call, sizeof call);
  call.kind = 1 + data[0] % 3;
  call.name = names[data[1] % NAME_COUNT];
  call.session_id = "s-fuzz";
  call.step_execution_id = "Step-1";
  call.attempt = 1 + data[0] / 3 % 4;
  call.input = part(&p, end, &call.input_len);
  call.conditions = part(&p, end, &call.conditions_len);
  call.recovery_error = part(&p, end, &call.recovery_error_len);
  call.now_ms = 1700000000000;
  call.attr_get = get;
  call.attr_scan = scan;
  dexa_result *r = NULL;
  dexa_dispatch(&r, agent(), &call);
  char *json = NULL;
  if (r && dexa_result_json(&json, NULL, r) == DEXA_OK) dexa_free(json);
  dexa_result_free(r);
  return 0;
}
