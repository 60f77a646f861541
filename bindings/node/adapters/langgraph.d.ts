// Types of dexagents/adapters/langgraph: a LangGraph.js graph as a harness.
import type { Harness, ToolEffectValue } from '../index';

export interface LangGraphHarnessOptions {
  /** The model name sessions select it by (default "langgraph/agent"). */
  name?: string;
  /** A StateGraph, or a compiled graph such as createReactAgent({llm, tools}): compiled
   * again with the session's checkpoint and an interrupt before its tool node. */
  graph: unknown;
  /** The LangChain tools the graph's model is bound to; each call runs in its own Step. */
  tools?: any[];
  /** The tool node's name (default "tools"). */
  toolNode?: string;
  /** Effects per tool name, where the tool's metadata (readOnlyHint, destructiveHint,
   * idempotentHint) says nothing (unknown: write). */
  effects?: Record<string, Exclude<ToolEffectValue, number>>;
  /** Approval per tool name (default: required for anything but a read). */
  approvals?: Record<string, boolean>;
  /** The graph's recursion limit per segment (default 25). */
  recursionLimit?: number;
  /** How long a worker waits for one segment (default 15 minutes). */
  timeoutMs?: number;
}

/** A Harness running the graph until it stops before its tool node; the graph's
 * checkpoint is the session's harness state. Its `tools` are the Dex tools to give the
 * agent. */
export declare function langGraphHarness(options: LangGraphHarnessOptions): Harness & { tools: NonNullable<Harness['tools']> };
