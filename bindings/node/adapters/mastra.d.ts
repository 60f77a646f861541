// Types of dexagents/adapters/mastra: a Mastra agent as a harness.
import type { Harness, ToolEffectValue } from '../index';

export interface MastraHarnessOptions {
  /** The model name sessions select it by (default "mastra/<agent name>"). */
  name?: string;
  /** The Agent of @mastra/core. Its tools (listed once, when the harness is made) are
   * passed again as client tools, so Mastra stops at their calls; each call runs the
   * tool's execute in its own Step. */
  agent: unknown;
  /** Effects per tool name, where the tool's mcp.annotations (readOnlyHint,
   * destructiveHint, idempotentHint) say nothing (unknown: write). */
  effects?: Record<string, Exclude<ToolEffectValue, number>>;
  /** Approval per tool name, where requireApproval says nothing (unknown: required). */
  approvals?: Record<string, boolean>;
  /** More agent.stream() options (modelSettings, providerOptions, maxSteps, ...). */
  streamOptions?: Record<string, unknown>;
  /** How long a worker waits for one segment (default 15 minutes). */
  timeoutMs?: number;
}

/** Resolves to a Harness running one agent.stream() per RunModel Step; its `tools` are the
 * Dex tools to give the agent. */
export declare function mastraHarness(options: MastraHarnessOptions): Promise<Harness & { tools: NonNullable<Harness['tools']> }>;
