// Type definitions and reference documentation of the dexagents package
// (Node bindings of libdexagents). Every export of index.js is declared and
// documented here; test/node/native.test.js checks that they match.

// ---- library ------------------------------------------------------------------

/** The version of the loaded C library ("1.1.0"). Loads the library on first use. */
export declare function version(): string;
/** What the loaded C library contains (dexa_build_info(3)); make MINIMAL=1 leaves out the optional parts. */
export interface BuildInfo {
  version: string;
  /** "core", "flow", "runtime", "demo-models", "function-tools", "mcp-stdio", "claude-code", and
   * those of the options: "http", "providers", "mcp-http", "connectors", "sqlite", "postgresql". */
  features: string[];
  options: { WITH_HTTP: boolean; WITH_CURL: boolean; WITH_SQLITE: boolean; WITH_POSTGRES: boolean };
  /** The third-party libraries it links. */
  libraries: string[];
}
/** What the loaded C library contains: dexa_build_info(3) as an object (loads the library on first use). */
export declare function buildInfo(): BuildInfo;
/** True when the loaded C library has feature ("http", "providers", "sqlite", ...). */
export declare function buildHas(feature: string): boolean;

/** Loads the C library now (it is otherwise loaded on first use). Throws
 * LibraryNotFoundError when it cannot be found. */
export declare function loadLibrary(): void;

/** libdexagents.so.1 (or the addon) could not be loaded. The message lists
 * every place tried and how to fix it: install the library (`make install`,
 * which runs ldconfig as root), add its directory to LD_LIBRARY_PATH, or set
 * DEXAGENTS_LIBRARY to the file's path. */
export declare class LibraryNotFoundError extends Error {
  readonly code: 'ERR_DEXAGENTS_LIBRARY_NOT_FOUND';
}

// ---- errors -------------------------------------------------------------------

/** Every DEXA_E_* name and its number (include/dexagents/errors.h). */
export declare const CODES: Readonly<Record<DexaErrorCode, number>>;

/** The DEXA_E_* names. */
export type DexaErrorCode =
  | 'DEXA_E_INVALID_ARG' | 'DEXA_E_STRUCT_SIZE' | 'DEXA_E_INVALID_JSON' | 'DEXA_E_UNKNOWN_STEP'
  | 'DEXA_E_UNKNOWN_RPC' | 'DEXA_E_NOT_FOUND' | 'DEXA_E_EMPTY_MESSAGE' | 'DEXA_E_BAD_STATE'
  | 'DEXA_E_UNKNOWN_KEY' | 'DEXA_E_INVALID_RESUME_TOKEN' | 'DEXA_E_STALE_REVISION'
  | 'DEXA_E_TOO_LARGE' | 'DEXA_E_REENTRANT' | 'DEXA_E_ALREADY_EXISTS' | 'DEXA_E_UNSUPPORTED'
  | 'DEXA_E_NOT_PENDING' | 'DEXA_E_SESSION_ENDED' | 'DEXA_E_TRANSIENT' | 'DEXA_E_TIMEOUT' | 'DEXA_E_BUSY' | 'DEXA_E_IO'
  | 'DEXA_E_RATE_LIMITED' | 'DEXA_E_PERMANENT' | 'DEXA_E_MODEL' | 'DEXA_E_TOOL'
  | 'DEXA_E_STATE_LIMIT' | 'DEXA_E_CALLBACK_FAILED' | 'DEXA_E_CORRUPT' | 'DEXA_E_AUTH'
  | 'DEXA_E_NOMEM' | 'DEXA_E_INTERNAL';

/** The error classes: the hundreds digit of a code. */
export declare const ErrorClass: Readonly<{ OK: 0; USAGE: 1; TRANSIENT: 2; PERMANENT: 3; FATAL: 9 }>;

/** The DEXA_E_* name of a number ('DEXA_E_UNKNOWN' when unknown). */
export declare function errorName(errno: number): string;
/** The error class of a number (1 usage, 2 transient, 3 permanent, 9 fatal). */
export declare function errorClass(errno: number): number;
/** The library's static description of an error number. */
export declare function strerror(errno: number): string;
/** The error number a thrown value stands for when a JavaScript model or harness throws
 * it: a DexaError's own; by `isRetryable`/`retryable` or an HTTP status (429 rate limited,
 * 408/409/5xx transient, 401/403 auth, other 4xx a model error); an abort a timeout; a
 * network failure transient; anything else DEXA_E_MODEL (the turn fails, no retry). */
export declare function errorCode(error: unknown): number;
/** The error class to throw for a number: the code's own, else its error class's. */
export declare function exceptionClass(errno: number): typeof DexaError;
/** A new error of the right subclass for a number. */
export declare function errorFor(errno: number, message?: string, document?: unknown,
  options?: { cause?: unknown }): DexaError;

