/* The session flow's Steps and RPCs with their default options. */
#include "core/flow_table.h"

#include <string.h>

static const dexa__step_def steps[] = {
  {STEP_START_AGENT_SESSION, dexa__step_start_agent_session},
  {STEP_AWAIT_USER_MESSAGE, dexa__step_await_user_message},
  {STEP_RUN_MODEL, dexa__step_run_model},
  {STEP_COMPACT_CONTEXT, dexa__step_compact_context},
  {STEP_AWAIT_TOOL_APPROVAL, dexa__step_await_tool_approval},
  {STEP_CALL_TOOL, dexa__step_call_tool},
  {STEP_CALL_SINGLE_ATTEMPT_TOOL, dexa__step_call_single_attempt_tool},
  {STEP_RECORD_TOOL_OUTCOME, dexa__step_record_tool_outcome},
  {STEP_AWAIT_QUESTION_ANSWER, dexa__step_await_question_answer},
  {STEP_AWAIT_TIMER, dexa__step_await_timer},
  {STEP_RESUME_TURN, dexa__step_resume_turn},
  {STEP_APPLY_TURN_CONTROL, dexa__step_apply_turn_control},
  {STEP_RECORD_TURN_FAILURE, dexa__step_record_turn_failure},
};

/* The members each RPC's input may hold (see dexagents-flow(7)). */
static const char *const no_fields[] = {NULL};
static const char *const send_fields[] = {"text", "plan_mode", "attachments", NULL};
static const char *const list_fields[] = {"before_seq", "limit", NULL};
static const char *const message_fields[] = {"message_id", NULL};
static const char *const approval_fields[] = {"call_id", "decision", "note", NULL};
static const char *const answer_fields[] = {"call_id", "answer", "action", "fields", NULL};
static const char *const plan_fields[] = {"revision", NULL};
static const char *const end_fields[] = {"reason", NULL};

static const dexa__rpc_def rpcs[] = {
  {RPC_SEND_MESSAGE, dexa__rpc_send_message, 0, 0, send_fields},
  {RPC_SNAPSHOT, dexa__rpc_snapshot, 1, 0, no_fields},
  {RPC_LIST_MESSAGES, dexa__rpc_list_agent_messages, 1, 0, list_fields},
  {RPC_DELETE_MESSAGE, dexa__rpc_delete_message, 0, 0, message_fields},
  /* A steer waits for the next safe boundary: started calls run on. */
  {RPC_STEER, dexa__rpc_steer, 0, 0, message_fields},
  /* Stop: a started call is still recorded, but may end early. */
  {RPC_CANCEL_TURN, dexa__rpc_cancel_turn, 0, 1, no_fields},
  {RPC_RESOLVE_APPROVAL, dexa__rpc_resolve_approval, 0, 0, approval_fields},
  {RPC_ANSWER_QUESTION, dexa__rpc_answer_question, 0, 0, answer_fields},
  {RPC_EXECUTE_PLAN, dexa__rpc_execute_plan, 0, 0, plan_fields},
  /* Ends the session for good: running calls are told to end early. */
  {RPC_END_SESSION, dexa__rpc_end_session, 0, 1, end_fields},
};

const dexa__step_def *dexa__flow_steps(size_t *count) {
  *count = sizeof steps / sizeof steps[0];
  return steps;
}

const dexa__rpc_def *dexa__flow_rpcs(size_t *count) {
  *count = sizeof rpcs / sizeof rpcs[0];
  return rpcs;
}

const dexa__step_def *dexa__flow_find_step(const char *name) {
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
    if (strcmp(steps[i].name, name) == 0) return &steps[i];
  return NULL;
}

const dexa__rpc_def *dexa__flow_find_rpc(const char *name) {
  for (size_t i = 0; i < sizeof rpcs / sizeof rpcs[0]; i++)
    if (strcmp(rpcs[i].name, name) == 0) return &rpcs[i];
  return NULL;
}

static int is(const char *a, const char *b) { return strcmp(a, b) == 0; }

/* Quick, I/O-free bookkeeping Steps: run under the session lock, retried a
 * few times for store hiccups. */
static void bookkeeping(dexa__step_options *o) {
  o->max_attempts = 10;
  o->initial_backoff_ms = 200;
  o->backoff_coefficient = 2.0;
  o->max_backoff_ms = 10000;
  o->timeout_ms = 30000;
  o->locked = 1;
}

void dexa__flow_step_options(const dexa_agent *a, const char *step, dexa__step_options *o) {
  memset(o, 0, sizeof *o);
  bookkeeping(o);
  if (is(step, STEP_AWAIT_USER_MESSAGE) || is(step, STEP_RESUME_TURN) ||
      is(step, STEP_AWAIT_TOOL_APPROVAL) || is(step, STEP_AWAIT_QUESTION_ANSWER) ||
      is(step, STEP_AWAIT_TIMER)) {
    o->has_wait_for = 1;
  } else if (is(step, STEP_RUN_MODEL) || is(step, STEP_COMPACT_CONTEXT)) {
    o->locked = 0;
    o->max_attempts = a->def.run_model_max_attempts;
    o->initial_backoff_ms = 1000;
    o->max_backoff_ms = 60000;
    o->timeout_ms = a->def.run_model_timeout_ms;
    /* A compaction that keeps failing gives way: the model call goes on
     * without it (its input says compacted). */
    o->recovery = is(step, STEP_RUN_MODEL) ? STEP_RECORD_TURN_FAILURE : STEP_RUN_MODEL;
  } else if (is(step, STEP_CALL_TOOL) || is(step, STEP_CALL_SINGLE_ATTEMPT_TOOL)) {
    o->locked = 0;
    o->max_attempts = is(step, STEP_CALL_TOOL) ? a->def.tool_max_attempts : 1;
    o->initial_backoff_ms = 1000;
    o->max_backoff_ms = 30000;
    o->timeout_ms = a->def.tool_timeout_ms;
    o->recovery = STEP_RECORD_TOOL_OUTCOME;
  }
}
