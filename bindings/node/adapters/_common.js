'use strict';
// What every framework adapter shares: tool policies from the framework's
// metadata (else the adapter's options; unknown is a write that needs
// approval), Dex tools that run the framework's tools in their own Steps,
// usage and finish reasons, and loading the framework (a peer dependency,
// imported on first use so that the package never requires it).
const { Tool, ToolResult } = require('../lib/agent');

const EFFECT_NAMES = ['read', 'idempotent_write', 'write'];

/** The hints a framework's tool carries (MCP annotations, LangChain
 * metadata, Mastra's mcp.annotations, ...): {readOnlyHint, destructiveHint,
 * idempotentHint}. */
function hintsOf(t) {
  if (!t || typeof t !== 'object') return {};
  const m = t.metadata && typeof t.metadata === 'object' ? t.metadata : {};
  const mcp = t.mcp && typeof t.mcp === 'object' ? t.mcp.annotations : null;
  return { ...(mcp || {}), ...(m.annotations || {}), ...m, ...(t.annotations || {}) };
}

/** A tool's effect and approval: the framework's metadata first, then the
 * adapter's options ({effects: {name: 'read'|...}, approvals: {name: bool}}),
 * else a write that needs approval. needsApproval is the framework's own
 * per-tool flag (a boolean, or a function of the call's arguments). */
function toolPolicy(name, t, options = {}, needsApproval) {
  const h = hintsOf(t);
  let effect = null;
  if (h.readOnlyHint === true) effect = 'read';
  else if (h.idempotentHint === true) effect = 'idempotent_write';
  else if (h.destructiveHint !== undefined || h.readOnlyHint === false) effect = 'write';
  const fromOptions = options.effects && options.effects[name];
  if (!effect && fromOptions) {
    if (!EFFECT_NAMES.includes(fromOptions)) {
      throw new TypeError(`tool ${name}: unknown effect ${fromOptions} (${EFFECT_NAMES.join(', ')})`);
    }
    effect = fromOptions;
  }
  const known = effect !== null;
  if (!known) effect = 'write';
  let approval;
  if (typeof needsApproval === 'boolean') approval = needsApproval;
  else if (options.approvals && typeof options.approvals[name] === 'boolean') approval = options.approvals[name];
  else approval = !known || effect !== 'read';
  return { effect, approval, perCall: typeof needsApproval === 'function' ? needsApproval : null };
}

/** A framework tool's result as the text the model sees (and its content). */
function toolResult(out) {
  if (out instanceof ToolResult) return out;
  if (out === undefined || out === null) return '';
  if (typeof out === 'string') return out;
  if (typeof out === 'object' && typeof out.content === 'string' && out.lc_serializable) return out.content;
  return new ToolResult(JSON.stringify(out), { content: out });
}

/** A Dex tool (its own Step) running a framework tool's function. */
function dexTool(name, description, parameters, policy, run) {
  return new Tool(async (args, call) => toolResult(await run(args, call)), {
    name, description: description || '', parameters: parameters || { type: 'object' },
    effect: policy.effect, approval: policy.approval,
  });
}

/** Usage in the reply's shape from the frameworks' usual fields. */
function usageOf(u) {
  if (!u) return undefined;
  const n = (v) => (Number.isFinite(v) && v >= 0 ? Math.round(v) : 0);
  const input = n(u.inputTokens !== undefined ? u.inputTokens : u.input_tokens);
  const output = n(u.outputTokens !== undefined ? u.outputTokens : u.output_tokens);
  const d = u.inputTokenDetails || u.input_token_details || {};
  const o = u.outputTokenDetails || u.output_token_details || {};
  let cached = n(d.cacheReadTokens !== undefined ? d.cacheReadTokens : (d.cache_read !== undefined ? d.cache_read : u.cachedInputTokens));
  let written = n(d.cacheWriteTokens !== undefined ? d.cacheWriteTokens : d.cache_creation);
  if (cached + written > input) cached = written = 0;
  let reasoning = n(o.reasoningTokens !== undefined ? o.reasoningTokens : (o.reasoning !== undefined ? o.reasoning : u.reasoningTokens));
  if (reasoning > output) reasoning = 0;
  return { inputTokens: input, outputTokens: output, cachedInputTokens: cached,
    cacheWriteTokens: written, reasoningTokens: reasoning };
}

const FINISH = { stop: 'stop', length: 'length', 'content-filter': 'content_filter',
  content_filter: 'content_filter', 'tool-calls': 'tool_calls', tool_calls: 'tool_calls',
  max_tokens: 'length', end_turn: 'stop', tool_use: 'tool_calls', refusal: 'refusal',
  safety: 'content_filter' };

const finishReasonOf = (r) => FINISH[r] || (r ? 'other' : undefined);

/** The text of a Dex tool result for a framework: its output, which for a
 * rejected call carries the person's note. */
const resultText = (m) => m.output || `(${m.status})`;

/** Imports a peer dependency once (an ES module or CommonJS). */
const loaded = new Map();
function peer(name) {
  if (!loaded.has(name)) {
    loaded.set(name, import(name).catch((e) => {
      loaded.delete(name);
      throw new Error(`the ${name} package is needed by this adapter (npm install ${name}): ${e.message}`);
    }));
  }
  return loaded.get(name);
}

/** A framework tool result (any value) as the text of its segment_tool_call event. */
function ranOutput(v) {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  try { return JSON.stringify(v); } catch { return String(v); }
}

module.exports = { toolPolicy, dexTool, usageOf, finishReasonOf, resultText, peer, toolResult, ranOutput };