/** A failed libdexagents call. */
export declare class DexaError extends Error {
  constructor(errno: number, message?: string, document?: unknown, options?: { cause?: unknown });
  /** The DEXA_E_* name. */
  readonly code: string;
  /** The negative DEXA_E_* number. */
  readonly errno: number;
  /** 1 usage, 2 transient, 3 permanent, 9 fatal. */
  readonly errorClass: number;
  /** The error document of the call ({error: {code, name, message}}), when it returned one. */
  readonly document?: { error?: { code: number; name: string; message: string } } & Record<string, unknown>;
}
/** The request was wrong (-1xx): do not retry it unchanged. */
export declare class UsageError extends DexaError {}
/** A failure that may pass (-2xx); also DEXA_E_TRANSIENT itself. */
export declare class TransientError extends DexaError {}
/** The operation failed for good (-3xx); also DEXA_E_PERMANENT itself. */
export declare class PermanentError extends DexaError {}
/** Resources are exhausted or the library is inconsistent (-9xx). */
export declare class FatalError extends DexaError {}
/** DEXA_E_INVALID_ARG: a NULL handle or an argument out of range. */
export declare class InvalidArgumentError extends UsageError {}
/** The runtime was closed before or during the call (DEXA_E_INVALID_ARG). */
export declare class RuntimeClosedError extends InvalidArgumentError {}
/** DEXA_E_STRUCT_SIZE: a struct older than the library accepts. */
export declare class StructSizeError extends UsageError {}
/** DEXA_E_INVALID_JSON: malformed or wrongly shaped JSON input. */
export declare class InvalidJSONError extends UsageError {}
/** DEXA_E_UNKNOWN_STEP: no Step of that name in the flow. */
export declare class UnknownStepError extends UsageError {}
/** DEXA_E_UNKNOWN_RPC: no RPC of that name in the flow. */
export declare class UnknownRPCError extends UsageError {}
/** DEXA_E_NOT_FOUND: no such session (or queued message, call). */
export declare class NotFoundError extends UsageError {}
/** DEXA_E_EMPTY_MESSAGE: a user message or answer that is blank. */
export declare class EmptyMessageError extends UsageError {}
/** DEXA_E_BAD_STATE: the session is not in a state that allows it. */
export declare class BadStateError extends UsageError {}
/** DEXA_E_UNKNOWN_KEY: an option, limit or configuration key that is not known. */
export declare class UnknownKeyError extends UsageError {}
/** DEXA_E_INVALID_RESUME_TOKEN: not a resume token of this session; reload the snapshot. */
export declare class InvalidResumeTokenError extends UsageError {}
/** DEXA_E_STALE_REVISION: a plan revision that is not the current one. */
export declare class StaleRevisionError extends UsageError {}
/** DEXA_E_TOO_LARGE: an input over its size limit. */
export declare class TooLargeError extends UsageError {}
/** DEXA_E_REENTRANT: called from inside a callback of the same handle. */
export declare class ReentrantError extends UsageError {}
/** DEXA_E_ALREADY_EXISTS: a session id that is taken. */
export declare class AlreadyExistsError extends UsageError {}
/** DEXA_E_UNSUPPORTED: a feature this build, store or agent does not have. */
export declare class UnsupportedError extends UsageError {}
/** DEXA_E_NOT_PENDING: a decision or answer for a call that is not waiting for one. */
export declare class NotPendingError extends UsageError {}
/** DEXA_E_SESSION_ENDED: the session has ended (end_session or the idle timeout); it takes no more changes. */
export declare class SessionEndedError extends UsageError {}
/** DEXA_E_TIMEOUT: the operation ran out of time. */
export declare class TimedOutError extends TransientError {}
/** DEXA_E_BUSY: the store or a lock is busy. */
export declare class BusyError extends TransientError {}
/** DEXA_E_IO: storage or network I/O failed. */
export declare class IOFailedError extends TransientError {}
/** DEXA_E_RATE_LIMITED: the provider asked to slow down. */
export declare class RateLimitedError extends TransientError {}
/** DEXA_E_MODEL: the model call failed for good. */
export declare class ModelError extends PermanentError {}
/** DEXA_E_TOOL: the tool call failed for good. */
export declare class ToolError extends PermanentError {}
/** DEXA_E_STATE_LIMIT: the session's active state would pass its limit. */
export declare class StateLimitError extends PermanentError {}
/** DEXA_E_CALLBACK_FAILED: a host callback failed; `cause` is the reader's error. */
export declare class CallbackFailedError extends PermanentError {}
/** DEXA_E_CORRUPT: stored data is not what the library wrote. */
export declare class CorruptError extends PermanentError {}
/** DEXA_E_AUTH: credentials missing or refused. */
export declare class AuthError extends PermanentError {}
/** DEXA_E_NOMEM: out of memory. */
export declare class OutOfMemoryError extends FatalError {}
/** DEXA_E_INTERNAL: a bug in the library. */
export declare class InternalError extends FatalError {}

// ---- agents and tools -----------------------------------------------------------

/** A model client. */
export declare class Model {
  /** The demo model `name` ('mock/dex', 'mock/dex-mini'): no key, no network, slash commands. */
  static demo(name?: string): Model;
  /** A provider client ('openai/gpt-4.1', 'anthropic/claude-sonnet-4', ...) configured by
   * options such as {apiKey, baseUrl, timeoutMs} (dexa_model_client_new(3)); an unknown
   * key (a snake_case one too) throws UnknownKeyError. A string is the library's own JSON
   * text (snake_case keys), passed unchanged. */
  static client(name: string, options?: ClientOptions | string): Model;
  /** The Claude Code harness (dexa_harness_claude_code_new): turns run in the Claude Code
   * CLI as durable segments. A string is the library's own JSON text, passed unchanged. */
  static claudeCode(name?: string, options?: ClaudeCodeOptions | string): Model;
  /** demo() for 'mock/...' names, else client() with default options. */
  static named(name: string): Model;
  /** A model written in JavaScript, called for each RunModel Step (dexagents-harness(7)):
   * generate returns (or resolves to) the reply; a throw is an error that retries or
   * fails the turn by its kind (errorCode()). timeoutMs: how long a worker waits for one
   * call (default 15 minutes). */
  static fromFunction(name: string, generate: (request: ModelRequest) => ModelReply | Promise<ModelReply>,
    options?: { timeoutMs?: number }): Model;
  /** The model's name. */
  readonly name: string;
  /** The addon's handle. */
  readonly handle: unknown;
}

/** The options of a provider client (dexa_model_client_new(3)), in camelCase; each reaches
 * the library as its snake_case key (baseUrl: base_url). Which a provider takes is in the
 * man page; one it does not take is refused with UnknownKeyError. */
export interface ClientOptions {
  /** "http(s)://..."; default the provider's variable, else its public endpoint. */
  baseUrl?: string;
  /** The key itself (never logged or stored). */
  apiKey?: string;
  /** The environment variable to read the key from at each call. */
  apiKeyEnv?: string;
  /** Per call (default 900000) and for connecting (default 30000). */
  timeoutMs?: number;
  connectTimeoutMs?: number;
  maxOutputTokens?: number;
  /** 0 to 2. */
  temperature?: number;
  /** 0 to 1. */
  topP?: number;
  seed?: number;
  /** Stop sequences. */
  stop?: string[];
  /** Extra request headers (names kept as they are). */
  headers?: Record<string, string>;
  /** Extra query parameters (names kept as they are). */
  query?: Record<string, string>;
  reasoningEffort?: 'none' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh';
  reasoningSummary?: 'auto' | 'concise' | 'detailed';
  encryptedReasoning?: boolean;
  thinkingBudgetTokens?: number;
  anthropicVersion?: string;
  toolChoice?: 'auto' | 'required' | 'none';
  parallelToolCalls?: boolean;
  strictTools?: boolean;
  promptCaching?: boolean;
  cacheTtl?: '5m' | '1h';
  /** US dollars per million tokens; each call's usage then carries its cost. */
  price?: { input: number; output: number; cachedInput?: number; cacheWrite?: number };
  /** Other models of the same agent, tried in order when this one keeps failing. */
  fallbacks?: string[];
  /** vertex/ */
  project?: string;
  location?: string;
  accessTokenEnv?: string;
  tokenCommand?: string;
  tokenTtlS?: number;
  /** bedrock/ */
  region?: string;
  /** azure/ */
  apiVersion?: string;
  api?: 'chat' | 'responses';
}

