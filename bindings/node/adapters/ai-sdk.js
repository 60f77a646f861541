'use strict';
// The Vercel AI SDK (the `ai` package, with any provider such as
// @ai-sdk/openai or @ai-sdk/anthropic) as a harness (dexagents-harness(7)).
// Each RunModel Step runs one streamText step with the tools offered
// WITHOUT their execute functions, so the SDK stops at the tool calls; each
// call then runs in its own Step (CallTool, CallSingleAttemptTool, after
// AwaitToolApproval when it needs approval), where the tool's execute
// runs; the next segment gets the recorded results as tool messages.
// The transcript is Dex's: each response message is stored verbatim as the
// item, the SDK's messages are rebuilt from the stored ones, and Dex
// compaction works (summarize runs one generateText).
// Tools the SDK runs inside the segment: provider-executed tools (a
// provider's web search, code execution, ...) and the tools named in
// runInside, whose execute the SDK runs in its own loop (more model steps in
// the same segment). They are at least once (again when the segment reruns)
// and recorded as segment_tool_call events (frameworkToolCalls).
const { Harness } = require('../lib/agent');
const { checkOptions } = require('../lib/values');
const { toolPolicy, dexTool, usageOf, finishReasonOf, resultText, peer, ranOutput } = require('./_common');

// Dex's own tools: offered to the SDK like its tools; their calls wait durably in the flow.
const BUILT_IN = new Set(['ask_user', 'durable_wait', 'write_todos']);
const OPTIONS = ['name', 'model', 'tools', 'system', 'effects', 'approvals', 'settings',
  'providerOptions', 'timeoutMs', 'runInside', 'maxSteps'];

/** A Dex user or tool message, or a stored model message, as ModelMessages. */
function toModelMessages(req) {
  const out = [];
  if (req.summary && req.summary.text) {
    out.push({ role: 'user', content: `Summary of the earlier conversation:\n${req.summary.text}` });
  }
  for (const m of req.messages) {
    if (m.role === 'user') {
      out.push({ role: 'user', content: m.text || '' });
    } else if (m.role === 'model') {
      const it = m.item;
      if (it && typeof it === 'object' && it.role === 'assistant') {
        out.push(it); // the SDK's own response message, stored verbatim
      } else if (it && typeof it === 'object' && it.role === 'tool' && Array.isArray(it.content)) {
        out.push({ ...it, content: [...it.content] }); // results of tools run inside the model call
      } else { // written by another model: its text and calls
        const content = [];
        if (m.text) content.push({ type: 'text', text: m.text });
        for (const c of m.toolCalls || []) {
          content.push({ type: 'tool-call', toolCallId: c.callId, toolName: c.name, input: c.arguments });
        }
        if (content.length) out.push({ role: 'assistant', content });
      }
    } else if (m.role === 'tool') {
      const part = { type: 'tool-result', toolCallId: m.callId, toolName: m.name,
        output: m.status === 'ok' ? { type: 'text', value: resultText(m) }
          : { type: 'error-text', value: resultText(m) } };
      const last = out.at(-1);
      if (last && last.role === 'tool') last.content.push(part);
      else out.push({ role: 'tool', content: [part] });
    }
  }
  return out;
}

/** The messages a summary is made of: their text only (no tool calls or results). */
function summaryMessages(req) {
  return toModelMessages(req).filter((m) => m.role !== 'tool').map((m) => (m.role === 'assistant'
    ? { role: 'assistant', content: (Array.isArray(m.content) ? m.content : []).filter((p) => p.type === 'text') }
    : m)).filter((m) => typeof m.content === 'string' || m.content.length);
}

/** The text and status of a ModelMessage tool-result output. */
function outputOf(o) {
  if (!o || typeof o !== 'object') return { status: 'ok', output: ranOutput(o) };
  const error = o.type === 'error-text' || o.type === 'error-json' || o.type === 'execution-denied';
  return { status: error ? 'error' : 'ok', output: ranOutput(o.value !== undefined ? o.value : o.reason) };
}

/** The tools the SDK ran inside the segment: every tool result in the
 * response (a provider-executed tool's in its assistant message, a
 * run-inside tool's in a tool message), with its call's input. */
function ranInside(messages) {
  const calls = new Map();
  const ran = [];
  for (const msg of messages) {
    for (const p of Array.isArray(msg.content) ? msg.content : []) {
      if (p.type === 'tool-call') calls.set(p.toolCallId, p);
      else if (p.type === 'tool-result' || p.type === 'tool-error') {
        const c = calls.get(p.toolCallId);
        const r = p.type === 'tool-error' ? { status: 'error', output: ranOutput(p.error) } : outputOf(p.output);
        ran.push({ callId: p.toolCallId, name: p.toolName, arguments: c ? c.input || {} : {}, ...r });
      }
    }
  }
  return ran;
}

/** The reply's items: each response message with its text, reasoning and
 * the calls that leave the segment (not those the SDK ran: `done`). */
async function replyItems(messages, policies, done = new Set()) {
  const items = [];
  for (const msg of messages) {
    const parts = Array.isArray(msg.content) ? msg.content : [{ type: 'text', text: String(msg.content) }];
    const text = parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
    const reasoning = parts.filter((p) => p.type === 'reasoning').map((p) => p.text).join('');
    const toolCalls = [];
    for (const p of parts.filter((x) => x.type === 'tool-call' && !x.providerExecuted && !done.has(x.toolCallId))) {
      const pol = policies(p.toolName);
      const call = { callId: p.toolCallId, name: p.toolName, arguments: p.input || {} };
      if (pol) {
        call.effect = pol.effect;
        call.approval = pol.perCall ? !!(await pol.perCall(p.input, { toolCallId: p.toolCallId, messages: [] })) : pol.approval;
      }
      toolCalls.push(call);
    }
    items.push({ item: msg, text, reasoning, toolCalls });
  }
  return items;
}

