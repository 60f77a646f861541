// Types of dexagents/adapters/ai-sdk: the Vercel AI SDK as a harness.
import type { Harness, ToolEffectValue } from '../index';

export interface AiSdkHarnessOptions {
  /** The model name sessions select it by (default "ai-sdk/<model id>"). */
  name?: string;
  /** The provider's LanguageModel: openai('gpt-4.1'), anthropic('claude-sonnet-4-5'), ... */
  model: unknown;
  /** The ToolSet: {name: tool({description, inputSchema, execute, needsApproval})}. The
   * SDK is offered them without execute; execute runs in the call's own Step. */
  tools?: Record<string, any>;
  /** Instructions (default: the agent's). */
  system?: string;
  /** Effects per tool name, where the tool's metadata says nothing (unknown: write). */
  effects?: Record<string, Exclude<ToolEffectValue, number>>;
  /** Approval per tool name, where needsApproval says nothing (unknown: required). */
  approvals?: Record<string, boolean>;
  /** More streamText settings (temperature, maxOutputTokens, ...). */
  settings?: Record<string, unknown>;
  providerOptions?: Record<string, unknown>;
  /** How long a worker waits for one segment (default 15 minutes). */
  timeoutMs?: number;
}

/** A Harness running one streamText step per RunModel Step; its `tools` are the Dex
 * tools to give the agent (new Agent({models: [h], tools: h.tools})). */
export declare function aiSdkHarness(options: AiSdkHarnessOptions): Harness & { tools: NonNullable<Harness['tools']> };
/** The session's stored messages as the AI SDK's ModelMessages. */
export declare function toModelMessages(request: { messages: Array<Record<string, any>>; summary?: Record<string, any> }): unknown[];