/** The options of the Claude Code harness (dexa_harness_claude_code_new(3)), in camelCase. */
export interface ClaudeCodeOptions {
  /** The claude executable: a path or a name on the worker's PATH (default "claude"). */
  cliPath?: string;
  /** The Claude model (--model), e.g. "sonnet". */
  model?: string;
  /** The CLI's own tools it may run without asking, e.g. ["Read", "Grep"]. */
  allowedTools?: string[];
  /** The CLI's working directory. */
  cwd?: string;
  /** Environment variables set for the CLI (no API keys). */
  env?: Record<string, string>;
  /** A segment's limit (default 900000). */
  timeoutMs?: number;
}

/** A tool call a model or harness proposes; it runs in its own Step. */
export interface ProposedToolCall {
  /** Unique within the reply. */
  callId: string;
  name: string;
  /** A JSON object. */
  arguments?: Record<string, unknown>;
  /** From the framework's own tool metadata: wins over the tool's policy for this call. */
  effect?: ToolEffectValue;
  /** From the framework's own tool metadata: the call waits for a person's approval. */
  approval?: boolean;
}

/** One output item, stored verbatim and replayed as it is, with its display text. */
export interface ReplyItem {
  /** Any JSON value: the provider's or framework's own message. */
  item: unknown;
  text?: string;
  reasoning?: string;
  toolCalls?: ProposedToolCall[];
}

/** The answer of a JavaScript model or harness. Without items, item/text/reasoning/
 * toolCalls make one item ({type: 'message', role: 'assistant', content, tool_calls}). */
export interface ModelReply {
  items?: ReplyItem[];
  item?: unknown;
  text?: string;
  reasoning?: string;
  toolCalls?: ProposedToolCall[];
  /** Input tokens include the cached ones and cache writes; output the reasoning ones. */
  usage?: { inputTokens?: number; outputTokens?: number; cachedInputTokens?: number;
    cacheWriteTokens?: number; reasoningTokens?: number; costUsd?: number };
  finishReason?: 'stop' | 'tool_calls' | 'length' | 'content_filter' | 'refusal' | 'other';
  /** The provider's own word (printable ASCII, at most 47 bytes). */
  providerFinishReason?: string;
  /** A harness's new state (any JSON value; null drops it; undefined keeps it). */
  state?: unknown;
  /** Entries appended to a harness's state (a transcript that grows). */
  stateEntries?: unknown[];
  /** Tools the framework ran itself inside the segment (hosted, MCP or
   * sub-agent tools): each a segment_tool_call event with ran_by
   * "framework" when the segment commits; at least once (they run again
   * when the segment reruns), never a Step of their own. */
  frameworkToolCalls?: { callId: string; name: string; arguments?: unknown;
    status?: 'ok' | 'error' | 'cancelled'; output?: unknown }[];
}

/** What a read inside the segment returns. */
export interface SegmentToolResult {
  status: 'ok' | 'error' | 'cancelled';
  output: string;
  content?: unknown;
  code?: number;
}

/** What a JavaScript model or harness gets for one call: the request document
 * (dexa_model_request_json(3)) in camelCase, plus a harness's state, the new messages, a
 * stop signal, live deltas and reads inside the segment. */
export interface ModelRequest {
  model: string;
  sessionId: string;
  turn: number;
  round: number;
  attempt: number;
  instructions: string;
  planMode?: boolean;
  /** Stored messages, oldest first (dexagents-flow(7)), camelCase; items as stored. */
  messages: Array<Record<string, any>>;
  /** The offered tools: {name, description, parameters, effect, approval}. */
  tools: Array<Record<string, any>>;
  /** Dex compaction's summary, when there is one. */
  summary?: Record<string, any>;
  /** "compaction" for a summarize call. */
  purpose?: string;
  /** A harness's segment: {name, segment, ownsTranscript, runsReads, firstNew, stateEntries}. */
  harness?: Record<string, any>;
  /** The request document as the library wrote it. */
  readonly document: Record<string, any>;
  /** Index of the first message new for the harness (0 for a model). */
  firstNewMessage: number;
  /** The messages stored since the harness's last committed segment. */
  readonly newMessages: Array<Record<string, any>>;
  /** The state the harness's last committed segment set (null: none). */
  state: unknown;
  /** The entries appended since, oldest first. */
  stateEntries: unknown[];
  /** Aborts when the turn is stopped (when the host gives the call a stop: host-driven
   * stopSignal), or when the worker gives up the call (timeout, runtime closed). */
  readonly signal: AbortSignal;
  /** signal.aborted. */
  readonly cancelled: boolean;
  /** A live delta to the session's event readers (best effort); false once the call is over. */
  emitDelta(text: string, kind?: 'text' | 'reasoning'): boolean;
  /** Runs one of the agent's read tools inside the segment (a harness with runsReads):
   * at least once, recorded as a segment_tool_call event. Rejects with BadStateError for
   * a tool that must leave the segment, NotFoundError for one that is not offered. */
  callTool(name: string, args?: Record<string, unknown>, options?: { callId?: string }): Promise<SegmentToolResult>;
}

/** Options of a Harness. */
export interface HarnessOptions {
  /** The model name sessions select it by. */
  name: string;
  /** One segment of the framework. */
  runSegment: (request: ModelRequest) => ModelReply | Promise<ModelReply>;
  /** Dex compaction's summary (a request whose purpose is "compaction"). */
  summarize?: (request: ModelRequest) => ModelReply | Promise<ModelReply>;
  /** The framework keeps and compacts its own transcript (Dex compaction off). */
  ownsTranscript?: boolean;
  /** The framework runs read tools inside the segment (request.callTool). */
  runsReads?: boolean;
  /** How long a worker waits for one segment (default 15 minutes). */
  timeoutMs?: number;
}

/** A harness written in JavaScript (dexagents-harness(7)): a framework that runs the
 * model part of a turn, one segment per RunModel Step. A Model: put it in the agent's
 * models. The adapters (dexagents/adapters/*) return one with its `tools`. */
export declare class Harness extends Model {
  constructor(options: HarnessOptions);
  readonly ownsTranscript: boolean;
  readonly runsReads: boolean;
  /** The Dex tools an adapter made of the framework's tools (give them to the agent). */
  tools?: Tool[];
}

