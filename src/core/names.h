/* Durable names of the agent session flow (documented in dexagents-flow(7)).
 * User-visible names keep the product docs' spelling. */
#ifndef DEXA_CORE_NAMES_H
#define DEXA_CORE_NAMES_H

#define DEXA_FLOW_TYPE_DEFAULT "AgentSession"

/* Steps */
#define STEP_START_AGENT_SESSION "StartAgentSession"
#define STEP_AWAIT_USER_MESSAGE "AwaitUserMessage"
#define STEP_RUN_MODEL "RunModel"
#define STEP_COMPACT_CONTEXT "CompactContext"
#define STEP_AWAIT_TOOL_APPROVAL "AwaitToolApproval"
#define STEP_CALL_TOOL "CallTool"
#define STEP_CALL_SINGLE_ATTEMPT_TOOL "CallSingleAttemptTool"
#define STEP_RECORD_TOOL_OUTCOME "RecordToolOutcome"
#define STEP_AWAIT_QUESTION_ANSWER "AwaitQuestionAnswer"
#define STEP_AWAIT_TIMER "AwaitTimer"
#define STEP_RESUME_TURN "ResumeTurn"
#define STEP_APPLY_TURN_CONTROL "ApplyTurnControl"
#define STEP_RECORD_TURN_FAILURE "RecordTurnFailure"

/* Attributes (a trailing '/' marks an AttributeMap prefix) */
#define ATTR_SESSION "AgentSession"
#define ATTR_TRANSCRIPT "AgentTranscript"
#define ATTR_TURN "AgentTurn"
#define ATTR_QUEUE_STATE "AgentQueueState"
#define ATTR_MESSAGES "AgentMessages/"
#define ATTR_MESSAGE_CHUNKS "AgentMessageChunks/"
#define ATTR_QUEUED_MESSAGES "QueuedUserMessages/"
#define ATTR_PLAN "AgentPlan"
#define ATTR_TURN_CONTROL "AgentTurnControl"
#define ATTR_PENDING_CALLS "PendingToolCalls/" /* + call id */
#define ATTR_CONTEXT_SUMMARY "AgentContextSummary"
#define ATTR_HARNESS "AgentHarness"            /* a harness's segments: see harness_state.c */
#define ATTR_HARNESS_STATE "AgentHarnessState" /* the framework's own state */
#define ATTR_HARNESS_ENTRIES "AgentHarnessStateEntries/" /* + 20-digit n: appended state */
#define ATTR_USAGE "AgentUsage"
#define ATTR_SESSION_END "AgentSessionEnd" /* {"at","reason"}: the session has ended */

/* Channels */
#define CHAN_USER_MESSAGE_SIGNALS "UserMessageSignals"
#define CHAN_TOOL_RESULTS "ToolResults/" /* + "<turn>-<round>" */
#define CHAN_TOOL_DECISIONS "ToolDecisions/" /* + call id: approve, reject, answer, cancel */

/* Stream */
#define STREAM_EVENTS "AgentEvents"

/* RPCs */
#define RPC_SEND_MESSAGE "send_message"
#define RPC_SNAPSHOT "snapshot"
#define RPC_DELETE_MESSAGE "delete_message"
#define RPC_STEER "steer"
#define RPC_CANCEL_TURN "cancel_turn"
#define RPC_RESOLVE_APPROVAL "resolve_approval"
#define RPC_ANSWER_QUESTION "answer_question"
#define RPC_EXECUTE_PLAN "execute_plan"
#define RPC_LIST_MESSAGES "list_agent_messages"
#define RPC_END_SESSION "end_session"

/* Built-in tools and the tool source name their calls carry */
#define TOOL_ASK_USER "ask_user"
#define TOOL_DURABLE_WAIT "durable_wait"
#define TOOL_WRITE_TODOS "write_todos"
#define SOURCE_BUILTIN "builtin"

/* Messages in the snapshot */
#define SNAPSHOT_MESSAGES 200

#endif