/**
 * A harness running the AI SDK. Options:
 *   name       the model name sessions select it by (default "ai-sdk/<model id>");
 *   model      the provider's LanguageModel (openai('gpt-4.1'), anthropic(...));
 *   tools      the ToolSet ({name: tool({description, inputSchema, execute})});
 *   system     instructions (default: the agent's instructions);
 *   effects, approvals  per tool name, where its metadata says nothing;
 *   settings   more streamText settings (temperature, maxOutputTokens, ...);
 *   runInside  names of tools whose execute the SDK runs itself, inside the
 *              segment (at least once; recorded as segment_tool_call events);
 *   maxSteps   model steps per segment when runInside names any (default 25);
 *   providerOptions, timeoutMs.
 * Returns a Harness whose `tools` are the Dex tools to give the agent.
 */
function aiSdkHarness(options) {
  const o = checkOptions(options, OPTIONS, 'aiSdkHarness');
  if (!o.model) throw new TypeError('aiSdkHarness: model is needed');
  const fwTools = o.tools || {};
  const inside = new Set(o.runInside || []);
  const policies = new Map();
  const tools = [];
  const offered = {};
  for (const name of inside) {
    const t = fwTools[name];
    if (!t || typeof t.execute !== 'function') {
      throw new TypeError(`aiSdkHarness: runInside names ${name}, which is no tool with an execute`);
    }
    if (t.needsApproval) {
      throw new TypeError(`aiSdkHarness: ${name} needs approval, which a tool run inside the segment cannot wait for`);
    }
  }
  for (const [name, t] of Object.entries(fwTools)) {
    if (inside.has(name)) { // the SDK runs it, in the segment
      offered[name] = t;
      continue;
    }
    const pol = toolPolicy(name, t, o, t.needsApproval);
    policies.set(name, pol);
    const { execute, needsApproval, ...rest } = t;
    offered[name] = rest; // no execute: the SDK stops at the call
    if (typeof execute === 'function') {
      tools.push(dexTool(name, t.description, null, pol,
        (args, call) => execute(args, { toolCallId: call.callId, messages: [], abortSignal: call.signal })));
    }
  }
  const modelId = typeof o.model === 'string' ? o.model : o.model.modelId || 'model';
  const settings = o.settings || {};

  async function runSegment(req) {
    const { streamText, jsonSchema } = await peer('ai');
    const segmentTools = { ...offered };
    for (const t of req.tools) { // Dex's built-in tools, when the agent enables them
      if (BUILT_IN.has(t.name) && !segmentTools[t.name]) {
        segmentTools[t.name] = { description: t.description, inputSchema: jsonSchema(t.parameters || { type: 'object' }) };
      }
    }
    const { isStepCount, stepCountIs } = inside.size ? await peer('ai') : {};
    const steps = inside.size && !settings.stopWhen ? { stopWhen: (isStepCount || stepCountIs)(o.maxSteps || 25) } : {};
    const result = streamText({
      ...steps, ...settings, model: o.model, system: o.system || req.instructions || undefined,
      messages: toModelMessages(req), tools: Object.keys(segmentTools).length ? segmentTools : undefined,
      abortSignal: req.signal, maxRetries: 0, providerOptions: o.providerOptions,
    });
    let failure = null;
    for await (const p of result.fullStream) {
      if (p.type === 'text-delta' && p.text) req.emitDelta(p.text);
      else if (p.type === 'reasoning-delta' && p.text) req.emitDelta(p.text, 'reasoning');
      else if (p.type === 'error') failure = failure || p.error;
      else if (p.type === 'abort') failure = failure || Object.assign(new Error('aborted'), { name: 'AbortError' });
    }
    if (failure) throw failure;
    // every step's messages (ai 7: responseMessages; response holds the last step's only)
    const messages = result.responseMessages !== undefined ? await result.responseMessages
      : (await result.response).messages;
    const ran = ranInside(messages);
    const items = await replyItems(messages, (n) => policies.get(n), new Set(ran.map((r) => r.callId)));
    if (!items.length) items.push({ item: { role: 'assistant', content: [] }, text: '' });
    return { items, frameworkToolCalls: ran, usage: usageOf(await result.totalUsage || await result.usage),
      finishReason: finishReasonOf(await result.finishReason),
      providerFinishReason: (await result.rawFinishReason) || undefined };
  }

  async function summarize(req) {
    const { generateText } = await peer('ai');
    const r = await generateText({ model: o.model, maxRetries: 0, abortSignal: req.signal,
      system: req.instructions || 'Summarize the conversation.',
      messages: summaryMessages(req) });
    return { item: { role: 'assistant', content: r.text }, text: r.text, usage: usageOf(r.usage) };
  }

  const h = new Harness({ name: o.name || `ai-sdk/${modelId}`, runSegment, summarize,
    timeoutMs: o.timeoutMs });
  h.tools = tools;
  return h;
}

module.exports = { aiSdkHarness, toModelMessages, summaryMessages, replyItems, ranInside };