/** What a tool does outside the session: READ and IDEMPOTENT_WRITE run in CallTool
 * (retried), WRITE in CallSingleAttemptTool (at most once). */
export declare const ToolEffect: Readonly<{ READ: 1; IDEMPOTENT_WRITE: 2; WRITE: 3 }>;
/** A tool effect as a number or a name. */
export type ToolEffectValue = 1 | 2 | 3 | 'read' | 'idempotent_write' | 'write';

/** What a tool function gets next to its arguments. */
export interface ToolCall {
  /** The tool's name. */
  name: string;
  /** The model's call id. */
  callId: string;
  /** The session (flow) id. */
  sessionId: string;
  /** "<session>:<call>": stable across retries and workers; pass it to the service you call. */
  idempotencyKey: string;
  /** 1-based attempt. */
  attempt: number;
  /** Aborts when the worker stops waiting: the tool timed out, or the runtime closed
   * with a timeout (its Step is then left as after a crash). */
  signal: AbortSignal;
}

/** A tool function: returns (or resolves to) a string (the text the model sees), a
 * ToolResult, or any JSON value (sent as JSON text and kept as the content). A throw or
 * rejection becomes a tool error result. It runs on the JS thread. */
export type ToolFunction = (args: any, call: ToolCall) => unknown;

/** Options of a tool. */
export interface ToolOptions {
  /** The tool's name (default: the function's name). */
  name?: string;
  /** What the model reads about it. */
  description?: string;
  /** A JSON Schema object of the arguments (default {type: 'object'}). */
  parameters?: Record<string, unknown>;
  /** Default ToolEffect.READ. */
  effect?: ToolEffectValue;
  /** Each call waits for a person's approval first. */
  approval?: boolean;
  /** The same as approval (the Dex Agents SDK's name). */
  requiresApproval?: boolean;
}

/** A tool written in JavaScript. */
export declare class Tool {
  constructor(fn: ToolFunction, options?: ToolOptions);
  readonly fn: ToolFunction;
  readonly name: string;
  readonly description: string;
  readonly parameters: Record<string, unknown>;
  readonly effect: 1 | 2 | 3;
  readonly approval: boolean;
}

/** A new Tool. */
export declare function tool(fn: ToolFunction, options?: ToolOptions): Tool;

/** A tool's result spelled out. */
export declare class ToolResult {
  /** text: what the model sees; content: structured JSON kept with it; isError: a
   * tool-level error (recorded as the result, not retried). */
  constructor(text: string, options?: { content?: unknown; isError?: boolean });
  readonly text: string;
  readonly content: unknown;
  readonly isError: boolean;
}

/** The built-in tools; Object.values(BuiltInTool) selects all. */
export declare const BuiltInTool: Readonly<{ ASK_USER: 'ask_user'; DURABLE_WAIT: 'durable_wait';
  WRITE_TODOS: 'write_todos' }>;
/** A built-in tool's name. */
export type BuiltInToolName = 'ask_user' | 'durable_wait' | 'write_todos';

/** MCP servers as tool sources, from the worker's configuration. */
export declare class McpToolSource {
  /** An object in the common {mcpServers: {...}} shape (or its inner object), or the path
   * of such a JSON file. Unknown keys throw UnknownKeyError; no server starts here. */
  constructor(servers: Record<string, unknown> | string);
  /** The configuration with every env and header value replaced by "<redacted>". */
  redacted(): { mcpServers: Record<string, unknown> };
  /** The configured servers' names. */
  readonly serverNames: string[];
  /** Lists every server's tools now, starting or connecting to each. */
  listTools(): Promise<Array<{ name: string; description: string; parameters: unknown;
    effect: 'read' | 'idempotent_write' | 'write'; approval: boolean }>>;
}

/** When and how older messages are summarized (CompactContext). */
export interface CompactionPolicy {
  /** Turns compaction on (0: off). */
  contextWindowTokens: number;
  /** Compact when the next input nears this share of the window (default 85). */
  thresholdPct?: number;
  /** The share of the window kept unsummarized (default 10). */
  keepPct?: number;
  /** Summarized messages kept by retention (default 2000). */
  retentionMessages?: number;
  /** Retention never deletes. */
  keepFullTranscript?: boolean;
}

/** The limits of dexa_agent_def (the library's defaults when absent). */
export interface AgentLimits {
  /** RunModel attempts (3). */
  runModelMaxAttempts?: number;
  /** RunModel timeout (15 min). */
  runModelTimeoutMs?: number;
  /** CallTool attempts (5). */
  toolMaxAttempts?: number;
  /** A tool call's timeout (10 min); a JavaScript tool's signal aborts after it. */
  toolTimeoutMs?: number;
  /** Active state per session (64 MiB). */
  maxStateBytes?: number;
  /** One user message (1 MiB). */
  maxMessageBytes?: number;
  /** Earlier place of CompactionPolicy.contextWindowTokens. */
  contextWindowTokens?: number;
  /** Earlier place of CompactionPolicy.thresholdPct. */
  compactionThresholdPct?: number;
  /** Earlier place of CompactionPolicy.keepPct. */
  compactionKeepPct?: number;
  /** Earlier place of CompactionPolicy.retentionMessages. */
  retentionMessages?: number;
  /** Earlier place of CompactionPolicy.keepFullTranscript. */
  keepFullTranscript?: boolean;
}

/** The agent definition (the Dex Agents SDK's shape). Unknown keys throw UnknownKeyError. */
export interface AgentOptions {
  /** The system prompt. */
  instructions?: string;
  /** The allow-list; the first is the default. 'mock/...' strings are demo models, other
   * strings provider clients with default options. Default ['mock/dex']. */
  models?: Array<string | Model>;
  /** Tools written in JavaScript. */
  tools?: Array<Tool | ToolFunction>;
  /** MCP servers. */
  toolSources?: McpToolSource[];
  /** The built-in tools to offer (or a number of BUILTIN_* flags). */
  builtInTools?: Iterable<BuiltInToolName> | number;
  /** Plan mode (write_todos, execute_plan). */
  planModeEnabled?: boolean;
  /** Compaction of older messages. */
  compaction?: CompactionPolicy;
  /** Limits of the session's Steps and state. */
  limits?: AgentLimits;
  /** The flow type (default 'AgentSession'). */
  flowType?: string;
  /** The name of the JavaScript tools' source (default 'js'). */
  toolSourceName?: string;
  /** Earlier name of builtInTools. */
  builtinTools?: Iterable<BuiltInToolName> | number;
  /** Earlier name of planModeEnabled. */
  planMode?: boolean;
}

