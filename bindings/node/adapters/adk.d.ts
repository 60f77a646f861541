// Types of dexagents/adapters/adk: a Google ADK (TypeScript) agent as a harness.
import type { Harness, ToolEffectValue } from '../index';

export interface AdkHarnessOptions {
  /** The model name sessions select it by (default "adk/<agent name>"). */
  name?: string;
  /** The root agent (an LlmAgent of @google/adk); the tools of its sub-agents come along.
   * It runs with runConfig.pauseOnToolCalls; each call runs the tool in its own Step. */
  agent: unknown;
  /** The ADK app name of the session (default "dex"). */
  appName?: string;
  /** Effects per tool name (ADK's tools carry no effect metadata; unknown: write). */
  effects?: Record<string, Exclude<ToolEffectValue, number>>;
  /** Approval per tool name; otherwise required for anything but a read, and whenever the
   * tool's requireConfirmation says so for the call. */
  approvals?: Record<string, boolean>;
  /** More RunConfig settings (streamingMode defaults to SSE; pauseOnToolCalls is always on). */
  runConfig?: Record<string, unknown>;
  /** ADK plugins for the runner of each segment. */
  plugins?: unknown[];
  /** How long a worker waits for one segment (default 15 minutes). */
  timeoutMs?: number;
}

/** A Harness running the agent until it pauses at its function calls; the ADK session's
 * events are the session's harness state. Its `tools` are the Dex tools to give the agent. */
export declare function adkHarness(options: AdkHarnessOptions): Harness & { tools: NonNullable<Harness['tools']> };
