/* The session flow's transitions, for dexa_flow_describe: which Steps each
 * Step's Execute may decide next, what each Step's WaitFor waits for, and
 * the channels each Step and RPC publishes to. The Steps decide in code;
 * this table states the same for a host's engine and for the session graph
 * (test/unit/test_flow_graph.c runs every feature and checks each decision,
 * wait and publish against it, and that every transition listed happens). */
#include "core/flow_transitions.h"

#define END NULL

typedef struct step_transitions {
  const char *step;
  const char *next[10];
  const char *publishes[3];
  const char *wait_mode; /* NULL: no WaitFor */
  const char *wait_channels[3];
  int wait_timer;
} step_transitions;

static const step_transitions steps[] = {
  {STEP_START_AGENT_SESSION, {STEP_AWAIT_USER_MESSAGE, END}, {END}, NULL, {END}, 0},
  /* Starts a turn with the oldest (or every steered) queued message. */
  {STEP_AWAIT_USER_MESSAGE, {STEP_RUN_MODEL, STEP_AWAIT_USER_MESSAGE, END}, {END}, "any",
   {CHAN_USER_MESSAGE_SIGNALS, END}, 0},
  /* One Step per tool call of the reply (in parallel) and ResumeTurn to
   * join them; or the turn's end, a failure, a steer or stop, compaction.
   * RunModel publishes the results of calls it answers at once
   * (write_todos, an unknown tool). */
  {STEP_RUN_MODEL,
   {STEP_AWAIT_TOOL_APPROVAL, STEP_CALL_TOOL, STEP_CALL_SINGLE_ATTEMPT_TOOL,
    STEP_AWAIT_QUESTION_ANSWER, STEP_AWAIT_TIMER, STEP_RESUME_TURN, STEP_COMPACT_CONTEXT,
    STEP_APPLY_TURN_CONTROL, STEP_RECORD_TURN_FAILURE, STEP_AWAIT_USER_MESSAGE},
   {CHAN_TOOL_RESULTS, END}, NULL, {END}, 0},
  {STEP_COMPACT_CONTEXT, {STEP_RUN_MODEL, END}, {END}, NULL, {END}, 0},
  /* Approved: the call runs; rejected or cancelled: its result is recorded. */
  {STEP_AWAIT_TOOL_APPROVAL, {STEP_CALL_TOOL, STEP_CALL_SINGLE_ATTEMPT_TOOL, END},
   {CHAN_TOOL_RESULTS, END}, "any", {CHAN_TOOL_DECISIONS, END}, 0},
  /* A tool that asks the person something mid-call waits for the answer. */
  {STEP_CALL_TOOL, {STEP_AWAIT_QUESTION_ANSWER, END}, {CHAN_TOOL_RESULTS, END}, NULL, {END}, 0},
  {STEP_CALL_SINGLE_ATTEMPT_TOOL, {STEP_AWAIT_QUESTION_ANSWER, END}, {CHAN_TOOL_RESULTS, END},
   NULL, {END}, 0},
  {STEP_RECORD_TOOL_OUTCOME, {END}, {CHAN_TOOL_RESULTS, END}, NULL, {END}, 0},
  /* ask_user's answer is the result; a tool's question runs its call again. */
  {STEP_AWAIT_QUESTION_ANSWER, {STEP_CALL_TOOL, STEP_CALL_SINGLE_ATTEMPT_TOOL, END},
   {CHAN_TOOL_RESULTS, END}, "any", {CHAN_TOOL_DECISIONS, END}, 0},
  /* The timer fires, or a steer or stop cancels the wait. */
  {STEP_AWAIT_TIMER, {END}, {CHAN_TOOL_RESULTS, END}, "any", {CHAN_TOOL_DECISIONS, END}, 1},
  /* Waits for every result of the round. */
  {STEP_RESUME_TURN, {STEP_RUN_MODEL, STEP_APPLY_TURN_CONTROL, END}, {END}, "all",
   {CHAN_TOOL_RESULTS, END}, 0},
  /* Cancels what waits (ToolDecisions), then a new turn after a steer. */
  {STEP_APPLY_TURN_CONTROL, {STEP_RUN_MODEL, STEP_AWAIT_USER_MESSAGE, END},
   {CHAN_TOOL_DECISIONS, END}, NULL, {END}, 0},
  {STEP_RECORD_TURN_FAILURE, {STEP_AWAIT_USER_MESSAGE, END}, {END}, NULL, {END}, 0},
};

typedef struct rpc_transitions {
  const char *rpc;
  const char *publishes[3];
} rpc_transitions;

/* Read-only RPCs and delete_message publish nothing. */
static const rpc_transitions rpcs[] = {
  {RPC_SEND_MESSAGE, {CHAN_USER_MESSAGE_SIGNALS, END}},
  {RPC_STEER, {CHAN_TOOL_DECISIONS, END}},
  {RPC_CANCEL_TURN, {CHAN_TOOL_DECISIONS, END}},
  {RPC_RESOLVE_APPROVAL, {CHAN_TOOL_DECISIONS, END}},
  {RPC_ANSWER_QUESTION, {CHAN_TOOL_DECISIONS, END}},
  {RPC_EXECUTE_PLAN, {CHAN_USER_MESSAGE_SIGNALS, END}},
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void put_names(dexa__buf *b, const char *key, const char *const *names, size_t max) {
  dexa__buf_printf(b, "\"%s\":[", key);
  for (size_t i = 0; i < max && names[i]; i++) {
    if (i) dexa__buf_putc(b, ',');
    dexa__buf_json_cstr(b, names[i]);
  }
  dexa__buf_putc(b, ']');
}

static void put_wait(dexa__buf *b, const step_transitions *s) {
  dexa__buf_puts(b, ",\"waits\":{\"mode\":");
  dexa__buf_json_cstr(b, s->wait_mode);
  dexa__buf_puts(b, ",\"conditions\":[");
  int first = 1;
  if (s->wait_timer) {
    dexa__buf_puts(b, "{\"timer\":true}");
    first = 0;
  }
  for (size_t i = 0; i < N(s->wait_channels) && s->wait_channels[i]; i++, first = 0) {
    dexa__buf_puts(b, first ? "{\"channel\":" : ",{\"channel\":");
    dexa__buf_json_cstr(b, s->wait_channels[i]);
    dexa__buf_putc(b, '}');
  }
  dexa__buf_puts(b, "]}");
}

void dexa__flow_transitions_json(dexa__buf *b) {
  dexa__buf_puts(b, "{\"steps\":{");
  for (size_t i = 0; i < N(steps); i++) {
    const step_transitions *s = &steps[i];
    if (i) dexa__buf_putc(b, ',');
    dexa__buf_json_cstr(b, s->step);
    dexa__buf_putc(b, ':');
    dexa__buf_putc(b, '{');
    put_names(b, "next", s->next, N(s->next));
    dexa__buf_putc(b, ',');
    put_names(b, "publishes", s->publishes, N(s->publishes));
    if (s->wait_mode) put_wait(b, s);
    dexa__buf_putc(b, '}');
  }
  dexa__buf_puts(b, "},\"rpcs\":{");
  for (size_t i = 0; i < N(rpcs); i++) {
    if (i) dexa__buf_putc(b, ',');
    dexa__buf_json_cstr(b, rpcs[i].rpc);
    dexa__buf_puts(b, ":{");
    put_names(b, "publishes", rpcs[i].publishes, N(rpcs[i].publishes));
    dexa__buf_putc(b, '}');
  }
  dexa__buf_puts(b, "}}");
}
