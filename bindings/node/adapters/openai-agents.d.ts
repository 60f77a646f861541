// Types of dexagents/adapters/openai-agents: an OpenAI Agents SDK agent as a harness.
import type { Harness, ToolEffectValue } from '../index';

export interface OpenAIAgentsHarnessOptions {
  /** The model name sessions select it by (default "openai-agents/<agent name>"). */
  name?: string;
  /** The starting Agent of @openai/agents; the agents of its handoffs come along. Its
   * function tools are offered as stand-ins that stop the run; each call runs the tool in
   * its own Step. */
  agent: unknown;
  /** The Runner that runs each segment (its model provider, tracing, ...; default new Runner()). */
  runner?: unknown;
  /** Effects per tool name (function tools carry no effect metadata; unknown: write). */
  effects?: Record<string, Exclude<ToolEffectValue, number>>;
  /** Approval per tool name; otherwise required for anything but a read, and whenever the
   * tool's needsApproval says so for the call. */
  approvals?: Record<string, boolean>;
  /** The SDK's maxTurns for one segment. */
  maxTurns?: number;
  /** How long a worker waits for one segment (default 15 minutes). */
  timeoutMs?: number;
}

/** A Harness running the agent until it stops at its function calls (interruptions); the
 * interrupted RunState is the session's harness state. Its `tools` are the Dex tools to
 * give the agent (new Agent({models: [h], tools: h.tools})). */
export declare function openAIAgentsHarness(options: OpenAIAgentsHarnessOptions): Harness & { tools: NonNullable<Harness['tools']> };
/** The session's stored messages (and Dex's summary) as the SDK's input items. */
export declare function toAgentInput(request: { messages: Array<Record<string, any>>; summary?: Record<string, any> }): unknown[];