/** An immutable agent; may be shared by several runtimes. */
export declare class Agent {
  constructor(options?: AgentOptions);
  readonly models: Model[];
  readonly tools: Tool[];
  readonly toolSources: McpToolSource[];
  /** The addon's handle. */
  readonly handle: unknown;
  /** The flow type. */
  readonly flowType: string;
  /** The flow description (dexa_flow_describe(3)) in camelCase: flow type, start Step,
   * every Step type with its default options, attributes, channels, RPCs. */
  describe(): FlowDescription;
  /** Host-driven mode: runs one Step method or RPC with reader as the session's state. */
  dispatch(call: StepCall, reader: AttributeReader, options?: DispatchOptions): Promise<Result>;
}

// ---- the runtime ------------------------------------------------------------------

/** Options of a runtime (unknown keys throw UnknownKeyError). */
export interface RuntimeOptions {
  /** ':memory:' (default), a SQLite path, or 'sqlite:PATH'. */
  store?: string;
  /** Worker threads (default 2; 0: drive it with runReady() or poll()). */
  workers?: number;
  /** 'full' (default) or 'normal'. */
  sqliteSynchronous?: 'full' | 'normal';
  /** How long a claimed Step stays ours without renewal (default 10000). */
  leaseMs?: number;
  /** This process's worker name in leases. */
  workerId?: string;
  /** Durable events kept per session (default 10000; 0 keeps all). */
  eventsRetained?: number;
  /** Memory of the session cache (default 64 MiB; 0 turns it off). */
  sessionCacheBytes?: number;
  /** A session idle this long is ended (default 30 days; 0 never). */
  sessionIdleTimeoutMs?: number;
  /** How long an ended session stays readable before the sweep deletes it (default 7 days; 0 forever). */
  sessionRetentionMs?: number;
  /** How often worker threads sweep (default 60000; 0: never by themselves). */
  sweepIntervalMs?: number;
  /**
   * Receives the errors the runtime handles itself instead of returning them
   * to a caller (a worker's failed claim or completion, a lost lease, a
   * store batch run again, a reconnect; dexa_runtime_options.log), with the
   * cause. Called on the JS thread, never on a worker thread; repeats of one
   * message are rate-limited by the library. Messages the JS thread does not
   * take in time are dropped, and the next one delivered is preceded by a
   * warning saying how many. What it throws is ignored. It keeps no process
   * alive; it is released when close() completes (messages queued by then are still delivered).
   */
  onLog?: (message: LogMessage) => void;
}

/** One log message of a runtime (see RuntimeOptions.onLog). */
export interface LogMessage {
  /** DEXA_LOG_ERROR 1 (work failed, not retried), DEXA_LOG_WARNING 2 (an error the runtime retries), DEXA_LOG_INFO 3 (recovery and notable events, e.g. a worker was lost), DEXA_LOG_DEBUG 4. */
  level: 1 | 2 | 3 | 4;
  /** The level's name. */
  levelName: 'error' | 'warning' | 'info' | 'debug';
  /** The message (UTF-8 text, a copy of the library's). */
  message: string;
}

/** The dexa_runtime_options a runtime was made with, read back. */
export interface LibraryRuntimeOptions {
  store: string | null;
  sqliteSynchronous: string | null;
  workerId: string | null;
  leaseMs: number;
  eventsRetained: number;
  sessionCacheBytes: number;
  sessionIdleTimeoutMs: number;
  sessionRetentionMs: number;
  sweepIntervalMs: number;
}

/** The dexa_runtime_options that `options` make, read back (what reaches the library). */
export declare function runtimeOptions(options?: RuntimeOptions): LibraryRuntimeOptions;

/** A stored message (dexagents-flow(7)), in camelCase. */
export interface Message {
  seq: number;
  turn?: number;
  round?: number;
  role: 'user' | 'model' | 'tool';
  at?: number;
  /** user messages */
  id?: string;
  text?: string;
  /** model messages */
  model?: string;
  reasoning?: string;
  toolCalls?: Array<{ callId: string; name: string; arguments: unknown }>;
  usage?: { inputTokens?: number; outputTokens?: number };
  /** The provider's output item, byte for byte (not converted). */
  item?: unknown;
  /** tool messages */
  callId?: string;
  name?: string;
  status?: 'ok' | 'error' | 'unknown_outcome' | 'rejected' | 'cancelled';
  output?: string;
  content?: unknown;
  /** message_appended's compact view */
  hasToolCalls?: boolean;
}

/** A call waiting for a person or a timer. */
export interface PendingItem {
  kind: 'approval' | 'question' | 'timer';
  callId: string;
  name: string;
  turn?: number;
  round?: number;
  seq?: number;
  source?: string;
  effect?: 'read' | 'idempotent_write' | 'write';
  /** The tool's arguments (not converted). */
  arguments?: unknown;
  at?: number;
  prompt?: string;
  choices?: string[];
  seconds?: number;
  firesAtMs?: number;
  reason?: string;
}

/** A user message waiting in the queue. */
export interface QueuedMessage {
  id: string;
  text: string;
  planMode: boolean;
  steered: boolean;
  at?: number;
  executePlan?: number;
}

/** The session's plan. */
export interface Plan {
  revision: number;
  status: 'draft' | 'active' | 'completed';
  todos: Array<{ content: string; status: 'pending' | 'in_progress' | 'completed' }>;
  turn?: number;
  updatedMs?: number;
}

/** The durable view of a session (the snapshot RPC), in camelCase. */
export interface Snapshot {
  sessionId: string;
  session: { model: string; createdMs: number };
  turn: { turn: number; status: 'idle' | 'running' | 'failed' | 'cancelled' | 'steered';
    mode: 'chat' | 'planning' | 'executing'; sinceMs?: number;
    error?: { code: number; message: string } };
  transcript: { nextSeq: number; firstSeq: number; turn: number; bytes: number };
  plan: Plan | null;
  /** The newest 200 messages. */
  messages: Message[];
  queue: QueuedMessage[];
  pending: PendingItem[];
  control: { turn: number; action: 'steer' | 'cancel'; at: number } | null;
  summary: { fromSeq: number; throughSeq: number; generation: number; text: string;
    at: number } | null;
  /** Read events after it to follow the session from this snapshot on. */
  resumeToken: string;
}

/** One AgentEvents event (dexagents-events(7)) with camelCase fields. */
export declare class Event {
  /** The event type: session_started, queue_changed, turn_started, message_appended,
   * tool_call_proposed, tool_call_awaiting_approval, question_asked, timer_set,
   * tool_call_finished, approval_resolved, question_answered, timer_fired, plan_updated,
   * turn_control, turn_cancelled, turn_finished, turn_failed, compaction; live:
   * text_delta, reasoning_delta, tool_call_started. */
  readonly type: string;
  /** ms since the Unix epoch. */
  readonly at: number;
  /** Resume the stream after this event. */
  readonly token: string;
  /** A live delta (best effort, not durable). */
  readonly live: boolean;
  /** The type's fields (turn, callId, name, text, message, plan, ...). */
  readonly [field: string]: unknown;
}

/** Options of Runtime.events(). */
export interface EventsOptions {
  /** Resume after this token ('' from the oldest kept). */
  token?: string;
  /** Wait for more events (else yield what there is now and stop). */
  follow?: boolean;
  /** With follow: stop when none came for this long (default: no limit). */
  timeoutMs?: number;
  /** false leaves out live deltas. */
  live?: boolean;
  /** Stops the iterator (it rejects with the signal's reason). */
  signal?: AbortSignal;
}

/** Options of a wait. */
export interface WaitOptions {
  /** Give up after this long (TimedOutError); default no limit. */
  timeoutMs?: number;
  /** Stops waiting (rejects with the signal's reason at once). */
  signal?: AbortSignal;
}

/** The embedded runtime of an agent. Every method that may wait returns a Promise and runs
 * on a thread of its own, never on libuv's pool. */
export declare class Runtime implements AsyncDisposable {
  constructor(agent: Agent, options?: RuntimeOptions);
  readonly agent: Agent;
  /** The addon's handle. */
  readonly handle: unknown;
  /** The dexa_runtime_options given to the library, read back. */
  readonly libraryOptions: LibraryRuntimeOptions;
  /** True once close() began. */
  readonly closed: boolean;
  /** The last error message of this runtime. */
  readonly errmsg: string;
  /** Starts worker threads (1..256). While they run the runtime keeps the event loop alive,
   * like a server: close() it, or unref() it. */
  start(workers?: number): void;
  /** Lets the process exit while worker threads run (like server.unref()); running Steps
   * are then left for the next process, as after a crash. */
  unref(): this;
  /** Undoes unref(). */
  ref(): this;
  /** Stops the worker threads, letting each finish its current Step. */
  stop(): Promise<void>;
  /** Closes the runtime: no new operation, waits end (event iterators finish), the workers
   * finish their Steps (JavaScript tools included), the store closes. With timeoutMs, tools
   * still running after it are given up: their signals abort and their Steps are left as
   * after a crash. Calling it again returns the same Promise. */
  close(options?: { timeoutMs?: number }): Promise<void>;
  /** close() (for `await using`). */
  [Symbol.asyncDispose](): Promise<void>;

  /** Starts a session; resolves to its id ('s-<32 hex>' unless sessionId is given). */
  startSession(options?: { sessionId?: string; model?: string;
    settings?: Record<string, unknown> }): Promise<string>;
  /** Runs a session RPC by name; payload is the RPC's input document (dexagents-flow(7), as a
   * dispatch call's input); resolves to its response in camelCase, as the typed methods do. */
  call(sessionId: string, rpc: string, payload?: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** Sends a user message: it starts a turn or waits in the queue. */
  send(sessionId: string, text: string, options?: { planMode?: boolean }): Promise<{
    messageId: string; queued: boolean }>;
  /** The durable view of the session. */
  snapshot(sessionId: string): Promise<Snapshot>;
  /** A page of older messages, oldest first (limit 1..200, default 50). */
  messages(sessionId: string, options?: { beforeSeq?: number; limit?: number }): Promise<{
    messages: Message[]; hasMore: boolean }>;
  /** Deletes a queued message (NotFoundError when it is not queued). */
  delete(sessionId: string, messageId: string): Promise<Record<string, unknown>>;
  /** Steers a queued message: the turn ends at its next safe boundary and a new one starts. */
  steer(sessionId: string, messageId: string): Promise<Record<string, unknown>>;
  /** Stop (cancel_turn): ends the running turn without a new one. */
  stopTurn(sessionId: string): Promise<Record<string, unknown>>;
  /** The same as stopTurn. */
  cancelTurn(sessionId: string): Promise<Record<string, unknown>>;
  /** Ends the session for good (end_session): running Steps are cancelled, waits end; later
   * changes fail with SessionEndedError, reads answer until the retention passes. */
  endSession(sessionId: string, reason?: string): Promise<Record<string, unknown>>;
  /** Approves a call waiting for approval. */
  approve(sessionId: string, callId: string, note?: string): Promise<Record<string, unknown>>;
  /** Rejects a call waiting for approval; the note is the model's result. */
  reject(sessionId: string, callId: string, note?: string): Promise<Record<string, unknown>>;
  /** Answers an ask_user question. */
  answer(sessionId: string, callId: string, answer: string): Promise<Record<string, unknown>>;
  /** Runs the reviewed plan of revision (StaleRevisionError for another one). */
  executePlan(sessionId: string, revision: number): Promise<{ messageId: string;
    revision: number }>;
  /** Sessions, newest first; pass next as after for the next page. */
  listSessions(options?: { after?: string; limit?: number }): Promise<{
    sessions: Array<{ sessionId: string; createdMs: number; flowType: string; status: string }>;
    next: string | null }>;
  /** One read: the events after token, waiting up to timeoutMs (default 0; Infinity: until
   * one comes) for the first. */
  readEvents(sessionId: string, token?: string, options?: { max?: number; timeoutMs?: number;
    signal?: AbortSignal }): Promise<{ events: Event[]; token: string }>;
  /** Async iterator over the session's events. */
  events(sessionId: string, options?: EventsOptions): AsyncGenerator<Event, void, undefined>;
  /** Waits until the session has no Step ready or running. The second argument may be the
   * timeout in ms. */
  waitIdle(sessionId: string, options?: WaitOptions | number): Promise<void>;
  /** Runs ready Steps on a thread until none is ready now; resolves to how many ran. */
  runReady(): Promise<number>;
  /** Host-driven: claims one ready Step method (waiting up to timeoutMs, default 0). */
  poll(options?: WaitOptions): Promise<Task | null>;
  /** Applies a task's result (null: the attempt failed without one). Rejects with
   * TimedOutError when the lease was lost. */
  complete(task: Task, result: Result | null): Promise<void>;
  /** Gives a claimed task back (retried once its lease ends). */
  abandon(task: Task): void;
}

// ---- host-driven mode ---------------------------------------------------------------

/** What a call runs. */
export declare const CallKind: Readonly<{ WAIT_FOR: 1; EXECUTE: 2; RPC: 3 }>;

/** One Step method or RPC invocation (dexa_call). JSON values are serialized; a RawJSON
 * passes text unchanged. */
export interface StepCall {
  kind: 1 | 2 | 3 | 'wait_for' | 'execute' | 'rpc';
  sessionId: string;
  /** The Step type or RPC name. */
  name: string;
  /** 'RunModel-7': unique in the session; absent for RPCs. */
  stepExecutionId?: string;
  /** 1-based (default 1). */
  attempt?: number;
  input?: unknown;
  /** Execute: the condition results of the wait ({fired, channels}). */
  conditions?: unknown;
  /** A recovery Step: {code, message}. */
  recoveryError?: unknown;
  /** Default Date.now(). */
  nowMs?: number;
}

/** The session's state as the library reads it. Values are JSON text, as the library
 * wrote them; either method may return a Promise (an engine with asynchronous reads). */
export interface AttributeReader {
  /** The JSON text of key, or null when absent. */
  get(key: string): string | null | undefined | Promise<string | null | undefined>;
  /** [key, JSON text] pairs whose key starts with prefix, in bytewise (UTF-8) key order. */
  scan(prefix: string): Iterable<[string, string]> | AsyncIterable<[string, string]>
    | Promise<Iterable<[string, string]>>;
}

/** Options of a dispatch. */
export interface DispatchOptions {
  /** Receives live events (text deltas, ...) while the call runs, as Events (camelCase,
   * `live` true) like the runtime's. */
  onEvent?: (event: Event) => void;
  /** Stops waiting for the reader (the dispatch rejects with the signal's reason). */
  signal?: AbortSignal;
  /** Aborted when the host learns that the call's turn was stopped: a running model call or
   * harness segment sees it (dexa_call.cancelled; a JavaScript model's request.signal). */
  stopSignal?: AbortSignal;
}

/** Runs call on agent with reader as the session's state (dexa_dispatch(3)); resolves to
 * its Result, also when the Step failed (check result.ok). A reader that throws makes it
 * reject with CallbackFailedError (its cause is the reader's error). */
export declare function dispatch(agent: Agent, call: StepCall, reader: AttributeReader,
  options?: DispatchOptions): Promise<Result>;

/** One condition of a wait: a channel's messages (min, max) or a timer (timerMs). */
export interface WaitCondition {
  id: string;
  channel?: string;
  min?: number;
  max?: number;
  /** A timer condition: due this long after the wait was stored. */
  timerMs?: number;
}

/** The wait of a WaitFor (<dexagents/flow.h>), in camelCase; evaluateWait() tells when it is
 * satisfied (and refuses any other key). Result.waitText is the library's own JSON text. */
export interface Wait {
  mode: 'any' | 'all';
  conditions: WaitCondition[];
}

/** The host's state for one waiting Step (dexa_wait_state). */
export interface WaitState {
  /** The host's clock, ms since the epoch (default Date.now()). */
  nowMs?: number;
  /** When the wait was stored: its timers count from it (default nowMs). */
  startedMs?: number;
  /** The ids of the timer conditions that the host's own durable timers fired; absent or
   * null: timers fire by nowMs. */
  fired?: string[] | null;
  /** How many messages each channel holds (absent channels hold none). */
  channelCounts?: Record<string, number> | Map<string, number> | ((channel: string) => number);
}

/** What evaluateWait() said of a wait (dexa_wait_evaluate(3)). */
export declare class WaitEvaluation {
  /** The whole answer (camelCase). */
  readonly document: { ready: boolean; fired: string[];
    consume: Array<{ id: string; channel: string; count: number }>; channels: string[];
    timers: Array<{ id: string; timerMs: number; dueMs: number }>; nextDueMs: number | null;
    [key: string]: unknown };
  /** True when Execute may run now, with the messages of consume. */
  readonly ready: boolean;
  /** The ids of the timer conditions that fired. */
  readonly fired: string[];
  /** When ready: the oldest `count` messages of each channel to take, in this order. */
  readonly consume: Array<{ id: string; channel: string; count: number }>;
  /** Every channel the wait watches: evaluate again when one of them gets a message. */
  readonly channels: string[];
  /** Every timer condition with its due time. */
  readonly timers: Array<{ id: string; timerMs: number; dueMs: number }>;
  /** The earliest timer not fired (ms since the epoch), or null: evaluate again then. */
  readonly nextDueMs: number | null;
  /** For a ready wait: removes the consumed messages from channels (channel -> array, oldest
   * first) and returns Execute's conditions. Throws when not ready. */
  take(channels: Map<string, unknown[]> | Record<string, unknown[]>): {
    fired: string[]; channels: Record<string, unknown[]> };
}

/** Evaluates a stored wait (Result.wait, its JSON text or a RawJSON; null: no wait) against
 * the host's channels and timers: whether Execute may run, what it consumes, and when to
 * look again. Synchronous and pure. Throws InvalidJSONError for a malformed wait. */
export declare function evaluateWait(wait: Wait | string | RawJSON | null, state?: WaitState):
  WaitEvaluation;

/** What one dispatch returned; nothing in it is applied by the library. */
export declare class Result {
  /** The C result, handed to Runtime.complete(). */
  readonly handle: unknown;
  /** 0 (DEXA_OK) or a negative DEXA_E_* code. */
  readonly status: number;
  /** True when status is 0. */
  readonly ok: boolean;
  /** What went wrong ('' when ok). */
  readonly error: string;
  /** For a failed Step: how long to wait before the next attempt (0: the Step's backoff). */
  readonly retryAfterMs: number;
  /** Attribute writes in order; value is JSON text, or null to delete. */
  readonly writes: Array<{ key: string; value: string | null }>;
  /** Channel publishes in order (JSON text). */
  readonly publishes: Array<{ channel: string; value: string }>;
  /** Durable events (JSON text each) to append to AgentEvents. */
  readonly events: string[];
  /** A WaitFor's wait (camelCase), or null (Execute may run at once). */
  readonly wait: Wait | null;
  /** The wait as the library wrote it (JSON text), or null: what a host may store. */
  readonly waitText: string | null;
  /** An Execute's or RPC's decision, or null. */
  readonly decision: Decision | null;
  /** An RPC's response (camelCase: a snapshot's fields as Runtime.snapshot() has them,
   * {messageId} of send_message, ...), or null. */
  readonly response: Record<string, unknown> | null;
  /** Throws the DexaError subclass of the status unless it is 0. */
  throwIfFailed(): void;
  /** The whole result (the fields of dexa_result_json(3), in camelCase). */
  toJSON(): { status: number; error: string; retryAfterMs: number;
    writes: Array<{ key: string; value: unknown }>; publishes: Array<{ channel: string; value: unknown }>;
    events: unknown[]; wait: Wait | null; decision: Decision | null;
    response: Record<string, unknown> | null };
}

/** The options of a Step type (a flow description's steps[].options, a decision's
 * next[].options), in camelCase. */
export interface StepOptions {
  maxAttempts?: number;
  initialBackoffMs?: number;
  backoffCoefficient?: number;
  maxBackoffMs?: number;
  timeoutMs?: number;
  hasWaitFor?: boolean;
  locked?: boolean;
  /** The Step type that runs when this one fails for good, or null. */
  recovery?: string | null;
}

/** What an Execute or an RPC decided: the Steps to add (each input is the library's document,
 * handed back unchanged as that Step's call input), whether the flow completed, and the
 * waiting Step types to cancel. */
export interface Decision {
  next?: Array<{ step: string; input?: unknown; options?: StepOptions }>;
  complete?: boolean;
  cancel?: string[];
}

/** An AttributeReader over a Map of key -> JSON text, with apply() for a result's writes. */
export declare class MemoryAttributes implements AttributeReader {
  constructor(entries?: Iterable<[string, string]>);
  readonly map: Map<string, string>;
  /** The JSON text of key, or null. */
  get(key: string): string | null;
  /** Pairs whose key starts with prefix, in bytewise key order. */
  scan(prefix: string): Array<[string, string]>;
  /** Sets key to JSON text. */
  set(key: string, value: string): this;
  /** Deletes key. */
  delete(key: string): boolean;
  /** The number of attributes. */
  readonly size: number;
  /** Applies a result's attribute writes (null deletes). */
  apply(result: Result): void;
}

/** A Step method the runtime claimed for you (Runtime.poll()). */
export declare class Task {
  readonly runtime: Runtime;
  /** The addon's handle. */
  readonly handle: unknown;
  /** The call, with JSON values parsed. */
  readonly call: { kind: 1 | 2 | 3; sessionId: string; name: string;
    stepExecutionId: string | null; attempt: number; input: unknown; conditions: unknown;
    recoveryError: unknown; nowMs: number };
  /** Runs the task on the runtime's agent, reading the store; onEvent receives live events
   * (else they go to the runtime's event readers). */
  dispatch(options?: { onEvent?: (event: Event) => void;
    stopSignal?: AbortSignal }): Promise<Result>;
}

/** JSON text passed to the library unchanged. */
export declare class RawJSON {
  constructor(text: string);
  readonly text: string;
}

/** The flow description (dexa_flow_describe(3)), in camelCase; the names of Steps, RPCs,
 * attributes and channels are kept as they are (also as the keys of transitions). */
export interface FlowDescription {
  flowType: string;
  startStep: string;
  steps: Array<{ name: string; options: StepOptions }>;
  rpcs: Array<{ name: string; readOnly: boolean; interrupts: boolean }>;
  attributes: string[];
  channels: string[];
  streams: string[];
  /** What each Step type and RPC may do next: Step types it adds, channels it publishes to,
   * the wait of a WaitFor. */
  transitions?: {
    steps: Record<string, { next: string[]; publishes: string[];
      waits?: { mode: 'any' | 'all'; conditions: Array<{ channel?: string; timer?: boolean }> } }>;
    rpcs: Record<string, { publishes: string[] }>;
  };
}

// ---- earlier names --------------------------------------------------------------------

/** ToolEffect.READ. */
export declare const READ: 1;
/** ToolEffect.IDEMPOTENT_WRITE. */
export declare const IDEMPOTENT_WRITE: 2;
/** ToolEffect.WRITE. */
export declare const WRITE: 3;
/** The ask_user flag of builtInTools as a number. */
export declare const BUILTIN_ASK_USER: 1;
/** The durable_wait flag. */
export declare const BUILTIN_DURABLE_WAIT: 2;
/** The write_todos flag. */
export declare const BUILTIN_WRITE_TODOS: 4;
/** All three flags. */
export declare const BUILTIN_ALL: 7;
/** -101 */ export declare const DEXA_E_INVALID_ARG: number;
/** -102 */ export declare const DEXA_E_STRUCT_SIZE: number;
/** -103 */ export declare const DEXA_E_INVALID_JSON: number;
/** -104 */ export declare const DEXA_E_UNKNOWN_STEP: number;
/** -105 */ export declare const DEXA_E_UNKNOWN_RPC: number;
/** -106 */ export declare const DEXA_E_NOT_FOUND: number;
/** -107 */ export declare const DEXA_E_EMPTY_MESSAGE: number;
/** -108 */ export declare const DEXA_E_BAD_STATE: number;
/** -109 */ export declare const DEXA_E_UNKNOWN_KEY: number;
/** -110 */ export declare const DEXA_E_INVALID_RESUME_TOKEN: number;
/** -111 */ export declare const DEXA_E_STALE_REVISION: number;
/** -112 */ export declare const DEXA_E_TOO_LARGE: number;
/** -113 */ export declare const DEXA_E_REENTRANT: number;
/** -114 */ export declare const DEXA_E_ALREADY_EXISTS: number;
/** -115 */ export declare const DEXA_E_UNSUPPORTED: number;
/** -116 */ export declare const DEXA_E_NOT_PENDING: number;
/** -117 */ export declare const DEXA_E_SESSION_ENDED: number;
/** -201 */ export declare const DEXA_E_TRANSIENT: number;
/** -202 */ export declare const DEXA_E_TIMEOUT: number;
/** -203 */ export declare const DEXA_E_BUSY: number;
/** -204 */ export declare const DEXA_E_IO: number;
/** -205 */ export declare const DEXA_E_RATE_LIMITED: number;
/** -301 */ export declare const DEXA_E_PERMANENT: number;
/** -302 */ export declare const DEXA_E_MODEL: number;
/** -303 */ export declare const DEXA_E_TOOL: number;
/** -304 */ export declare const DEXA_E_STATE_LIMIT: number;
/** -305 */ export declare const DEXA_E_CALLBACK_FAILED: number;
/** -306 */ export declare const DEXA_E_CORRUPT: number;
/** -307 */ export declare const DEXA_E_AUTH: number;
/** -901 */ export declare const DEXA_E_NOMEM: number;
/** -902 */ export declare const DEXA_E_INTERNAL: number;
